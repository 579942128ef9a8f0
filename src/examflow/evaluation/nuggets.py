"""Nugget scores (AutoNuggetizer, docs/methods.md §4): how much of a query's nugget bank a run's top k
passages support.

A nugget's support by a run is the best grade any of the run's passages ranked ≤ k gets for it:
`support` (2) counts 1, `partial_support` (1) counts 0.5, nothing 0. Per (run, query), as
nuggetizer's `calculate_nugget_scores` defines them over one answer:
- `nugget_all`: the mean support over the query's nuggets; `nugget_strict_all`: the share supported
  fully;
- `nugget_vital`, `nugget_strict_vital`: the same over the vital nuggets (0 for a query without one);
- `nugget_weighted`: vital nuggets weigh 1, okay ones 0.5 (examflow's, beside nuggetizer's four).
The vital and weighted scores need a bank that rates every nugget's importance.
"""

from __future__ import annotations

import math

import pandas as pd

from examflow.evaluation.cover import KEYS, ranked_passages
from examflow.io.runs import RESERVED_RUNS

CREDIT = {2.0: 1.0, 1.0: 0.5}  # a grade's credit: support, partial_support (any other grade: 0)
WEIGHT = {"vital": 1.0, "okay": 0.5}


def nugget_values(levels: pd.DataFrame, rankings: pd.DataFrame, nuggets: pd.DataFrame, k: int) -> pd.DataFrame:
    """(run_id, query_id, measure, tau, value, weight) rows. `levels`: (query, passage, question, level) of
    the grades; `nuggets`: the bank's (query_id, question_id, importance) of the nuggets graded."""
    runs = rankings[~rankings["run_id"].isin(RESERVED_RUNS)]
    ranked = ranked_passages(runs, set(nuggets["query_id"]), k)
    best = ranked.merge(levels, on=KEYS).groupby(["run_id", "query_id", "question_id"])["level"].max()
    rated = bool(nuggets["importance"].notna().all()) if "importance" in nuggets else False
    bank = {query: list(group.itertuples(index=False)) for query, group in nuggets.groupby("query_id")}
    supported: dict[tuple[str, str], dict[str, float]] = {}
    for run, query, nugget, level in best.reset_index().itertuples(index=False):
        supported.setdefault((run, query), {})[nugget] = level
    rows = []
    for run, query in ranked[["run_id", "query_id"]].drop_duplicates().itertuples(index=False):
        scores = _scores(bank[query], supported.get((run, query), {}), rated)
        rows += [(run, query, measure, pd.NA, value, 1.0) for measure, value in scores.items()]
    return pd.DataFrame(rows, columns=["run_id", "query_id", "measure", "tau", "value", "weight"])


def _scores(nuggets: list, levels: dict[str, float], rated: bool) -> dict[str, float]:
    credit = {n.question_id: CREDIT.get(levels.get(n.question_id, 0.0), 0.0) for n in nuggets}
    vital = [n for n in nuggets if rated and n.importance == "vital"]

    def mean(chosen: list, strict: bool) -> float:
        values = [float(credit[n.question_id] == 1.0) if strict else credit[n.question_id] for n in chosen]
        return math.fsum(values) / len(values) if values else 0.0

    scores = {"nugget_all": mean(nuggets, False), "nugget_strict_all": mean(nuggets, True)}
    if rated:
        weights = {n.question_id: WEIGHT[n.importance] for n in nuggets}
        scores |= {
            "nugget_vital": mean(vital, False),
            "nugget_strict_vital": mean(vital, True),
            "nugget_weighted": math.fsum(weights[q] * c for q, c in credit.items()) / math.fsum(weights.values()),
        }
    return scores
