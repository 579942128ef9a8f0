"""The official leaderboard: given as JSON ranks or a TSV of ranks or scores, or computed from the qrels."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys

import pandas as pd
import pytest
import pytrec_eval
from conftest import write
from test_input_errors import raises_at

from examflow.cli import main
from examflow.evaluation.official import official_leaderboard
from examflow.io.leaderboard import SHAPES, read_leaderboard


def test_a_leaderboard_is_json_ranks_or_a_tsv_of_ranks_or_scores(tmp_path):
    ranks = {"a": 1.0, "b": 2.5, "c": 2.5, "d": 4.0}
    assert read_leaderboard(write(tmp_path / "o.json", '{"a": 1, "b": 2.5, "c": 2.5, "d": 4}')) == ranks
    assert read_leaderboard(write(tmp_path / "o.tsv", "run\trank\na\t1\nb\t2.5\nc\t2.5\nd\t4\n")) == ranks
    # Scores, higher is better: b and c tie (the second differs in the 17th digit, as summation noise does).
    scores = "run_id\tscore\na\t0.9\nb\t0.30000000000000004\nc\t0.3\nd\t0.1\n"
    assert read_leaderboard(write(tmp_path / "s.tsv", scores)) == ranks
    assert read_leaderboard(write(tmp_path / "j.txt", '{"a": 1, "b": 2}')) == {"a": 1.0, "b": 2.0}  # JSON by content


def test_a_leaderboard_of_another_shape_shows_the_shapes_it_takes(tmp_path):
    wrong = write(tmp_path / "o.tsv", "system\tvalue\na\t1\n")
    with raises_at(wrong, 1, None, "expected " + re.escape(SHAPES)):
        read_leaderboard(wrong)
    twice = write(tmp_path / "t.tsv", "run\tscore\na\t1\na\t2\n")
    with raises_at(twice, 3, "run", "run 'a' is listed twice"):
        read_leaderboard(twice)
    word = write(tmp_path / "w.tsv", "run\tscore\na\thigh\n")
    with raises_at(word, 2, "score", "score 'high' is not a number"):
        read_leaderboard(word)
    both = write(tmp_path / "b.tsv", "run\trank\tscore\na\t1\t0.5\nb\t2\t0.5\nc\t2\t0.7\n")  # c above a by score
    with raises_at(both, 2, "rank", r"run 'a' \(score 0.5\) is ranked 1, ahead of run 'c' \(score 0.7, ranked 2\)"):
        read_leaderboard(both)
    both.write_text("run\trank\tscore\na\t1\t0.5\nb\t2\t0.5\nc\t3\t0.2\n")  # a tie in score broken by rank
    assert read_leaderboard(both) == {"a": 1.0, "b": 2.0, "c": 3.0}
    both.write_text("run\trank\tscore\na\t1\t-\nb\t2\t-\n")  # placeholders where the ranks are read
    assert read_leaderboard(both) == {"a": 1.0, "b": 2.0}
    underscore = write(tmp_path / "u.tsv", "run\tscore\na\t1_000\n")  # 1000 to Python, 1 to C's atof
    with raises_at(underscore, 2, "score", "score '1_000' is not a number"):
        read_leaderboard(underscore)
    infinite = write(tmp_path / "i.tsv", "run\tscore\na\tinf\n")
    with raises_at(infinite, 2, "score", "score inf is not a finite number"):
        read_leaderboard(infinite)


def test_the_official_leaderboard_from_the_qrels_by_hand():
    # Page p with two subtopics: d1 is judged 1 in s1 and 2 in s2 (2 on the page), d2 0, d3 1. Query q: e1 2.
    judgments = pd.DataFrame(
        [("p", "s1", "d1", 1), ("p", "s2", "d1", 2), ("p", "s1", "d2", 0), ("p", "s2", "d3", 1), ("q", None, "e1", 2)],
        columns=["query_id", "facet_id", "passage_id", "relevance"],
    )
    rankings = pd.DataFrame(
        [("good", "p", "d1", 1, 3.0), ("good", "p", "d3", 2, 2.0), ("good", "q", "e1", 1, 1.0),
         ("poor", "p", "d2", 1, 3.0), ("poor", "p", "d1", 2, 2.0), ("poor", "q", "e9", 1, 1.0),
         ("_gold_", "p", "d1", 1, 1.0)],
        columns=["run_id", "query_id", "passage_id", "rank", "score"],
    )  # fmt: skip
    board = official_leaderboard(rankings, judgments, "ndcg_cut_10", 1, {"good", "poor"})
    ideal = 2 + 1 / math.log2(3)  # gains 2 and 1 at ranks 1 and 2
    poor = (0 + 2 / math.log2(3)) / ideal / 2 + 0 / 2  # p: d2 (0) then d1 (2); q: nothing relevant found
    assert board.values.tolist() == [["good", pytest.approx(1.0), 1.0], ["poor", pytest.approx(poor), 2.0]]


def test_the_command_needs_judgments_and_a_known_measure(tmp_path, capsys):
    pool = tmp_path / "pool"
    pool.mkdir()
    pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"]).to_parquet(pool / "judgments.parquet")
    run = write(tmp_path / "a.run", "q Q0 d 1 1.0 a\n")
    assert main(["official", "--pool", str(pool), "--runs", str(run), "--out", str(tmp_path / "o.tsv")]) == 2
    assert "no official judgment: an official leaderboard needs qrels" in capsys.readouterr().err
    assert main(["official", "--pool", str(pool), "--runs", str(run), "--measure", "ndcg_cut_1O", "--out", "x"]) == 2
    assert "--measure: 'ndcg_cut_1O'" in capsys.readouterr().err
    assert not (tmp_path / "o.tsv").exists()


def test_the_content_decides_and_a_json_of_another_shape_shows_both_shapes(tmp_path):
    assert read_leaderboard(write(tmp_path / "saved-as.json", "run_id\tscore\na\t0.2\nb\t0.4\n")) == {
        "a": 2.0,
        "b": 1.0,
    }
    listed = write(tmp_path / "l.json", '["a", "b"]')
    with raises_at(listed, None, None, r"expected a JSON object .*" + re.escape(SHAPES) + r".*found list"):
        read_leaderboard(listed)


def test_the_command_refuses_a_run_the_pool_does_not_hold(tmp_path, capsys):
    pool = tmp_path / "pool"
    pool.mkdir()
    judged = pd.DataFrame([("q", None, "d", 1)], columns=["query_id", "facet_id", "passage_id", "relevance"])
    judged.to_parquet(pool / "judgments.parquet")
    ranked = pd.DataFrame([("a", "q", "d", 1, 1.0)], columns=["run_id", "query_id", "passage_id", "rank", "score"])
    ranked.to_parquet(pool / "rankings.parquet")
    pooled, stranger = write(tmp_path / "a.run", "q Q0 d 1 1.0 a\n"), write(tmp_path / "b.run", "q Q0 d 1 1.0 b\n")
    out = tmp_path / "o.tsv"
    assert main(["official", "--pool", str(pool), "--runs", str(pooled), str(stranger), "--out", str(out)]) == 2
    assert f"examflow: error: {stranger}: run 'b' is not in {pool / 'rankings.parquet'}" in capsys.readouterr().err
    assert not out.exists()
    assert main(["official", "--pool", str(pool), "--runs", str(pooled), "--out", str(out)]) == 0
    assert pd.read_csv(out, sep="\t").values.tolist() == [["a", 1.0, 1.0]]


def test_a_rank_written_as_a_json_string_is_no_number(tmp_path):
    quoted = write(tmp_path / "q.json", '{"a": 1, "b": "2"}')
    with raises_at(quoted, 1, "b", "rank '2' is not a number"):
        read_leaderboard(quoted)


@pytest.mark.parametrize("query_mode", ["present", "all"])
def test_compare_judges_ranks_by_the_leaderboard_examflow_official_writes(tmp_path, query_mode):
    """map at relevance level 2 (TREC DL's), with a run that lacks a query: `examflow official` and
    compare-judges' official leaderboard (the workflow's judges use it) are the same, and pytrec_eval's."""
    rng = random.Random(7)
    queries, docs = ["q1", "q2", "q3", "q4"], [f"d{i}" for i in range(12)]
    qrels = {q: {d: rng.choice([0, 0, 1, 2, 3]) for d in docs} for q in queries}
    write(tmp_path / "qrels.txt", "".join(f"{q} 0 {d} {g}\n" for q in qrels for d, g in qrels[q].items()))
    rows, runs = [], {}
    for k in range(5):
        runs[f"run{k}"] = {q: {d: rng.random() for d in rng.sample(docs, 8)} for q in queries[: 3 if k == 4 else 4]}
        ranked = [(q, d, s) for q, scored in runs[f"run{k}"].items() for d, s in scored.items()]
        ranked.sort(key=lambda row: (row[0], -row[2]))
        lines = [f"{q} Q0 {d} {i + 1} {s!r} run{k}\n" for i, (q, d, s) in enumerate(ranked)]
        write(tmp_path / "runs" / f"run{k}.txt", "".join(lines))
        rows += [(f"run{k}", q, d, i + 1, s) for i, (q, d, s) in enumerate(ranked)]
    pool = tmp_path / "pool"
    pool.mkdir()
    pd.DataFrame(rows, columns=["run_id", "query_id", "passage_id", "rank", "score"]).to_parquet(
        pool / "rankings.parquet"
    )
    judged = [(q, None, d, g) for q in qrels for d, g in qrels[q].items()]
    pd.DataFrame(judged, columns=["query_id", "facet_id", "passage_id", "relevance"]).to_parquet(
        pool / "judgments.parquet"
    )
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"map"}, relevance_level=2)
    by_hand = {}
    for run, ranked in runs.items():
        values = evaluator.evaluate(ranked)
        counted = queries if query_mode == "all" else sorted(values)
        by_hand[run] = math.fsum(values[q]["map"] if q in values else 0.0 for q in counted) / len(counted)
    files = sorted(str(path) for path in (tmp_path / "runs").iterdir())
    assert main(["official", "--pool", str(pool), "--runs", *files, "--measure", "map", "--relevance-level", "2",
                 "--query-mode", query_mode, "--out", str(tmp_path / "official.tsv")]) == 0  # fmt: skip
    official = pd.read_csv(tmp_path / "official.tsv", sep="\t")
    assert dict(zip(official["run_id"], official["score"])) == pytest.approx(by_hand, abs=1e-12)
    assert main(["compare-judges", "--runs", *files, "--official-qrels", str(tmp_path / "qrels.txt"),
                 "--official-measure", "map", "--official-relevance-level", "2", "--query-mode", query_mode,
                 "--labels", f"copy={tmp_path / 'qrels.txt'}", "--bootstrap", "0",
                 "--out", str(tmp_path / "judges")]) == 0  # fmt: skip
    boards = pd.read_csv(tmp_path / "judges" / "leaderboards.tsv", sep="\t")
    truth = boards[(boards["label_set"] == "official") & (boards["measure"] == "AP(rel=2)")]
    assert dict(zip(truth["run_id"], truth["score"])) == pytest.approx(by_hand, abs=1e-12)
    assert dict(zip(truth["run_id"], truth["rank"])) == dict(zip(official["run_id"], official["rank"]))
    # ... and in AutoJudge's file, beside the label sets' boards
    lines = [line.split("\t") for line in (tmp_path / "judges" / "autojudge.eval.txt").read_text().splitlines()]
    means = {
        run: float(value) for run, measure, topic, value in lines if measure == "official:AP(rel=2)" and topic == "all"
    }
    assert means == pytest.approx(by_hand, abs=1e-12)
    # the level is the official leaderboard's: the label sets' map stays trec_eval's default, level 1
    assert set(boards.loc[boards["label_set"] == "copy", "measure"]) == {"map"}


def test_a_relevance_level_only_where_the_official_measure_takes_one(tmp_path, capsys):
    write(tmp_path / "qrels.txt", "q 0 d 2\nq 0 e 0\n")
    write(tmp_path / "a.run", "q Q0 d 1 2.0 a\nq Q0 e 2 1.0 a\n")
    write(tmp_path / "b.run", "q Q0 e 1 2.0 b\nq Q0 d 2 1.0 b\n")
    common = ["compare-judges", "--runs", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--official-qrels",
              str(tmp_path / "qrels.txt"), "--official-relevance-level", "2", "--bootstrap", "0"]  # fmt: skip
    assert main([*common, "--official-measure", "AP", "--out", str(tmp_path / "x")]) == 2
    assert "a relevance level goes into ir-measures' syntax itself (AP(rel=2))" in capsys.readouterr().err
    write(tmp_path / "given.json", '{"a": 1, "b": 2}')
    given = [*common[:-4], "--official-relevance-level", "1", "--bootstrap", "0"]  # even level 1, said aloud
    assert main([*given, "--official", str(tmp_path / "given.json"), "--out", str(tmp_path / "x")]) == 2
    assert "--official-relevance-level: the level of an official leaderboard computed" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    # nDCG weighs the labels themselves: the level leaves it, and its name, alone
    for name in ("ndcg_cut_10", "nDCG@10"):
        assert main([*common, "--official-measure", name, "--out", str(tmp_path / name)]) == 0
        boards = pd.read_csv(tmp_path / name / "leaderboards.tsv", sep="\t")
        assert set(boards["measure"]) == {name}


@pytest.mark.parametrize(
    ("command", "option"),
    [(["official", "--pool", "p", "--runs", "r", "--out", "o"], "--relevance-level"),
     (["compare-judges", "--runs", "r", "--official-qrels", "q", "--out", "o"], "--official-relevance-level"),
     (["evaluate", "--workbench-graded", "g", "--out", "o"], "--min-relevant-judgment")],
)  # fmt: skip
def test_a_relevance_level_is_1_or_more(tmp_path, capsys, command, option):
    for level in ("0", "-1"):
        assert main([*command, option, level]) == 2
        assert f"{option}: must be at least 1, not {level}" in capsys.readouterr().err


def test_a_query_judged_minus_2_alone_is_judged_non_relevant():
    """TREC CAR's -2 is never relevant (validation.relevance_range); handed to pytrec_eval as it is, a
    query judged -2 alone crashed the process (a segmentation fault, no message). A child process runs it,
    so that a crash fails this test instead of ending the suite."""
    code = """if True:
        import json
        import pandas as pd
        from examflow.evaluation.official import official_leaderboard
        judgments = pd.DataFrame([("q3", None, "d6", 2), ("q4", None, "d4", -2)],
                                 columns=["query_id", "facet_id", "passage_id", "relevance"])
        rankings = pd.DataFrame([("good", "q3", "d6", 1, 2.0), ("good", "q4", "d4", 1, 1.0),
                                 ("poor", "q3", "d9", 1, 2.0), ("poor", "q4", "d4", 1, 1.0)],
                                columns=["run_id", "query_id", "passage_id", "rank", "score"])
        board = official_leaderboard(rankings, judgments, "P_1", 1, {"good", "poor"})
        print(json.dumps(board.values.tolist()))
    """
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    # good: q3 1 relevant of 1, q4 nothing relevant (-2 is not) -> (1 + 0) / 2; poor: 0 on both
    assert json.loads(child.stdout) == [["good", 0.5, 1.0], ["poor", 0.0, 2.0]]


def test_equal_mean_precisions_are_one_float_as_evaluate_sums_them():
    """P@5 of 3/5 on one query of five against 1/5 and 2/5 on two: both means are 3/25. Summed as floats,
    0.2 + 0.4 made the second 0.12000000000000002 (a stranger's two systems, equal, written unequal)."""
    queries = [f"q{i}" for i in range(1, 6)]
    judgments = pd.DataFrame(
        [(q, None, f"{q}-r{i}", 1) for q in queries for i in range(5)]
        + [(q, None, f"{q}-n{i}", 0) for q in queries for i in range(5)],
        columns=["query_id", "facet_id", "passage_id", "relevance"],
    )
    relevant_found = {"x": {"q1": 3}, "y": {"q1": 1, "q2": 2}}
    rankings = pd.DataFrame(
        [
            (run, q, f"{q}-{'r' if i < found.get(q, 0) else 'n'}{i}", i + 1, 5.0 - i)
            for run, found in relevant_found.items()
            for q in queries
            for i in range(5)
        ],
        columns=["run_id", "query_id", "passage_id", "rank", "score"],
    )
    board = official_leaderboard(rankings, judgments, "P_5", 1, {"x", "y"})
    assert board["score"].tolist() == [3 / 25, 3 / 25] and board["rank"].tolist() == [1.5, 1.5]
