"""The official leaderboard computed from the official qrels, when none is given: every run's mean of
one trec_eval measure (nDCG@10 by default) over the queries it ranks, as trec_eval averages (or, with
`complete`, over every judged query, one it lacks counting 0: trec_eval -c), with the judgments of
subtopics taken per page (a passage's highest judgment on the page), since runs rank pages. Ranks best
first, ties averaged; only the run files' runs, never generated responses."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from examflow.errors import InputError
from examflow.evaluation.exam_qrels import trec_scores
from examflow.evaluation.scores import aggregate, is_count_ratio
from examflow.io.runs import RESERVED_RUNS
from examflow.ties import ranks_of

OFFICIAL_COLUMNS = ["run_id", "score", "rank"]


def check_level_reached(path, relevance: pd.Series, level: int, option: str) -> None:
    """A relevance level above every judgment makes every run score 0 by a measure that takes it: a
    leaderboard of ties, which no correlation can read (trec_eval -l would print the zeros)."""
    top = int(relevance.max())
    if level > top:
        raise InputError(path, f"no judgment reaches {option} {level} (the highest is {top}): every run would score 0")


def official_leaderboard(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame,
    measure: str,
    relevance_level: int,
    runs: set[str],
    complete: bool = False,
) -> pd.DataFrame:
    """`run_id, score, rank` of the given runs under `measure` on the official judgments."""
    labels = (
        judgments.groupby(["query_id", "passage_id"], as_index=False)["relevance"]
        .max()
        .rename(columns={"query_id": "qrels_id", "relevance": "label"})  # type: ignore[call-overload]  # pandas-stubs: with as_index=False max() is a DataFrame
    )
    ranked = rankings[rankings["run_id"].isin(runs - set(RESERVED_RUNS))]
    values = trec_scores(labels, ranked, [relevance_level], [measure], complete)
    # summed as `evaluate` sums (exactly for P@k and the other ratios of counts): systems with equal means
    # get the same float here too, not 0.12 and 0.12000000000000002 (cast: the run_id column holds ids)
    exact = is_count_ratio(measure)
    scores = {
        cast(str, run): aggregate(group.to_numpy(float), np.ones(len(group)), exact)
        for run, group in values.groupby("run_id")["value"]
    }
    ranks = ranks_of(scores)
    table = pd.DataFrame([(run, scores[run], ranks[run]) for run in scores], columns=OFFICIAL_COLUMNS)
    return table.sort_values(["rank", "run_id"], kind="stable").reset_index(drop=True)
