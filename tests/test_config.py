"""Configuration: a user's file is the whole truth, and every mistake in it is named before anything runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import ROOT, own_collection, snakemake, write

from examflow.config import check_config, check_config_file
from examflow.errors import ConfigError, InputError
from examflow.registry import BACKENDS, DIGIT_KINDS, KINDS, LLM_OPTIONS, options_markdown

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
MINIMAL = {"inputs": {"queries": "q.tsv", "responses": "r.jsonl"}}


def checked(config: dict) -> dict:
    return check_config(config, SCHEMA)


def rejected(config: dict) -> str:
    with pytest.raises(ConfigError) as caught:
        checked(config)
    return str(caught.value)


def test_a_collection_without_runs_or_responses_is_refused_in_the_configuration_s_words():
    """It failed in the pool step, after the check, naming the command's `--runs, --segments` (a stranger's trial)."""
    expected = (
        "config inputs.runs: nothing to evaluate: set inputs.runs (TREC run files), inputs.responses (generated "
        "responses), or both"
    )
    assert rejected({"inputs": {"queries": "q", "bank": "b.tsv"}}) == expected
    assert rejected({"inputs": {"queries": "q", "runs": []}}) == expected
    assert checked({"inputs": {"queries": "q", "runs": "r.run", "corpus": "c"}})["inputs"]["responses"] is None


def test_a_minimal_config_gets_the_schema_defaults_and_nothing_of_the_demo():
    config = checked(MINIMAL)
    assert config["results_dir"] == "results" and config["cache_dir"] == "results/cache"
    assert config["inputs"] == {
        "queries": "q.tsv", "runs": [], "corpus": None, "qrels": None, "responses": "r.jsonl",
        "official_leaderboard": None, "gold_articles": None, "bank": None, "labels": None,
    }  # fmt: skip
    assert config["grading"] == {"methods": [], "shards": 16, "flush_every": 64, "max_error_rate": 0}
    assert config["evaluation"] == {
        "tau": [1, 3, 4, 5], "k": 20, "query_mode": "present", "n_exam": "pool", "bootstrap": 1000, "seed": 0,
        "min_relevant_judgment": 1, "measures": ["map", "ndcg_cut_10", "ndcg_cut_20", "Rprec", "P_20", "recip_rank"],
        "official_measure": "ndcg_cut_10",
    }  # fmt: skip
    assert config["validation"] == {
        "missing_passages": "error", "unknown_queries": "error", "leaderboard_runs": "error", "relevance_range": [-2, 4]
    }  # fmt: skip
    assert config["questions"]["llm"] == {name: option.default for name, option in LLM_OPTIONS.items()} | {
        "model": "gpt-3.5-turbo"
    }
    assert config["judges"] == {
        "measures": ["ndcg_cut_10", "Compat(p=0.9)"],
        "top_k": 10,
        "rbo_p": 0.9,
        "ensembles": {},
        "leaderboards": {},
        "leaderboard_layout": "tot",
    }
    assert config["nrp"] is None
    assert MINIMAL == {"inputs": {"queries": "q.tsv", "responses": "r.jsonl"}}  # the caller's dict is left alone


def test_judges_measures_and_outside_label_names_are_checked():
    assert "judges.measures[1]: 'ndcg_cutt_10': neither a trec_eval measure (did you mean 'ndcg_cut_10'?) nor" in (
        rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": ["map", "ndcg_cutt_10"]}})
    )
    # the trec_eval name a slip of case meant (a stranger's trial: `mAP` got no suggestion)
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": ["mAP"]}}).startswith(
        "config judges.measures[0]: 'mAP': neither a trec_eval measure (did you mean 'map'?) nor ir-measures' syntax"
    )
    assert "judges.measures[0]: 'P': trec_eval computes it as" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": ["P"]}}
    )
    # ir-measures' assertion on a cut-off of the wrong form was a traceback (a stranger's trial)
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": ["nDCG@10.5"]}}) == (
        "config judges.measures[0]: 'nDCG@10.5': ir-measures refuses its parameters: invalid param cutoff=10.5"
    )
    # the official measure the judges compute by ir-measures, which cannot: it failed the judges step, after the
    # grading (a stranger's trial); checked where the workflow compares judges
    from examflow.config import check_official_for_judges

    only_trec = checked(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"official_measure": "Rprec_mult_0.20"}}
    )
    with pytest.raises(ConfigError) as refused:
        check_official_for_judges(only_trec)
    assert str(refused.value) == (
        "config evaluation.official_measure: 'Rprec_mult_0.20': the judges compare the label sets' leaderboards "
        "with its, and cannot compute it: known trec name Rprec_mult_0.20, but not yet supported"
    )
    check_official_for_judges(
        only_trec | {"inputs": {"queries": "q", "responses": "r.jsonl", "official_leaderboard": "o.json"}}
    )  # unused
    assert "inputs.labels.official: the name is the official qrels'" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "labels": {"official": "x.qrels"}}}
    )
    method = {"name": "flan", "kind": "self_rating", "backend": {"kind": "embedding"}}
    assert "inputs.labels.flan: the name is a grading method's" in rejected(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b", "labels": {"flan": "x.qrels"}},
            "grading": {"methods": [method]},
        }
    )
    assert "inputs.labels" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "labels": {"a b": "x.qrels"}}}
    )
    # a table the judges step writes, given back to it: a cycle, and the file deleted as the step began (a
    # stranger's trial); another file of results_dir is the user's (a reviewer: all of it was refused)
    compared = {"queries": "q", "corpus": "c", "qrels": "o.qrels", "runs": ["r"], "official_leaderboard": "o"}
    for key, setting in (
        ("judges.leaderboards.prev", {"judges": {"leaderboards": {"prev": "out/judges/autojudge.eval.txt"}}}),
        ("inputs.labels.team", {"inputs": compared | {"labels": {"team": "./out/judges/labels.tsv"}}}),
    ):
        assert rejected({"inputs": compared, "results_dir": "out/"} | setting) == (
            f"config {key}: '{'out/judges/autojudge.eval.txt' if 'prev' in key else './out/judges/labels.tsv'}' is a "
            "table the judges step writes, which reads it: copy it out of results_dir first"
        )
    for labels in ("outside/team.qrels", "out/external/team.qrels", "out/judges/team.qrels"):
        assert checked({"inputs": compared | {"labels": {"team": labels}}, "results_dir": "out"})
    assert "judges.measures[1]: 'nDCG@10' is 'ndcg_cut_10' again (nDCG@10): name each measure once" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": ["ndcg_cut_10", "nDCG@10"]}}
    )
    assert "grading.methods: a method is named 'official'" in rejected(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
            "grading": {"methods": [{**method, "name": "official"}]},
        }
    )
    # outside labels without what they are compared with: refused, not left out in silence
    for inputs in ({"labels": {"a": "x"}}, {"labels": {"a": "x"}, "qrels": "q.txt"},
                   {"labels": {"a": "x"}, "qrels": "q.txt", "runs": ["r"], "corpus": "c", "official_leaderboard": None}):  # fmt: skip
        config = {
            "inputs": {"queries": "q", "responses": "r.jsonl", **inputs},
            "evaluation": {"official_measure": None},
        }
        assert "inputs.labels: judges are compared with the official qrels" in rejected(config)
    assert checked(
        {
            "inputs": {
                "queries": "q",
                "responses": "r.jsonl",
                "labels": {"a": "x"},
                "qrels": "q.txt",
                "runs": ["r"],
                "corpus": "c",
            }
        }
    )
    irds = {
        "inputs": {
            "queries": "q",
            "labels": {"a": "x"},
            "qrels": "irds:msmarco-passage/trec-dl-2019",
            "runs": ["r"],
            "corpus": "c",
        }
    }
    assert "set inputs.qrels (a file)" in rejected(irds)


def test_an_ensemble_names_judges_the_configuration_has():
    backend = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    umbrela = {"name": "umb", "kind": "umbrela", "backend": backend}
    inputs = {
        "queries": "q",
        "bank": "b",
        "qrels": "q.txt",
        "runs": ["r"],
        "corpus": "c",
        "labels": {"team": "t.qrels"},
    }
    config = {"inputs": inputs, "grading": {"methods": [umbrela]}}
    assert checked({**config, "judges": {"ensembles": {"vote": ["umb", "team"]}}})["judges"]["ensembles"]
    assert "judges.ensembles.vote: 'tema' is no method or outside label set (did you mean 'team'?)" in rejected(
        {**config, "judges": {"ensembles": {"vote": ["umb", "tema"]}}}
    )
    assert "judges.ensembles.team: the name is a method's" in rejected(
        {**config, "judges": {"ensembles": {"team": ["umb", "team"]}}}
    )
    assert rejected({**config, "judges": {"ensembles": {"vote": ["umb"]}}}) == (
        "config judges.ensembles.vote: needs at least 2 entries, found ['umb']"
    )
    assert rejected({**config, "evaluation": {"tau": []}}) == "config evaluation.tau: needs at least 1 entry, found []"
    # other judges' AutoJudge leaderboards: a name of their own, and what the comparison needs
    assert checked({**config, "judges": {"leaderboards": {"team-x": "x.eval.txt"}}})["judges"]["leaderboards"]
    for taken in ("umb", "team", "official", "vote"):
        judges = {"leaderboards": {taken: "x.eval.txt"}, "ensembles": {"vote": ["umb", "team"]}}
        assert f"judges.leaderboards.{taken}: the name is a method's" in rejected({**config, "judges": judges})
    alone = {"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"leaderboards": {"x": "x.eval.txt"}}}
    assert "judges.leaderboards: judges are compared with the official qrels" in rejected(alone)
    # an ensemble of methods without an official leaderboard: there is no judges step; it was left out in silence
    unofficial = {**config, "inputs": {k: v for k, v in inputs.items() if k != "labels"}}
    ensemble = {"judges": {"ensembles": {"vote": ["umb", "umb2"]}}, "evaluation": {"official_measure": None}}
    methods = {"grading": {"methods": [umbrela, {**umbrela, "name": "umb2"}]}}
    assert "judges.ensembles: judges are compared with the official qrels" in rejected(
        {**unofficial, **methods, **ensemble}
    )
    assert checked({**unofficial, **methods, "judges": ensemble["judges"]})["judges"]["ensembles"]
    assert "judges.leaderboard_layout" in rejected({**config, "judges": {"leaderboard_layout": "trec"}})


def test_a_judges_measure_that_does_not_compute_is_refused_before_anything_runs():
    import shutil

    measure = "ERR@10"  # gdeval, a Perl script: computes only where Perl runs it
    if shutil.which("perl") is None:
        assert "could not compute it" in rejected(
            {"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": [measure]}}
        )
    problem = rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"measures": ["RBP(p=0.8)"]}})
    assert "judges.measures[0]: 'RBP(p=0.8)': no provider of ir-measures computes it" in problem


def test_a_method_whose_grades_stop_below_the_report_threshold_is_warned_about(caplog):
    backend = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    method = {"name": "umb", "kind": "umbrela", "backend": backend}
    checked(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
            "grading": {"methods": [method]},
            "report": {"tau": 4},
        }
    )
    assert "method umb (umbrela) grades 0-3: at evaluation.tau 4, 5 no passage reaches" in caplog.text
    assert "figures and summary at report.tau = 4 show no relevant passage" in caplog.text
    caplog.clear()
    checked(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
            "grading": {"methods": [method]},
            "report": {"tau": 3},
        }
    )
    assert "at evaluation.tau 4, 5" in caplog.text and "report.tau = 3" not in caplog.text
    caplog.clear()
    checked(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [method]}}
    )  # each method its own τ
    assert "at evaluation.tau 4, 5" in caplog.text and "report.tau" not in caplog.text
    caplog.clear()
    taus = {"evaluation": {"tau": [1, 2, 3]}}
    checked({"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [method]}, **taus})
    assert "grades 0-3" not in caplog.text


def test_each_method_is_shown_at_a_threshold_its_grades_reach_unless_report_tau_is_set():
    """report.tau unset: 4, or the highest evaluated τ a method's grades reach (UMBRELA's 0-3 at τ 4 showed no
    relevant passage in its figures and summary); set, every method's."""
    backend = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    kinds = {"self": "self_rating", "umb": "umbrela", "thomas": "thomas", "helm": "helm", "nuggets": "nugget_support"}
    methods = [{"name": name, "kind": kind, "backend": backend} for name, kind in kinds.items()]
    three = {"name": "ladder", "kind": "self_rating", "backend": {"kind": "embedding"}, "quantiles": [0.5, 0.7, 0.9]}
    config = {
        "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
        "grading": {"methods": [*methods, three]},
    }
    assert checked(config)["report"]["method_tau"] == {
        "self": 4, "umb": 3, "thomas": 1, "helm": 1, "nuggets": 1, "ladder": 3
    }  # fmt: skip
    two = checked(config | {"evaluation": {"tau": [2, 5]}})["report"]["method_tau"]
    assert two == {"self": 5, "umb": 2, "thomas": 2, "helm": 2, "nuggets": 2, "ladder": 2}  # none reach 1: the lowest
    assert set(checked(config | {"report": {"tau": 5}})["report"]["method_tau"].values()) == {5}
    assert checked({"inputs": {"queries": "q", "responses": "r.jsonl"}})["report"]["method_tau"] == {}


def test_a_name_value_option_takes_a_name_that_holds_an_equals_sign_where_its_value_is_a_number():
    """A workbench method's name may hold `=` (`class:model=x`); `--method-tau class:model=x=3` was refused."""
    from examflow.commands import assignments
    from examflow.errors import Failure

    assert assignments(["cls:m=x=3", "umb=2"], "--method-tau", int) == {"cls:m=x": 3, "umb": 2}
    for wrong in ("=3", "umb=", "umb=x", "umb"):
        with pytest.raises(Failure, match=f"--method-tau '{re.escape(wrong)}': expected NAME=VALUE"):
            assignments([wrong], "--method-tau", int)


def test_an_offline_grader_s_ladder_is_its_scale(caplog):
    """Graded by quantiles, grade g is g rungs reached: three rungs grade 0-3 (a stranger's τ = 4 rows were all 0,
    unwarned); the default five reach every threshold."""
    method = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}
    config = {
        "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
        "evaluation": {"tau": [2, 4]},
        "report": {"tau": 2},
    }
    checked(config | {"grading": {"methods": [method | {"quantiles": [0.5, 0.75, 0.9]}]}})
    assert "method cosine (self_rating by 3 quantiles) grades 0-3: at evaluation.tau 4 no passage reaches" in (
        caplog.text
    )
    caplog.clear()
    checked(config | {"grading": {"methods": [method]}})
    assert "grades 0-" not in caplog.text


def test_one_run_pattern_may_be_written_as_a_string():
    assert checked({"inputs": {"queries": "q", "responses": "r.jsonl", "runs": "runs/*.run", "corpus": "c"}})["inputs"][
        "runs"
    ] == ["runs/*.run"]
    assert "inputs.runs" in rejected({"inputs": {"queries": "q", "responses": "r.jsonl", "runs": {"a": 1}}})


def test_runs_without_a_corpus_are_refused_before_any_step_runs():
    """The pool step said so, after the judges' step had run (a stranger's trial); responses need none."""
    assert rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "runs": ["r"], "labels": {"a": "x"}, "qrels": "q.txt"}}
    ) == (
        "config inputs.corpus: the passages inputs.runs ranks are graded by their texts: set it (a file, or an "
        "ir_datasets id)"
    )
    assert checked({"inputs": {"queries": "q", "responses": "r.jsonl"}})["inputs"]["corpus"] is None


@pytest.mark.parametrize("example", sorted((ROOT / "config/examples").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_examples_are_complete_configs(example):
    config = checked(yaml.safe_load(example.read_text()))
    assert config["inputs"]["bank"] and config["grading"]["methods"], "an example must name a bank and a method"
    assert config["results_dir"] != "results/demo"


def test_mistakes_in_several_sections_are_named_in_one_message():
    method = {"name": "m", "kind": "self_ratng", "backend": {"kind": "openai", "model": "x", "concurency": 2}}
    config = {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "pool": {"depht": 3}, "grading": {"methods": [method]},
              "evaluation": {"tau": [2, 4, 4]}}  # fmt: skip
    message = rejected(config)
    named = re.findall(r"(?:^|; and )config (\S+): ", message)
    assert sorted(named) == ["evaluation.tau", "grading.methods[0].backend.concurency", "grading.methods[0].kind",
                             "pool.depht"]  # fmt: skip
    assert "config grading.methods[0].backend.concurency: unknown option (did you mean 'concurrency'?)" in message
    assert "config evaluation.tau: 4 is given twice" in message
    openai = {"name": "m", "kind": "self_rating", "backend": {"kind": "openai"}}  # its model is required
    assert "; and config grading.methods[0].backend.model: required, and missing" in rejected(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
            "pool": {"depht": 3},
            "grading": {"methods": [openai]},
        }
    )


def test_back_end_options_are_checked_by_kind_with_the_key_named():
    def method(**backend) -> dict:
        return {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [{"name": "m", "kind": "self_rating", "backend": backend}]}}  # fmt: skip

    key = "config grading.methods[0].backend"
    assert rejected(method(kind="hf_seq2seq", model="t5", batch_sise=8)).startswith(
        f"{key}.batch_sise: unknown option (did you mean 'batch_size'?)"
    )
    assert rejected(method(kind="hf_seq2seq")) == f"{key}.model: required, and missing"
    assert (
        rejected(method(kind="hf_seq2seq", model="t5", batch_size="8"))
        == f"{key}.batch_size: expected an integer, found '8'"
    )
    assert (
        rejected(method(kind="hf_seq2seq", model="t5", batch_size=True))
        == f"{key}.batch_size: expected an integer, found True"
    )
    assert "not 'beams'" in rejected(method(kind="hf_seq2seq", model="t5", decoding="beams"))
    for device in ("gpu", "CUDA", "cuda:", "cuda:x"):  # refused here, not in the grading job that would use it
        assert rejected(method(kind="hf_seq2seq", model="t5", device=device)) == (
            f"{key}.device: expected `auto` (CUDA when present), `cpu`, `cuda`, `cuda:1`, ... (torch's names: `mps`, "
            f"`xpu`), not {device!r}"
        )
    assert rejected(method(kind="ct2_seq2seq", model="t5", device="mps")).endswith(
        "CTranslate2 runs on no other, not 'mps'"
    )
    schema = BACKENDS["hf_seq2seq"].options["device"].json_schema()  # the same form for a schema's reader
    assert [jsonschema.Draft202012Validator(schema).is_valid(d) for d in ("cuda:1", "gpu", "cuda:")] == [
        True,
        False,
        False,
    ]
    for device in ("auto", "cpu", "mps", "xpu:0"):  # `cuda` needs `gpu:` beside it: another check
        assert checked(method(kind="embedding", device=device))["grading"]["methods"][0]["backend"]["device"] == device
    assert rejected(method(kind="openai")).endswith("model: required, and missing")
    wrong = ("htp://127.0.0.1:8000/v1", "127.0.0.1:8000/v1", "http://", "http://127.0.0.1:80000/v1", "http://h:0/v1")
    for url in wrong:  # every pair failed `connection`, later
        assert rejected(method(kind="openai", model="m", base_url=url)) == (
            f"{key}.base_url: expected OpenAI-compatible endpoint, an http:// or https:// URL (http://localhost:8000/v1 "
            f"for vLLM, say; a port 1 to 65535); null for OpenAI, not {url!r}"
        )
    right = ("http://127.0.0.1:65535/v1", "https://api.example.org/v1", "http://[::1]:8000/v1", "HTTP://u:p@h:1",
             "http://localhost:08000/v1", "http://localhost:/v1", "http://[fe80::1%25eth0]:8000/v1", None)  # fmt: skip
    for url in right:
        assert (
            checked(method(kind="openai", model="m", base_url=url))["grading"]["methods"][0]["backend"]["base_url"]
            == url
        )
    assert "did you mean 'openai'" in rejected(method(kind="opanai", model="x"))
    assert "'extractive_qa' cannot be graded by the embedding back end" in rejected(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
            "grading": {"methods": [{"name": "m", "kind": "extractive_qa", "backend": {"kind": "embedding"}}]},
        }  # fmt: skip
    )
    filled = checked(method(kind="openai", model="gpt"))["grading"]["methods"][0]
    assert filled["mode"] == "strict" and filled["gpu"] == 0 and filled["backend"]["max_retry_after"] == 120
    filled = checked(method(kind="hf_seq2seq", model="t5"))["grading"]["methods"][0]
    assert filled["mode"] == "reference" and filled["gpu"] == 1 and filled["backend"]["decoding"] == "beam"


def test_a_model_folder_that_is_not_there_is_refused_before_anything_runs(monkeypatch, tmp_path):
    """A model named by a path the hub cannot hold, and no such folder: the grading job asked the hub for it,
    after the pool, and failed in its words (a stranger's trial). A hub id stays the hub's; a command run by
    hand (a plan of a model not here) leaves it to the loader."""
    from examflow.config import check_model_folders

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models/flan").mkdir(parents=True)

    def method(kind: str, model: str) -> dict:
        return checked({"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [{"name": "m", "kind": "self_rating", "backend": {"kind": kind, "model": model}}]}})  # fmt: skip

    for kind in ("hf_seq2seq", "ct2_seq2seq", "embedding"):
        for model in (
            "./models/flna",
            "models/flan/v2",
            str(tmp_path / "models/flna"),
            "~/models/flan",
            "$HOME/flan",
            "..\\flan",
        ):
            with pytest.raises(ConfigError) as refused:
                check_model_folders(method(kind, model))
            assert str(refused.value) == (
                f"config grading.methods[0].backend.model: {model!r}: no such folder here (a hub id is `name` or "
                "`org/name`; a path is read as written, `~` and `$NAME` unexpanded)"
            )
        for model in ("./models/flan", str(tmp_path / "models/flan"), "google/flan-t5-large", "flan-t5-base"):
            check_model_folders(method(kind, model))
    ranker = checked({"nrp": {"queries": "q", "corpus": "c", "answers": "a", "dimensions": {"r": {"qrels": "r"}},
                              "rankers": [{"kind": "bm25"}, {"kind": "monot5", "model": "/nowhere/monot5"}]}})  # fmt: skip
    with pytest.raises(ConfigError, match=r"^config nrp.rankers\[1\].model: '/nowhere/monot5': no such folder here"):
        check_model_folders(ranker)


def test_typos_wrong_types_and_bad_measures_name_the_key():
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "pool": {"depht": 3}}).startswith(
        "config pool.depht: unknown key (did you mean 'depth'?)"
    )
    assert (
        rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"tau": "4"}})
        == "config evaluation.tau: expected a list, found '4'"
    )
    assert rejected({"inputs": {}}) == "config inputs.queries: required, and missing"
    # pytrec_eval reads P_2O as P_2; a score looked up as P_2O was 0.0 for every run.
    assert rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": ["map", "P_2O"]}}
    ) == ("config evaluation.measures: 'P_2O': trec_eval computes it as P_2: name each measure exactly")
    # a slip of case, `_` or a letter, or an ir-measures name (the judges' measures are written so), is named with
    # the measure meant (a stranger's trial: `NDCG_cut_10` got the list of a few names)
    slips = {
        "NDCG_cut_10": "ndcg_cut_10",
        "ndcg_cut10": "ndcg_cut_10",
        "recal_10": "recall_10",
        "MAP": "map",
        "nDCG@10": "ndcg_cut_10",
        "P@5": "P_5",
        "AP@100": "map_cut_100",
        "Rprec_Mult_0.20": "Rprec_mult_0.20",
        "map@100": "map_cut_100",
        "MRR": "recip_rank",
        "AP": "map",
        "ndcg10": "ndcg_cut_10",  # ndcg takes no cut-off: its `_cut` kin meant (a stranger by hand)
        "map10": "map_cut_10",
    }
    for slip, meant in slips.items():
        assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": [slip]}}) == (
            f"config evaluation.measures: {slip!r}: not a trec_eval measure (did you mean {meant!r}?)"
        )
    # where the name meant would be refused too (a cut-off of 0), or none is near, a few names are shown
    for far in ("nDCG@0", "frobnicate"):
        assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": [far]}}) == (
            f"config evaluation.measures: {far!r}: not a trec_eval measure (pytrec_eval names: map, P_20, ndcg_cut_10, "
            "recip_rank, ...)"
        )
    # trec_eval's C code asserts on a cut-off read as 0 and on nDCG's gain values: checking the name aborted the
    # process (a stranger's trial; the names each probed in a process of its own)
    for zero in ("P_0", "ndcg_cut_5,0", "recall_00", "P_0.5", "map_cut_0x1"):
        assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": [zero]}}) == (
            f"config evaluation.measures: {zero!r}: a cut-off of 0 (trec_eval stops on it): a cut-off is a whole "
            "number, 1 or more (P_10, ndcg_cut_10)"
        )
    assert "a cut-off of 0" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"official_measure": "success_0"}}
    )
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": ["ndcg_1=2"]}}) == (
        "config evaluation.measures: 'ndcg_1=2': pytrec_eval cannot take ndcg's gain values (trec_eval stops on "
        "them): name it ndcg"
    )
    # parameters trec_eval reads, written otherwise: named as it names them (not the cut-off's words)
    assert "trec_eval computes it as iprec_at_recall_0.00" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": ["iprec_at_recall_0"]}}
    )
    assert "geometric mean" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": ["gm_map"]}}
    )
    # named twice, a measure's every query was counted twice (its standard error too small)
    assert rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"measures": ["P_5", "map", "P_5"]}}
    ) == ("config evaluation.measures: 'P_5': given twice")
    assert "two methods are named 'm'" in rejected(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
            "grading": {"methods": [{"name": "m", "kind": "helm", "backend": {"kind": "embedding"}}] * 2},
        }  # fmt: skip
    )


def test_a_path_that_starts_with_a_dash_is_refused_where_it_is_configured():
    """Each step's command line read `-in/queries.tsv` as an unknown option (a stranger): every configured
    file or folder is checked, an absolute path is not refused."""
    message = "starts with '-', which a command line reads as an option: give it as an absolute path"
    for config, key in (
        ({"results_dir": "-res", "inputs": {"queries": "q", "responses": "r.jsonl"}}, "results_dir"),
        ({"cache_dir": "-cache", "inputs": {"queries": "q", "responses": "r.jsonl"}}, "cache_dir"),
        ({"inputs": {"queries": "-in/q.tsv"}}, "inputs.queries"),
        ({"inputs": {"queries": "q", "responses": "r.jsonl", "runs": ["r.run", "-in/*.run"]}}, "inputs.runs[1]"),
        ({"inputs": {"queries": "q", "responses": "r.jsonl", "labels": {"theirs": "-l.qrels"}}}, "inputs.labels.theirs"),
        ({"inputs": {"queries": "q", "responses": "r.jsonl"}, "judges": {"leaderboards": {"x": "-x.tsv"}}}, "judges.leaderboards.x"),
        ({"nrp": {"queries": "q", "answers": "a", "dimensions": {"d": {"qrels": "-d.qrels"}}}}, "nrp.dimensions.d.qrels"),
    ):  # fmt: skip
        value = repr(str(next(iter(_leaves(config)))))
        assert rejected(config) == f"config {key}: {value} {message}"
    assert (
        checked({"inputs": {"queries": "/data/-in/q.tsv", "responses": "r.jsonl"}, "results_dir": "/r/-res"})[
            "results_dir"
        ]
        == "/r/-res"
    )
    # nor may one be empty (`results_dir: ""` wrote into the working directory)
    assert (
        rejected({"results_dir": "", "inputs": {"queries": "q", "responses": "r.jsonl"}})
        == "config results_dir: empty: name a file or folder"
    )
    assert (
        rejected({"inputs": {"queries": "q", "responses": "r.jsonl", "runs": [""]}})
        == "config inputs.runs[0]: empty: name a file or folder"
    )
    assert (
        rejected({"results_dir": " ", "inputs": {"queries": "q", "responses": "r.jsonl"}})
        == "config results_dir: empty: name a file or folder"
    )


def test_a_path_that_starts_with_a_tilde_is_refused_with_the_home_folder_s_path(monkeypatch):
    """`results_dir: ~/x` wrote a folder `~` in the checkout (no shell expands a configured path): refused,
    with the path meant; a name that merely holds `~` is no home folder's."""
    monkeypatch.setenv("HOME", "/home/ann")
    for config, key, value in (
        ({"results_dir": "~/x", "inputs": {"queries": "q", "responses": "r.jsonl"}}, "results_dir", "~/x"),
        ({"cache_dir": "~", "inputs": {"queries": "q", "responses": "r.jsonl"}}, "cache_dir", "~"),
        ({"inputs": {"queries": "~/data/q.tsv"}}, "inputs.queries", "~/data/q.tsv"),
    ):
        home = value.replace("~", "/home/ann", 1)
        assert rejected(config) == (
            f"config {key}: {value!r} starts with '~', which no shell expands here (it would name a folder '~' in the "
            f"working directory): write {home!r}"
        )
    assert checked({"inputs": {"queries": "q", "responses": "r.jsonl"}, "results_dir": "r~1"})["results_dir"] == "r~1"
    # a home no shell would find either (`~nosuchuser`, or no HOME): refused all the same
    assert rejected({"results_dir": "~nosuchuser/x", "inputs": {"queries": "q", "responses": "r.jsonl"}}).endswith(
        "write '~nosuchuser/x' as a full path"
    )


def test_a_results_or_cache_folder_that_is_a_file_or_under_one_is_refused(tmp_path):
    """`results_dir: afile` ended the first `snakemake -n` in NotADirectoryError's traceback, and
    `cache_dir: afile/cache` failed the grade job after every prompt was asked (strangers)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    for key in ("results_dir", "cache_dir"):
        assert (
            rejected({key: str(afile), "inputs": {"queries": "q", "responses": "r.jsonl"}})
            == f"config {key}: {str(afile)!r} is a file: name a folder"
        )
        for under in (afile / "sub", afile / "a" / "b"):
            assert (
                rejected({key: str(under), "inputs": {"queries": "q", "responses": "r.jsonl"}})
                == f"config {key}: {str(under)!r}: {str(afile)!r} is a file, not a folder"
            )
        assert checked({key: str(tmp_path / "new" / "deeper"), "inputs": {"queries": "q", "responses": "r.jsonl"}})[key]
    # `afile/` (exists() is false for it) and a broken link, itself or above: the same refusal (a review)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for key in ("results_dir", "cache_dir"):
        for given, blocker, what in ((f"{afile}/", afile, "a file"), (f"{afile}/./", afile, "a file"),
                                     (tmp_path / "dangling", tmp_path / "dangling", "a broken link"),
                                     (tmp_path / "dangling" / "x", tmp_path / "dangling", "a broken link")):  # fmt: skip
            assert (
                rejected({key: str(given), "inputs": {"queries": "q", "responses": "r.jsonl"}})
                == f"config {key}: {str(given)!r}: {str(blocker)!r} is {what}, not a folder"
            )
        assert checked({key: str(tmp_path), "inputs": {"queries": "q", "responses": "r.jsonl"}})[key] == str(tmp_path)


def _leaves(config):
    """The one value that starts with `-` in a config."""
    for value in config.values():
        if isinstance(value, dict):
            yield from _leaves(value)
        elif isinstance(value, list):
            yield from (v for v in value if v.startswith("-"))
        elif value.startswith("-"):
            yield value


def test_every_schema_problem_of_a_config_is_named_at_once():
    # Two typos took two runs to find: each run named only the first.
    message = rejected(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl"},
            "evaluaton": {},
            "pool": {"depht": 3, "depth": "x", "sead": 1},
            "report": 4,
        }
    )
    first, *more = message.split("; and ")
    assert first.startswith("config evaluaton: unknown key (did you mean 'evaluation'?); known: results_dir, inputs")
    assert more == [
        "config pool.depht: unknown key (did you mean 'depth'?)",
        "config pool.sead: unknown key",
        "config report: expected a mapping, found 4",
        "config pool.depth: expected an integer, found 'x'",
    ]


def test_grade_thresholds_are_each_once_and_reachable():
    def tau(*values) -> str:
        return rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"tau": list(values)}})

    assert tau(4, 4) == "config evaluation.tau: 4 is given twice"
    assert tau(4, 4.0).startswith("config evaluation.tau: needs each value once, found [4, 4.0]; and config")
    assert tau(1, 9) == "config evaluation.tau: 9 is no grade threshold: grades run 0-5, and a threshold is 1 to 5"
    assert tau(0).startswith("config evaluation.tau: 0 is no grade threshold")
    assert checked({"inputs": {"queries": "q", "responses": "r.jsonl"}, "evaluation": {"tau": [5, 1]}})["evaluation"][
        "tau"
    ] == [5, 1]


def test_the_command_line_refuses_the_same_thresholds_and_measures(tmp_path):
    for option, message in (
        (["--tau", "4", "4"], "--tau: 4 is given twice"),
        (["--tau", "9"], "--tau: 9 is no grade threshold"),
        (["--measures", "P_5", "P_5"], "--measures: 'P_5': given twice"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "examflow", "evaluate", "--grades", "g", "--pool", "p", "--out", str(tmp_path),
             *option], capture_output=True, text=True,
        )  # fmt: skip
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_the_installed_program_starts_where_python_m_does():
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="examflow")
    assert script.value == "examflow.__main__:run"


def test_the_program_runs_numpy_blas_on_one_thread_unless_told():
    """Set before numpy loads; a setting of the user's (or Snakemake's, for a job's threads) stands."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401  (loaded, so that its BLAS is listed)

    if not any(pool["internal_api"] == "openblas" for pool in threadpoolctl.threadpool_info()):
        pytest.skip("this numpy is not built on OpenBLAS (MKL or Accelerate read other settings)")
    script = (
        "import sys, examflow.__main__ as entry\nsys.argv = ['examflow', '--help']\ntry:\n    entry.run()\n"
        "except SystemExit:\n    pass\nimport numpy\nfrom threadpoolctl import threadpool_info\n"
        "print(*{pool['num_threads'] for pool in threadpool_info() if pool['internal_api'] == 'openblas'})"
    )
    environment = {name: value for name, value in os.environ.items() if name != "OPENBLAS_NUM_THREADS"}
    for setting, threads in ((None, "1"), ("2", str(min(2, os.cpu_count() or 1)))):
        told = environment if setting is None else {**environment, "OPENBLAS_NUM_THREADS": setting}
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=told)
        assert result.returncode == 0 and result.stdout.splitlines()[-1] == threads, result.stderr


# Each subcommand with what it requires; {out}: where it would write.
COMMANDS = {
    "pool": ["--queries", "q.tsv", "--out", "{out}"],
    "segment": ["--queries", "q.tsv", "--out", "{out}"],
    "questions": ["--queries", "q.tsv", "--cache-dir", "c", "--out", "{out}"],
    "bank-shard": ["--bank", "b.jsonl", "--queries", "q.tsv", "--shard", "shard-0", "--out", "{out}"],
    "pool-shard": ["--passages", "p", "--queries", "q", "--shard", "shard-0", "--out-passages", "{out}.passages",
                   "--out-queries", "{out}"],
    "grade": ["--method", "{{}}", "--passages", "p", "--queries", "q", "--questions", "x", "--shard", "shard-0",
              "--cache-dir", "c", "--out", "{out}"],
    "evaluate": ["--grades", "g", "--pool", "p", "--out", "{out}"],
    "report": ["--method", "m", "--out", "{out}"],
    "summary": ["--config-digest", "d", "--results", "r", "--out-summary", "{out}.md", "--out-provenance", "{out}"],
    "compare-judges": ["--runs", "r", "--official-qrels", "q", "--out", "{out}"],
}  # fmt: skip


def command_line(command: str, out: Path | str, *options: str) -> list[str]:
    """The command's base options, less those `options` give again (an option given twice is refused)."""
    base, given = [text.format(out=out) for text in COMMANDS[command]], set(options)
    flags = [i for i, word in enumerate(base) if word.startswith("--")]
    kept = [base[i:j] for i, j in zip(flags, [*flags[1:], len(base)]) if base[i] not in given]
    return [command, *(word for words in kept for word in words), *options]


@pytest.mark.parametrize(
    "command, option, refused, message, lowest_or_highest",
    [
        ("pool", "--depth", "0", "must be at least 1, not 0", "1"),
        ("segment", "--max-tokens", "-1", "must be at least 1, not -1", "1"),
        ("questions", "--attempts", "0", "must be at least 1, not 0", "1"),
        ("questions", "--max-tokens", "0", "must be at least 1, not 0", "1"),
        ("questions", "--temperature", "nan", "expected a finite number, found 'nan'", "0"),
        ("bank-shard", "--shards", "0", "must be at least 1, not 0", "1"),
        ("pool-shard", "--shards", "-2", "must be at least 1, not -2", "1"),
        ("grade", "--flush-every", "0", "must be at least 1, not 0", "1"),
        ("grade", "--max-error-rate", "1.5", "must be at most 1, not 1.5", "1"),
        ("grade", "--max-error-rate", "-0.1", "must be at least 0, not -0.1", "0"),
        ("grade", "--max-error-rate", "inf", "expected a finite number, found 'inf'", "0.25"),
        ("evaluate", "--k", "0", "must be at least 1, not 0", "1"),
        ("evaluate", "--bootstrap", "-1", "must be at least 0, not -1", "0"),
        ("evaluate", "--diagnostics-tau", "9", "must be at most 5, not 9", "5"),
        ("evaluate", "--diagnostics-tau", "2.5", "expected an integer, found '2.5'", "1"),
        ("evaluate", "--seed", "-7", "must be at least 0, not -7", "0"),
        ("evaluate", "--seed", "1e3", "expected an integer, found '1e3'", "0"),
        ("report", "--tau", "0", "must be at least 1, not 0", "1"),
        ("summary", "--tau", "6", "must be at most 5, not 6", "5"),
        # judges.rbo_p is more than 0 and less than 1: the command took 0.01 to 0.99, the config 0.995 too
        ("compare-judges", "--rbo-p", "1", "must be less than 1, not 1.0", "0.995"),
        ("compare-judges", "--rbo-p", "0", "must be more than 0, not 0.0", "0.001"),
        ("compare-judges", "--top-k", "1", "must be at least 2, not 1", "2"),
    ],
)
def test_the_command_line_takes_the_numbers_the_config_takes_and_refuses_others_in_one_line(
    command, option, refused, message, lowest_or_highest, tmp_path, capsys
):
    from examflow.cli import main, parser

    out = tmp_path / "out"
    assert main(command_line(command, out, option, refused)) == 2
    assert capsys.readouterr().err == f"examflow: error: {option}: {message}\n"
    assert not out.exists()
    taken = parser().parse_args(command_line(command, out, option, lowest_or_highest))
    assert getattr(taken, option[2:].replace("-", "_")) == float(lowest_or_highest)


@pytest.mark.parametrize(
    "command, option",
    [("segment", "--out"), ("pool-shard", "--out-queries"), ("grade", "--out"), ("summary", "--out-provenance")],
)
def test_a_file_to_write_named_as_a_folder_is_refused_in_one_line(command, option, tmp_path, capsys):
    """`official --out d/` wrote its leaderboard as a file named `d` (pathlib drops the slash)."""
    from examflow.cli import main, parser

    out = tmp_path / "out"
    line = command_line(command, out)
    line[line.index(option) + 1] = f"{out}/"
    assert main(line) == 2
    assert (
        capsys.readouterr().err
        == f"examflow: error: {option}: '{out}/' ends with '/', which names a folder: name the file to write\n"
    )
    assert not out.exists()
    assert parser().parse_args(command_line("evaluate", f"{tmp_path}/folder/")).out == f"{tmp_path}/folder/"
    # an existing folder where a file goes, and a file where a folder goes: refused before any work (plan
    # printed the whole plan first, evaluate named `file/qrels`)
    out.mkdir()
    assert main(command_line(command, out)) == 2
    assert capsys.readouterr().err.endswith(f": {str(out)!r} is a folder: name the file to write\n")
    (tmp_path / "file").write_text("")
    assert main(command_line("evaluate", tmp_path / "file")) == 2
    assert (
        capsys.readouterr().err
        == f"examflow: error: --out: {str(tmp_path / 'file')!r} is a file: name the folder to write into\n"
    )
    # under a file, which no folder can be made of (compare-judges said so in a traceback, after its work)
    inside = tmp_path / "file" / "deeper" / "x"
    for line in (command_line(command, inside), command_line("compare-judges", inside)):
        assert main(line) == 2
        error = capsys.readouterr().err  # the first output option named (pool-shard's --out-passages)
        assert error.startswith("examflow: error: --out") and f"{inside}" in error
        assert error.endswith(f": {str(tmp_path / 'file')!r} is a file, not a folder\n")
    # a folder named with a slash on a file (exists() is false there), and a broken link on the way
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for folder, blocker, what in ((f"{tmp_path}/file/", tmp_path / "file", "a file"),
                                  (tmp_path / "dangling" / "x", tmp_path / "dangling", "a broken link")):  # fmt: skip
        assert main(command_line("evaluate", folder)) == 2
        assert (
            capsys.readouterr().err
            == f"examflow: error: --out: {str(folder)!r}: {str(blocker)!r} is {what}, not a folder\n"
        )


@pytest.mark.parametrize(
    "command, options, message",
    [
        # the report and the summary read the tables of --diagnostics-tau among those of every --tau
        ("evaluate", ["--tau", "1", "4", "--diagnostics-tau", "2"], "--diagnostics-tau: 2 is none of --tau (1, 4)"),
        ("pool", ["--runs"], "--runs, --segments: nothing to evaluate: give run files, segmented responses, or both"),
        # the provenance replaced the summary, exit 0
        ("summary", ["--out-summary", "OUT"], "--out-provenance OUT: also --out-summary's path: each output needs its own"),
        ("compare-judges", ["--on-unknown-query", "warn"],
         "--on-unknown-query: it checks the qrels' query ids against --queries: give --queries too"),
    ],
)  # fmt: skip
def test_an_option_missing_or_acting_only_with_another_is_refused_before_any_input_is_read(
    command, options, message, tmp_path, capsys
):
    from examflow.cli import main

    out = tmp_path / "out"
    assert main(command_line(command, out, *(option.replace("OUT", str(out)) for option in options))) == 2
    assert capsys.readouterr().err == f"examflow: error: {message.replace('OUT', str(out))}\n"
    assert not out.exists()


def test_the_configuration_takes_the_persistence_the_command_takes():
    assert checked(MINIMAL | {"judges": {"rbo_p": 0.995}})["judges"]["rbo_p"] == 0.995
    assert "rbo_p" in rejected(MINIMAL | {"judges": {"rbo_p": 1}})


def test_the_command_line_refuses_a_relevance_range_the_config_refuses(tmp_path, capsys):
    from examflow.cli import main, parser

    out = tmp_path / "out"
    assert main(command_line("pool", out, "--relevance-range", "4", "-2")) == 2
    assert capsys.readouterr().err == "examflow: error: --relevance-range: the lowest level 4 is above the highest -2\n"
    assert not out.exists()
    assert parser().parse_args(command_line("pool", out, "--relevance-range", "2", "2")).relevance_range == [2, 2]


@pytest.mark.parametrize(
    "config, message",
    [
        ({"pool": {"depth": 5.0}}, "config pool.depth: expected an integer, found 5.0"),
        ({"grading": {"shards": 2.0}}, "config grading.shards: expected an integer, found 2.0"),
        ({"evaluation": {"tau": [1.0, 3]}}, "config evaluation.tau[0]: expected an integer, found 1.0"),
        ({"evaluation": {"bootstrap": True}}, "config evaluation.bootstrap: expected an integer, found True"),
        ({"grading": {"max_error_rate": float("nan")}}, "config grading.max_error_rate: expected a number, found nan"),
        ({"nrp": None, "questions": {"llm": {"backoff": float("inf")}}}, "config questions.llm.backoff: expected a"),
        ({"evaluation": {"n_exam": "gold"}}, "config evaluation.n_exam: 'gold' divides by what the gold articles"),
        (
            {"evaluation": {"min_relevant_judgment": 0}},
            "config evaluation.min_relevant_judgment: 0 is less than the minimum of 1",
        ),
        (
            {"grading": {"methods": [{"name": "m", "kind": "self_rating", "backend": {"kind": "embedding"}}]}},
            "config grading.methods[0]: kind 'self_rating' grades questions: it needs a bank of them (inputs.bank)",
        ),
    ],
)
def test_numbers_are_what_they_claim_and_settings_their_inputs(config, message):
    # 5.0 passes JSON Schema's integer and NaN every bound; both reached job command lines before.
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}} | config).startswith(message)


def test_a_budget_beyond_the_pool_depth_is_named(caplog):
    checked({"inputs": {"queries": "q", "responses": "r.jsonl"}, "pool": {"depth": 5}})
    assert "evaluation.k = 20 is above pool.depth = 5: a run's passages ranked 6 to 20" in caplog.text
    caplog.clear()
    checked({"inputs": {"queries": "q", "responses": "r.jsonl"}, "pool": {"depth": 20}})
    assert caplog.text == ""


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path):
    config = write(tmp_path / "c.yaml", "inputs:\n  queries: q.tsv\nevaluation:\n  tau: [1]\n  k: 5\n  tau: [4]\n")
    with pytest.raises(InputError) as caught:
        check_config_file(config)
    assert str(caught.value) == (
        f"{config}:6: key 'tau' is written twice in one mapping (first on line 4); YAML would keep the last silently"
    )
    check_config_file(write(tmp_path / "ok.yaml", "a: {b: 1}\nc: [{b: 2}, {b: 3}]\n"))  # same key, other mappings


def test_nrp_settings_are_checked():
    def nrp(**changes) -> dict:
        spec = {"queries": "q", "corpus": "c", "answers": "a", "dimensions": {"relevance": {"qrels": "r"}}} | changes
        return {"inputs": {"queries": "q", "responses": "r.jsonl"}, "nrp": spec}

    filled = checked(nrp())["nrp"]
    assert [r["name"] for r in filled["rankers"]] == ["embedding", "bm25"] and filled["denominator"] == "docs"
    assert filled["rankers"][1] == {"kind": "bm25", "name": "bm25", "k1": 1.5, "b": 0.75, "method": "lucene"}
    assert rejected(nrp(rankers=[{"kind": "bm25", "k": 1}])).startswith(
        "config nrp.rankers[0].k: unknown option (did you mean 'k1'?)"
    )
    assert "unknown ranker 'mono_t5' (did you mean 'monot5'?)" in rejected(nrp(rankers=[{"kind": "mono_t5"}]))
    # BM25's length normalisation b is a fraction of the way to the average length (a stranger gave 2)
    assert rejected(nrp(rankers=[{"kind": "bm25", "b": 2}])) == "config nrp.rankers[0].b: must be at most 1, not 2"
    assert "two rankers are named 'monot5'" in rejected(
        nrp(rankers=[{"kind": "monot5"}, {"kind": "monot5", "model": "m"}])
    )
    both = {"relevance": {"qrels": "r", "ranker": "bm"}, "readability": {"qrels": "s"}}
    assert "'bm' is none of the rankers" in rejected(nrp(dimensions=both))
    weights = {"relevance": {"qrels": "r", "weight": 0.7}, "readability": {"qrels": "s"}}
    assert "give every dimension a weight, or none" in rejected(nrp(dimensions=weights))
    assert "unknown key (did you mean 'denominator'?)" in rejected(nrp(denominater="list"))
    # a cannot-judge label the relevance range refuses in a qrels line (a stranger's trial: the qrels refused)
    assert rejected(nrp(dimensions={"relevance": {"qrels": "r", "cannot_judge": [9]}})) == (
        "config nrp.dimensions.relevance.cannot_judge: label 9 is outside the relevance range -2..4 "
        "(validation.relevance_range), which refuses it in a qrels line"
    )
    # YAML reads `1:` and `true:` as no name: a traceback (a stranger's trial) or, as a label set, silence
    dimension = {"qrels": "r"}
    assert rejected(nrp(dimensions={1: dimension})) == (
        "config nrp.dimensions: YAML reads the key 1 as int, not str: put it in quotes"
    )
    assert rejected(nrp(dimensions={"relevance": dimension, True: dimension})).startswith(
        "config nrp.dimensions: YAML reads the key True as bool, not str"
    )
    labels = {"inputs": {"queries": "q", "responses": "r.jsonl", "labels": {2024.5: "x.qrels"}}}
    assert rejected(labels) == "config inputs.labels: YAML reads the key 2024.5 as float, not str: put it in quotes"


def replaced(config: dict, place: tuple, value) -> dict:
    """A copy of `config` with `value` at `place` (its keys and list indices, outermost first)."""
    copy = json.loads(json.dumps(config))
    *outer, last = place
    inner = copy
    for step in outer:
        inner = inner[step]
    inner[last] = value
    return copy


def test_every_configured_input_file_is_checked_by_its_key(tmp_path, monkeypatch):
    """A missing file or a folder where a file belongs, named by its configuration key before any job runs
    (the end-to-end test sees one of them through the Snakefile): every file the demo's configuration names,
    in the order the check reads them, the first wrong one named."""
    from examflow.scheduling import check_input_files

    monkeypatch.chdir(ROOT)  # the demo configuration's paths are relative to the checkout
    shipped = check_config(yaml.safe_load((ROOT / "config/config.yaml").read_text()))
    labels = str(write(tmp_path / "team.qrels", "q1 0 d1 1\n"))
    given = {**shipped, "inputs": {**shipped["inputs"], "labels": {"team": labels}},
             "judges": {**shipped["judges"], "leaderboards": {"team-x": labels}},
             "nrp": {**shipped["nrp"], "rankers": [{"kind": "bm25"}, {"kind": "run", "path": labels}]}}  # fmt: skip
    check_input_files(given)
    places = {  # each key the check names, where it is in the configuration
        **{f"inputs.{key}": ("inputs", key) for key in
           ("queries", "corpus", "qrels", "responses", "official_leaderboard", "gold_articles", "bank")},
        "inputs.labels.team": ("inputs", "labels", "team"),
        "judges.leaderboards.team-x": ("judges", "leaderboards", "team-x"),
        **{f"nrp.{key}": ("nrp", key) for key in ("queries", "corpus", "answers", "expert")},
        **{f"nrp.dimensions.{name}.qrels": ("nrp", "dimensions", name, "qrels") for name in ("relevance", "readability")},
        "nrp.rankers[1].path": ("nrp", "rankers", 1, "path"),
    }  # fmt: skip
    typo, folder = tmp_path / "typo.txt", tmp_path
    for wrong, message in [(typo, f"file not found: {typo}"), (folder, f"{folder} is a folder, not a file")]:
        for key, place in places.items():
            with pytest.raises(ConfigError, match=f"^config {re.escape(key)}: {re.escape(message)}$"):
                check_input_files(replaced(given, place, str(wrong)))
        everywhere = given
        for place in places.values():
            everywhere = replaced(everywhere, place, str(wrong))
        first = next(iter(places))  # the order: each file made wrong, the first named
        with pytest.raises(ConfigError, match=f"^config {re.escape(first)}: "):
            check_input_files(everywhere)
    # not checked: a bank still to be generated, and an ir_datasets id (ir_datasets fetches its own)
    generated = {**given, "inputs": {**given["inputs"], "bank": "not-yet.jsonl"},
                 "questions": {**given["questions"], "generate": "generated.jsonl"}}  # fmt: skip
    check_input_files(generated)
    irds = "irds:msmarco-passage/trec-dl-2019/judged"
    check_input_files({**given, "inputs": {**given["inputs"], "qrels": irds}, "nrp": {**given["nrp"], "corpus": irds}})
    with pytest.raises(ConfigError, match="^config nrp.corpus: file not found: typo.tsv$"):  # NRP alone
        check_input_files({**given, "inputs": None, "nrp": {**given["nrp"], "corpus": "typo.tsv"}})


@pytest.mark.parametrize(
    ("key", "path", "read_as"),
    [("inputs.runs", "runs {1}/a.run", "{1} in a file's path as a wildcard"),
     ("results_dir", "results/<b>", "<b> in a file's path as a path variable"),
     ("results_dir", "results/d{", "{ in a file's path as a wildcard"),
     ("results_dir", "results/d}", "} in a file's path as a wildcard")],
)  # fmt: skip
def test_a_path_snakemake_would_read_as_a_pattern_is_refused(key, path, read_as):
    from examflow.results import check_snakemake_paths

    check_snakemake_paths([("results_dir", "results/plain (1)"), ("inputs.runs", "runs/$HOME's/a.run")])
    with pytest.raises(
        ConfigError,
        match=f"^config {re.escape(key)}: {re.escape(path)}: Snakemake reads {re.escape(read_as)}, and has no escape",
    ):
        check_snakemake_paths([("cache_dir", "cache"), (key, path)])


def test_a_secret_in_the_config_is_refused_without_repeating_it():
    for where in (
        {"questions": {"llm": {"api_key": "sk-SENTINEL"}}},
        {"grading": {"methods": [{"backend": {"token": "sk-SENTINEL"}}]}},
    ):
        message = rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, **where})
        assert "secret does not belong in a config file" in message and "SENTINEL" not in message
    assert checked(
        {
            "inputs": {"queries": "q", "responses": "r.jsonl"},
            "questions": {"llm": {"api_key_env": "MY_KEY", "max_tokens": 9}},
        }
    )
    # a misspelt count of tokens was called a secret, and hid the typo (a stranger's trial)
    assert "segment.max_token: unknown key (did you mean 'max_tokens'?)" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl"}, "segment": {"max_token": 20}}
    )


def test_config_readme_shows_the_option_tables_and_the_kinds_of_the_registry():
    readme = (ROOT / "config/README.md").read_text()
    for table in options_markdown().strip().split("\n\n"):
        assert table in readme
    rows = {line.split("|")[1].strip(): line for line in readme.splitlines() if line.startswith("| `")}
    assert re.findall(r"`([a-z0-9_]+)`", rows["`kind`"].split("|")[2]) == list(KINDS)
    assert re.findall(r"`([a-z0-9_]+)`", rows["`backend`"].split("|")[2]) == list(BACKENDS)


@pytest.mark.workflow
def test_a_minimal_user_config_schedules_no_demo_input(project):
    files = own_collection(project / "mine")
    config = {
        "inputs": {
            "queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
            "qrels": "mine/qrels.txt", "bank": "mine/bank.tsv",
        },
        "grading": {"methods": [{"name": "sim", "kind": "self_rating", "backend": {"kind": "embedding"}}]},
    }  # fmt: skip
    write(project / "mine.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "mine.yaml")
    output = result.stdout + result.stderr
    assert "resources/demo" not in output and "cosine" not in output and "_gold_" not in output
    assert "rule segment" not in output and "rule nrp" not in output  # nothing the user did not ask for
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", output, re.MULTILINE))
    # q3 has no questions: no bank shard, no pool shard, no grading job; one warning says so.
    assert jobs["grade"] == jobs["bank_shard"] == jobs["pool_shard"] == "2"
    assert "1 of 3 queries has no questions in mine/bank.tsv and gets no grading jobs: q3" in output
    assert "results/pool/passages.parquet" in output and "results/demo" not in output
    assert files["bank"].exists()


def refused_in_one_line(result, message: str) -> str:
    """The run stopped, and its only words of the mistake are one line holding `message`: no frames."""
    output = result.stdout + result.stderr
    assert result.returncode != 0
    errors = [line for line in output.splitlines() if line.startswith("examflow: error: ")]
    assert len(errors) == 1 and message in errors[0], output
    assert errors[0].endswith(("config/bad.yaml]", "config/twice.yaml]")), output
    for frame in ("Traceback", 'File "', "WorkflowError", "common.smk"):
        assert frame not in output, output
    return errors[0]


@pytest.mark.workflow
def test_config_mistakes_stop_the_workflow_at_parse_time_in_one_line(project):
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config["pool"]["depht"] = 10
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config pool.depht: unknown key (did you mean 'depth'?)")
    del config["pool"]["depht"]
    config["grading"]["methods"][0]["backend"]["api_key"] = "sk-SENTINEL-0451"  # nor repeated by Snakemake
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "secret does not belong")
    assert "sk-SENTINEL-0451" not in result.stdout + result.stderr
    del config["grading"]["methods"][0]["backend"]["api_key"]
    config["grading"]["methods"][0]["backend"]["model"] = "./models/minilm"  # no such folder: refused at the start
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config grading.methods[0].backend.model: './models/minilm': no such folder here")
    del config["grading"]["methods"][0]["backend"]["model"]
    config["inputs"]["runs"] = ["resources/demo/runs/*.trec"]
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(
        result, "config inputs.runs: no such run file, and no file matches 'resources/demo/runs/*.trec' as a pattern"
    )
    # names Snakemake reads as a wildcard or a path variable, with no escape: its own traceback, at parse time
    runs = sorted((project / "resources/demo/runs").glob("*.run"))
    (project / "runs {1}").mkdir()
    for run in runs:
        (project / "runs {1}" / run.name).write_bytes(run.read_bytes())
    config["inputs"]["runs"] = ["runs {1}/*.run"]
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, f"config inputs.runs: runs {{1}}/{runs[0].name}: Snakemake reads {{1}} in a file's "
                        "path as a wildcard, and has no escape for it: rename the file or folder")  # fmt: skip
    config["inputs"]["runs"] = ["resources/demo/runs/*.run"]
    write(project / "config/bad.yaml", yaml.safe_dump(config | {"results_dir": "results/<b>"}))  # its own entry
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config results_dir: results/<b>: Snakemake reads <b> in a file's path as a path var")
    # an official measure from the qrels that the judges, comparing, cannot compute: refused where they are compared
    official = {"inputs": {**config["inputs"], "official_leaderboard": None},
                "evaluation": {**config.get("evaluation", {}), "official_measure": "Rprec_mult_0.20"}}  # fmt: skip
    write(project / "config/bad.yaml", yaml.safe_dump(config | official))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config evaluation.official_measure: 'Rprec_mult_0.20': the judges compare")
    # the cache folder reaches the rules as a param alone, which Snakemake takes as written
    write(project / "config/bad.yaml", yaml.safe_dump(config | {"cache_dir": "results/c{x}<y>"}))
    assert snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False).returncode == 0
    # answer checking on a bank without answer keys would ask every pair and verify none
    write(project / "keyless.tsv", "query_id\tquestion\nhoneybee\tWhere do bees store nectar?\n")
    qa = {
        "name": "qa",
        "kind": "qa_verify",
        "backend": {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
    }
    keyless = config | {"inputs": config["inputs"] | {"bank": "keyless.tsv"}}
    write(project / "config/bad.yaml", yaml.safe_dump(keyless | {"grading": config["grading"] | {"methods": [qa]}}))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config grading.methods[0].kind: 'qa_verify' checks each answer against the question's "
                        "answer key (gold_answers), and no question of keyless.tsv has one")  # fmt: skip
    config["inputs"]["qrels"] = "resources/demo/qrels-typo.txt"
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config inputs.qrels: file not found: resources/demo/qrels-typo.txt")
    config["inputs"]["qrels"] = "resources/demo/qrels.txt"
    # a level above every judgment counts no passage relevant: refused before the pool, not after the grading
    evaluation = config.get("evaluation", {}) | {"min_relevant_judgment": 4}
    write(project / "config/bad.yaml", yaml.safe_dump(config | {"evaluation": evaluation}))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "config evaluation.min_relevant_judgment: 4 is above every judgment of "
                        "resources/demo/qrels.txt (the highest is 3): no passage would count as relevant")  # fmt: skip
    # another judge's leaderboard read in another column order than written: refused before the grading (a
    # stranger's trial: `-n` passed, and the judges step said so once every method had graded)
    write(project / "team x.txt", "bm25 ndcg_cut_10 honeybee 0.5\nbm25 ndcg_cut_10 all 0.5\n")  # tot's order
    judges = config.get("judges", {}) | {"leaderboards": {"team-x": "team x.txt"}, "leaderboard_layout": "ir_measures"}
    write(project / "config/bad.yaml", yaml.safe_dump(config | {"judges": judges}))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "team x.txt: no topic (ndcg_cut_10, ...) is a query of resources/demo/queries.jsonl: "
                        "is the column order `ir_measures` (judges.leaderboard_layout) right?")  # fmt: skip
    write(project / "config/bad.yaml", yaml.safe_dump(config | {"judges": judges | {"leaderboard_layout": "tot"}}))
    assert snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False).returncode == 0
    # another judge's files are read before anything is graded: a run that is none of the run files' (a typo)
    # is no surprise at the end
    config["judges"] = {"leaderboards": {"team-x": "team-x.eval.txt"}}
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    write(project / "team-x.eval.txt", "bm25 ndcg_cut_10 1 0.5\nbm52 ndcg_cut_10 1 0.4\n")
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "team-x.eval.txt:2: field 'run_id': run 'bm52' is not among the runs of inputs.runs")
    del config["judges"]
    config["inputs"]["labels"] = {"team": "team.qrels"}
    write(project / "team.qrels", "honeybee 0 d1 1\nhoneybee 0 d2\n")
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "team.qrels:2: expected 4 columns")
    del config["inputs"]["qrels"], config["inputs"]["labels"]  # outside labels need the qrels
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", "--rerun-triggers", "mtime", check=False)
    refused_in_one_line(result, "--rerun-triggers must include 'params'")
    assert not (project / "results").exists()
    text = (project / "config/config.yaml").read_text().replace("pool:\n  depth: 20", "pool:\n  depth: 20\n  depth: 5")
    write(project / "config/twice.yaml", text)
    result = snakemake(project, "-n", "--configfile", "config/twice.yaml", check=False)
    assert "twice.yaml:" in refused_in_one_line(result, "key 'depth' is written twice")
    # a key set on the command line is blamed on --config; one from the file, on the file
    for given, key, source in [("result_dir=x", "result_dir", "--config result_dir=…, over the configuration"),
                               ("results_dir=elsewhere", "pool.depht", "configuration")]:  # fmt: skip
        write(project / "config/bad.yaml", yaml.safe_dump(config | {"pool": {"depht": 10}}))
        result = snakemake(project, "-n", "--configfile", "config/bad.yaml", "--config", given, check=False)
        errors = [line for line in result.stderr.splitlines() if line.startswith("examflow: error:")]
        assert len(errors) == 1 and errors[0].startswith(f"examflow: error: config {key}: unknown key"), result.stderr
        assert f" [{source}: " in errors[0] and errors[0].endswith("config/bad.yaml]"), errors


@pytest.mark.workflow
def test_a_slurm_profiles_placeholder_stops_the_run_before_any_job(project):
    """sbatch refused every job ("Invalid partition name specified"), each was submitted three times, and
    the run ended blaming each step's log (a stranger's trial). The shipped profile without its executor
    (this machine has no cluster), as written: its placeholders are the mistake."""

    def dry_run(profile: dict, said: str = "error") -> tuple[int, list[str]]:
        """The exit code and the errors (or warnings) of a dry run with `profile`; nothing written, no traceback."""
        write(project / "profiles/placeholders/config.yaml", yaml.safe_dump(profile))
        result = snakemake(project, "-n", "--workflow-profile", "profiles/placeholders", check=False)
        assert "Traceback" not in result.stderr and not (project / "results").exists()
        return result.returncode, [line for line in result.stderr.splitlines() if line.startswith(f"examflow: {said}")]

    profile = yaml.safe_load((project / "profiles/slurm-cpu/config.yaml").read_text())
    local = {key: value for key, value in profile.items() if key != "executor" and not key.startswith("slurm-")}
    assert dry_run(local) == (1, [
        "examflow: error: resources slurm_account 'CHANGE-ME-account', slurm_partition 'CHANGE-ME-cpu-partition': "
        "the SLURM profiles' placeholders: put your cluster's partitions and account in the profile's config.yaml "
        "(profiles/README.md)"
    ])  # fmt: skip
    filled = {**local, "default-resources": {**local["default-resources"], "slurm_partition": "cpu",
                                             "slurm_account": "lab"}}  # fmt: skip
    assert dry_run(filled) == (0, [])
    # a misspelt SLURM resource was taken without a word, and every job went to the default partition
    assert dry_run({**filled, "set-resources": {"grade": {"slurm_partiton": "gpu"}}}) == (1, [
        "examflow: error: resource slurm_partiton 'gpu': the SLURM executor plugin 2.8 reads no such resource (did you "
        "mean 'slurm_partition'?), so no job would get it; its own are slurm_account, slurm_cluster, slurm_extra, "
        "slurm_partition (profiles/README.md)"
    ])  # fmt: skip
    # one the plugin reads without its prefix (a stranger took the warning's list of its own for all it reads)
    assert dry_run({**filled, "set-resources": {"grade": {"slurm_qos": "long"}}}) == (1, [
        "examflow: error: resource slurm_qos 'long': the SLURM executor plugin 2.8 reads no such resource (did you "
        "mean 'qos'?), so no job would get it; its own are slurm_account, slurm_cluster, slurm_extra, slurm_partition "
        "(profiles/README.md)"
    ])  # fmt: skip
    # near none of its names: perhaps a later plugin's own, said and not refused
    assert dry_run({**filled, "set-resources": {"grade": {"slurm_reservation": "x"}}}, "WARNING: resource") == (0, [
        "examflow: WARNING: resource slurm_reservation 'x': the SLURM executor plugin 2.8 reads no such resource, so no job "
        "would get it; its own are slurm_account, slurm_cluster, slurm_extra, slurm_partition (profiles/README.md)"
    ])  # fmt: skip


@pytest.mark.workflow
def test_a_misspelt_rule_or_resource_and_a_gpu_job_on_the_default_partition_are_said(project):
    """`--set-resources grde:mem_mb=8000`, `--set-threads grde=2` and `grade:mem_mbb=8000` were taken without
    a word and changed no job; and the docs' way to ask for less on the command line replaced the profile's
    whole `set-resources`, its GPU partition too: the grading jobs went to the CPU partition asking for a GPU
    (a stranger's trial)."""

    def dry_run(*options: str) -> tuple[int, list[str]]:
        """The exit code and examflow's errors and warnings of a dry run but the demo's own (its responses' runs
        are off the official leaderboard); nothing written, no traceback."""
        result = snakemake(project, "-n", *options, check=False)
        assert "Traceback" not in result.stderr and not (project / "results").exists()
        said = [line for line in result.stderr.splitlines() if line.startswith("examflow: ")]
        return result.returncode, [line for line in said if "not on the official leaderboard" not in line]

    rules = ("all, bank_shard, evaluate, grade, judges, merge_grades, nrp, official_leaderboard, plan, pool, "
             "pool_shard, questions, report_judges, report_method, report_nrp, segment, summary")  # fmt: skip
    for option, word in (("--set-resources", "grde:mem_mb=8000"), ("--set-threads", "grde=2")):
        assert dry_run(option, word) == (1, [
            f"examflow: error: {option} 'grde': the workflow has no such rule (did you mean 'grade'?), so it would "
            f"change no job; its rules: {rules}"
        ])  # fmt: skip
    assert dry_run("--set-resources", "grade:mem_mbb=8000") == (1, [
        "examflow: error: resource mem_mbb '8000': neither Snakemake nor the SLURM executor plugin reads such a "
        "resource (did you mean 'mem_mb'?), so no job would get it; a resource of your own needs its limit in "
        "--resources"
    ])  # fmt: skip
    # names Snakemake reads, and the user's own: one near `mpi` (only the cluster reads it), one limited
    assert dry_run("--set-resources", "grade:mem_mib=8000", "grade:api=1", "nrp:runtime=30") == (0, [])
    assert dry_run("--set-resources", "grade:gpus=1", "--resources", "gpus=1") == (0, [])
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config["grading"]["methods"][0]["gpu"] = 1  # as a Hugging Face back end's job asks
    write(project / "config/gpu.yaml", yaml.safe_dump(config))
    on_slurm = ("--configfile", "config/gpu.yaml", "--default-resources", "slurm_partition=cpu")
    assert dry_run(*on_slurm, "--set-resources", "grade:mem_mb=8000") == (0, [
        "examflow: WARNING: grade jobs ask for a GPU and name no slurm_partition of their own: they go to the "
        "default partition 'cpu', where they never run if it has no GPUs. Name theirs under the profile's "
        "set-resources, `grade: {slurm_partition: ...}` (the default's, where it holds the GPUs); a --set-resources "
        "on the command line replaces the profile's whole set-resources, so name it there too, "
        "`grade:slurm_partition=...`"
    ])  # fmt: skip
    assert dry_run(*on_slurm, "--set-resources", "grade:mem_mb=8000", "grade:slurm_partition=gpu") == (0, [])
    assert dry_run(*on_slurm, "--set-resources", "grade:gpu=0") == (0, [])  # no GPU asked for
    assert dry_run("--configfile", "config/gpu.yaml") == (0, [])  # no partition: not on SLURM


@pytest.mark.workflow
def test_an_official_leaderboard_of_generated_responses_is_taken_and_a_typo_is_not(project):
    """A RAG campaign's official leaderboard ranks the responses' runs too: EXAM correlates them, and the
    judges (who rank runs by the passages their labels judge) leave them out themselves (`--responses`;
    the hostile-paths configuration runs it). They were refused as the run started, and the way on,
    `validation.leaderboard_runs: warn`, gave up the check that catches a typo (a stranger's trial)."""
    official = json.loads((project / "resources/demo/official_leaderboard.json").read_text())
    rag = {"rag-thorough": 8, "rag-brief": 9, "rag-offtopic": 10}
    write(project / "official.json", json.dumps(official | rag))
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config["inputs"]["official_leaderboard"] = "official.json"
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "-p", "--configfile", "config/bad.yaml")
    assert "WARNING" not in result.stderr, result.stderr
    judges = next(line for line in result.stdout.splitlines() if "examflow compare-judges" in line)
    assert " --responses resources/demo/responses.jsonl " in judges and " --official official.json " in judges
    rag["rag-brif"] = rag.pop("rag-brief")
    write(project / "official.json", json.dumps(official | rag, indent=1))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "official.json:11: field 'run_id': official run 'rag-brif' is not among the "
                        "evaluated runs (did you mean 'rag-brief'?)")  # fmt: skip


@pytest.mark.workflow
def test_a_response_run_named_as_a_run_file_s_is_refused_at_its_line_as_the_run_starts(project):
    """It was refused by the pool step, after the segmenting, with no file line (a stranger's trial)."""
    lines = (project / "resources/demo/responses.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"rag-thorough"', '"bm25"', 1)
    write(project / "responses.jsonl", "\n".join(lines) + "\n")
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config["inputs"]["responses"] = "responses.jsonl"
    write(project / "config/bad.yaml", yaml.safe_dump(config))
    result = snakemake(project, "-n", "--configfile", "config/bad.yaml", check=False)
    refused_in_one_line(result, "responses.jsonl:2: field 'run_id': run 'bm25' is also the run tag of "
                        "resources/demo/runs/bm25.run: the responses' run ids differ from the run files' (docs/inputs.md)")  # fmt: skip


def test_another_judges_leaderboard_may_rank_the_responses_runs_but_no_unknown_one(tmp_path):
    """`judges.leaderboards` checked as the run starts: a run of the responses (a RAG campaign's AutoJudge
    file ranks them) is the judges' to leave out, not a typo; a run of neither is refused at its line."""
    from examflow.scheduling import check_judge_files

    run = write(tmp_path / "bm25.run", "q1 Q0 d1 1 2.0 bm25\n")
    responses = write(tmp_path / "responses.jsonl", '{"run_id": "rag", "query_id": "q1", "text": "an answer"}\n')
    board = write(tmp_path / "team.txt", "bm25 all SCORE 0.5\nrag all SCORE 0.7\n")
    queries = write(tmp_path / "queries.tsv", "q1\tquery\n")
    given = ({}, {"team": str(board)}, "ir_measures", [str(run)], {"leaderboard_runs": "error"}, str(queries))
    check_judge_files(*given, str(responses))
    with pytest.raises(InputError, match=re.escape(f"{board}:2: field 'run_id': run 'rag' is not among the runs of")):
        check_judge_files(*given)
    write(board, "bm25 all SCORE 0.5\nrag all SCORE 0.7\nbm52 all SCORE 0.1\n")
    bm25 = write(tmp_path / "other bm25.run", "q1 Q0 d1 1 2.0 bm25x\n")  # a run the leaderboard lacks
    with pytest.raises(InputError, match=re.escape(f"{board}:3: field 'run_id': run 'bm52' is not among the runs "
                                                   "of inputs.runs nor inputs.responses (did you mean 'bm25x'?)")):  # fmt: skip
        check_judge_files(given[0], given[1], given[2], [str(run), str(bm25)], *given[4:], str(responses))


def test_a_label_set_s_unknown_query_is_refused_as_the_run_starts(tmp_path):
    """`inputs.labels` checked against the queries before any model is asked, as a grade of `1.5` in them
    is: an unknown query id stopped the judges' step, after every pair was graded (a stranger's trial). Under
    `validation.unknown_queries: warn` the judges' step drops and counts it, as before."""
    from examflow.scheduling import check_judge_files

    run = write(tmp_path / "bm25.run", "q1 Q0 d1 1 2.0 bm25\n")
    queries = write(tmp_path / "queries.tsv", "q1\tquery\nq2\tanother\n")
    labels = write(tmp_path / "team x.qrels", "q1 0 d1 2\nq2 0 d1 0\nq9 0 d1 2\n")
    checks = {"leaderboard_runs": "error", "unknown_queries": "error"}
    with pytest.raises(InputError, match=re.escape(f"{labels}:3: field 'query_id': unknown query id 'q9'")):
        check_judge_files({"x": str(labels)}, {}, "ir_measures", [str(run)], checks, str(queries))
    check_judge_files({"x": str(labels)}, {}, "ir_measures", [str(run)], checks | {"unknown_queries": "warn"},
                      str(queries))  # fmt: skip
    write(labels, "q1 0 d1 2\nq2 0 d1 0\n")
    check_judge_files({"x": str(labels)}, {}, "ir_measures", [str(run)], checks, str(queries))


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval, ir-measures' provider of ERR, runs in Perl")
def test_err_among_the_judges_measures_takes_query_ids_of_digits_as_the_run_starts(tmp_path):
    """gdeval computes ERR and reads query ids of digits alone: other ids stopped the judges' step, after every
    pair was graded; now the configuration's check names the measure and the first id."""
    from examflow.config import check_judges_query_ids

    queries = write(tmp_path / "queries.tsv", "1037798\tquery\nq-2\tanother\n")
    config = {"inputs": {}, "judges": {"measures": ["ndcg_cut_10", "ERR@10"]},
              "evaluation": {"official_measure": "ndcg_cut_10"}}  # fmt: skip
    with pytest.raises(ConfigError, match=re.escape("config judges.measures[1]: ERR@10: gdeval, which computes it, "
                                                    "reads query ids of digits alone, not 'q-2'")):  # fmt: skip
        check_judges_query_ids(config, str(queries))
    official = {"judges": {"measures": ["ndcg_cut_10"]}, "evaluation": {"official_measure": "ERR@10"}}
    with pytest.raises(ConfigError, match=re.escape("config evaluation.official_measure: ERR@10: gdeval")):
        check_judges_query_ids(config | official, str(queries))
    check_judges_query_ids(config | official | {"inputs": {"official_leaderboard": "board.json"}}, str(queries))
    check_judges_query_ids(config, str(write(tmp_path / "digits.tsv", "1037798\tquery\n2\tanother\n")))


def example_data(root, config: dict) -> None:
    """Tiny files at the paths an example names, consistent with one another."""
    import gzip
    import json

    inputs = config["inputs"]
    faceted = inputs["queries"].endswith(".jsonl")
    queries = '{"query_id": "p1", "text": "a page", "subtopics": [{"facet_id": "s1", "text": "a section"}]}\n'
    write(root / inputs["queries"], queries if faceted else "p1\ta query\n")
    qid = "p1/s1" if faceted else "p1"
    relevant = (config.get("evaluation") or {}).get("min_relevant_judgment", 1)  # TREC DL's example counts 2 and 3
    write(root / inputs["qrels"], f"{qid} 0 d1 {relevant}\n")
    runs = root / inputs["runs"][0].replace("*", "system")
    write(runs, "p1 Q0 d1 1 2.0 system\n")
    corpus = root / inputs["corpus"]
    if corpus.suffix == ".parquet":
        import pandas as pd

        corpus.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"doc_id": ["d1"], "text": ["a passage"]}).to_parquet(corpus)
    else:
        line = '{"doc_id": "d1", "text": "a passage"}\n' if ".jsonl" in corpus.name else "d1\ta passage\n"
        write(corpus, gzip.compress(line.encode()) if corpus.suffix == ".gz" else line)
    bank = root / inputs["bank"]
    if ".jsonl" in bank.name:
        entry = json.dumps(
            {"query_id": "p1", "facet_id": "s1" if faceted else None, "items": [{"question_text": "Why?"}]}
        )
        write(bank, gzip.compress(entry.encode() + b"\n") if bank.suffix == ".gz" else entry + "\n")
    else:
        write(bank, "query_id\tquestion\np1\tWhy?\n")
    if inputs.get("responses"):
        write(root / inputs["responses"], '{"run_id": "rag", "query_id": "p1", "text": "An answer."}\n')
    if inputs.get("official_leaderboard"):
        write(root / inputs["official_leaderboard"], '{"system": 1}')


@pytest.mark.workflow
@pytest.mark.parametrize("example", sorted((ROOT / "config/examples").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_examples_run_as_given_once_their_data_exists(project, example):
    example_data(project, yaml.safe_load(example.read_text()))
    result = snakemake(project, "-n", "--configfile", f"config/examples/{example.name}")
    output = result.stdout + result.stderr
    assert "rule grade:" in output and "rule evaluate:" in output and "rule summary:" in output
    assert "resources/demo" not in output


def test_every_command_line_option_says_what_it_takes():
    from examflow.cli import parser

    commands = next(action for action in parser()._actions if action.choices and isinstance(action.choices, dict))
    for name, command in commands.choices.items():
        for action in command._actions:
            if action.dest != "help":
                assert action.help, f"examflow {name} {action.option_strings or action.dest}: no help text"


def test_the_command_line_and_the_evaluation_take_their_defaults_from_the_schema():
    from examflow.cli import parser
    from examflow.evaluation.evaluate import Settings

    config = checked(MINIMAL)
    evaluate = parser().parse_args(["evaluate", "--grades", "g", "--pool", "p", "--out", "o"])
    evaluation = config["evaluation"]
    assert (evaluate.tau, evaluate.k, evaluate.bootstrap, evaluate.seed) == (
        evaluation["tau"],
        evaluation["k"],
        evaluation["bootstrap"],
        evaluation["seed"],
    )
    assert (evaluate.query_mode, evaluate.n_exam, evaluate.relevant_judgment) == (
        evaluation["query_mode"],
        evaluation["n_exam"],
        evaluation["min_relevant_judgment"],
    )
    settings = Settings()
    assert (settings.taus, settings.k, settings.bootstrap) == (
        evaluation["tau"],
        evaluation["k"],
        evaluation["bootstrap"],
    )
    pool = parser().parse_args(["pool", "--queries", "q", "--out", "o"])
    assert (pool.depth, pool.relevance_range) == (config["pool"]["depth"], config["validation"]["relevance_range"])
    grade = parser().parse_args(["grade", "--method", "{}", "--passages", "p", "--queries", "q", "--questions", "x",
                                 "--shard", "s", "--cache-dir", "c", "--out", "o"])  # fmt: skip
    assert (grade.flush_every, grade.max_error_rate) == (config["grading"]["flush_every"], 0)
    # The values themselves, as the docs state them (config/README.md).
    assert (evaluation["tau"], evaluation["k"], pool.depth, grade.flush_every) == ([1, 3, 4, 5], 20, 20, 64)


def test_the_classes_own_defaults_are_the_registry_s():
    """The workflow passes every option, so a back end's, ranker's or LLM client's own default is seen only by
    tests, benchmarks and library users: it must be the registry's, or they would grade otherwise."""
    import dataclasses
    import inspect
    from importlib import import_module

    from examflow.llm import LLMSettings
    from examflow.registry import RANKERS

    fields = {f.name: f.default for f in dataclasses.fields(LLMSettings) if f.default is not dataclasses.MISSING}
    assert fields == {name: option.default for name, option in LLM_OPTIONS.items() if name != "model"}
    for registry in (BACKENDS, RANKERS):
        for name, entry in registry.items():
            module, factory = entry.factory.split(":")
            parameters = inspect.signature(getattr(import_module(module), factory)).parameters.items()
            own = {key: p.default for key, p in parameters if p.default is not p.empty and key in entry.options}
            assert own == {key: entry.options[key].default for key in own}, name


def test_a_generated_bank_is_named_as_what_it_is_written_as():
    """A generated bank is JSONL: a `.tsv` name passed the check, the bank was written as JSONL all the same,
    and every later run refused the file (a stranger's trial)."""
    for name in ("bank.tsv", "bank.parquet", "bank.json"):
        assert rejected(
            {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": name}, "questions": {"generate": True}}
        ) == (f"config inputs.bank: {name}: a generated bank is written as JSONL: name it .jsonl (or .jsonl.gz)")
    for name in ("bank.jsonl", "bank.JSONL", "bank.jsonl.gz"):  # (the check reads no file)
        assert checked(
            {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": name}, "questions": {"generate": True}}
        )
    assert checked(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "bank.tsv"}}
    )  # read, not written: TSV is a bank format


def test_a_value_of_the_wrong_form_is_said_in_words_not_as_its_regular_expression():
    """`base_url: http//…` read `does not match '^(?:[Hh][Tt][Tt][Pp][Ss]?://\\S+)$'` (a stranger's trial)."""
    backend = {"kind": "openai", "model": "m", "base_url": "http//127.0.0.1:8000/v1"}
    method = {"name": "llm", "kind": "umbrela", "backend": backend}
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "grading": {"methods": [method]}}) == (
        "config grading.methods[0].backend.base_url: expected OpenAI-compatible endpoint, an http:// or https:// URL "
        "(http://localhost:8000/v1 for vLLM, say; a port 1 to 65535); null for OpenAI, not 'http//127.0.0.1:8000/v1'"
    )
    named = method | {"name": "my judge", "backend": backend | {"base_url": None}}
    assert rejected({"inputs": {"queries": "q", "responses": "r.jsonl"}, "grading": {"methods": [named]}}) == (
        "config grading.methods[0].name: expected a name of ASCII letters, digits, _ and - (it names files and "
        "columns), not 'my judge'"
    )


def test_a_method_s_key_written_in_its_back_end_is_said_to_be_the_method_s():
    """`quantiles` under `backend:` read `unknown option; known: model, unit, …` (a stranger's trial)."""
    method = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding", "quantiles": [0.5, 0.9]}}
    assert rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [method]}}
    ) == (
        "config grading.methods[0].backend.quantiles: unknown option; a key of the method, beside its `kind`, not of "
        "its back end; known: model, unit, batch_size, device"
    )
    method["backend"] = {"kind": "embedding", "unti": "passage"}  # a back end's own option misspelt: as before
    assert "backend.unti: unknown option (did you mean 'unit'?); known:" in rejected(
        {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [method]}}
    )


def test_a_name_written_in_other_case_is_suggested_too(tmp_path):
    """`BM25` on an official leaderboard for the run `bm25`: difflib, case-sensitive, suggested nothing."""
    from examflow.errors import Problems, suggestion
    from examflow.io.leaderboard import match_runs

    assert suggestion("BM25", ["bm25", "dense"]) == " (did you mean 'bm25'?)"
    assert suggestion("dnese", ["bm25", "dense"]) == " (did you mean 'dense'?)"
    assert suggestion("qwerty", ["bm25", "dense"]) == ""
    official = write(tmp_path / "official.json", '{\n"BM25": 1,\n"dense": 2\n}\n')
    with pytest.raises(InputError, match=re.escape("official.json:2: field 'run_id': official run 'BM25' is not "
                                                   "among the evaluated runs (did you mean 'bm25'?)")):  # fmt: skip
        match_runs(official, {"BM25": 1.0, "dense": 2.0}, {"bm25", "dense"}, Problems("error"))


def test_another_tools_name_of_an_option_is_told_ours():
    """The OpenAI SDK's `max_retries` was suggested `max_retry_after` (the nearest spelling: a wait, not a count
    of tries), and `api_base`, `workers` nothing: a stranger's trial. Each way a config reaches the options
    (a back end's, question generation's, a command's mapping) names the option meant."""
    from examflow.options import check_options
    from examflow.registry import LLM_OPTIONS

    backend = {"kind": "openai", "model": "x", "max_retries": 2, "api_base": "http://127.0.0.1:1/v1", "workers": 3}
    method = {"name": "m", "kind": "self_rating", "backend": backend}
    config = {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"}, "grading": {"methods": [method]},
              "questions": {"llm": {"max_retries": 2}}}  # fmt: skip
    message = rejected(config)
    for key, meant in [("backend.max_retries", "max_attempts"), ("backend.api_base", "base_url"),
                       ("backend.workers", "concurrency"), ("questions.llm.max_retries", "max_attempts")]:  # fmt: skip
        assert re.search(rf"{re.escape(key)}: unknown (option|key) \(did you mean '{meant}'\?\)", message), key
    with pytest.raises(ConfigError, match=r"^config llm\.max_retries: unknown option \(did you mean 'max_attempts'"):
        check_options("llm", {"model": "x", "max_retries": 2}, LLM_OPTIONS)
    backend.pop("max_retries"), backend.pop("workers"), backend.pop("api_base")
    backend["max_retry_aftr"] = 3  # a slip of our own name is still found by its spelling
    assert "backend.max_retry_aftr: unknown option (did you mean 'max_retry_after'?)" in rejected(config)


def test_grading_methods_without_inputs_are_refused_in_words():
    """NRP alone with grading.methods: the workflow's parse read inputs.queries, a KeyError traceback (a reviewer's
    finding)."""
    nrp = {"queries": "q", "corpus": "c", "answers": "a", "dimensions": {"r": {"qrels": "r"}}}
    method = {"name": "m", "kind": "self_rating", "backend": {"kind": "embedding"}}
    assert rejected({"nrp": nrp, "grading": {"methods": [method]}}) == (
        "config grading.methods: they grade the collection of `inputs`, which is missing: set inputs, or leave "
        "grading.methods out for NRP alone"
    )
    assert checked({"nrp": nrp})["grading"]["methods"] == []


@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind not in DIGIT_KINDS and kind != "extractive_qa"])
@pytest.mark.parametrize("backend", ["hf_seq2seq", "ct2_seq2seq"])
def test_fast_decoding_is_refused_for_a_kind_that_answers_no_bare_digit(kind, backend):
    """Its one step picks the likeliest digit: a qa_verify pair then held a digit for an answer, none checked
    correct, every run 0 with exit 0 (a stranger's trial), and a faggioli pair a grade of 0."""
    config = {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
              "grading": {"methods": [{"name": "m", "kind": kind, "backend": {"kind": backend, "model": "t5",
                                                                               "decoding": "fast"}}]}}  # fmt: skip
    assert rejected(config) == (
        f"config grading.methods[0].backend.decoding: `fast` reads a digit 0-5 off the answer's first token, as "
        f"self_rating, nugget_rating, thomas, criteria, criteria_llm answer; {'an' if kind[0] in 'aeiou' else 'a'} "
        f"{kind} answer is no bare digit, and every pair would get the likeliest digit: decoding beam or greedy"
    )


@pytest.mark.parametrize("kind", DIGIT_KINDS)
def test_fast_decoding_is_taken_for_a_kind_whose_answer_is_a_bare_digit(kind):
    """`fast` gives greedy's answer wherever greedy's first token is a digit: a kind that reads a bare digit as
    its grade (a self-rating 0-5, Thomas's 0-2, a criterion's 0-3) takes it."""
    from examflow.grading.backends import Answer
    from examflow.grading.methods import Pair, interpret

    config = {"inputs": {"queries": "q", "responses": "r.jsonl", "bank": "b"},
              "grading": {"methods": [{"name": "m", "kind": kind, "backend": {"kind": "hf_seq2seq", "model": "t5",
                                                                               "decoding": "fast"}}]}}  # fmt: skip
    assert checked(config)["grading"]["methods"][0]["backend"]["decoding"] == "fast"
    pair = Pair("q", None, "p", "q/1", "Why?", "Because.", query_text="why")
    assert interpret(kind, Answer("2"), pair, "strict").rating == 2  # a bare digit is its grade, strictly read
