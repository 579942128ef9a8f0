"""NRP (SPEC §6) by hand: fixed scores from hand-written run files, a tiny monoT5 built here, the
published expert-agreement interval, and the `examflow nrp` command end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest
from conftest import write
from tiny_models import build_tiny_t5

from examflow.errors import InputError, Problems
from examflow.nrp.evaluate import NRPInputs, NRPSettings, mean_interval, nrp_tables
from examflow.nrp.inputs import read_answers, read_expert
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


def test_nrp_by_hand_with_ties_both_denominators_an_empty_answer_and_a_single_document(tmp_path):
    # q1: documents d1..d4 score 4, 3, 2, 2. Answer A scores 2 (ties d3, d4: they count against it),
    # B scores 5 (above all), the empty answer C scores 0. q2 has one judged document, scoring 1.
    lines = "".join(run_line("q1", d, s) for d, s in [("d1", 4), ("d2", 3), ("d3", 2), ("d4", 2)])
    lines += run_line("q1", "m/p/A", 2) + run_line("q1", "m/p/B", 5) + run_line("q1", "m/p/C", 0)
    lines += run_line("q2", "e1", 1) + run_line("q2", "m/p/A", 1) + run_line("q2", "m/p/B", 0.5)
    lines += run_line("q2", "m/p/C", 3)  # C is missing for q2: scored as the empty string, here 3
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
        ("docs", {("A", "q1"): 1 - 4 / 4, ("B", "q1"): 1.0, ("C", "q1"): 0.0, ("A", "q2"): 0.0, ("B", "q2"): 0.0, ("C", "q2"): 1.0}),
        ("list", {("A", "q1"): 1 - 4 / 5, ("B", "q1"): 1.0, ("C", "q1"): 1 - 4 / 5, ("A", "q2"): 0.5, ("B", "q2"): 0.5, ("C", "q2"): 1.0}),
    ):  # fmt: skip
        tables = nrp_tables(
            inputs, NRPSettings([ranker], {"relevance": 1.0}, denominator=denominator, cache_dir=tmp_path)
        )
        per_answer = tables["per_answer.tsv"].set_index(["sample", "query_id"])
        assert {key: per_answer.loc[key, "nrp"] for key in expected} == pytest.approx(expected)
        assert per_answer.loc[("A", "q1"), "rank"] == 4 and per_answer.loc[("A", "q1"), "n_docs"] == 4
        assert per_answer.loc[("C", "q1"), "answer"] == "empty" and per_answer.loc[("C", "q2"), "answer"] == "missing"
        # The system: mean over samples per query, then over queries; empty and missing answers counted.
        system = tables["per_system.tsv"].iloc[0]
        q1 = (expected["A", "q1"] + expected["B", "q1"] + expected["C", "q1"]) / 3
        q2 = (expected["A", "q2"] + expected["B", "q2"] + expected["C", "q2"]) / 3
        assert system["nrp"] == pytest.approx((q1 + q2) / 2) and system["n_empty"] == 2 and system["n_queries"] == 2
        assert system["stderr"] == pytest.approx(abs(q1 - q2) / 2)  # stdev of two values / √2


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
    per_answer = nrp_tables(inputs, settings)["per_answer.tsv"].set_index("dimension")
    # relevance: d1 scores above (r = 1 of 2) -> 0.5; readability: none above (r = 0) -> 1.0
    assert per_answer.loc["relevance", "nrp"] == 0.5 and per_answer.loc["readability", "nrp"] == 1.0
    assert per_answer.loc["combined", "nrp"] == pytest.approx(0.25 * 0.5 + 0.75 * 1.0)
    assert per_answer.loc["combined", "ranker"] == "fixed+fixed"


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
    run = write(tmp_path / "x.run", "q1 Q0 d1 1 7.5 ext\nq1 Q0 gpt/short/0 2 9.0 ext\nq9 Q0 d1 1 1 ext\n")
    query = QueryItems("q1", "query", {"d1": "a", "d2": "b"}, {"gpt/short/0": "an answer"})
    scores = RunScores(str(run)).scores([query])
    assert scores == {("q1", "d1"): 7.5, ("q1", "d2"): -math.inf, ("q1", "gpt/short/0"): 9.0}  # d2 unranked: last
    with pytest.raises(InputError, match=r"x.run: no score for answer 'gpt/long/0' of query 'q1'"):
        RunScores(str(run)).scores([QueryItems("q1", "query", {"d1": "a"}, {"gpt/long/0": "b"})])


def test_bm25_scores_documents_and_answers_alike_with_the_judged_documents_statistics():
    import bm25s

    documents = {"d1": "glaciers move because ice deforms", "d2": "glacier speed depends on slope and ice",
                 "d3": "bread rises with yeast"}  # fmt: skip
    query = QueryItems("q", "why do glaciers move", documents, {"m/p/0": "glaciers move because ice deforms"})
    scores = BM25().scores([query])
    reference = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    reference.index(bm25s.tokenize(list(documents.values()), stopwords="en", show_progress=False), show_progress=False)
    expected = reference.get_scores(bm25s.tokenize(["why do glaciers move"], stopwords="en", return_ids=False)[0])
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


def nrp_command(*args: str) -> subprocess.CompletedProcess:
    """`examflow nrp ...`, then a line saying whether torch was ever imported."""
    script = "import sys; from examflow.cli import main; code = main(sys.argv[1:]); print('torch' in sys.modules); sys.exit(code)"
    return subprocess.run([sys.executable, "-c", script, "nrp", *args], capture_output=True, text=True)


def test_the_command_needs_no_model_with_the_run_ranker_and_names_bad_options(tmp_path):
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
    for args, message in (
        (["--qrels", "relevance"], "--qrels 'relevance': expected NAME=VALUE"),
        ([*qrels, "--weight", "relevance=heavy"], "--weight 'relevance=heavy': expected NAME=VALUE with a float"),
        ([*qrels, "--fix-ranker", "relevance=monot5"], "--fix-ranker: 'monot5' is none of the --ranker names"),
        ([*qrels, "--weight", "clarity=1"], "--weight: 'clarity' is no dimension of --qrels"),
    ):
        failed = nrp_command(*base, *args)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr


def test_answers_and_expert_rankings_are_checked(tmp_path):
    bad = write(tmp_path / "a.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": 5}\n')
    with pytest.raises(InputError, match=r"a.jsonl:1: field 'text': expected a string or null, found int"):
        read_answers(bad, {"q1"}, Problems("error"))
    twice = write(tmp_path / "b.jsonl", '{"llm": "m", "prompt": "p", "sample": 0, "query_id": "q1", "text": "x"}\n' * 2)
    with pytest.raises(InputError, match=r"b.jsonl:2: field 'sample': a second answer m/p/0 to query 'q1'"):
        read_answers(twice, {"q1"}, Problems("error"))
    known = {"q1": {"d1", "m/p/0"}}
    with pytest.raises(InputError, match=r"e.tsv:2: field 'item': 'd9' is no judged document or answer of query 'q1'"):
        read_expert(write(tmp_path / "e.tsv", "q1\td1\t1\nq1\td9\t2\n"), known)
    assert read_expert(write(tmp_path / "e.json", '{"q1": ["m/p/0", "d1"]}'), known)["rank"].tolist() == [1.0, 2.0]
