"""Embedding similarities turned into grades 0–5 (the offline grader's calibration).

A pair's grade is how many rungs of a quantile ladder (default the 80th, 85th, 90th, 95th and
98th percentiles) its similarity reaches, the quantiles taken over a group of pooled pairs:

- `pool`: every pair of the pool, one ladder for all;
- `query`: the pairs of one query (its questions × its pooled passages);
- `question`: the pairs of one question (its similarities over the query's pooled passages).

Thresholds come from the pool's similarities only, never from judgments, so the grader works on a
collection without qrels. Grades can only be assigned once every shard is in (`examflow.grading.merge`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from examflow.registry import CALIBRATIONS


def calibrated_grades(grades: pd.DataFrame, mode: str, quantiles, pooled=None) -> tuple[pd.Series, dict]:
    """Per pair the grade (NA where the similarity failed), and the thresholds by group for the record;
    `mode` one of `CALIBRATIONS` (the config check has seen to it). `pooled` (all rows by default) marks
    the pairs whose similarities set the ladder: gold articles are graded on it, but do not move it."""
    scores = grades["score"].astype(float)
    pooled = np.ones(len(grades), dtype=bool) if pooled is None else np.asarray(pooled, dtype=bool)
    ladder = np.asarray(quantiles, dtype=float)
    ratings = pd.Series(pd.NA, index=grades.index, dtype="Int64")
    thresholds = {}
    columns = list(CALIBRATIONS[mode])
    groups = grades.groupby(columns, sort=True).indices if columns else {"": np.arange(len(grades))}
    for key, rows in groups.items():
        mine = scores.iloc[rows]
        known = mine[mine.notna()].to_numpy()
        ladder_pairs = mine[mine.notna().to_numpy() & pooled[rows]].to_numpy()
        if not len(known):
            continue
        steps = np.quantile(ladder_pairs if len(ladder_pairs) else known, ladder)
        reached = (known[:, None] >= steps[None, :]).sum(axis=1)
        ratings.iloc[rows[mine.notna().to_numpy()]] = reached
        thresholds["/".join(key) if isinstance(key, tuple) else key] = steps.tolist()
    return ratings, {"calibration": mode, "quantiles": ladder.tolist(), "thresholds": thresholds}
