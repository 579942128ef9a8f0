"""`examflow compare-judges`: label sets compared by their leaderboards and labels, each number checked
against a library (scipy, pytrec_eval, ir-measures) or a computation by hand written here."""

from __future__ import annotations

import io
import itertools
import json
import logging
import math
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from conftest import write
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from examflow.cli import main
from examflow.evaluation.correlation import leaderboard_correlation, tau_ap
from examflow.evaluation.judges import STATISTICS, Settings, Sides, parse_measure, per_query_values, run_dictionaries
from examflow.io.runs import read_run
from examflow.report.board import Board as SummaryBoard
from examflow.report.pages import judges_page
from examflow.summary import run_summary

SETTINGS = Settings(top_k=4, persistence=0.8, replicates=0)


# -- a campaign: 6 queries, 10 runs of growing skill, three judges --------------------------------------------


def campaign(root: Path, seed: int = 3) -> dict[str, Path]:
    rng = random.Random(seed)
    queries, docs = [f"q{i}" for i in range(6)], [f"d{j}" for j in range(25)]
    truth = {(q, d): rng.choice([0, 0, 0, 1, 2, 3]) for q in queries for d in docs}
    noisy = {key: max(0, min(3, grade + rng.choice([-1, 0, 0, 1]))) for key, grade in truth.items()}
    files = {"official": root / "official.qrels", "noisy": root / "noisy labels.qrels", "copy": root / "copy.qrels"}
    for name, labels in (("official", truth), ("noisy", noisy), ("copy", truth)):
        files[name].write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in labels.items()))
    (root / "runs [all]").mkdir()
    for k in range(10):
        lines = []
        for q in queries[: 5 if k == 0 else 6]:  # run 0 does not rank q5: it scores 0 there
            ranked = sorted(docs, key=lambda d: -(truth[(q, d)] * k / 8 + rng.random() * 2))
            lines += [f"{q} Q0 {d} {i + 1} {20 - i} r{k}\n" for i, d in enumerate(ranked[:20])]
        (root / "runs [all]" / f"r{k}.txt").write_text("".join(lines))
    return files


def qrels_dict(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    return qrels


def by_hand_ndcg10(qrels_path: Path, runs: Path, complete: bool = False) -> dict[str, float]:
    """Each run's nDCG@10 from pytrec_eval directly: the mean over the judged queries it ranks, or over
    all judged queries, a query the run lacks counting 0 (`complete`)."""
    qrels = qrels_dict(qrels_path)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    scores = {}
    for path in sorted(runs.iterdir()):
        run: dict[str, dict[str, float]] = {}
        for line in path.read_text().splitlines():
            q, _, d, _, score, tag = line.split()
            run.setdefault(q, {})[d] = float(score)
        values = evaluator.evaluate(run)
        counted = qrels if complete else [q for q in qrels if q in values]
        scores[tag] = sum(values[q]["ndcg_cut_10"] if q in values else 0.0 for q in counted) / len(counted)
    return scores


def test_the_command_writes_leaderboards_and_agreements_checked_by_hand(tmp_path):
    files = campaign(tmp_path)
    out = tmp_path / "out"
    assert main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                 str(files["official"]), "--labels", f"noisy={files['noisy']}", f"copy={files['copy']}",
                 "--measure", "ndcg_cut_10", "--measure", "Compat(p=0.9)", "--bootstrap", "200",
                 "--out", str(out)]) == 0  # fmt: skip
    boards = pd.read_csv(out / "leaderboards.tsv", sep="\t")
    for name in ("official", "noisy"):
        mine = boards[(boards["label_set"] == name) & (boards["measure"] == "ndcg_cut_10")]
        expected = by_hand_ndcg10(files[name], tmp_path / "runs [all]")
        assert dict(zip(mine["run_id"], mine["score"])) == pytest.approx(expected, abs=1e-12)
    agreement = pd.read_csv(out / "agreement.tsv", sep="\t").set_index(["label_set", "measure", "statistic"])
    assert set(agreement.index.get_level_values("statistic")) == set(STATISTICS)
    # The official leaderboard is not compared with itself; the official qrels under Compat are.
    assert ("official", "ndcg_cut_10", "kendall") not in agreement.index
    assert ("official", "Compat(p=0.9)", "kendall") in agreement.index
    official = by_hand_ndcg10(files["official"], tmp_path / "runs [all]")
    noisy = by_hand_ndcg10(files["noisy"], tmp_path / "runs [all]")
    runs = sorted(official)
    tau = stats.kendalltau([noisy[r] for r in runs], [official[r] for r in runs]).statistic
    row = agreement.loc[("noisy", "ndcg_cut_10", "kendall")]
    assert row["value"] == pytest.approx(tau, abs=1e-12) and row["runs"] == 10
    assert row["low"] <= row["high"] and row["low"] < 1
    # A judge that labels as the officials did agrees in every bootstrap sample: the samples are paired.
    for statistic in STATISTICS:
        same = agreement.loc[("copy", "ndcg_cut_10", statistic)]
        assert same["value"] == pytest.approx(1.0) and same["low"] == pytest.approx(1.0) == same["high"]
    # --query-mode all: a query a run does not rank counts 0 (run r0 lacks q5)
    assert main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                 str(files["official"]), "--query-mode", "all", "--bootstrap", "0", "--out", str(tmp_path / "all")]) == 0  # fmt: skip
    complete = pd.read_csv(tmp_path / "all" / "leaderboards.tsv", sep="\t")
    expected = by_hand_ndcg10(files["official"], tmp_path / "runs [all]", complete=True)
    assert dict(zip(complete["run_id"], complete["score"])) == pytest.approx(expected, abs=1e-12)
    assert expected["r0"] < official["r0"]
    labels = pd.read_csv(out / "labels.tsv", sep="\t").set_index(["label_set", "statistic"])
    assert labels.loc[("copy", "cohen_kappa"), "value"] == 1.0 and labels.loc[("copy", "cohen_kappa"), "pairs"] == 150
    confusion = pd.read_csv(out / "confusion.tsv", sep="\t")
    noisy_cells = confusion[confusion["label_set"] == "noisy"]
    truth, noisy_labels = qrels_dict(files["official"]), qrels_dict(files["noisy"])
    counted = pd.Series([(noisy_labels[q][d], g) for q in truth for d, g in truth[q].items()]).value_counts()
    assert {(a, b): c for a, b, c in noisy_cells[["label", "official", "count"]].itertuples(index=False) if c} == (
        counted.to_dict()
    )


def test_a_label_set_s_query_that_is_no_query_is_refused_or_dropped_with_queries(tmp_path, capsys):
    """A typo'd query id in one label set was read without a word, and every replicate drew it: the other
    label sets' intervals moved (a stranger's trial). With --queries it is refused, or dropped under warn,
    which gives the tables of the file without it."""
    files = campaign(tmp_path)
    (tmp_path / "queries.tsv").write_text("".join(f"q{i}\tquery {i}\n" for i in range(6)))
    stray = tmp_path / "stray.qrels"
    stray.write_text(files["noisy"].read_text() + "q99 0 d1 1\n")

    def compare(labels: Path, out: str, *options: str) -> int:
        return main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                     str(files["official"]), "--labels", f"noisy={labels}", "--bootstrap", "100", *options,
                     "--out", str(tmp_path / out)])  # fmt: skip

    queries = ("--queries", str(tmp_path / "queries.tsv"))
    assert compare(stray, "refused", *queries) == 2 and not (tmp_path / "refused").exists()
    assert capsys.readouterr().err.endswith(f"examflow: error: {stray}:151: field 'query_id': unknown query id 'q99'\n")
    assert (
        compare(files["noisy"], "clean", *queries) == 0
        and compare(stray, "dropped", *queries, "--on-unknown-query", "warn") == 0
    )
    assert compare(stray, "unchecked") == 0
    agreement = {name: (tmp_path / name / "agreement.tsv").read_text() for name in ("clean", "dropped", "unchecked")}
    assert agreement["dropped"] == agreement["clean"] != agreement["unchecked"]  # q99 drawn: other intervals


def test_the_official_leaderboard_under_another_name_of_its_measure_is_not_compared_with_itself(tmp_path):
    """`--official-measure nDCG@10 --measure ndcg_cut_10` compared the official qrels' board with itself (τ 1,
    first in the summary's judges) and wrote it twice on the leaderboards (a stranger's trial)."""
    files = campaign(tmp_path)
    for official, named in (("nDCG@10", "ndcg_cut_10"), ("ndcg_cut_10", "nDCG@10")):
        out = tmp_path / official
        assert main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                     str(files["official"]), "--labels", f"noisy={files['noisy']}", "--official-measure", official,
                     "--measure", named, "--bootstrap", "0", "--out", str(out)]) == 0  # fmt: skip
        agreement = pd.read_csv(out / "agreement.tsv", sep="\t")
        assert set(agreement["label_set"]) == {"noisy"} and set(agreement["measure"]) == {named}
        boards = pd.read_csv(out / "leaderboards.tsv", sep="\t")
        assert len(boards[boards["label_set"] == "official"]) == 10 and set(boards["measure"]) == {named}


def test_one_run_is_evaluated_and_its_labels_compared_with_the_leaderboards_agreement_empty(tmp_path, caplog):
    """One system with qrels (a documented configuration) stopped the workflow: the judges step refused it."""
    files = campaign(tmp_path)
    one = tmp_path / "runs [all]" / "r3.txt"
    for name, given in (("computed", []), ("given", ["--official", str(tmp_path / "official.json")])):
        (tmp_path / "official.json").write_text('{"r3": 1}')
        caplog.clear()
        assert main(["compare-judges", "--runs", str(one), "--official-qrels", str(files["official"]), "--labels",
                     f"noisy={files['noisy']}", *given, "--bootstrap", "0", "--out", str(tmp_path / name)]) == 0  # fmt: skip
        assert "needs two runs or more and is left empty" in caplog.text
        boards = pd.read_csv(tmp_path / name / "leaderboards.tsv", sep="\t")
        noisy = boards[(boards["label_set"] == "noisy") & (boards["measure"] == "ndcg_cut_10")]
        assert noisy[["run_id", "score"]].values.tolist() == [
            ["r3", pytest.approx(by_hand_ndcg10(files["noisy"], tmp_path / "runs [all]")["r3"], abs=1e-12)]
        ]
        agreement = pd.read_csv(tmp_path / name / "agreement.tsv", sep="\t")
        assert agreement["value"].isna().all() and set(agreement["runs"]) == {1}
        assert set(agreement["statistic"]) == set(STATISTICS) and "noisy" in set(agreement["label_set"])
        labels = pd.read_csv(tmp_path / name / "labels.tsv", sep="\t").set_index(["label_set", "statistic"])
        truth, mine = qrels_dict(files["official"]), qrels_dict(files["noisy"])
        pairs = [(mine[q][d], g) for q in truth for d, g in truth[q].items()]
        kappa = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
        assert labels.loc[("noisy", "cohen_kappa"), "value"] == pytest.approx(kappa, abs=1e-12)


def test_a_given_official_leaderboard_and_runs_it_lacks(tmp_path, caplog, capsys):
    files = campaign(tmp_path)
    (tmp_path / "official.json").write_text('{"r9": 1, "r8": 2, "r7": 3, "r6": 4, "r5": 5, "r4": 6, "r3": 7, "r2": 8}')
    out = tmp_path / "out"
    runs = [str(p) for p in sorted((tmp_path / "runs [all]").iterdir())]
    assert main(["compare-judges", "--runs", *runs, "--official-qrels", str(files["official"]), "--official",
                 str(tmp_path / "official.json"), "--labels", f"noisy={files['noisy']}", "--bootstrap", "0",
                 "--out", str(out)]) == 0  # fmt: skip
    assert (
        "2 evaluated runs are not on the official leaderboard and take no part in correlations: r0, r1" in caplog.text
    )
    assert capsys.readouterr().err.endswith("examflow: done\n")  # a command that completes says so last
    # a run it ranks that --runs lacks (a typo, a missing file) is an error, or with `warn` counted and left out
    official = tmp_path / "official.json"
    official.write_text('{\n"r9": 1,\n"r42": 2,\n"r8": 3\n}')
    arguments = ["compare-judges", "--runs", *runs, "--official-qrels", str(files["official"]), "--official",
                 str(official), "--labels", f"noisy={files['noisy']}", "--bootstrap", "0", "--out", str(tmp_path / "x")]  # fmt: skip
    assert main(arguments) == 2 and not (tmp_path / "x").exists()
    error = f"examflow: error: {official}:3: field 'run_id': official run 'r42' is not among the runs of --runs (did you mean 'r4'?)\n"
    assert capsys.readouterr().err == error
    caplog.clear()
    assert main([*arguments, "--on-unknown-run", "warn"]) == 0
    assert "1 × official runs not among the runs of --runs, dropped (first:" in caplog.text
    agreement = pd.read_csv(out / "agreement.tsv", sep="\t").set_index(["label_set", "statistic"])
    noisy = by_hand_ndcg10(files["noisy"], tmp_path / "runs [all]")
    shared = [f"r{k}" for k in range(2, 10)]
    expected = stats.spearmanr([noisy[r] for r in shared], list(range(2, 10))).statistic  # r9 is first
    assert agreement.loc[("noisy", "spearman"), "value"] == pytest.approx(expected, abs=1e-12)
    assert agreement.loc[("noisy", "spearman"), "runs"] == 8
    assert math.isnan(agreement.loc[("noisy", "pearson"), "value"])  # ranks are no scores
    assert agreement["low"].isna().all()  # no bootstrap


def test_generated_responses_runs_on_the_official_leaderboard_are_left_out_with_a_warning(tmp_path, caplog, capsys):
    """An official leaderboard of a RAG campaign ranks the responses' runs too, as EXAM's does: the judges,
    who rank runs by the passages their labels judge, leave those out (`--responses`) and say so, while a
    typo stays an error (a stranger's trial stopped, told to give up that check)."""
    files = campaign(tmp_path)
    official = tmp_path / "official.json"
    official.write_text('{"r9": 1, "rag-a": 2, "r8": 3, "r7": 4, "rag-b": 5, "r6": 6, "r5": 7}')
    responses = tmp_path / "my responses.jsonl"
    responses.write_text('{"run_id": "rag-a", "query_id": "q1", "text": "an answer"}\n'
                         '{"run_id": "rag-b", "query_id": "q2", "text": ["a", "b"]}\n')  # fmt: skip
    runs = [str(p) for p in sorted((tmp_path / "runs [all]").iterdir())]
    arguments = ["compare-judges", "--runs", *runs, "--official-qrels", str(files["official"]), "--official",
                 str(official), "--labels", f"noisy={files['noisy']}", "--bootstrap", "0", "--out", str(tmp_path / "o")]  # fmt: skip
    assert main(arguments) == 2  # without --responses: runs no run file holds, and where to say which they are
    assert capsys.readouterr().err.endswith(f"{official}:1: field 'run_id': official run 'rag-a' is not among the "
                                            "runs of --runs (a run of generated responses? --responses leaves "
                                            "those out)\n")  # fmt: skip
    assert main([*arguments, "--responses", str(responses)]) == 0
    assert (f"{official}: 2 runs of generated responses (--responses) left out: the judges compare the run files' "
            "runs alone: rag-a, rag-b") in caplog.text  # fmt: skip
    agreement = pd.read_csv(tmp_path / "o/agreement.tsv", sep="\t").set_index(["label_set", "statistic"])
    noisy = by_hand_ndcg10(files["noisy"], tmp_path / "runs [all]")
    shared = ["r9", "r8", "r7", "r6", "r5"]
    expected = stats.spearmanr([noisy[r] for r in shared], [-1, -3, -4, -6, -7]).statistic  # ranks: 1 best
    assert agreement.loc[("noisy", "spearman"), ["value", "runs"]].tolist() == [pytest.approx(expected, abs=1e-12), 5]
    official.write_text('{"r9": 1, "rag-a": 2, "rag-bb": 3, "r8": 4}')  # rag-bb: no run of the responses
    assert main([*arguments, "--responses", str(responses)]) == 2  # a typo of a response's run, meant named
    assert capsys.readouterr().err.endswith("official run 'rag-bb' is not among the runs of --runs "
                                            "(did you mean 'rag-b'?)\n")  # fmt: skip
    official.write_text('{"r9": 1, "rag-a": 2, "zz": 3, "r8": 4}')  # like nothing: no hint once given
    assert main([*arguments, "--responses", str(responses)]) == 2
    assert capsys.readouterr().err.endswith("official run 'zz' is not among the runs of --runs\n")
    del arguments[arguments.index("--official") : arguments.index("--official") + 2]
    assert main([*arguments, "--responses", str(responses)]) == 2
    assert capsys.readouterr().err.endswith("examflow: error: --responses: their runs are left out of a given "
                                            "--official or --leaderboard, and there is none\n")  # fmt: skip
    # another judge's leaderboard of the campaign (ir_measures' layout) ranks them too: left out alike
    scores = {**{f"r{k}": (k * 7) % 10 / 10 for k in range(10)}, "rag-a": 0.95}
    board = tmp_path / "team.txt"
    board.write_text("".join(f"{run} all SCORE {score}\n" for run, score in scores.items()))
    team = [*arguments, "--leaderboard", f"team={board}", "--leaderboard-layout", "ir_measures"]
    assert main(team) == 2
    assert capsys.readouterr().err.endswith("run 'rag-a' is not among the runs of --runs (a run of generated "
                                            "responses? --responses leaves those out)\n")  # fmt: skip
    board.write_text(board.read_text() + "rag-bb all SCORE 0.5\n")  # a typo of a response's run
    assert main([*team, "--responses", str(responses)]) == 2
    assert capsys.readouterr().err.endswith(f"{board}:12: field 'run_id': run 'rag-bb' is not among the runs of "
                                            "--runs (did you mean 'rag-b'?)\n")  # fmt: skip
    board.write_text(board.read_text().replace("rag-bb all SCORE 0.5\n", ""))
    caplog.clear()
    assert main([*team, "--responses", str(responses)]) == 0
    assert (f"{board}: 1 run of generated responses (--responses) left out: the judges compare the run files' "
            "runs alone: rag-a") in caplog.text  # fmt: skip
    boards = pd.read_csv(tmp_path / "o/leaderboards.tsv", sep="\t")
    assert set(boards.loc[boards["label_set"] == "team", "run_id"]) == {f"r{k}" for k in range(10)}


def test_a_judge_of_few_queries_and_a_given_leaderboard_of_scores(tmp_path):
    """A label set that judges one query no run ranks: no run has a score under it, so there is nothing
    to compare (every statistic empty, on 0 runs).
    A given leaderboard of scores is compared by Pearson's r on them; runs given twice add up; the
    official leaderboard is written though no --measure names it; τ@k counts its top k runs."""
    files = campaign(tmp_path)
    (tmp_path / "q99.qrels").write_text("q99 0 d1 2\nq99 0 d2 0\n")
    official = {f"r{k}": 0.1 * k + (0.05 if k == 4 else 0) for k in range(10)}
    (tmp_path / "official.tsv").write_text("run_id\tscore\n" + "".join(f"{r}\t{v}\n" for r, v in official.items()))
    runs = sorted(str(p) for p in (tmp_path / "runs [all]").iterdir())
    out = tmp_path / "out"
    assert main(["compare-judges", "--runs", *runs[:5], "--runs", *runs[5:], "--official-qrels", str(files["official"]),
                 "--official", str(tmp_path / "official.tsv"), "--labels", f"q99={tmp_path / 'q99.qrels'}",
                 f"noisy={files['noisy']}", "--measure", "P_5", "--top-k", "3", "--bootstrap", "300",
                 "--out", str(out)]) == 0  # fmt: skip
    agreement = pd.read_csv(out / "agreement.tsv", sep="\t").set_index(["label_set", "statistic"])
    for statistic in STATISTICS:
        assert agreement.loc[("q99", statistic), ["value", "low", "high"]].isna().all()
        assert agreement.loc[("q99", statistic), "runs"] == 0
        assert agreement.loc[("q99", statistic), "note"] == "0 run(s) on both leaderboards: no order to compare"
    # every value there: no word, but for τ@k, whose three runs the judge ties in a third of the replicates
    assert agreement.loc[("noisy", [s for s in STATISTICS if s != "tau_at_k"]), "note"].isna().all()
    tau_at_3 = agreement.loc[("noisy", "tau_at_k")]
    assert tau_at_3[["low", "high"]].isna().all() and re.fullmatch(
        r"(\d+) of 300 bootstrap replicates have no order to compare: more than 2.5%, so no 95% interval",
        tau_at_3["note"],
    )
    boards = pd.read_csv(out / "leaderboards.tsv", sep="\t")
    noisy = boards[(boards["label_set"] == "noisy")].set_index("run_id")["score"]
    expected = stats.pearsonr([noisy[r] for r in official], list(official.values())).statistic
    assert agreement.loc[("noisy", "pearson"), "value"] == pytest.approx(expected)
    assert agreement.loc[("noisy", "pearson"), "runs"] == 10 and agreement.loc[("noisy", "tau_at_k"), "runs"] == 3
    given = boards[boards["label_set"] == "official"].set_index(["measure", "run_id"])
    assert given.loc[("given", "r9"), "score"] == pytest.approx(0.9) and given.loc[("given", "r9"), "rank"] == 1


def test_a_leaderboard_of_ties_says_why_its_agreement_is_empty(tmp_path):
    """A judge that labels every passage 0 gives every run 0: τ, ρ, r and τ_AP were blank cells without a word,
    in agreement.tsv and the summary (a stranger's trial). RBO, an expectation over the tied orders, has a
    value; against a given leaderboard of ranks, Pearson's r is empty for want of scores."""
    files = campaign(tmp_path)
    zeros = tmp_path / "zeros.qrels"
    zeros.write_text(
        files["official"].read_text().replace(" 3\n", " 0\n").replace(" 2\n", " 0\n").replace(" 1\n", " 0\n")
    )
    (tmp_path / "official.json").write_text(json.dumps({f"r{k}": 10 - k for k in range(10)}))
    runs = sorted(str(p) for p in (tmp_path / "runs [all]").iterdir())
    out = tmp_path / "out"
    assert main(["compare-judges", "--runs", *runs, "--official-qrels", str(files["official"]), "--official",
                 str(tmp_path / "official.json"), "--labels", f"zeros={zeros}", f"noisy={files['noisy']}",
                 "--bootstrap", "50", "--out", str(out)]) == 0  # fmt: skip
    agreement = pd.read_csv(out / "agreement.tsv", sep="\t").set_index(["label_set", "statistic"])
    tied = "this leaderboard ties every run: no order to compare"
    for statistic in ("kendall", "spearman", "tau_ap", "tau_at_k"):
        assert math.isnan(agreement.loc[("zeros", statistic), "value"])
        assert agreement.loc[("zeros", statistic), "note"] == tied
    assert agreement.loc[("zeros", "rbo"), "value"] > 0 and pd.isna(agreement.loc[("zeros", "rbo"), "note"])
    for label_set in ("zeros", "noisy"):
        assert agreement.loc[(label_set, "pearson"), "note"] == "the official leaderboard gives ranks"
    assert agreement.loc[("noisy", ["kendall", "spearman", "tau_ap", "rbo"]), "note"].isna().all()
    boards = {"m": SummaryBoard.of(pd.DataFrame({"method": "m", "measure": "exam_cover", "tau": 4.0, "run_id": ["a"],
                                                 "kind": "system", "score": [0.5], "stderr": 0.0}), 4, None, [])}  # fmt: skip
    judges = pd.read_csv(out / "agreement.tsv", sep="\t")
    text = run_summary({}, None, "results", boards, judges=judges).markdown()
    assert f"No τ, ρ or τ_AP for zeros under ndcg_cut_10: {tied}." in text
    assert "for noisy" not in text
    page = judges_page(judges, pd.read_csv(out / "labels.tsv", sep="\t"))  # the report's page says it per row
    rows = pd.read_html(io.StringIO(page))[0].set_index("label set")["why empty"]
    assert rows["zeros"] == f"{tied}; the official leaderboard gives ranks"
    assert rows["noisy"] == "the official leaderboard gives ranks"


def test_a_tau_without_its_interval_says_why_in_the_summary():
    """A τ with a value whose interval is empty (most replicates without an order) showed bare among the
    intervals of the other judges, its reason only in agreement.tsv (a stranger's trial)."""
    note = "120 of 300 bootstrap replicates have no order to compare: more than 2.5%, so no 95% interval"
    tied = "this leaderboard ties every run: no order to compare"  # its replicates may not tie: an interval
    rows = [
        ("few", 0.333, math.nan, math.nan, note),
        ("many", 0.6, 0.2, 0.9, math.nan),
        ("flat", math.nan, 0.1, 0.4, tied),
    ]
    judges = pd.DataFrame(
        [{"label_set": label_set, "measure": "P_5", "statistic": statistic, "value": value, "low": low,
          "high": high, "runs": 4, "note": why if statistic == "kendall" else math.nan}
         for label_set, value, low, high, why in rows for statistic in ("kendall", "spearman", "tau_ap", "rbo")]
    )  # fmt: skip
    boards = {"m": SummaryBoard.of(pd.DataFrame({"method": "m", "measure": "exam_cover", "tau": 4.0, "run_id": ["a"],
                                                 "kind": "system", "score": [0.5], "stderr": 0.0}), 4, None, [])}  # fmt: skip
    text = run_summary({}, None, "results", boards, judges=judges).markdown()
    assert "| many | P_5 | 0.600 \\[0.200, 0.900\\] |" in text and "| few | P_5 | 0.333 | 0.333 |" in text
    assert f"No interval of τ for few under P_5: {note}." in text
    assert f"No τ, ρ or τ_AP for flat under P_5: {tied}." in text
    assert "for many" not in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--labels", "noisy"], "--labels 'noisy': expected NAME=QRELS"),
        (["--labels", "official=x.qrels"], "the name 'official' is taken"),
        (["--measure", "ndcg_cutt_10"], "--measure 'ndcg_cutt_10': neither a trec_eval measure"),
        (["--measure", "P"], "--measure 'P': trec_eval computes it as P_10"),
        (["--measure", "P"], "P_5, P_500 (its default cut-offs; any other computes too): name each measure exactly"),
        (["--measure", "ndcg_cut_10(rel=2)"], "'ndcg_cut_10(rel=2)': trec_eval computes it as ndcg_cut_10: name each"),
        (["--measure", "ndcg_cut_10xyz"], "'ndcg_cut_10xyz': trec_eval computes it as ndcg_cut_10"),
        (["--measure", "RBP(p=0.8)"], "--measure 'RBP(p=0.8)': no provider of ir-measures computes it"),
        (["--measure", "ndcg_cut_10", "--measure", "nDCG@10"], "two names for the same measure (nDCG@10)"),
        (["--official-measure", "foo"], "--official-measure 'foo': neither"),
        (["--official", "OFFICIAL_JSON"], "ranks none of the 1 runs given"),
        (["--out", "OUT_FILE"], "is a file: name the folder to write into"),
        # every run would score 0: a leaderboard of ties, every agreement empty, and exit 0
        (
            ["--official-measure", "map", "--official-relevance-level", "4"],
            "no judgment reaches --official-relevance-level 4 (the highest is 3): every run would score 0",
        ),
        (
            ["--official-measure", "AP(rel=9)"],
            "no judgment reaches --official-measure AP(rel=9)'s rel 9 (the highest is 3): every run would score 0",
        ),
        (["--runs", "nothing/*"], "--runs: no such run file, and no file matches 'nothing/*' as a pattern"),
        (["--rbo-p", "1.5"], "--rbo-p"),
        (["--official-qrels", "FACETS"], "no rows for any known query: the labels judge subtopics (`query/facet`)"),
    ],
)
def test_wrong_arguments_are_one_line(tmp_path, arguments, message):
    files = campaign(tmp_path)
    (tmp_path / "facets.qrels").write_text("q1/f1 0 d1 2\nq1/f2 0 d2 1\n")
    (tmp_path / "official.json").write_text('{"ghost": 1, "other": 2}')
    (tmp_path / "a file").write_text("")
    given = {"OFFICIAL_JSON": str(tmp_path / "official.json"), "OUT_FILE": str(tmp_path / "a file"),
             "FACETS": str(tmp_path / "facets.qrels")}  # fmt: skip
    official = [] if "--official-qrels" in arguments else ["--official-qrels", str(files["official"])]  # given once
    command = ["compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"), *official, "--out",
               str(tmp_path / "out"), *(given.get(a, a) for a in arguments)]  # fmt: skip
    result = subprocess.run([sys.executable, "-m", "examflow", *command], capture_output=True, text=True)
    assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() and (tmp_path / "a file").read_text() == ""


def test_run_rows_of_queries_no_label_set_judges_are_counted_as_such(tmp_path, caplog):
    """q5 is ranked by the runs but judged by no label set: its rows are left out, and the warning says
    why (it said 'unknown query id', of a query the collection knows)."""
    files = campaign(tmp_path)
    for name in ("official", "noisy"):
        kept = [line for line in files[name].read_text().splitlines(keepends=True) if not line.startswith("q5 ")]
        files[name].write_text("".join(kept))
    run, other = tmp_path / "runs [all]" / "r1.txt", tmp_path / "runs [all]" / "r2.txt"
    with caplog.at_level(logging.WARNING):
        assert main(["compare-judges", "--runs", str(run), str(other), "--official-qrels", str(files["official"]), "--labels",
                     f"noisy={files['noisy']}", "--bootstrap", "0", "--out", str(tmp_path / "out")]) == 0  # fmt: skip
    first = next(n for n, line in enumerate(run.read_text().splitlines(), 1) if line.startswith("q5 "))
    assert f"40 × run rows of queries no label set judges, dropped (first: {run}:{first}: field 'query_id': query " \
           "judged by no label set 'q5')" in caplog.text  # fmt: skip


def test_judged_queries_no_run_ranks_are_named_in_a_warning(tmp_path, caplog):
    """By hand, without --queries, a label set's typo (`Q3` for `q3`) was one more query the bootstrap drew,
    with no word: the warning names it (and q5, which the runs of this call do not rank)."""
    files = campaign(tmp_path)
    typo = tmp_path / "typo.qrels"
    typo.write_text(files["noisy"].read_text().replace("q3 ", "Q3 "))
    run, other = tmp_path / "runs [all]" / "r0.txt", tmp_path / "runs [all]" / "r1.txt"
    arguments = ["compare-judges", "--runs", str(run), str(other), "--official-qrels", str(files["official"]),
                 "--bootstrap", "0", "--out", str(tmp_path / "out")]  # fmt: skip
    with caplog.at_level(logging.WARNING):
        assert main([*arguments, "--labels", f"typo={typo}"]) == 0
    assert "1 judged query is ranked by no run: Q3 (a typo? --queries " \
           "checks the qrels' query ids)" in caplog.text  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main([*arguments[:2], str(run), *arguments[4:], "--labels", f"typo={typo}"]) == 0  # r0 alone
    assert "2 judged queries are ranked by no run: Q3, q5 (a typo?" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert main([*arguments, "--labels", f"noisy={files['noisy']}"]) == 0  # r1 ranks q5
    assert "ranked by no run" not in caplog.text
    facets = tmp_path / "facets.qrels"
    facets.write_text(files["noisy"].read_text().replace("q3 ", "q3/f1 "))
    drawn = [*arguments]
    drawn[drawn.index("--bootstrap") + 1] = "5"
    with caplog.at_level(logging.WARNING):
        assert main([*drawn, "--labels", f"facets={facets}"]) == 0
    assert "1 judged query is ranked by no run (drawn by the bootstrap with the others, it moves every interval): " \
           "q3/f1 (subtopics `query/facet`, " \
           "whose page the runs rank? give --per-page)" in caplog.text  # fmt: skip


def test_a_label_set_of_no_label_judges_nothing_and_empty_official_qrels_are_an_error(tmp_path, caplog):
    """The EXAM-Qrels of a method whose every pair failed (within grading.max_error_rate) are empty: the
    judges step stopped the workflow with "file is empty", the summary unwritten (a stranger's trial)."""
    files = campaign(tmp_path)
    empty = tmp_path / "failed method.qrels"
    empty.write_text("")
    runs = [str(tmp_path / "runs [all]" / f"r{k}.txt") for k in range(4)]
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING):
        assert main(["compare-judges", "--runs", *runs, "--official-qrels", str(files["official"]), "--labels",
                     f"failed={empty}", f"noisy={files['noisy']}", "--bootstrap", "0", "--out", str(out)]) == 0  # fmt: skip
    assert f"{empty}: holds no label, so it judges no query" in caplog.text
    agreement = pd.read_csv(out / "agreement.tsv", sep="\t")
    failed = agreement[agreement["label_set"] == "failed"]
    assert len(failed) and (failed["runs"] == 0).all() and failed["value"].isna().all()
    assert (agreement.loc[agreement["label_set"] == "noisy", "runs"] == 4).all()
    official = subprocess.run([sys.executable, "-m", "examflow", "compare-judges", "--runs", *runs, "--official-qrels",
                               str(empty), "--out", str(tmp_path / "out2")], capture_output=True, text=True)  # fmt: skip
    assert official.returncode == 2 and official.stderr.strip().endswith(f"{empty}: file is empty")


def test_the_judges_report_names_a_column_its_table_lacks_and_an_option_it_does_not_use(tmp_path, capsys):
    """A hand-cut agreement.tsv was a KeyError traceback; `--method` beside `--judges` was dropped with no word
    (a stranger's trials)."""
    files, out = campaign(tmp_path), tmp_path / "out"
    assert main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                 str(files["official"]), "--labels", f"noisy={files['noisy']}", "--bootstrap", "0", "--out",
                 str(out)]) == 0  # fmt: skip
    for option in (["--method", "m"], ["--tau", "3"], ["--measures", "map"]):  # a default's option too
        assert main(["report", "--judges", str(out), *option, "--out", str(tmp_path / "r")]) == 2
        assert capsys.readouterr().err.endswith(f"examflow: error: {option[0]}: not with --judges, which reports "
                                                "the judges' tables alone\n")  # fmt: skip
    lines = (out / "agreement.tsv").read_text().splitlines(keepends=True)
    (out / "agreement.tsv").write_text("".join("\t".join(line.split("\t")[:4]) + "\n" for line in lines[:3]))
    assert main(["report", "--judges", str(out), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.endswith(f"examflow: error: {out / 'agreement.tsv'}: not the table wanted here: "
                                            "no column 'low' (its columns: label_set, measure, statistic, value)\n")  # fmt: skip
    assert not (tmp_path / "r").exists()


def test_a_query_judged_minus_2_alone_is_non_relevant_in_every_label_set(tmp_path):
    """TREC CAR's -2 (non-relevant, validation.relevance_range) on a query judged -2 alone crashed the command
    with a segmentation fault (pytrec_eval), without a message (an auditor's trial)."""
    official = write(tmp_path / "official.qrels", "q3 0 d6 2\nq4 0 d4 -2\n")
    labels = write(tmp_path / "llm.qrels", "q3 0 d6 1\nq4 0 d4 -2\nq4 0 d8 -1\n")
    runs = [write(tmp_path / f"{run}.run", text) for run, text in
            (("good", "q3 Q0 d6 1 2 good\nq4 Q0 d4 1 1 good\n"), ("poor", "q3 Q0 d3 1 2 poor\nq4 Q0 d8 1 1 poor\n"))]  # fmt: skip
    result = subprocess.run([sys.executable, "-m", "examflow", "compare-judges", "--runs", *map(str, runs),
                             "--official-qrels", str(official), "--labels", f"llm={labels}", "--bootstrap", "0",
                             "--out", str(tmp_path / "out")], capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr
    boards = pd.read_csv(tmp_path / "out" / "leaderboards.tsv", sep="\t")
    # nDCG@10: good finds q3's one relevant document first (1), q4 has none (0): 0.5; poor 0 on both
    assert {(s, r): v for s, r, v in boards[["label_set", "run_id", "score"]].values} == {
        ("official", "good"): 0.5, ("official", "poor"): 0.0, ("llm", "good"): 0.5, ("llm", "poor"): 0.0
    }  # fmt: skip


def test_a_bad_qrels_line_names_file_line_and_field(tmp_path):
    files = campaign(tmp_path)
    files["noisy"].write_text("q0 0 d1 2\nq0 0 d2 high\n")
    result = subprocess.run(
        [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
         "--official-qrels", str(files["official"]), "--labels", f"noisy={files['noisy']}", "--out",
         str(tmp_path / "out")], capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"{files['noisy']}:2: field 'relevance': not an integer: 'high'" in result.stderr


def test_the_docs_name_every_statistic_and_nugget_score():
    from examflow.registry import NUGGET_MEASURES

    docs = Path(__file__).resolve().parents[1] / "docs"
    judges = (docs / "judges.md").read_text()
    assert all(f"| `{name}` |" in judges for name in STATISTICS)
    methods = (docs / "methods.md").read_text()
    assert all(f"`{name}`" in methods for name in NUGGET_MEASURES)


# -- each statistic against a library or by hand ---------------------------------------------------------------


def statistic(name: str, judge: np.ndarray, official: np.ndarray) -> float:
    """One statistic of one pair of leaderboards (a single row)."""
    [value] = STATISTICS[name](Sides(judge[None, :], official[None, :]), SETTINGS)
    return float(value)


def leaderboards(seed: int, runs: int = 9, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    official = rng.random(runs)
    judge = official + rng.normal(0, 0.3, runs)
    if ties:  # a few runs tie, on either side
        judge[:3], official[3:5] = judge[0], official[3]
    return judge, official


@pytest.mark.parametrize("seed", range(5))
def test_correlations_equal_scipys(seed):
    for ties in (False, True):
        judge, official = leaderboards(seed, ties=ties)
        assert statistic("kendall", judge, official) == pytest.approx(stats.kendalltau(judge, official).statistic)
        assert statistic("spearman", judge, official) == pytest.approx(stats.spearmanr(judge, official).statistic)
        assert statistic("pearson", judge, official) == pytest.approx(stats.pearsonr(judge, official).statistic)
        top = stats.rankdata(-official) <= 4
        expected = stats.kendalltau(judge[top], official[top]).statistic
        assert statistic("tau_at_k", judge, official) == pytest.approx(expected)


def test_every_sample_s_rank_statistics_are_the_leaderboard_s_to_the_last_bit():
    """The statistics take every bootstrap sample at once, the official leaderboard differing from row to
    row: each row's τ, ρ, τ@k and τ_AP are, to the last bit, those of the two leaderboards alone as
    `examflow evaluate` correlates them (dictionaries of runs; scipy's own numbers, test_correlation)."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        rows, n = int(rng.integers(1, 30)), int(rng.integers(2, 9))
        judge = rng.integers(0, int(rng.integers(1, 5)), size=(rows, n)) / 3  # many ties on both sides
        official = rng.integers(0, int(rng.integers(1, 5)), size=(rows, n)) / 7
        sides = Sides(judge, official)
        values = {name: STATISTICS[name](sides, SETTINGS) for name in ("kendall", "spearman", "tau_at_k", "tau_ap")}
        for i in range(rows):
            runs = [f"r{k}" for k in range(n)]
            ranks = stats.rankdata(-official[i], method="average")
            point = leaderboard_correlation(dict(zip(runs, judge[i])), dict(zip(runs, ranks)))
            top = ranks <= SETTINGS.top_k
            at_k = (
                leaderboard_correlation(dict(zip(runs, judge[i][top])), dict(zip(runs, stats.rankdata(ranks[top]))))
                if top.sum() >= 2 else point.__class__(math.nan, math.nan, 0)
            )  # fmt: skip
            expected = {"kendall": point.kendall, "spearman": point.spearman, "tau_at_k": at_k.kendall,
                        "tau_ap": tau_ap(dict(zip(runs, judge[i])), dict(zip(runs, ranks)))}  # fmt: skip
            for name, theirs in expected.items():
                mine = values[name][i]
                assert mine == theirs or (math.isnan(mine) and math.isnan(theirs)), (name, judge[i], official[i])


def plain_rbo(first: list[int], second: list[int], p: float) -> float:
    """RBO_ext of two untied orders of the same items, from its definition with sets."""
    n = len(first)
    overlaps = [len(set(first[:d]) & set(second[:d])) for d in range(1, n + 1)]
    return overlaps[-1] / n * p**n + (1 - p) / p * sum(x / d * p**d for d, x in enumerate(overlaps, 1))


def orders(scores: np.ndarray) -> list[list[int]]:
    """Every order of the items, best first, that breaks the ties of `scores`."""
    groups = [sorted(i for i in range(len(scores)) if scores[i] == s) for s in sorted(set(scores), reverse=True)]
    return [sum(map(list, choice), []) for choice in itertools.product(*(itertools.permutations(g) for g in groups))]


@pytest.mark.parametrize("seed", range(4))
def test_rbo_is_the_mean_over_the_orders_ties_allow(seed):
    judge, official = leaderboards(seed, runs=7, ties=seed % 2 == 1)
    expected = np.mean([plain_rbo(a, b, 0.8) for a in orders(judge) for b in orders(official)])
    assert statistic("rbo", judge, official) == pytest.approx(expected, abs=1e-12)
    untied = np.arange(7.0)
    assert statistic("rbo", untied, untied + 1) == pytest.approx(1.0)  # the same order


def test_compat_is_ir_measures_and_by_hand():
    """Compat (Clarke et al. 2020) of run d2, d1 against the ideal d1, d2 at p = 0.9: RBO's sums
    Σ p^(d-1) |overlap_d| / d over the run and over the ideal itself, 0.9 · 1 / (1 + 0.9)."""
    labels = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["d1", "d2"], "relevance": [2, 1]})
    run = pd.DataFrame(
        {"run_id": "r", "query_id": "q", "passage_id": ["d2", "d1"], "score": [2.0, 1.0], "rank": [1, 2]}
    )
    values = per_query_values(labels, run_dictionaries(run), parse_measure("Compat(p=0.9)"), ["q"])
    assert values[0, 0] == pytest.approx(0.9 / 1.9)


def test_compat_puts_a_run_s_last_document_before_the_unretrieved_of_its_label():
    """Compat's ideal ranking breaks a tie of labels by the run's scores, an unretrieved document's 0: the
    run's places counted from 0 gave its last document 0 too, and d3 (unretrieved, label 2) went before d8
    (ranked, label 2): 0.0996 for 0.2657, and a judge's τ 0.333 for 1 (a stranger's trial). By hand: run d7,
    d8 against the ideal d6, d8, d3 at p = 0.9: (0.9 · 1/2 + 0.81 · 1/3) / (1 + 0.9 + 0.81)."""
    import ir_measures

    labels = pd.DataFrame({"query_id": "q", "doc_id": ["d3", "d6", "d7", "d8"], "relevance": [2, 3, 0, 2]})
    run = pd.DataFrame({"run_id": "r", "query_id": "q", "passage_id": ["d7", "d8"], "score": [3.0, 2.0],
                        "rank": [1, 2]})  # fmt: skip
    compat = parse_measure("Compat(p=0.9)")
    value = per_query_values(labels, run_dictionaries(run), compat, ["q"])[0, 0]
    assert value == pytest.approx((0.9 / 2 + 0.81 / 3) / 2.71, abs=1e-12)
    assert value == pytest.approx(ir_measures.calc_aggregate([compat], labels, {"q": {"d7": 3.0, "d8": 2.0}})[compat])


def test_tied_scores_are_taken_in_trec_eval_s_order_by_every_measure():
    """Three documents of one score: trec_eval ranks them by descending doc id (d3, d2, d1), and so do
    pooling and `examflow evaluate`; ir-measures' Compat took ascending ids (d1 first: 1.0, a stranger's
    hand check), so one run had two orders. Each measure is compared with ir-measures on the order
    written out, scores strictly falling."""
    import ir_measures

    labels = pd.DataFrame({"query_id": "q", "doc_id": ["d1", "d2", "d3"], "relevance": [2, 1, 0]})
    tied = pd.DataFrame({"run_id": "r", "query_id": "q", "passage_id": ["d1", "d3", "d2"], "score": 5.0, "rank": 1})
    trec_eval_order = {"q": {"d3": 3.0, "d2": 2.0, "d1": 1.0}}
    for name in ("Compat(p=0.9)", "ndcg_cut_10", "recip_rank", "P_1"):
        measure = parse_measure(name)
        expected = ir_measures.calc_aggregate([measure], labels, trec_eval_order)[measure]
        assert per_query_values(labels, run_dictionaries(tied), measure, ["q"])[0, 0] == pytest.approx(expected)
    assert expected == 0.0  # P_1: d3 (not relevant) first, not d1
    compat = parse_measure("Compat(p=0.9)")
    assert ir_measures.calc_aggregate([compat], labels, {"q": {"d1": 5.0, "d2": 5.0, "d3": 5.0}})[compat] == 1.0


@pytest.mark.parametrize("name", ["nDCG@0", "P@0", "P_0", "ndcg_cut_0", "P_5,0.5"])
def test_a_cut_off_of_0_is_refused_in_either_syntax(name):
    """pytrec_eval's C code stops the process on it: `judges.measures: [nDCG@0]` ended the configuration's check
    with a segmentation fault (a reviewer's trial)."""
    from examflow.evaluation.judges import check_measure

    with pytest.raises(ValueError, match=r"^a cut-off of 0 \(trec_eval stops on it\): a cut-off is"):
        check_measure(name)


@pytest.mark.parametrize("name", ["Compat(p=1.5)", "Compat(p=1)", "Compat(p=0)"])
def test_a_persistence_outside_0_to_1_is_refused(name):
    """ir-measures refused `Compat(p=1)` and `p=0` but computed `Compat(p=1.5)`, a persistence that means
    nothing (a stranger's trial)."""
    from examflow.evaluation.judges import check_measure

    with pytest.raises(ValueError, match=r"^a persistence p of [0-9.]+: it is between 0 and 1 \(Compat\(p=0.9\)\)"):
        check_measure(name)
    assert check_measure("Compat(p=0.5)").params["p"] == 0.5


def test_measures_equal_ir_measures_on_random_runs(tmp_path):
    import ir_measures

    rng = random.Random(7)
    labels = pd.DataFrame([(f"q{q}", f"d{d}", rng.choice([0, 1, 2])) for q in range(4) for d in range(12)],
                          columns=["query_id", "doc_id", "relevance"])  # fmt: skip
    lines = [f"q{q} Q0 d{d} {i + 1} {12 - i} r\n" for q in range(3) for i, d in enumerate(rng.sample(range(12), 8))]
    (tmp_path / "run").write_text("".join(lines))
    from examflow.errors import Problems

    run = read_run(tmp_path / "run", {f"q{q}" for q in range(4)}, Problems("error"))
    for name in ("Compat(p=0.9)", "ndcg_cut_10", "P_5", "AP(rel=2)"):
        measure = parse_measure(name)
        values = per_query_values(labels, run_dictionaries(run), measure, ["q0", "q1", "q2", "q3", "q4"])
        complete = per_query_values(labels, run_dictionaries(run), measure, ["q0", "q1", "q2", "q3", "q4"], True)
        theirs = {
            m.query_id: m.value
            for m in ir_measures.iter_calc([measure], labels, run.rename(columns={"passage_id": "doc_id"}))
        }
        assert values[0, :3].tolist() == pytest.approx([theirs[f"q{q}"] for q in range(3)])
        assert math.isnan(values[0, 3]) and complete[0, 3] == 0.0  # judged, not ranked: left out, or 0
        assert math.isnan(values[0, 4]) and math.isnan(complete[0, 4])  # not judged: no value


def krippendorff_ordinal_by_hand(first: list[int], second: list[int]) -> float:
    """Krippendorff's α, ordinal, two coders, every unit coded by both (Krippendorff 2011, §C)."""
    values = sorted(set(first) | set(second))
    coincidence = {(c, k): 0.0 for c in values for k in values}
    for a, b in zip(first, second):
        coincidence[(a, b)] += 1
        coincidence[(b, a)] += 1
    marginal = {c: sum(coincidence[(c, k)] for k in values) for c in values}
    n = sum(marginal.values())

    def delta(c: int, k: int) -> float:
        low, high = min(c, k), max(c, k)
        return (sum(marginal[g] for g in values if low <= g <= high) - (marginal[c] + marginal[k]) / 2) ** 2

    observed = sum(coincidence[(c, k)] * delta(c, k) for c in values for k in values)
    expected = sum(marginal[c] * marginal[k] * delta(c, k) for c in values for k in values) / (n - 1)
    return 1 - observed / expected


def test_label_agreement_by_hand():
    from examflow.evaluation.judges import label_agreement

    rng = random.Random(2)
    official = [rng.choice([0, 1, 2, 3]) for _ in range(40)]
    mine = [max(0, min(3, g + rng.choice([-1, 0, 1]))) for g in official]
    table = lambda grades: pd.DataFrame({"query_id": "q", "doc_id": [f"d{i}" for i in range(40)], "relevance": grades})  # noqa: E731
    rows, confusion = label_agreement(table(mine), table(official))
    statistics = {name: value for name, value, _ in rows}
    assert statistics["krippendorff_alpha"] == pytest.approx(krippendorff_ordinal_by_hand(mine, official))
    observed = sum(a == b for a, b in zip(mine, official)) / 40
    chance = sum(mine.count(g) * official.count(g) for g in range(4)) / 40**2
    assert statistics["cohen_kappa"] == pytest.approx((observed - chance) / (1 - chance))
    assert confusion["count"].sum() == 40 and {n for _, _, n in rows} == {40}


def test_an_ensemble_votes_as_umbrela_and_keeps_the_margin(tmp_path):
    from examflow.evaluation.judges import ensemble

    table = lambda grades: pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c", "d"][: len(grades)],  # noqa: E731
                                         "relevance": grades})  # fmt: skip
    labels, votes = ensemble({"x": table([3, 1, 0, 2]), "y": table([3, 2, 1, 2]), "z": table([2, 0, 2])})
    # a: 3,3,2 -> 3 by 2 to 1; b: 1,2,0 -> a three-way tie, the lowest: 0; c: 0,1,2 -> 0; d: only two judges
    assert labels.values.tolist() == [["q", "a", 3], ["q", "b", 0], ["q", "c", 0]]
    assert votes[["votes", "margin"]].values.tolist() == [[2, 1], [1, 0], [1, 0]]
    files = campaign(tmp_path)
    out = tmp_path / "out"
    assert main(["compare-judges", "--runs", str(tmp_path / "runs [[]all]" / "*"), "--official-qrels",
                 str(files["official"]), "--labels", f"noisy={files['noisy']}", f"copy={files['copy']}",
                 f"official2={files['official']}", "--ensemble", "vote=noisy,copy,official2", "--bootstrap", "0",
                 "--out", str(out)]) == 0  # fmt: skip
    kept = pd.read_csv(out / "votes.tsv", sep="\t")
    assert set(kept["label_set"]) == {"vote"} and len(kept) == 150 and kept["votes"].min() >= 2
    boards = pd.read_csv(out / "leaderboards.tsv", sep="\t")
    vote = boards[boards["label_set"] == "vote"].set_index("run_id")["score"]
    official = boards[boards["label_set"] == "official"].set_index("run_id")["score"]
    assert vote.to_dict() == pytest.approx(official.to_dict())  # two of three judges are the official labels
    for bad, message in ((["vote=noisy"], "two or more"), (["vote=noisy,ghost"], "'ghost' is no label set"),
                         (["noisy=copy,official2"], "the name 'noisy' is taken")):  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(tmp_path / "runs [all]" / "r1.txt"),
             "--official-qrels", str(files["official"]), "--labels", f"noisy={files['noisy']}",
             f"copy={files['copy']}", f"official2={files['official']}", "--ensemble", *bad, "--out", str(tmp_path / "x")],
            capture_output=True, text=True,
        )  # fmt: skip
        assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("perl") is None, reason="gdeval, ir-measures' provider of ERR, runs in Perl")
def test_err_is_computed_by_gdeval_and_ids_it_cannot_read_are_named():
    """ERR@10 was refused at every check, which computed it on a made-up query `q`: gdeval reads query ids of
    digits alone (a stranger's trial). Computed, it is the cascade's value by hand; an id or a label gdeval
    cannot read is one line naming it, not Perl's `format error` and its exit status."""
    from examflow.errors import Failure
    from examflow.evaluation.judges import check_measure

    measure = check_measure("ERR@10")
    labels = pd.DataFrame({"query_id": ["1"] * 3, "doc_id": ["d1", "d2", "d3"], "relevance": [2, 0, 4]})
    run = pd.DataFrame({"run_id": "r", "query_id": "1", "passage_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
    [[value]] = per_query_values(labels, run_dictionaries(run), measure, ["1"])
    stop = [(2**grade - 1) / 2**4 for grade in (2, 0, 4)]  # gdeval's chance of stopping at a grade, of 4 at most
    by_hand = stop[0] + (1 - stop[0]) * stop[1] / 2 + (1 - stop[0]) * (1 - stop[1]) * stop[2] / 3
    assert value == pytest.approx(by_hand, abs=1e-5)  # gdeval prints five decimals
    with pytest.raises(Failure, match=re.escape("ERR@10: gdeval, which computes it, reads query ids of digits "
                                                "alone, not 'q-1'")):  # fmt: skip
        per_query_values(labels.assign(query_id="q-1"), run_dictionaries(run.assign(query_id="q-1")), measure, ["q-1"])
    with pytest.raises(
        Failure, match=re.escape("ERR@10: gdeval, which computes it, reads labels up to 4, not 5 in label set 'five'")
    ):  # among several --labels: which (a stranger)
        per_query_values(labels.assign(relevance=[2, 0, 5]), run_dictionaries(run), measure, ["1"], name="five")
