"""EXAM-Qrels labels and trec_eval measures through pytrec_eval (SPEC §4)."""

from __future__ import annotations

import pandas as pd
import pytest

from examflow.evaluation.qrels import exam_labels, format_qrels, trec_scores


def grades(rows, qa: bool = False) -> pd.DataFrame:
    table = pd.DataFrame(
        [(q, f, p, r if not qa else None, r if qa else None, None) for q, f, p, r in rows],
        columns=["query_id", "facet_id", "passage_id", "rating", "correct", "error"],
    )
    return table.astype({"rating": "Int64", "correct": "boolean"})


def test_labels_are_max_grade_or_number_correct_and_per_facet():
    rated = grades([("q", "f1", "a", 2), ("q", "f1", "a", 5), ("q", "f2", "a", 1), ("q", "f2", "b", 0)])
    assert exam_labels(rated).values.tolist() == [["q", "a", 5], ["q", "b", 0]]
    assert exam_labels(rated, per_facet=True).values.tolist() == [["q/f1", "a", 5], ["q/f2", "a", 1], ["q/f2", "b", 0]]
    qa = grades([("q", None, "a", True), ("q", None, "a", True), ("q", None, "b", False)], qa=True)
    assert exam_labels(qa).values.tolist() == [["q", "a", 2], ["q", "b", 0]]
    assert format_qrels(exam_labels(rated)) == "q 0 a 5\nq 0 b 0\n"


def test_trec_measures_at_relevance_level_tau_and_missing_queries():
    labels = pd.DataFrame(
        {"qrels_id": ["q1", "q1", "q1", "q2"], "passage_id": ["a", "b", "c", "d"], "label": [5, 3, 0, 4]}
    )
    rankings = pd.DataFrame(
        [("r", "q1", "c", 1, 3.0), ("r", "q1", "a", 2, 2.0), ("r", "q1", "b", 3, 1.0)],
        columns=["run_id", "query_id", "passage_id", "rank", "score"],
    )
    at4 = trec_scores(labels, rankings, levels=[4], measures=("recip_rank", "P_5"))
    assert at4.set_index(["query_id", "measure"])["value"].to_dict() == {("q1", "recip_rank"): 0.5, ("q1", "P_5"): 0.2}
    at1 = trec_scores(labels, rankings, levels=[1], measures=("P_5",))
    assert at1["value"].tolist() == [pytest.approx(0.4)]  # a and b relevant at level 1
    complete = trec_scores(labels, rankings, levels=[4], measures=("recip_rank",), complete=True)
    assert complete.set_index("query_id")["value"].to_dict() == {"q1": 0.5, "q2": 0.0}
    both = trec_scores(labels, rankings, levels=[1, 4], measures=("P_5",))  # one reading, two levels
    assert both.set_index("tau")["value"].to_dict() == {1: pytest.approx(0.4), 4: pytest.approx(0.2)}
