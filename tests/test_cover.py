"""EXAM-Cover and n-EXAM on a hand-computed example (SPEC §4)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from examflow.evaluation.cover import cover_per_query, system_scores


def grade_rows(rows):
    return pd.DataFrame(
        [(q, p, qu, r, None, None) for q, p, qu, r in rows],
        columns=["query_id", "passage_id", "question_id", "rating", "correct", "error"],
    ).astype({"rating": "Int64", "correct": "boolean"})


GRADES = grade_rows(
    [
        ("q1", "a", "x", 5), ("q1", "a", "y", 4), ("q1", "b", "y", 5), ("q1", "c", "z", 2),
        ("q2", "d", "u", 4), ("q2", "e", "v", 0),
    ]
)  # fmt: skip
QUESTIONS = pd.DataFrame(
    {"query_id": ["q1", "q1", "q1", "q1", "q2", "q2"], "question_id": ["w", "x", "y", "z", "u", "v"]}
)
RANKINGS = pd.DataFrame(
    [
        ("r1", "q1", "b", 1),
        ("r1", "q1", "a", 2),
        ("r1", "q1", "c", 3),
        ("r2", "q1", "c", 0),
        ("r2", "q1", "b", 1),
        ("r2", "q2", "e", 1),
    ],
    columns=["run_id", "query_id", "passage_id", "rank"],
)


def test_cover_counts_each_question_once_within_the_budget():
    table = cover_per_query(GRADES, RANKINGS, QUESTIONS, tau=4, k=2).set_index(["run_id", "query_id"])
    # r1 top-2 = b, a: answers y (twice) and x -> 2 of 4; answerable in the pool at tau 4: x, y -> n-EXAM 1.0
    assert table.loc[("r1", "q1"), ["covered", "questions", "answerable"]].tolist() == [2, 4, 2]
    assert table.loc[("r1", "q1"), "exam_cover"] == 0.5 and table.loc[("r1", "q1"), "n_exam_cover"] == 1.0
    # r2 (0-based) top-2 = c, b: c answers z only at grade 2 < 4; b answers y -> 1 of 4
    assert table.loc[("r2", "q1"), "exam_cover"] == 0.25
    assert table.loc[("r2", "q2"), ["covered", "answerable"]].tolist() == [0, 1]
    low = cover_per_query(GRADES, RANKINGS, QUESTIONS, tau=1, k=3).set_index(["run_id", "query_id"])
    assert low.loc[("r1", "q1"), "covered"] == 3


def test_zero_denominators_and_query_averaging_modes():
    grades = grade_rows([("q1", "a", "x", 0)])
    table = cover_per_query(grades, RANKINGS[RANKINGS["run_id"] == "r1"], QUESTIONS, tau=1)
    assert table["n_exam_cover"].tolist() == [0.0]  # nothing answerable in the pool: 0, not NaN
    per_query = cover_per_query(GRADES, RANKINGS, QUESTIONS, tau=4, k=2)
    present = system_scores(per_query, "exam_cover", ["q1", "q2"], "present").set_index("run_id")
    everything = system_scores(per_query, "exam_cover", ["q1", "q2"], "all").set_index("run_id")
    assert present.loc["r1"].tolist() == [0.5, 0.0, 1]
    assert everything.loc["r1", "score"] == 0.25 and everything.loc["r1", "n_queries"] == 2
    assert everything.loc["r1", "stderr"] == pytest.approx(math.sqrt(((0.5 - 0.25) ** 2 + 0.25**2) / 1) / math.sqrt(2))
    with pytest.raises(ValueError, match="'present' or 'all'"):
        system_scores(per_query, "exam_cover", ["q1"], "some")
