"""EXAM-Qrels labels and trec_eval measures through pytrec_eval (docs/methods.md §4)."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
import pytrec_eval

from examflow.evaluation.exam_qrels import exam_labels, format_qrels, trec_scores


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
    # a question without an answer key gets no verdict (qa_llm_verify, extractive_qa): still a count
    unkeyed = grades(
        [("q", None, "a", True), ("q", None, "a", True), ("q", None, "a", None), ("q", None, "b", None)], qa=True
    )
    assert exam_labels(unkeyed).values.tolist() == [["q", "a", 2], ["q", "b", 0]]
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


def test_measures_that_ignore_the_relevance_level_are_the_ones_trec_eval_computes_alike_at_every_level():
    from examflow.evaluation.exam_qrels import level_free

    # Graded judgments 0-5; the run retrieves half the judged passages and unjudged ones besides. Queries
    # whose best label is 2 or 0 have no relevant passage at higher levels (trec_eval's Rndcg is 0 there).
    rng = random.Random(1)
    qrels = {f"q{i}": {f"d{j}": rng.randint(0, top) for j in range(30)} for i, top in enumerate((5, 5, 5, 2, 0))}
    run = {f"q{i}": {f"d{j}": rng.random() for j in range(15, 55)} for i in range(5)}
    cut = {"P": "P_10", "ndcg_cut": "ndcg_cut_10", "map_cut": "map_cut_10", "recall": "recall_10",
           "iprec_at_recall": "iprec_at_recall_0.50", "success": "success_10", "relative_P": "relative_P_10"}  # fmt: skip
    for family in sorted(pytrec_eval.supported_measures - {"num_q", "relstring", "runid"}):
        name = cut.get(family, family)
        values = [pytrec_eval.RelevanceEvaluator(qrels, {name}, relevance_level=level).evaluate(run)
                  for level in range(1, 6)]  # fmt: skip
        assert level_free(name) == all(v == values[0] for v in values), name


def test_a_measure_that_ignores_the_level_is_listed_once_without_tau():
    labels = pd.DataFrame({"qrels_id": ["q"] * 3, "passage_id": ["a", "b", "c"], "label": [3, 1, 0]})
    rankings = pd.DataFrame({"run_id": "r", "query_id": "q", "passage_id": ["b", "a", "c"], "score": [3.0, 2.0, 1.0]})
    table = trec_scores(labels, rankings, [1, 3], ["ndcg_cut_10", "P_1"])
    rows = {
        (m, None if pd.isna(t) else int(t)): v for m, t, v in table[["measure", "tau", "value"]].itertuples(index=False)
    }
    # nDCG@10 with gains 3, 1, 0 in the order b, a, c; ideal a, b, c.
    dcg, ideal = 1 / math.log2(2) + 3 / math.log2(3), 3 / math.log2(2) + 1 / math.log2(3)
    assert rows.keys() == {("ndcg_cut_10", None), ("P_1", 1), ("P_1", 3)}
    assert rows[("ndcg_cut_10", None)] == pytest.approx(dcg / ideal)
    assert (rows[("P_1", 1)], rows[("P_1", 3)]) == (1.0, 0.0)  # b is relevant at level 1, not at 3


def test_negative_judgments_are_read_as_trec_eval_reads_them():
    """trec_eval reads a negative label (TREC CAR's -2) as pooled but not judged: bpref passes over it. With a
    relevant a, b judged -2 and c judged 0, a run ranking b, a, x, c has no judged non-relevant document above a
    (bpref 1; it was 0 with -2 read as 0) and one retrieved (c). A query judged -2 alone, on which pytrec_eval
    crashes, has nothing relevant: 0, and it stays evaluated."""
    labels = pd.DataFrame(
        {"qrels_id": ["q", "q", "q", "alone"], "passage_id": ["a", "b", "c", "d"], "label": [1, -2, 0, -2]}
    )
    rankings = pd.DataFrame(
        {"run_id": "r", "query_id": ["q"] * 4 + ["alone"], "passage_id": ["b", "a", "x", "c", "d"],
         "rank": [1, 2, 3, 4, 1], "score": [4.0, 3.0, 2.0, 1.0, 1.0]}
    )  # fmt: skip
    values = trec_scores(labels, rankings, [1], ["bpref", "num_nonrel_judged_ret", "P_5"])
    got = {(q, m): v for q, m, v in values[["query_id", "measure", "value"]].itertuples(index=False)}
    assert got == {("q", "bpref"): 1.0, ("q", "num_nonrel_judged_ret"): 1.0, ("q", "P_5"): 0.2,
                   ("alone", "bpref"): 0.0, ("alone", "num_nonrel_judged_ret"): 0.0, ("alone", "P_5"): 0.0}  # fmt: skip
