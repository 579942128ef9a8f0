"""The registry holds every difference between method kinds, back ends and rankers: a new kind or back
end is one entry plus its module. Proved here by registering a throwaway kind and back end (defined in
this file) and taking them through the config check, the plan, a grading job and the merge."""

from __future__ import annotations

import argparse
import re
from importlib import import_module
from string import Formatter

import pandas as pd
import pytest

from examflow import registry
from examflow.config import schema
from examflow.grading.grader import ShardGrader
from examflow.grading.merge import merge_grades
from examflow.grading.methods import READINGS, Pair
from examflow.options import Option
from examflow.plan import job_seconds, job_share, plan_method
from examflow.prompts import template
from examflow.rates import PROMPTS, Rate

QUESTION = "how do bees make honey"
PASSAGES = ["bees make honey from nectar", "the moon raises tides", "honeybees dance", "bees sleep at night"]


class KeywordBackend:
    """Answers `yes` when the passage holds a word of the question at least `min_length` long."""

    def __init__(self, min_length: int = 4):
        self.min_length = min_length
        self.signature = keyword_signature({"min_length": min_length}, False)

    def answer(self, requests):
        from examflow.grading.backends import Answer

        answers = []
        for request in requests:
            words = {w for w in request.fields["question"].split() if len(w) >= self.min_length}
            answers.append(Answer("yes" if words & set(request.fields["context"].split()) else "no"))
        return answers


def keyword_rate(options: dict, on_gpu: bool) -> Rate:
    return Rate(0.5, 100.0, PROMPTS, "a throwaway back end of the tests")


def keyword_signature(options: dict, on_gpu: bool, config=None) -> dict:
    return {"backend": "throwaway", "min_length": options["min_length"]}


@pytest.fixture
def keyword(monkeypatch):
    """The kind `throwaway_kind` and the back end `throwaway`, registered for one test."""
    kind = registry.Kind("grade-self-rating", "question", "binary")
    backend = registry.Backend(
        {"min_length": Option("integer", 4, "shortest word that counts", minimum=1)},
        "test_registry:KeywordBackend", keyword_rate, keyword_signature, gpus=0, parse_mode="strict",
        kinds=frozenset({"throwaway_kind"}),
    )  # fmt: skip
    monkeypatch.setitem(registry.KINDS, "throwaway_kind", kind)
    monkeypatch.setitem(registry.BACKENDS, "throwaway", backend)
    return {"name": "kw", "kind": "throwaway_kind", "backend": {"kind": "throwaway", "min_length": 5}}


def tables():
    passages = pd.DataFrame({"query_id": "q1", "passage_id": [f"p{i}" for i in range(4)], "text": PASSAGES,
                             "origin": "retrieved"})  # fmt: skip
    questions = pd.DataFrame({"query_id": ["q1"], "facet_id": None, "question_id": ["q1/a"], "question_text": QUESTION,
                              "kind": "question", "gold_answers": None, "choices": None})  # fmt: skip
    queries = pd.DataFrame({"query_id": ["q1"], "facet_id": None, "query_text": ["bees"], "facet_text": None})
    return passages, questions, queries


def test_a_throwaway_kind_and_back_end_are_one_entry_each(keyword, tmp_path):
    method = registry.check_method("grading.methods[0]", keyword)
    assert method.mode == "strict" and method.gpu == 0 and method.calibration is None
    assert method.record() == {"backend": {"kind": "throwaway", "min_length": 5}, "gpu": 0, "kind": "throwaway_kind",
                               "mode": "strict", "name": "kw"}  # fmt: skip
    with pytest.raises(registry.ConfigError, match=r"backend\.min_length: must be at least 1, not 0"):
        registry.check_method("m", keyword | {"backend": {"kind": "throwaway", "min_length": 0}})
    # The schema, the option tables and the plan know them without another line of code.
    loaded = schema()["$defs"]["method"]["properties"]
    assert "throwaway_kind" in loaded["kind"]["enum"] and "throwaway" in loaded["backend"]["properties"]["kind"]["enum"]
    assert "| `throwaway` | `min_length` | `4` | shortest word that counts |" in registry.options_markdown()
    passages, questions, queries = tables()
    assert job_share(method, passages, questions, queries).work == 4  # one prompt a pair
    assert job_seconds(method, passages, questions, queries) == pytest.approx(0.5 + 4 / 100)
    plan = plan_method(method, passages, questions, queries, str(tmp_path / "cache"))
    assert (plan.backend, plan.pairs, plan.work, plan.unit, plan.on) == ("throwaway", 4, 4, "prompts", "CPU")
    # A grading job and the merge: words of five letters or more, "honey" only, are in p0 alone.
    pairs = [Pair("q1", None, f"p{i}", "q1/a", QUESTION, text) for i, text in enumerate(PASSAGES)]
    grades = ShardGrader(method, str(tmp_path / "cache")).grade(pairs)
    assert grades["rating"].tolist() == [1, 0, 0, 0] and grades["answer"].tolist() == ["yes", "no", "no", "no"]
    merged, metadata = merge_grades([grades], method)
    assert metadata["method"] == method.record() and metadata["pairs"] == 4 and "embedding_grades" not in metadata
    assert merged["model"].isna().all()  # the signature names no model


def placeholders(name: str) -> set[str]:
    return {field for _, field, _, _ in Formatter().parse(template(name)) if field}


@pytest.mark.parametrize("name", sorted(registry.KINDS))
def test_every_kind_names_a_reading_and_prompts_that_take_its_fields(name):
    kind = registry.KINDS[name]
    assert kind.grade in READINGS
    # a listed target goes as nuggetizer's assigner asks: the nuggets as a list, their number, the query
    fields = {"query", "nuggets", "num_nuggets"} if kind.listed else {kind.target}
    fields |= {"criterion", "definition"} if kind.criteria else set()  # each criterion named and defined
    assert placeholders(kind.template) == fields | {"context"}
    if kind.verification:
        assert placeholders(kind.verification) == {"question", "correct_answer", "answer"}


@pytest.mark.parametrize("entry", [*registry.BACKENDS.values(), *registry.RANKERS.values()])
def test_every_factory_names_a_class_and_every_option_has_help(entry):
    module, name = entry.factory.split(":")
    assert isinstance(getattr(import_module(module), name), type)
    assert all(option.help for option in entry.options.values())


def test_every_back_end_serves_known_kinds_and_parses_in_a_known_mode():
    for backend in registry.BACKENDS.values():
        assert backend.kinds <= set(registry.KINDS)
        assert backend.parse_mode in (*registry.PARSE_MODES, None)
    assert [kind for kind, entry in registry.BACKENDS.items() if entry.by_quantiles] == ["embedding"]
    assert set(registry.MERGE_ONLY) == {"quantiles", "calibration"}


def test_ranker_entries_say_what_the_nrp_job_needs():
    rankers = [registry.check_ranker(f"r[{i}]", spec) for i, spec in enumerate(
        [{"kind": "bm25"}, {"kind": "run", "path": "scores.run"}, {"kind": "embedding", "name": "e"}]
    )]  # fmt: skip
    assert registry.ranker_gpus(rankers) == 0 and registry.ranker_files(rankers) == ["scores.run"]
    assert registry.ranker_gpus([*rankers, registry.check_ranker("r", {"kind": "monot5"})]) == 1
    assert re.fullmatch(r"[a-z.]+:[A-Za-z0-9]+", registry.RANKERS["monot5"].factory)


def test_only_a_model_option_that_names_a_folder_has_local_weights(tmp_path, monkeypatch):
    """The grading rule's params hold a local model folder's version, so that new weights rerun its grading.
    An `openai` model is a name sent to a server: a folder here of that name (a stranger's server lived in
    `mock/`) made every call of the server, which wrote its log there, rerun every grading job."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mock").mkdir()
    (tmp_path / "mock" / "config.json").write_text("{}")
    api = registry.check_method("m", {"name": "api", "kind": "self_rating", "backend": {
        "kind": "openai", "model": "mock", "base_url": "http://127.0.0.1:9/v1"}})  # fmt: skip
    local = registry.check_method("m", {"name": "local", "kind": "self_rating",
                                        "backend": {"kind": "hf_seq2seq", "model": "mock"}})  # fmt: skip
    assert api.backend.local_weights() == ""
    before = local.backend.local_weights()
    assert re.fullmatch(r"[0-9a-f]{32}", before)
    (tmp_path / "mock" / "requests.log").write_text("one call\n")
    assert api.backend.local_weights() == "" and local.backend.local_weights() != before


def test_the_folder_outputs_are_the_commands_that_write_a_folder():
    """`examflow.outputs.FOLDERS` names the files an output folder holds, for the check that no input is one
    of them: a command left out would replace such an input in silence."""
    from examflow.cli import _written_folder, parser
    from examflow.outputs import FOLDERS

    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    folders = {
        name
        for name, command in commands.items()
        for action in command._actions
        if getattr(action.type, "func", None) is _written_folder
    }
    assert folders == set(FOLDERS) == {"pool", "evaluate", "compare-judges", "nrp", "report"}
