"""EXAM-Cover, n-EXAM (pool and gold), the original EXAM and query averaging, hand-computed (docs/methods.md §4)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from examflow.evaluation.cover import best_levels, complete, cover_counts, cover_measures
from examflow.evaluation.scores import system_scores


def grade_rows(rows):
    """(query, passage, question, rating, correct, error) rows as a grades table."""
    return pd.DataFrame(rows, columns=["query_id", "passage_id", "question_id", "rating", "correct", "error"]).astype(
        {"rating": "Int64", "correct": "boolean"}
    )


GRADES = grade_rows(
    [
        ("q1", "a", "x", 5, None, None), ("q1", "a", "y", 4, None, None), ("q1", "b", "y", 5, None, None),
        ("q1", "c", "z", 2, None, None), ("q1", "d", "w", None, None, "HTTP 500"),
        ("q2", "d", "u", 4, None, None), ("q2", "e", "v", 0, None, None),
    ]
)  # fmt: skip
QUESTIONS = pd.DataFrame(
    {"query_id": ["q1", "q1", "q1", "q1", "q2", "q2"], "question_id": ["w", "x", "y", "z", "u", "v"]}
)
RANKINGS = pd.DataFrame(
    [
        ("r1", "q1", "b", 1), ("r1", "q1", "a", 2), ("r1", "q1", "c", 3), ("r1", "q1", "d", 4),
        ("r2", "q1", "c", 0), ("r2", "q1", "b", 1), ("r2", "q1", "a", 2),
        ("r2", "q2", "e", 1),
    ],
    columns=["run_id", "query_id", "passage_id", "rank"],
)  # fmt: skip


def counts(grades=GRADES, rankings=RANKINGS, taus=(4,), k=2, **options):
    table = cover_counts(best_levels(grades), rankings, QUESTIONS, list(taus), k, **options)
    return table.set_index(["run_id", "query_id", "tau"])


def test_cover_counts_each_question_once_within_the_budget_of_ranks_as_written():
    table = counts()
    # r1 ranks 1..2 = b, a: y (answered twice) and x -> 2 of 4; the pool answers x, y at tau 4
    assert table.loc[("r1", "q1", 4), ["covered", "questions", "answerable"]].tolist() == [2, 4, 2]
    # r2 is 0-based: ranks 0..2 = c, b, a, three passages as pooling takes them -> x and y
    assert table.loc[("r2", "q1", 4), "covered"] == 2
    assert table.loc[("r2", "q2", 4), ["covered", "answerable"]].tolist() == [0, 1]
    # the whole pool, a row of its own; an error is no grade, so w stays unanswered at tau 1 too
    assert table.loc[("_overall_", "q1", 4), "covered"] == 2
    assert counts(taus=(1,), k=5).loc[("_overall_", "q1", 1), "covered"] == 3


def test_measures_and_zero_denominators():
    measures = cover_measures(counts(taus=(4, 5)).reset_index()).set_index(["run_id", "query_id", "measure", "tau"])
    assert measures.loc[("r1", "q1", "exam_cover", 4), "value"] == 0.5
    assert measures.loc[("r1", "q1", "n_exam_cover", 4), "value"] == 1.0
    assert measures.loc[("r1", "q1", "n_exam_cover", 5), "value"] == 1.0  # x and y at 5, both by a and b
    assert measures.loc[("r2", "q2", "n_exam_cover", 5), "value"] == 0.0  # nothing answerable: 0, not NaN
    assert measures.loc[("_overall_", "q2", "n_exam_cover", 5), "value"] == 0.0
    assert measures.loc[("_overall_", "q1", "exam_cover", 4), "value"] == 0.5


def test_query_averaging_present_and_all_with_standard_errors():
    table = counts().reset_index()
    present = system_scores(cover_measures(table)).set_index(["measure", "run_id"])
    assert present.loc[("exam_cover", "r1"), ["score", "stderr", "n_queries"]].tolist() == [0.5, 0.0, 1]
    assert present.loc[("exam_cover", "r2"), "score"] == pytest.approx((0.5 + 0.0) / 2)
    everything = system_scores(cover_measures(complete(table, ["q1", "q2"], ["r1", "r2", "r3"])))
    everything = everything.set_index(["measure", "run_id"])
    assert everything.loc[("exam_cover", "r1"), ["score", "n_queries"]].tolist() == [0.25, 2]
    assert everything.loc[("exam_cover", "r3"), ["score", "n_queries"]].tolist() == [0.0, 2]  # no row before
    assert everything.loc[("exam_cover", "r1"), "stderr"] == pytest.approx(math.sqrt(0.25**2 * 2) / math.sqrt(2))
    with pytest.raises(ValueError, match="'pool' or 'gold'"):
        cover_measures(table, n_exam="some")


def test_n_exam_gold_is_a_ratio_of_sums_over_queries_with_a_gold_article():
    gold = pd.DataFrame([("_gold_", "q1", "g1", 1), ("_gold_", "q1", "g2", 2)], columns=RANKINGS.columns)
    gold_grades = grade_rows([("q1", "g1", "x", 5, None, None), ("q1", "g2", "z", 4, None, None)])
    excluded = gold[["query_id", "passage_id"]]
    table = counts(pd.concat([GRADES, gold_grades]), pd.concat([RANKINGS, gold]), excluded=excluded)
    # gold articles cover x and z at tau 4 but are not pooled passages: answerable stays x, y
    assert table.loc[("_gold_", "q1", 4), "covered"] == 2 and table.loc[("r1", "q1", 4), "answerable"] == 2
    scores = system_scores(cover_measures(table.reset_index(), n_exam="gold")).set_index(["measure", "run_id"])
    # r1: EXAM(q1) = 2/4 over the gold article's 2/4 -> 1.0; q2 has no gold article and takes no part
    assert scores.loc[("n_exam_cover", "r1"), ["score", "n_queries"]].tolist() == [1.0, 1]
    assert math.isnan(scores.loc[("n_exam_cover", "r1"), "stderr"])  # a ratio of sums has no plain stderr


def test_original_exam_counts_correct_answers_against_answer_keys():
    qa = grade_rows(
        [("q1", "a", "x", None, True, None), ("q1", "b", "x", None, True, None), ("q1", "b", "y", None, False, None)]
    )
    measures = cover_measures(counts(qa, taus=(1, 5)).reset_index(), exam=True)
    exam = measures[measures["measure"] == "exam"].set_index(["run_id", "query_id"])["value"]
    assert exam[("r1", "q1")] == 0.25 and exam[("r2", "q2")] == 0.0
    assert measures["tau"][measures["measure"] == "exam"].isna().all()  # one value, whatever tau
    # a correct answer counts as answered at every tau
    cover = measures[measures["measure"] == "exam_cover"].set_index(["run_id", "query_id", "tau"])["value"]
    assert cover[("r1", "q1", 5)] == 0.25
