"""Agreement of EXAM labels with official judgments (docs/methods.md §5): contingency tables and Cohen's κ.

Per passage that has both a judgment and a label: the graded table (labels × judgments),
LENIENT (label ≥ 1 against relevant) and STRICT (label ≥ 4 against relevant), where
"relevant" means a judgment ≥ the threshold (1 for CAR, 2 for TREC DL).
"""

from __future__ import annotations

from fractions import Fraction
from typing import cast

import pandas as pd

from examflow.io.qrels import qrels_ids

AGREEMENT_COLUMNS = ["table", "label", "judgment", "count"]
CUTS = {"lenient": 1, "strict": 4}  # the binary tables: an EXAM-Label this high or higher counts as relevant


def paired(labels: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """Labels joined to judgments on (qrels id, passage); a judgment of a facet uses `query/facet`."""
    judged = pd.DataFrame(
        {"qrels_id": qrels_ids(judgments), "passage_id": judgments["passage_id"], "judgment": judgments["relevance"]}
    )
    return labels.merge(judged, on=["qrels_id", "passage_id"])


def per_page(judgments: pd.DataFrame) -> pd.DataFrame:
    """Judgments of subtopics as judgments of their pages: a passage's highest on the page."""
    page = judgments.groupby(["query_id", "passage_id"], as_index=False, sort=False)["relevance"].max()
    return page.assign(facet_id=None)


def cohen_kappa(table: pd.DataFrame) -> float:
    """κ = (p_o − p_e) / (1 − p_e) for a square contingency table (rows: labels, columns: judgments), in
    exact fractions of the counts, rounded once: 7/11 is 0.6363636363636364, as sklearn has it, not the
    0.6363636363636365 of floating-point steps."""
    total = int(table.to_numpy().sum())
    if total == 0:
        return float("nan")
    # cast: `at` is typed as any scalar; a contingency table's cells are counts
    observed = Fraction(sum(int(cast(int, table.at[c, c])) for c in table.index if c in table.columns), total)
    chance = sum(int(table.loc[c].sum()) * int(table[c].sum()) for c in table.index if c in table.columns)
    expected = Fraction(chance, total**2)
    return float("nan") if expected == 1 else float((observed - expected) / (1 - expected))


def agreement_tables(pairs: pd.DataFrame, relevant_judgment: int) -> dict[str, pd.DataFrame]:
    """Every pair counts: a judgment outside 0..3 (TREC CAR's −2) or a label above 5 gets its own row or column."""
    relevant = pairs["judgment"] >= relevant_judgment
    labels = sorted(set(range(6)) | set(pairs["label"]))
    judgments = sorted(set(range(4)) | set(pairs["judgment"]))
    tables = {"graded": _counts(pairs["label"], pairs["judgment"], labels, judgments)}
    for name, cut in CUTS.items():
        tables[name] = _counts(pairs["label"] >= cut, relevant, [False, True], [False, True])
    return tables


def _counts(rows: pd.Series, columns: pd.Series, row_values: list, column_values: list) -> pd.DataFrame:
    """How often each (row, column) pair of values occurs, a row and a column for each value given (what
    pd.crosstab counts, in a third of its time)."""
    pairs = pd.DataFrame({"label": rows.to_numpy(), "judgment": columns.to_numpy()})
    return pairs.value_counts().unstack(fill_value=0).reindex(index=row_values, columns=column_values, fill_value=0)


def kappas(tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    return {name: cohen_kappa(table) for name, table in tables.items() if name != "graded"}
