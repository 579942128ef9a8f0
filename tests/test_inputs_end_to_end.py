"""Inputs of a stranger's trial taken through the steps as the workflow runs them (segment, pool,
bank-shard, grade, merge-grades, evaluate), each score computed here by hand."""

from __future__ import annotations

import logging
import re

import pandas as pd
import pytest
from cli_chain import examflow, graded
from conftest import write


def grade(prompt: str) -> str:
    """5 when the passage holds the question's last word, else 0."""
    question = re.search(r"Question: (.*)", prompt)[1]
    context = re.findall(r"\w+", re.search(r"Context: (.*)", prompt)[1].lower())
    return "5" if question.split()[-1].rstrip("?").lower() in context else "0"


def grade_and_evaluate(root, pool, bank, queries, *evaluations, on_unknown_query="error") -> tuple[int, list]:
    """The pool's passages graded against the bank with `grade` behind a real HTTP server; the number of
    model calls and the system rows of the leaderboard of each evaluation (its extra options)."""
    shard = root / "bank-shard.parquet"
    examflow("bank-shard", "--bank", bank, "--queries", queries, "--on-unknown-query", on_unknown_query,
             "--shard", "shard-0", "--shards", 1, "--out", shard)  # fmt: skip
    grades, calls = graded(root, pool, shard, grade)
    boards = []
    for number, options in enumerate(evaluations):
        out = root / f"eval-{number}"
        examflow("evaluate", "--grades", grades, "--pool", pool, "--questions", shard, "--tau", 4,
                 "--measures", "--bootstrap", 0, *options, "--out", out)  # fmt: skip
        board = pd.read_csv(out / "leaderboard.tsv", sep="\t")
        cover = board[(board["measure"] == "exam_cover") & (board["kind"] == "system")]
        boards.append((cover.set_index("run_id")[["score", "n_queries"]].T.to_dict("list"), out))
    return calls, boards


def test_an_empty_response_leaves_its_query_out_of_the_run_under_present_and_counts_0_under_all(tmp_path, caplog):
    queries = write(tmp_path / "queries.tsv", "tea\thow is tea made\nsolar\thow do solar panels work\n")
    bank = write(
        tmp_path / "bank.tsv",
        "query_id\tquestion\ntea\tWhat about leaves?\ntea\tWhat about water?\n"
        "solar\tWhat about panels?\nsolar\tWhat about sunlight?\n",
    )
    responses = write(
        tmp_path / "responses.jsonl",
        '{"run_id": "ragA", "query_id": "tea", "text": "Tea is made from leaves."}\n'
        '{"run_id": "ragA", "query_id": "solar", "text": "Solar panels turn sunlight into power."}\n'
        '{"run_id": "ragB", "query_id": "solar", "text": ""}\n'
        '{"run_id": "ragB", "query_id": "tea", "text": "Steep the leaves in hot water."}\n',
    )
    segments, pool = tmp_path / "segments.parquet", tmp_path / "pool"
    with caplog.at_level(logging.WARNING):
        examflow("segment", "--responses", responses, "--queries", queries, "--out", segments)
    assert f"{responses}: 1 empty response(s): the run has no passage for that query (first: line 3" in caplog.text
    assert pd.read_parquet(segments)[["run_id", "query_id"]].values.tolist() == [
        ["ragA", "tea"], ["ragA", "solar"], ["ragB", "tea"]
    ]  # fmt: skip
    examflow("pool", "--queries", queries, "--segments", segments, "--out", pool)
    calls, [(present, _), (everything, _)] = grade_and_evaluate(
        tmp_path, pool, bank, queries, ["--query-mode", "present"], ["--query-mode", "all"]
    )
    assert calls == 3 * 2  # three passages, two questions each
    # ragA: tea 1 of 2 (leaves), solar 2 of 2; ragB: tea 2 of 2 (leaves, water), solar nothing at all
    assert present == {"ragA": [pytest.approx((1 / 2 + 2 / 2) / 2), 2], "ragB": [2 / 2, 1]}
    assert everything == {"ragA": [pytest.approx((1 / 2 + 2 / 2) / 2), 2], "ragB": [pytest.approx((2 / 2 + 0) / 2), 2]}


def test_a_question_for_no_subtopic_of_its_page_is_neither_graded_nor_counted(tmp_path, caplog):
    queries = write(
        tmp_path / "queries.jsonl",
        '{"query_id": "coffee", "text": "Coffee", "subtopics": [{"facet_id": "brewing", "text": "Brewing"}, '
        '{"facet_id": "beans", "text": "Beans"}]}\n',
    )
    corpus = write(
        tmp_path / "corpus.tsv", "c1\tCoffee is brewed with hot water.\nc2\tBeans grow on coffee plants.\nc3\tMilk.\n"
    )
    runs = [
        write(tmp_path / "good.run", "coffee Q0 c1 1 2 good\ncoffee Q0 c2 2 1 good\n"),
        write(tmp_path / "poor.run", "coffee Q0 c3 1 2 poor\ncoffee Q0 c1 2 1 poor\n"),
    ]
    bank = write(
        tmp_path / "bank.tsv",
        "query_id\tfacet_id\tquestion\ncoffee\tbrewing\tHow is coffee brewed?\n"
        "coffee\tbeans\tWhere do beans grow?\ncoffee\tnosuchfacet\tWhat is roasting?\n",
    )
    pool = tmp_path / "pool"
    examflow("pool", "--queries", queries, "--runs", *runs, "--corpus", corpus, "--out", pool)
    with caplog.at_level(logging.WARNING):
        calls, [(cover, out)] = grade_and_evaluate(tmp_path, pool, bank, queries, [], on_unknown_query="warn")
    assert "1 × bank entries with an unknown facet id, dropped (first: " in caplog.text
    assert calls == 3 * 2  # c1, c2 and c3 with the two questions of the page's subtopics; roasting is not asked
    # |Q| = 2: good answers both (c1 brewed, c2 grow), poor one (c1)
    assert cover == {"good": [2 / 2, 1], "poor": [1 / 2, 1]}
    facets = (out / "qrels/llm.facets.qrels").read_text().splitlines()
    assert sorted(facets) == [
        "coffee/beans 0 c1 0", "coffee/beans 0 c2 5", "coffee/beans 0 c3 0",
        "coffee/brewing 0 c1 5", "coffee/brewing 0 c2 0", "coffee/brewing 0 c3 0",
    ]  # fmt: skip


def test_a_grading_job_s_table_is_refused_by_evaluate_which_reads_a_method_s_merged_grades(tmp_path, capsys):
    """`evaluate --grades` on one job's table, skipping `merge-grades`, scored every run 0 with exit 0 for an
    embedding method (its similarities become grades in the merge) and one shard's queries alone for any other
    (a stranger by hand)."""
    from examflow.cli import main
    from examflow.grading.merge import read_grades_metadata, write_grades

    queries = write(tmp_path / "queries.tsv", "tea\thow is tea made\n")
    bank = write(tmp_path / "bank.tsv", "query_id\tquestion\ntea\tWhat about leaves?\n")
    responses = write(tmp_path / "r.jsonl", '{"run_id": "ragA", "query_id": "tea", "text": "Tea is leaves."}\n')
    segments, pool = tmp_path / "segments.parquet", tmp_path / "pool"
    examflow("segment", "--responses", responses, "--queries", queries, "--out", segments)
    examflow("pool", "--queries", queries, "--segments", segments, "--out", pool)
    calls, [(board, _)] = grade_and_evaluate(tmp_path, pool, bank, queries, [])
    assert calls == 1 and board == {"ragA": [1.0, 1]}  # the merged table: evaluated
    job = tmp_path / "grades/shard-0.parquet"
    assert read_grades_metadata(str(job))["shard"] == "shard-0"
    # a job's table of before tables named their shard: the model's signature alone
    legacy = tmp_path / "legacy.parquet"
    write_grades(pd.read_parquet(job), {"model": read_grades_metadata(str(job))["model"]}, str(legacy))
    capsys.readouterr()
    for table, shard in ((job, "shard-0"), (legacy, "a shard")):
        evaluate = ["evaluate", "--grades", str(table), "--pool", str(pool), "--out", str(tmp_path / "eval-job")]
        assert main([*evaluate, "--measures", "--bootstrap", "0"]) == 2
        assert capsys.readouterr().err == (
            f"examflow: error: {table}: the table of one grading job ({shard}), not a method's grades: give the "
            "table `examflow merge-grades` writes of all the method's shards\n"
        )
    assert not (tmp_path / "eval-job").exists()
