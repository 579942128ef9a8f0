"""Leaderboard correlation with an official leaderboard (docs/methods.md §5).

Only runs on the official leaderboard count; official ranks are used as given (ties as
averaged ranks); predicted ranks are the average ranks of -score; Spearman's ρ and Kendall's
τ-b are scipy's, computed without importing scipy.stats (a second at start-up): bit for bit for a
leaderboard, and for many bootstrap replicates at once. The original EXAM's variant breaks predicted ties at random
(10 repetitions, mean); τ_AP (Yilmaz et al., 2008) weighs disagreements near the top more,
and averages predicted ties over their orderings. Bootstrap intervals resample the queries
(fixed seed) and recompute every run's score. Every rank is taken on `tie_keys` of the scores,
so scores that differ only by floating-point summation order are tied (`examflow.evaluation.scores`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from examflow.ties import average_ranks, tie_keys


@dataclass(frozen=True)
class Correlation:
    spearman: float
    kendall: float
    n_runs: int


def _shared(scores: dict[str, float], official: dict[str, float]) -> list[str]:
    return sorted(run for run in official if run in scores)


def leaderboard_correlation(scores: dict[str, float], official: dict[str, float]) -> Correlation:
    runs = _shared(scores, official)
    keys = tie_keys([scores[run] for run in runs])
    if len(runs) < 2 or len(set(keys.tolist())) == 1:  # undefined: no order to compare
        return Correlation(float("nan"), float("nan"), len(runs))
    truth = np.array([official[run] for run in runs], dtype=float)
    return Correlation(*_scipy_correlations(truth, pd.Series(-keys).rank().to_numpy()), len(runs))


def _scipy_correlations(truth: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    """scipy's spearmanr and kendalltau (τ-b) of one leaderboard in scipy's own arithmetic, to the
    last bit: its ranks through `np.corrcoef`, and (concordant - discordant) / √pairs untied in
    the truth / √pairs untied in the prediction."""
    ranked = np.column_stack([pd.Series(truth).rank().to_numpy(), pd.Series(predicted).rank().to_numpy()])
    first, second = np.triu_indices(len(truth), k=1)
    truth_sign, predicted_sign = np.sign(truth[first] - truth[second]), np.sign(predicted[first] - predicted[second])
    with np.errstate(invalid="ignore", divide="ignore"):  # a leaderboard of ties has no correlation: NaN
        spearman = np.corrcoef(ranked, rowvar=False)[1, 0]
        kendall = (
            truth_sign @ predicted_sign / np.sqrt(np.abs(truth_sign).sum()) / np.sqrt(np.abs(predicted_sign).sum())
        )
    return float(spearman), float(np.minimum(1.0, max(-1.0, kendall)) if np.isfinite(kendall) else np.nan)


def random_tie_correlation(
    scores: dict[str, float], official: dict[str, float], repetitions: int = 10, seed: int = 0
) -> Correlation:
    """Mean correlation when tied predicted scores are ordered at random (original EXAM); NaN where every
    run ties, as ρ and τ are: an order drawn at random correlates by chance alone. Which run draws which
    number follows their order by name: renaming runs can move it, a rerun cannot."""
    runs = _shared(scores, official)
    keys = dict(zip(runs, tie_keys([scores[run] for run in runs]).tolist()))
    if len(set(keys.values())) < 2:
        return Correlation(math.nan, math.nan, len(runs))
    rng = random.Random(seed)
    results = []
    for _ in range(repetitions):
        jitter = {run: rng.random() for run in runs}
        order = sorted(runs, key=lambda run: (-keys[run], jitter[run]))
        results.append(leaderboard_correlation({run: -float(i) for i, run in enumerate(order)}, official))
    return Correlation(
        sum(r.spearman for r in results) / repetitions, sum(r.kendall for r in results) / repetitions, len(runs)
    )


def tau_ap(scores: dict[str, float], official: dict[str, float]) -> float:
    """AP rank correlation: for each run below the top of the predicted order, the share of the
    runs predicted above it that the official leaderboard also ranks above it.

    Tied runs, in the predicted order or in the official one, take every order among themselves with
    equal chance; the result is the expectation over those orders (an officially tied pair counts one
    half), so it depends on no run name. NaN where either side ties every run: no order to compare.
    """
    runs = _shared(scores, official)
    keys = dict(zip(runs, tie_keys([scores[run] for run in runs]).tolist()))
    if len(set(keys.values())) < 2 or len({official[run] for run in runs}) < 2:
        return float("nan")

    def halves_above(other: str, run: str) -> int:
        """2 where the official leaderboard ranks `other` above `run`, 1 where it ties them, else 0."""
        return (official[other] < official[run]) * 2 + (official[other] == official[run])

    groups: dict[float, list[str]] = {}
    for run in sorted(runs, key=lambda run: -keys[run]):
        groups.setdefault(keys[run], []).append(run)
    # summed as fractions: in floats the terms' order, which follows the runs' names within a tie, moved
    # the last bits (-0.0625 and -0.06250000000000011 for one leaderboard under two sets of names)
    total = Fraction(0)
    ranked: list[str] = []  # the runs of the groups placed so far
    for group in groups.values():
        first, size = len(ranked), len(group)  # positions first .. first + size - 1, counted from 0
        # At position p a run of the group has p runs above it: all earlier groups and, on average,
        # (p - first) / (size - 1) of its own group's other runs; each run of the group stands at each p with
        # chance 1 / size, and the terms are linear in the counts, so the group's counts are summed first.
        earlier = sum(halves_above(other, run) for run in group for other in ranked)
        within = sum(halves_above(other, run) for run in group for other in group if other != run)
        for p in range(max(first, 1), first + size):
            if size == 1:
                total += Fraction(earlier, 2 * p)
            else:
                total += Fraction(earlier * (size - 1) + (p - first) * within, 2 * (size - 1) * p * size)
        ranked += group
    return float(2 * total / (len(runs) - 1) - 1)


@dataclass(frozen=True)
class Interval:
    spearman_low: float
    spearman_high: float
    kendall_low: float
    kendall_high: float
    note: str = ""  # replicates without a value, where there were any (`percentile_interval`)

    @classmethod
    def empty(cls) -> Interval:
        return cls(math.nan, math.nan, math.nan, math.nan)


def percentile_interval(draws: np.ndarray, level: float) -> tuple[float, float, str]:
    """The percentile interval of a statistic's bootstrap draws, and a note on the draws without a value
    ("" where every draw has one). A replicate that ties every run (on either side) has no ρ or τ. Up to
    the interval's tail share of such replicates (2.5 % at 95 %) are left out, and the note says so; more,
    and where the bounds lie is not known: the interval is empty. Left out in silence, a statistic with
    no value on a third of the replicates read as certain: [0.866, 0.866]."""
    tail = (1 - level) / 2
    finite = draws[np.isfinite(draws)]
    missing, total = len(draws) - len(finite), len(draws)
    counted = f"{missing:,} of {total:,} bootstrap replicates have no order to compare"
    if len(finite) and missing <= tail * total:
        low, high = np.percentile(finite, [tail * 100, 100 - tail * 100])
        return float(low), float(high), f"{counted}, left out of the interval" if missing else ""
    return math.nan, math.nan, f"{counted}: more than {tail:.1%}, so no {level:.0%} interval" if total else ""


def bootstrap_intervals(
    per_query: pd.DataFrame, official: dict[str, float], replicates: int = 1000, seed: int = 0, level: float = 0.95
) -> Interval:
    """Percentile intervals of ρ and τ-b when the queries are resampled with replacement.

    `per_query` holds (run_id, query_id, value, weight); a replicate's run score is
    Σ count·value / Σ count·weight, so means and ratio measures resample alike.
    """
    runs = _shared(dict.fromkeys(per_query["run_id"], 0.0), official)
    per_query = per_query[per_query["run_id"].isin(runs)]
    if len(runs) < 2 or per_query.empty or replicates < 1:
        return Interval.empty()
    values = per_query.pivot_table("value", "run_id", "query_id", aggfunc="sum", fill_value=0.0).loc[runs]
    weights = per_query.pivot_table("weight", "run_id", "query_id", aggfunc="sum", fill_value=0.0).loc[runs]
    n_queries = values.shape[1]
    counts = np.random.default_rng(seed).multinomial(n_queries, np.full(n_queries, 1 / n_queries), size=replicates)
    numerator, denominator = counts @ values.to_numpy().T, counts @ weights.to_numpy().T
    # A run none of whose queries a replicate drew has no score there (its mean is over the queries it
    # has, as `present` takes it): such a replicate is left out, not read as a score of 0.
    scores = np.divide(numerator, denominator, out=np.full_like(numerator, np.nan), where=denominator > 0)
    scores = scores[np.isfinite(scores).all(axis=1)]
    if not len(scores):
        return Interval.empty()
    spearman, kendall = rank_correlations(scores, np.array([official[run] for run in runs]))
    (rho_low, rho_high, rho_note), (tau_low, tau_high, tau_note) = (
        percentile_interval(draws, level) for draws in (spearman, kendall)
    )
    return Interval(rho_low, rho_high, tau_low, tau_high, rho_note or tau_note)  # both empty on the same replicates


def rank_correlations(scores: np.ndarray, official: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman ρ and Kendall τ-b of each row of `scores` (higher is better) with official ranks (one
    leaderboard's, or a row of them per row of scores), computed as scipy does, for many rows at once;
    NaN where a row has no order."""
    predicted, truth = average_ranks(-tie_keys(scores)), average_ranks(np.atleast_2d(official))
    return spearman_rho(predicted, truth), kendall_tau_b(predicted, truth)


# Ranks are halves and their means too, so every sum below is exact in any order; the divisions and roots
# are np.corrcoef's and `_scipy_correlations`' own, in their order: a replicate that orders the runs as the
# leaderboard does has its point's value to the last bit (an interval's bound that is the point's value is
# that value, not one float step beside it).


def spearman_rho(predicted: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row of predicted ranks with its row of true ranks (or the one row given)."""
    centred, truth_centred = (
        predicted - predicted.mean(axis=1, keepdims=True),
        truth - truth.mean(axis=1, keepdims=True),
    )
    # one run: 1 / 0 and spreads of NaN, a ρ of NaN without numpy's warnings (the note says why)
    with np.errstate(invalid="ignore", divide="ignore"):
        inverse = np.true_divide(1, predicted.shape[1] - 1)
        spread = np.sqrt((centred**2).sum(axis=1) * inverse), np.sqrt((truth_centred**2).sum(axis=1) * inverse)
        rho = (centred * truth_centred).sum(axis=1) * inverse / spread[0] / spread[1]
        return np.where((spread[0] > 0) & (spread[1] > 0), np.clip(rho, -1, 1), np.nan)


def kendall_tau_b(predicted: np.ndarray, truth: np.ndarray, counted: np.ndarray | None = None) -> np.ndarray:
    """Kendall's τ-b of each row of predicted ranks with its row of true ranks (or the one row given), over
    the pairs of runs that `counted` holds both of (every pair by default): a subset's τ, since ranks order
    any subset of the runs as they order it alone."""
    first, second = np.triu_indices(predicted.shape[1], k=1)
    truth_sign = np.sign(truth[:, first] - truth[:, second])
    predicted_sign = np.sign(predicted[:, first] - predicted[:, second])
    if counted is not None:
        both = counted[:, first] & counted[:, second]
        truth_sign, predicted_sign = truth_sign * both, predicted_sign * both
    untied = np.abs(truth_sign).sum(axis=1), np.abs(predicted_sign).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (predicted_sign * truth_sign).sum(axis=1) / np.sqrt(untied[0]) / np.sqrt(untied[1])
        return np.where((untied[0] > 0) & (untied[1] > 0), np.clip(tau, -1, 1), np.nan)
