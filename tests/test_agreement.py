"""Cohen's kappa and contingency tables against official judgments (docs/methods.md §5)."""

from __future__ import annotations

import pandas as pd
import pytest

from examflow.evaluation.agreement import agreement_tables, cohen_kappa, kappas, paired


def test_cohen_kappa_hand_computed():
    # 20 passages: 8 agree relevant, 7 agree non-relevant, 5 disagree.
    table = pd.DataFrame([[7, 3], [2, 8]], index=[False, True], columns=[False, True])
    # p_o = 15/20; p_e = (10*9 + 10*11)/400 = 0.5 -> kappa = 0.5
    assert cohen_kappa(table) == pytest.approx(0.5)
    assert cohen_kappa(pd.DataFrame([[5, 0], [0, 5]], index=[False, True], columns=[False, True])) == 1.0
    assert pd.isna(cohen_kappa(pd.DataFrame([[0, 0], [0, 0]], index=[False, True], columns=[False, True])))
    # exact to the last bit: p_o = 1/3, p_e = 5/9 -> -1/2 (floating-point steps gave -0.5000000000000001);
    # p_o = 3/5, p_e = 17/25 -> -1/4 (they gave -0.2500000000000003)
    for cells, kappa in (([[0, 1], [1, 1]], -0.5), ([[0, 1], [1, 3]], -0.25)):
        assert cohen_kappa(pd.DataFrame(cells, index=[False, True], columns=[False, True])) == kappa


def test_lenient_and_strict_tables_with_a_relevance_threshold():
    labels = pd.DataFrame(
        {"qrels_id": ["q", "q", "q", "q", "p/f"], "passage_id": ["a", "b", "c", "d", "e"], "label": [5, 2, 0, 4, 1]}
    )
    judgments = pd.DataFrame(
        {
            "query_id": ["q", "q", "q", "q", "p"],
            "facet_id": [None, None, None, None, "f"],
            "passage_id": ["a", "b", "c", "z", "e"],
            "relevance": [3, 1, 0, 2, 1],
        }
    )
    pairs = paired(labels, judgments)
    assert sorted(pairs["passage_id"]) == ["a", "b", "c", "e"]  # d has no judgment, z no label
    tables = agreement_tables(pairs, relevant_judgment=2)
    assert tables["graded"].loc[5, 3] == 1 and tables["graded"].to_numpy().sum() == 4
    # lenient: labels >= 1 are a, b, e; relevant (>= 2) is a only
    assert tables["lenient"].to_numpy().tolist() == [[1, 0], [2, 1]]
    # strict: label >= 4 is a only -> perfect agreement with "relevant"
    assert tables["strict"].to_numpy().tolist() == [[3, 0], [0, 1]]
    assert kappas(tables)["strict"] == 1.0
    assert kappas(tables)["lenient"] == pytest.approx((2 / 4 - (1 * 3 + 3 * 1) / 16) / (1 - 6 / 16))
