"""`examflow.evaluation.evaluate`: every measure from one small, hand-computed pool."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from examflow.errors import InputError
from examflow.evaluation.evaluate import Inputs, Settings, evaluate, exam_questions, per_query_values


def inputs(gold: bool = False) -> Inputs:
    grades = pd.DataFrame(
        [
            ("m", "q1", None, "a", "x", 5), ("m", "q1", None, "b", "y", 4), ("m", "q1", None, "c", "x", 1),
            ("m", "q2", None, "d", "z", 4), ("m", "q1", None, "g", "y", 5),
            # every pooled passage is graded against every question of its query
            ("m", "q1", None, "a", "y", 0), ("m", "q1", None, "b", "x", 0), ("m", "q1", None, "c", "y", 0),
            ("m", "q1", None, "g", "x", 0),
        ],
        columns=["method", "query_id", "facet_id", "passage_id", "question_id", "rating"],
    ).assign(correct=pd.NA, error=None).astype({"rating": "Int64", "correct": "boolean"})  # fmt: skip
    rankings = pd.DataFrame(
        [("r1", "q1", "a", 1, 3.0), ("r1", "q1", "c", 2, 2.0), ("r2", "q1", "b", 1, 1.0), ("r2", "q2", "d", 1, 1.0)]
        + ([("_gold_", "q1", "g", 1, 0.0)] if gold else []),
        columns=["run_id", "query_id", "passage_id", "rank", "score"],
    )
    passages = pd.DataFrame(
        [("q1", "a", "Lava rock."), ("q1", "b", "Ash."), ("q1", "c", "Snow."), ("q2", "d", "Tide.")]
        + ([("q1", "g", "Lava and ash.")] if gold else []),
        columns=["query_id", "passage_id", "text"],
    ).assign(origin=lambda t: ["gold" if p == "g" else "retrieved" for p in t["passage_id"]])
    questions = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "question_id": ["x", "y", "z"], "kind": "question"})
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    return Inputs(
        grades if gold else grades[grades["passage_id"] != "g"],
        rankings,
        questions,
        passages,
        judgments,
        {"q1": "Lava and ash."} if gold else None,
    )


def scores(table: pd.DataFrame) -> dict:
    return {
        (m, None if pd.isna(t) else int(t), r): s for m, t, r, s in table[["measure", "tau", "run_id", "score"]].values
    }


def test_present_and_all_query_modes_for_cover_trec_measures_and_rouge():
    settings = Settings(taus=[4], k=20, measures=["P_5"], bootstrap=0)
    present = evaluate(inputs(gold=True), settings, None)
    board = scores(present["leaderboard.tsv"])
    assert board[("exam_cover", 4, "r1")] == 0.5  # r1 has only q1: x of {x, y}
    assert board[("exam_cover", 4, "r2")] == 0.75  # (y of 2 + z of 1) / 2
    assert board[("exam_cover", 4, "_gold_")] == 0.5  # the gold passage answers y
    # P@5 at level 4 on EXAM-Qrels without the gold passage: r1 has a (5) relevant; c is 1
    assert board[("P_5", 4, "r1")] == pytest.approx(0.2)
    # ROUGE-1: r1 = {lava, rock, snow} against {lava, ash}: P 1/3, R 1/2 -> F1 0.4; q2 has no gold article
    assert board[("rouge_1_f1", None, "r1")] == pytest.approx(0.4)
    assert present["qrels/m.qrels"] == "q1 0 a 5\nq1 0 b 4\nq1 0 c 1\nq2 0 d 4\n"
    everything = scores(
        evaluate(inputs(gold=True), Settings(taus=[4], measures=["P_5"], query_mode="all", bootstrap=0), None)[
            "leaderboard.tsv"
        ]
    )
    assert everything[("exam_cover", 4, "r1")] == 0.25  # q2 missing from r1: counted as 0
    assert everything[("P_5", 4, "r1")] == pytest.approx(0.1)  # trec_eval -c
    assert everything[("rouge_1_f1", None, "r1")] == pytest.approx(0.4)  # only queries with a gold article


def test_a_query_whose_passages_all_rank_beyond_k_is_named_in_a_warning(caplog):
    """r2 ranks q2's one passage 5th as written: with k 2 EXAM-Cover has none of its passages there
    (present: the query leaves r2's mean; all: 0), while P_5 still counts it."""
    beyond = inputs()
    beyond.rankings.loc[(beyond.rankings["run_id"] == "r2") & (beyond.rankings["query_id"] == "q2"), "rank"] = 5
    for mode, cover in (("present", 0.5), ("all", 0.25)):  # y of {x, y} on q1; q2 left out, or 0
        caplog.clear()
        board = scores(evaluate(beyond, Settings(taus=[4], k=2, measures=["P_5"], query_mode=mode, bootstrap=0),
                                None)["leaderboard.tsv"])  # fmt: skip
        assert board[("exam_cover", 4, "r2")] == cover
        assert board[("P_5", 4, "r2")] == pytest.approx(0.2)  # b on q1, d on q2: 1 of 5 each, q2 counted
        (warning,) = [r.getMessage() for r in caplog.records if "as written" in r.getMessage()]
        effect = "left out of the run's mean" if mode == "present" else "counted 0"
        assert warning == (
            "1 run and query pair has no passage ranked <= k = 2 as written (first: run 'r2', query 'q2', from "
            f"rank 5): its EXAM-Cover is {effect}, while trec_eval's measures count it"
        )
    caplog.clear()
    evaluate(inputs(), Settings(taus=[4], k=2, measures=["P_5"], bootstrap=0), None)
    assert not [r for r in caplog.records if "as written" in r.getMessage()]


def test_a_run_with_nothing_to_cover_counts_0_under_all_and_is_named_under_present(caplog):
    """r3 ranks q1's passage a 5th (k 2), r4 only a query without questions: neither has a passage for EXAM-Cover
    to score. `all` gave them no row at all (the warning said 0), so correlations left them out silently."""
    data = inputs(gold=True)
    extra = pd.DataFrame([("r3", "q1", "a", 5, 1.0), ("r4", "q3", "e", 1, 1.0)], columns=data.rankings.columns)
    data.rankings = pd.concat([data.rankings, extra], ignore_index=True)
    official = {"r1": 4.0, "r2": 3.0, "r3": 2.0, "r4": 1.0}
    settings = Settings(taus=[4], k=2, measures=["P_5"], query_mode="all", bootstrap=0)
    outputs = evaluate(data, settings, official)
    board = outputs["leaderboard.tsv"].set_index(["measure", "run_id"])
    for run in ("r3", "r4"):
        for measure in ("exam_cover", "n_exam_cover"):
            assert board.loc[(measure, run), ["score", "n_queries"]].tolist() == [0.0, 2]  # q1 and q2, both 0
        assert board.loc[("rouge_1_f1", run), ["score", "n_queries"]].tolist() == [0.0, 1]  # q1, the gold query
    correlation = outputs["correlation.tsv"].set_index("measure")
    assert (
        correlation.loc["exam_cover", "n_runs"] == 4 and "without a score" not in correlation.loc["exam_cover", "note"]
    )

    caplog.clear()
    outputs = evaluate(data, Settings(taus=[4], k=2, measures=["P_5"], bootstrap=0), official)
    board = outputs["leaderboard.tsv"]
    assert set(board.loc[board["measure"] == "exam_cover", "run_id"]) == {"r1", "r2", "_overall_", "_gold_"}
    warnings = [r.getMessage() for r in caplog.records if "evaluated run(s) have no" in r.getMessage()]
    assert warnings == [  # r4's query q3 has no EXAM-Qrels either
        "method m: 1 evaluated run(s) have no P_5 score (first: 'r4'): no query of theirs has a value to "
        "average under evaluation.query_mode present; they take no part in its correlations",
        "method m: 2 evaluated run(s) have no exam_cover, n_exam_cover, rouge_1_f1 score (first: 'r3'): no query "
        "of theirs has a value to average under evaluation.query_mode present; they take no part in its correlations",
    ]
    correlation = outputs["correlation.tsv"].set_index("measure")
    assert correlation.loc["exam_cover", "n_runs"] == 2
    assert correlation.loc["exam_cover", "note"] == (
        "no bootstrap replicates (evaluation.bootstrap: 0); 2 official runs without a score left out: r3, r4"
    )


def test_the_pool_row_is_averaged_over_the_queries_it_has_passages_for_under_present():
    """q3 has a question but no run retrieves it and nothing is judged: the pool has no passage of it. Under
    `present` the pool row counted it 0 (2/3) and stood below what it holds; under `all` every row counts it."""
    data = inputs()
    data.questions = pd.concat([data.questions, pd.DataFrame({"query_id": ["q3"], "question_id": ["w"]})])
    data.questions["kind"] = "question"
    present = evaluate(data, Settings(taus=[4], bootstrap=0), None)["leaderboard.tsv"].set_index(["measure", "run_id"])
    # q1: a answers x (5), b answers y (4); q2: d answers z (4)
    assert present.loc[("exam_cover", "_overall_"), ["score", "n_queries"]].tolist() == [1.0, 2]
    assert present.loc[("exam_cover", "r2"), ["score", "n_queries"]].tolist() == [0.75, 2]
    every = evaluate(data, Settings(taus=[4], query_mode="all", bootstrap=0), None)["leaderboard.tsv"]
    every = every.set_index(["measure", "run_id"])
    assert every.loc[("exam_cover", "_overall_"), ["score", "n_queries"]].tolist() == [pytest.approx(2 / 3), 3]
    assert every.loc[("exam_cover", "r1"), ["score", "n_queries"]].tolist() == [pytest.approx(0.5 / 3), 3]


def test_a_bank_of_queries_without_pooled_passages_is_one_line_not_a_traceback():
    """A bank whose only query no run retrieves and no qrels judge: grading made no grade, and evaluate raised
    "No objects to concatenate" (a stranger's trial)."""
    data = inputs()
    data.grades = data.grades.iloc[:0]
    with pytest.raises(InputError, match=r"no grades to evaluate: no query of the exam has a pooled passage"):
        evaluate(data, Settings(taus=[4], bootstrap=0), None)


def test_a_method_whose_every_pair_failed_is_an_error_not_a_leaderboard_of_zeros():
    """Every pair failed within max_error_rate 1: the leaderboard lost map, nDCG, ... without a word, then
    (a stranger's trial) read every run 0.000 ± 0.000 with exit 0, from no answer at all."""
    data = inputs()
    data.grades = data.grades.assign(rating=pd.NA, error="malformed: ??")
    with pytest.raises(InputError, match=r"^--grades: method m: every one of its \d+ graded pairs failed: no score"):
        evaluate(data, Settings(taus=[4], measures=["P_5", "map"], bootstrap=0), None)


def test_a_method_whose_every_answer_is_no_grade_is_an_error_and_one_grade_is_enough():
    """A tiny model answered `H H H` to every pair; `mode: reference` read each as the published parse does (0),
    and the run ended with leaderboards, exit 0 (a stranger's trial)."""
    data = inputs()
    pairs = len(data.grades)
    unparsable = data.grades.assign(rating=0, unparsable=True, error=None)
    data.grades = unparsable
    with pytest.raises(InputError, match=(
        rf"^--grades: method m: none of its {pairs} graded pairs of pooled passages \(gold articles' aside\) got a grade "
        rf"from its model: {pairs} answers are no "
        r"grade, each read as the method's `mode` says \(docs/methods.md §3\): no score would mean anything"
    )):  # fmt: skip
        evaluate(data, Settings(taus=[4], bootstrap=0), None)
    one_failed = unparsable["error"].mask(unparsable.index == unparsable.index[0], "timeout: 30 s")
    data.grades = unparsable.assign(error=one_failed)
    with pytest.raises(InputError, match=rf"{pairs - 1} answers are no grade, .*, and 1 failed: no score"):
        evaluate(data, Settings(taus=[4], bootstrap=0), None)
    # one answer that is a grade: evaluated (the others' zeros are the published parse's)
    data.grades = unparsable.assign(unparsable=unparsable.index != unparsable.index[0])
    board = evaluate(data, Settings(taus=[4], bootstrap=0), None)["leaderboard.tsv"]
    assert set(board["measure"]) >= {"exam_cover"}
    # a published workbench table beside examflow's holds NaN there, which is no flag (a reviewer's probe)
    data.grades = unparsable.assign(unparsable=float("nan")).astype({"unparsable": object})
    board = evaluate(data, Settings(taus=[4], bootstrap=0), None)["leaderboard.tsv"]
    assert set(board["measure"]) >= {"exam_cover"}


def test_a_query_whose_every_pair_failed_is_named_in_a_warning(caplog):
    """One query's pairs all failed within the allowance: EXAM-Cover counted it 0 for every run, trec_eval's
    measures left it out (no label), and nothing said so (a stranger's trial)."""
    data = inputs()
    failed = data.grades["query_id"] == "q2"
    data.grades = data.grades.assign(
        rating=data.grades["rating"].mask(failed), error=data.grades["error"].mask(failed, "http-500: down")
    )
    board = evaluate(data, Settings(taus=[4], measures=["P_5"], bootstrap=0), None)["leaderboard.tsv"]
    board = board.set_index(["measure", "run_id"])
    assert board.loc[("exam_cover", "_overall_"), ["score", "n_queries"]].tolist() == [0.5, 2]  # q2 answers nothing
    assert board.loc[("P_5", "r1"), "n_queries"] == 1  # q1 alone has labels
    assert (
        "method m: no passage of 1 query has an EXAM-Qrels label, its grades having failed (q2): trec_eval's "
        "measures leave it out" in caplog.text
    )


def test_a_kappa_whose_labels_all_stay_below_its_cut_is_empty(caplog):
    """UMBRELA grades 0-3: STRICT (label >= 4) read κ 0.000 for every judge of its kind, as if a result; so
    did the published direct-grading prompt classes, whose grades name no kind."""
    from sklearn.metrics import cohen_kappa_score

    judged = pd.DataFrame([("q1", None, "a", 2), ("q1", None, "b", 0), ("q1", None, "c", 1), ("q2", None, "d", 3)],
                          columns=["query_id", "facet_id", "passage_id", "relevance"])  # fmt: skip
    for top, strict_is_empty in ((3, True), (5, False)):
        data = inputs()
        data.grades = data.grades.assign(rating=data.grades["rating"].clip(upper=top))
        data.judgments = judged
        caplog.clear()
        kappa = evaluate(data, Settings(taus=[1], measures=[], bootstrap=0), None)["kappa.tsv"].set_index("table")
        # labels a 5 (3), b 4 (3), c 1, d 4 (3) against judgments >= 1 relevant: a, c, d
        lenient = cohen_kappa_score([1, 1, 1, 1], [1, 0, 1, 1])
        assert kappa.loc["lenient", "kappa"] == pytest.approx(lenient) and kappa.loc["strict", "n_pairs"] == 4
        strict = kappa.loc["strict", "kappa"]
        assert pd.isna(strict) if strict_is_empty else strict == pytest.approx(cohen_kappa_score([1, 1, 0, 1],
                                                                                                 [1, 0, 1, 1]))  # fmt: skip
        assert (
            "method m: no judged passage's EXAM-Label reaches 4: STRICT κ is left empty" in caplog.text
        ) == strict_is_empty
    # a kind whose scale stops below the cut (UMBRELA's 0-3): expected, a line of the log, not a warning each run
    data.grades = data.grades.assign(kind="umbrela", rating=data.grades["rating"].clip(upper=3))
    caplog.clear()
    with caplog.at_level("INFO"):
        kappa = evaluate(data, Settings(taus=[1], measures=[], bootstrap=0), None)["kappa.tsv"].set_index("table")
    assert pd.isna(kappa.loc["strict", "kappa"]) and kappa.loc["lenient", "kappa"] == pytest.approx(lenient)
    assert [(r.levelname, r.getMessage()) for r in caplog.records if "κ" in r.getMessage()] == [
        ("INFO", "method m: its grades stop at 3, below STRICT's 4: its κ is left empty")
    ]


def test_an_official_leaderboard_of_no_evaluated_run_leaves_the_diagnostics_empty():
    """No official run ranks the exam's queries: no correlation, no leave-one-out change (it raised a
    TypeError dividing an empty table's columns)."""
    outputs = evaluate(inputs(), Settings(taus=[4], measures=["P_5"], bootstrap=0), {"x": 1.0, "y": 2.0})
    assert outputs["questions.tsv"]["loo_kendall_change"].isna().all() and len(outputs["questions.tsv"]) == 3
    assert (outputs["correlation.tsv"]["n_runs"] == 0).all()


def test_each_grades_table_is_a_methods_own(tmp_path):
    from examflow.commands import _grades_tables

    table = inputs().grades
    first, second, bank = tmp_path / "m.parquet", tmp_path / "m again.parquet", tmp_path / "bank.parquet"
    table.to_parquet(first)
    table.assign(rating=0).to_parquet(second)  # the same method, other grades: they were merged
    table.drop(columns="method").to_parquet(bank)
    with pytest.raises(
        InputError, match=rf"m again.parquet: method 'm' is in {first} too: give each method's grades once"
    ):
        _grades_tables([str(first), str(second)])
    with pytest.raises(InputError, match=r"bank.parquet: not a grades table \(no `method` column\)"):
        _grades_tables([str(bank)])
    assert len(_grades_tables([str(first)])[0]) == len(table)


def test_n_exam_gold_needs_gold_articles():
    gold = scores(
        evaluate(inputs(gold=True), Settings(taus=[4], measures=[], n_exam="gold", bootstrap=0), None)[
            "leaderboard.tsv"
        ]
    )
    assert gold[("n_exam_cover", 4, "r1")] == 1.0  # r1 covers 1/2 of q1, as does the gold article
    assert gold[("n_exam_cover", 4, "r2")] == 1.0  # q2 has no gold article and takes no part
    # A gold article that answers all of q1 weighs 1, as a plain mean's queries do: still a ratio of sums
    data = inputs(gold=True)
    data.grades.loc[(data.grades["passage_id"] == "g") & (data.grades["question_id"] == "x"), "rating"] = 5
    board = evaluate(data, Settings(taus=[4], measures=[], n_exam="gold", bootstrap=0), None)["leaderboard.tsv"]
    r1 = board[board["run_id"] == "r1"].set_index("measure")
    assert r1.loc["n_exam_cover", ["score", "n_queries"]].tolist() == [0.5, 1] and math.isnan(
        r1.at["n_exam_cover", "stderr"]
    )
    assert r1.at["exam_cover", "stderr"] == 0.0  # a plain mean over one query, as the reference writes it
    with pytest.raises(InputError, match=r"n-EXAM gold \(evaluation.n_exam, --n-exam\): needs graded gold articles"):
        per_query_values(inputs().grades, inputs(), Settings(n_exam="gold"))


def test_a_methods_exam_is_the_bank_items_of_the_kind_it_grades():
    bank = pd.DataFrame(
        {"query_id": ["q", "q", "q"], "question_id": ["x", "y", "n"], "kind": ["question", "question", "nugget"]}
    )
    graded = pd.DataFrame({"query_id": ["q"], "question_id": ["x"]})
    assert exam_questions(graded, bank)["question_id"].tolist() == ["x", "y"]  # y was never graded: still counts
    direct = pd.DataFrame({"query_id": ["q"], "question_id": ["q"]})
    assert exam_questions(direct, bank)["question_id"].tolist() == ["q"]
    assert exam_questions(graded, None)["question_id"].tolist() == ["x"]


def test_grades_of_passages_the_pool_does_not_hold_are_left_out(caplog):
    """A pool without r2 (withdrawn after the grading: b and d) evaluated with the grades of the whole pool:
    b's and d's grades counted in the pool's rows, `_overall_` and n-EXAM's denominator, and in the qrels."""
    given = inputs()
    withdrawn = given.passages["passage_id"].isin(["b", "d"])
    given.rankings = given.rankings[given.rankings["run_id"] != "r2"]
    given.passages = given.passages[~withdrawn]
    settings = Settings(taus=[4], k=20, measures=[], bootstrap=0)
    outputs = evaluate(given, settings, None)
    # the same as grades of the pool given: a (x at 5) and c
    fresh = inputs()
    fresh.grades = fresh.grades[~fresh.grades["passage_id"].isin(["b", "d"])]
    fresh.rankings, fresh.passages = given.rankings, given.passages
    expected = evaluate(fresh, settings, None)
    pd.testing.assert_frame_equal(outputs["leaderboard.tsv"], expected["leaderboard.tsv"])
    board = scores(outputs["leaderboard.tsv"])
    # q1: x of {x, y} (b's y is no longer pooled); q2: no passage of it pooled any more, out of the mean
    assert board[("exam_cover", 4, "_overall_")] == 0.5
    assert board[("n_exam_cover", 4, "r1")] == 1.0  # the pool answers x alone
    assert outputs["qrels/m.qrels"] == "q1 0 a 5\nq1 0 c 1\n"
    assert (
        "method m: the pool given does not hold 2 of its graded passages (first: 'b' of query 'q1'): left out"
        in caplog.text
    )


def test_a_pooled_passage_or_a_question_without_grades_is_an_error():
    """Grades made before a run or a question was added: the passage or the question would answer nothing."""
    ungraded = inputs()
    ungraded.grades = ungraded.grades[
        ~((ungraded.grades["passage_id"] == "a") & (ungraded.grades["question_id"] == "y"))
    ]
    with pytest.raises(InputError, match=r"--grades: method m: 1 pooled passages lack grades of items of their "
                       r"query's exam \(first: 'a' of query 'q1', 1 of 2 graded\): grade the pool given"):  # fmt: skip
        evaluate(ungraded, Settings(taus=[4], measures=[], bootstrap=0), None)
    added = inputs()
    added.questions = pd.concat(
        [added.questions, pd.DataFrame({"query_id": ["q2"], "question_id": ["w"], "kind": "question"})]
    )
    with pytest.raises(InputError, match=r"first: 'd' of query 'q2', 1 of 2 graded"):
        evaluate(added, Settings(taus=[4], measures=[], bootstrap=0), None)


def test_grades_of_questions_the_bank_does_not_hold_are_left_out(caplog):
    """A bank given without q1's y (edited after the grading): the pool answered 2 of q1's questions that the
    bank counts 1 of, and its EXAM-Cover read (2/1 + 1/1) / 2 = 1.5 with exit 0."""
    given = inputs()
    given.questions = given.questions[given.questions["question_id"] != "y"]
    outputs = evaluate(given, Settings(taus=[4], k=20, measures=[], bootstrap=0), None)
    board = scores(outputs["leaderboard.tsv"])
    assert board[("exam_cover", 4, "r1")] == 1.0  # q1's exam is {x}: a answers it
    assert board[("exam_cover", 4, "r2")] == 0.5  # b answers y, no longer asked; d answers z
    assert all(v <= 1 for (measure, _, _), v in board.items() if measure == "exam_cover")
    assert "method m: the bank given does not hold 1 of its graded questions (3 grades): left out" in caplog.text
    assert outputs["qrels/m.qrels"] == "q1 0 a 5\nq1 0 b 0\nq1 0 c 1\nq2 0 d 4\n"  # b's 4 came from y alone
    # grades that name their kind are a bank's: a bank that holds none of them is no exam of theirs
    stale = inputs()
    stale.grades = stale.grades.assign(kind="self_rating")
    stale.questions = stale.questions.assign(question_id=["x2", "y2", "z2"])
    with pytest.raises(InputError, match="--questions: method m: none of its 3 graded items is in the bank given"):
        evaluate(stale, Settings(taus=[4], k=20, measures=[], bootstrap=0), None)
    direct = inputs()  # a direct judge's "question" is the query: no bank item, and nothing left out
    direct.grades = direct.grades.assign(kind="umbrela", question_id=direct.grades["query_id"])
    board = scores(evaluate(direct, Settings(taus=[4], k=20, measures=[], bootstrap=0), None)["leaderboard.tsv"])
    assert board[("exam_cover", 4, "r1")] == 1.0 and board[("exam_cover", 4, "r2")] == 1.0


def test_correlation_table_has_random_ties_tau_ap_and_says_why_it_has_no_interval():
    """Two queries: a replicate that draws q2 alone gives r1 no score (left out); one that draws q1 alone
    ties the runs (1/2 each), a third of the others: no interval, and the note counts them."""
    official = {"r1": 2, "r2": 1}
    table = evaluate(inputs(), Settings(taus=[4], measures=[], bootstrap=50), official)["correlation.tsv"]
    row = table[(table["measure"] == "exam_cover")].iloc[0]
    assert row["spearman"] == pytest.approx(1.0) and row["kendall"] == pytest.approx(1.0) and row["n_runs"] == 2
    assert row["spearman_random_ties"] == pytest.approx(1.0) and row["tau_ap"] == 1.0
    assert math.isnan(row["spearman_low"]) and math.isnan(row["kendall_high"])
    tied, kept = map(int, re.fullmatch(r"(\d+) of (\d+) bootstrap replicates have no order to compare: more than "
                                       r"2.5%, so no 95% interval", row["note"]).groups())  # fmt: skip
    assert 25 < kept < 50 and 0.15 < tied / kept < 0.5  # of 50 replicates a quarter left out, a third of the rest


def test_answer_checking_without_any_answer_key_is_named_in_a_warning(caplog):
    """qa_verify on a bank without answer keys: every answer unchecked, EXAM-Cover 0, no EXAM score, and
    nothing said. With one checked answer the EXAM score is there, and no warning."""
    data = inputs()
    data.grades = data.grades.assign(kind="qa_verify", rating=pd.NA).astype({"rating": "Int64"})
    board = scores(evaluate(data, Settings(taus=[4], measures=[], bootstrap=0), None)["leaderboard.tsv"])
    assert board[("exam_cover", 4, "r1")] == 0 and not [key for key in board if key[0] == "exam"]
    (warning,) = [r.getMessage() for r in caplog.records if "answer key" in r.getMessage()]
    assert warning == ("method m: no graded question has an answer key (gold_answers): no answer is checked, "
                       "EXAM-Cover is 0 and there is no EXAM score")  # fmt: skip
    caplog.clear()
    data.grades.loc[data.grades.index[0], "correct"] = True  # a answers x
    board = scores(evaluate(data, Settings(taus=[4], measures=[], bootstrap=0), None)["leaderboard.tsv"])
    assert board[("exam", None, "r1")] == 0.5 and not [r for r in caplog.records if "answer key" in r.getMessage()]


def test_a_pooled_query_without_a_grade_is_warned_of_when_no_bank_says_the_exam(caplog):
    """Without `--questions` the exam is what was graded: a shard left out of a merge by hand dropped its
    queries from every run's mean in silence (a stranger: nDCG@10 0.795 over one query, not 0.713 over three)."""
    data = inputs()
    data.questions = None
    data.grades = data.grades[data.grades["query_id"] == "q1"]
    board = evaluate(data, Settings(taus=[4], measures=[], bootstrap=0), None)["leaderboard.tsv"]
    assert board.set_index(["measure", "run_id"]).loc[("exam_cover", "r2"), "n_queries"] == 1  # q1 alone
    said = (
        "method m: no grade of 1 pooled query (q2): no measure scores it, and every run is averaged over the other "
        "queries; were all the shards merged?"
    )
    assert said in caplog.text
    caplog.clear()
    evaluate(inputs(), Settings(taus=[4], measures=[], bootstrap=0), None)  # with the bank: no such warning
    assert "no grade of" not in caplog.text
    # a direct judge's exam is what it graded, bank or none: the bank is not blamed (a reviewer)
    direct = inputs()
    direct.grades = direct.grades[direct.grades["query_id"] == "q1"].assign(kind="umbrela", question_id="q1")
    evaluate(direct, Settings(taus=[2], measures=[], bootstrap=0), None)
    assert said in caplog.text and "the bank holds" not in caplog.text


def test_a_pooled_query_the_bank_holds_no_question_of_is_warned_of(caplog):
    """A bank that missed a query (q2): no EXAM-Cover, no EXAM-Qrels line, every run averaged over q1 alone, and
    nothing said (a stranger's trial). Under `all` too: an empty exam is no 0."""
    for mode in ("present", "all"):
        data = inputs()
        data.questions = data.questions[data.questions["query_id"] == "q1"]
        outputs = evaluate(data, Settings(taus=[4], measures=["P_5"], query_mode=mode, bootstrap=0), None)
        board = outputs["leaderboard.tsv"].set_index(["measure", "run_id"])
        assert board.loc[("exam_cover", "r2"), "n_queries"] == 1 and board.loc[("exam_cover", "r2"), "score"] == 0.5
        assert outputs["qrels/m.qrels"] == "q1 0 a 5\nq1 0 b 4\nq1 0 c 1\n"
        assert (
            "method m: the bank holds no item of 1 pooled query (q2): no measure scores it, and every run is "
            "averaged over the other queries" in caplog.text
        )
        caplog.clear()
    evaluate(inputs(), Settings(taus=[4], measures=[], bootstrap=0), None)  # every pooled query has questions
    assert "the bank holds no item" not in caplog.text
