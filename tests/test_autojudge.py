"""TREC AutoJudge leaderboards: `compare-judges` writes its label sets' leaderboards as AutoJudge reads
them (per topic, and an `all` line per run and measure), and compares another judge's AutoJudge file as
a label set of its own. Values checked against pytrec_eval and scipy."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import pytrec_eval
from scipy import stats
from test_compare_judges import by_hand_ndcg10, campaign, qrels_dict

from examflow.cli import main
from examflow.io.autojudge import format_leaderboard, read_autojudge


def compare(tmp_path, *extra: str) -> pd.DataFrame:
    tmp_path.mkdir(exist_ok=True)
    files = campaign(tmp_path)
    assert main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                 str(files["official"]), "--labels", f"noisy={files['noisy']}", "--bootstrap", "100",
                 "--out", str(tmp_path / "out"), *extra]) == 0  # fmt: skip
    return pd.read_csv(tmp_path / "out" / "agreement.tsv", sep="\t").set_index(["label_set", "measure", "statistic"])


def per_query_ndcg(qrels_path, run_path) -> dict[str, float]:
    run: dict[str, dict[str, float]] = {}
    for line in run_path.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        run.setdefault(q, {})[d] = float(score)
    values = pytrec_eval.RelevanceEvaluator(qrels_dict(qrels_path), {"ndcg_cut_10"}).evaluate(run)
    return {q: v["ndcg_cut_10"] for q, v in values.items()}


def test_the_label_sets_leaderboards_as_autojudge_lines(tmp_path):
    """`run measure topic value` per judged topic a run ranks, then `run measure all mean`: the mean the
    leaderboard shows."""
    compare(tmp_path)
    lines = [line.split("\t") for line in (tmp_path / "out" / "autojudge.eval.txt").read_text().splitlines()]
    assert all(len(line) == 4 for line in lines)
    values = {(run, measure, topic): float(value) for run, measure, topic, value in lines}
    assert len(values) == len(lines)
    expected = per_query_ndcg(tmp_path / "noisy labels.qrels", tmp_path / "runs [all]" / "r3.txt")
    mine = {topic: v for (run, measure, topic), v in values.items() if run == "r3" and measure == "noisy:ndcg_cut_10"}
    assert mine.pop("all") == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)
    assert mine == pytest.approx(expected, abs=1e-12)
    # r0 does not rank q5: no line, and its mean is over the five topics it ranks, as the leaderboard's
    official = by_hand_ndcg10(tmp_path / "official.qrels", tmp_path / "runs [all]")
    assert ("r0", "official:ndcg_cut_10", "q5") not in values
    assert values[("r0", "official:ndcg_cut_10", "all")] == pytest.approx(official["r0"], abs=1e-12)
    assert {measure for _, measure, _ in values} == {"official:ndcg_cut_10", "noisy:ndcg_cut_10"}


def test_another_judges_leaderboard_is_compared_as_it_is(tmp_path):
    """An AutoJudge file read back (its per-topic values) agrees with the official leaderboard exactly as
    the label set it came from, intervals included (the same topics, resampled alike); a file of `all`
    lines only (ir_measures' column order) is compared on its scores."""
    first = compare(tmp_path)
    written = tmp_path / "team.eval.txt"
    written.write_text((tmp_path / "out" / "autojudge.eval.txt").read_text())
    scores = {f"r{k}": (k * 7) % 10 / 10 for k in range(10)}  # a judge that ranks the runs its own way
    (tmp_path / "other.txt").write_text("".join(f"r{k} all SCORE {scores[f'r{k}']}\n" for k in range(10)))
    again = compare(tmp_path / "again", "--leaderboard", f"team={written}")
    for statistic in ("kendall", "spearman", "pearson", "tau_ap", "rbo"):
        mine = again.loc[("team", "noisy:ndcg_cut_10", statistic)]
        theirs = first.loc[("noisy", "ndcg_cut_10", statistic)]
        assert mine[["value", "low", "high", "runs"]].tolist() == pytest.approx(
            theirs[["value", "low", "high", "runs"]].tolist(), abs=1e-12
        ), statistic
    other = compare(tmp_path / "other", "--leaderboard", f"other={tmp_path / 'other.txt'}",
                    "--leaderboard-layout", "ir_measures")  # fmt: skip
    official = by_hand_ndcg10(tmp_path / "other" / "official.qrels", tmp_path / "other" / "runs [all]")
    runs = sorted(official)
    tau = stats.kendalltau([scores[r] for r in runs], [official[r] for r in runs]).statistic
    assert other.loc[("other", "SCORE", "kendall"), "value"] == pytest.approx(tau, abs=1e-12)
    boards = pd.read_csv(tmp_path / "other" / "out" / "leaderboards.tsv", sep="\t")
    shown = boards[boards["label_set"] == "other"]
    assert dict(zip(shown["run_id"], shown["score"])) == pytest.approx(scores)


def test_both_layouts_round_trip(tmp_path):
    values = pd.DataFrame(
        [("a", "M", "1", 0.5), ("a", "M", "2", 0.25), ("b", "M", "1", float("nan")), ("b", "M", "2", 1.0)],
        columns=["run_id", "measure", "topic_id", "value"],
    )
    for layout in ("tot", "ir_measures"):
        text = format_leaderboard(values, layout)
        assert text.splitlines()[0] == ("a\tM\t1\t0.5" if layout == "tot" else "a\t1\tM\t0.5")
        path = tmp_path / f"{layout}.txt"
        path.write_text(text)
        read = read_autojudge(path, layout)["M"]
        assert read.per_topic == {"a": {"1": 0.5, "2": 0.25}, "b": {"2": 1.0}}
        assert read.overall == {"a": 0.375, "b": 1.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("r1 M q0 0.5\nr1 M q1\n", ":2: expected 4 columns (run_id measure topic_id value), found 3"),
        ("r1 M q0 0.5\nr2 M q0 high\n", ":2: field 'value': value 'high' is not a number"),
        ("r1 M q0 0.5\nr2 M q0 nan\n", ":2: field 'value': value 'nan' is not a finite number"),
        (
            "r1 M q0 0.5\nr1 M q0 0.6\n",
            ":2: field 'topic_id': run 'r1', measure 'M', topic 'q0' again (first on line 1)",
        ),
        ("r1 M q0 0.5\nghost M q0 0.6\n", ":2: field 'run_id': run 'ghost' is not among the runs of --runs"),
        ("r1 M q0 0.5\nr2 M all 0.6\n", "measure 'M': run 'r2' has only an `all` line"),
    ],
)
def test_a_bad_leaderboard_is_one_line_naming_file_and_line(tmp_path, text, message):
    files = campaign(tmp_path)
    (tmp_path / "team.txt").write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
         str(tmp_path / "runs [all]" / "r2.txt"), "--official-qrels", str(files["official"]), "--leaderboard",
         f"team={tmp_path / 'team.txt'}", "--out", str(tmp_path / "out")], capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_a_leaderboard_name_is_given_once(tmp_path):
    files = campaign(tmp_path)
    (tmp_path / "team.txt").write_text("r1 M all 0.5\nr2 M all 0.6\n")
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
         str(tmp_path / "runs [all]" / "r2.txt"), "--official-qrels", str(files["official"]), "--labels",
         f"team={files['noisy']}", "--leaderboard", f"team={tmp_path / 'team.txt'}", "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert (
        result.returncode != 0
        and "--leaderboard 'team=" in result.stderr
        and "the name 'team' is taken" in result.stderr
    )
