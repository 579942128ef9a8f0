"""EXAM-Cover, n-EXAM and the original EXAM (docs/methods.md §4).

EXAM-Cover_τ(run, q) = share of q's questions that some passage ranked ≤ k (rank as written,
like pooling and the reference) answers with a grade ≥ τ; no credit for answering a question
twice. n-EXAM `pool` divides instead by the questions some pooled passage answers; n-EXAM `gold`
(original EXAM) is Σ_q EXAM(run, q) / Σ_q EXAM(gold article, q). The original EXAM score counts
the questions answered correctly against their answer keys. QA grades (`correct` true) answer
a question at every τ.

Per-query values come as (value, weight) rows: a run's score is Σ value / Σ weight, which is the
plain mean when every weight is 1 and the ratio of sums for n-EXAM `gold`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from examflow.io.runs import GOLD_RUN, OVERALL_RUN
from examflow.io.tables import among

PER_QUERY_COLUMNS = ["run_id", "query_id", "measure", "tau", "value", "weight"]
KEYS = ["query_id", "passage_id"]
# Per n-EXAM mode, the measures whose score is a ratio of sums (weights not all 1), with no plain standard error
RATIOS_OF_SUMS = {"pool": frozenset(), "gold": frozenset({"n_exam_cover"})}


def best_levels(grades: pd.DataFrame) -> pd.DataFrame:
    """(query, passage, question, level, correct): level = the rating, or +∞ for a correct answer."""
    graded = grades[grades["error"].isna()]
    correct = graded["correct"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    rating = graded["rating"].astype("Float64").fillna(-math.inf).to_numpy(dtype=float)
    # The ids stay Arrow strings: `to_numpy` would make millions of Python strings of them.
    ids = graded[["query_id", "passage_id", "question_id"]].reset_index(drop=True)
    return ids.assign(level=np.where(correct, math.inf, rating), correct=correct)


def cover_counts(
    levels: pd.DataFrame,
    rankings: pd.DataFrame,
    questions: pd.DataFrame,
    taus: list[int],
    k: int = 20,
    excluded: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per (run, query, τ): covered and correct questions, |Q_q|, and what the pool answers.

    `excluded` (query, passage) rows — the gold articles' passages — do not count as pooled.
    The gold run keeps all its passages; every other run its passages ranked ≤ k.
    """
    counts = questions.groupby("query_id")["question_id"].nunique()
    # A grade below every τ covers nothing (a correct answer's level is +∞): most grades, left out of the join.
    levels = levels[levels["level"] >= min(taus)]
    ranked = ranked_passages(rankings, set(counts.index), k)
    best = ranked.merge(levels, on=KEYS).groupby(["run_id", "query_id", "question_id"])[["level", "correct"]].max()
    pooled = levels if excluded is None else without_passages(levels, excluded)
    pool_best = pooled.groupby(["query_id", "question_id"])[["level", "correct"]].max()
    overall = pool_best.assign(run_id=OVERALL_RUN).set_index("run_id", append=True).reorder_levels([2, 0, 1])
    best = pd.concat([best, overall])
    lists = pd.concat(
        [
            ranked[["run_id", "query_id"]].drop_duplicates(),
            pd.DataFrame({"run_id": OVERALL_RUN, "query_id": counts.index}),
        ]
    )
    parts = []
    for tau in taus:
        hit = (best["level"] >= tau).groupby(level=["run_id", "query_id"]).sum()
        part = lists.set_index(["run_id", "query_id"]).assign(tau=tau, covered=hit).fillna({"covered": 0})
        parts.append(part.reset_index())
    table = pd.concat(parts, ignore_index=True)
    correct = best["correct"].groupby(level=["run_id", "query_id"]).sum()
    table["correct"] = _lookup(correct, table, ["run_id", "query_id"]).fillna(0)
    table["questions"] = table["query_id"].map(counts)
    answerable = table[table["run_id"] == OVERALL_RUN].set_index(["query_id", "tau"])["covered"]
    table["answerable"] = _lookup(answerable, table, ["query_id", "tau"]).fillna(0)
    gold = table[table["run_id"] == GOLD_RUN].set_index(["query_id", "tau"])["covered"]
    table["gold"] = _lookup(gold, table, ["query_id", "tau"])  # NaN: the query has no gold article
    return table.astype({"covered": int, "correct": int, "questions": int, "answerable": int})


def ranked_passages(rankings: pd.DataFrame, query_ids: set[str], k: int) -> pd.DataFrame:
    """(run, query, passage) of each run's passages ranked ≤ k (the gold run's all) for these queries."""
    ranked = rankings[(rankings["rank"] <= k) | (rankings["run_id"] == GOLD_RUN)]
    return ranked[ranked["query_id"].isin(query_ids)][["run_id", *KEYS]].drop_duplicates()


def complete(table: pd.DataFrame, query_ids: list[str], run_ids: list[str]) -> pd.DataFrame:
    """Query mode `all`: every run gets a row (nothing covered) for each query it lacks — also a run of
    `run_ids` with no row at all (none of its queries has questions, or every passage is ranked above k)."""
    counted = table.loc[~table["run_id"].isin([OVERALL_RUN, GOLD_RUN]), "run_id"]
    runs = sorted(set(counted) | set(run_ids))
    reference = table[table["run_id"] == OVERALL_RUN].drop(columns="run_id")
    full = pd.MultiIndex.from_product([runs, query_ids, reference["tau"].unique()], names=["run_id", "query_id", "tau"])
    present = pd.MultiIndex.from_frame(table[["run_id", "query_id", "tau"]])
    missing = full.difference(present).to_frame(index=False)
    if missing.empty:
        return table
    filler = missing.merge(reference[["query_id", "tau", "questions", "answerable", "gold"]], on=["query_id", "tau"])
    filler = filler.assign(covered=0, correct=0)
    return pd.concat([table, filler[table.columns]], ignore_index=True)


def cover_measures(table: pd.DataFrame, n_exam: str = "pool", exam: bool = False) -> pd.DataFrame:
    """Per-query (value, weight) rows of exam_cover, n_exam_cover and, with `exam`, the original EXAM."""
    if n_exam not in ("pool", "gold"):
        raise ValueError(f"n-EXAM mode must be 'pool' or 'gold', not {n_exam!r}")
    ids = table[["run_id", "query_id", "tau"]]
    cover = table["covered"] / table["questions"]
    rows = [ids.assign(measure="exam_cover", value=cover, weight=1.0)]
    if n_exam == "pool":
        answerable = table["answerable"].where(table["answerable"] > 0)
        rows.append(ids.assign(measure="n_exam_cover", value=(table["covered"] / answerable).fillna(0.0), weight=1.0))
    else:  # only queries with a gold article take part
        has_gold = table["gold"].notna()
        rows.append(
            ids[has_gold].assign(
                measure="n_exam_cover", value=cover[has_gold], weight=table.loc[has_gold, "gold"] / table["questions"]
            )
        )
    if exam:
        first = table.drop_duplicates(["run_id", "query_id"])
        rows.append(
            first[["run_id", "query_id"]].assign(
                measure="exam",
                tau=pd.NA,  # type: ignore[arg-type]  # pandas-stubs: assign's scalars omit pd.NA
                value=first["correct"] / first["questions"],
                weight=1.0,
            )
        )
    return pd.concat(rows, ignore_index=True)[PER_QUERY_COLUMNS]


def without_passages(table: pd.DataFrame, excluded: pd.DataFrame) -> pd.DataFrame:
    """`table` without the rows of the (query_id, passage_id) pairs in `excluded`."""
    return table if excluded.empty else table[~among(table, excluded, KEYS)]


def _lookup(series: pd.Series, table: pd.DataFrame, keys: list[str]) -> pd.Series:
    return pd.Series(series.reindex(pd.MultiIndex.from_frame(table[keys])).to_numpy(float), index=table.index)
