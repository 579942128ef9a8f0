"""Leaderboard correlation with an official leaderboard (SPEC §5).

Only runs on the official leaderboard count; official ranks are used as given (ties as
averaged ranks); predicted ranks are `rankdata(-score, "average")`; Spearman's ρ and
Kendall's τ-b come from scipy. The original EXAM's variant breaks predicted ties at random
(10 repetitions, mean); τ_AP (Yilmaz et al., 2008) weighs disagreements near the top more.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import kendalltau, rankdata, spearmanr

from examflow.errors import InputError


@dataclass(frozen=True)
class Correlation:
    spearman: float
    kendall: float
    n_runs: int


def read_leaderboard(path: str | Path) -> dict[str, float]:
    """An official leaderboard: a JSON object {run_id: rank}, ranks numbers (ties averaged)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except json.JSONDecodeError as error:
        raise InputError(path, f"not valid JSON ({error.msg})", error.lineno) from None
    if not isinstance(data, dict) or not data:
        raise InputError(path, "expected a non-empty JSON object {run_id: official rank}")
    for run, rank in data.items():
        if isinstance(rank, bool) or not isinstance(rank, int | float):
            raise InputError(path, f"rank {rank!r} is not a number", None, run)
    return {run: float(rank) for run, rank in data.items()}


def _shared(scores: dict[str, float], official: dict[str, float]) -> list[str]:
    return sorted(run for run in official if run in scores)


def leaderboard_correlation(scores: dict[str, float], official: dict[str, float]) -> Correlation:
    runs = _shared(scores, official)
    if len(runs) < 2 or len({scores[run] for run in runs}) == 1:  # undefined: no order to compare
        return Correlation(float("nan"), float("nan"), len(runs))
    predicted = rankdata([-scores[run] for run in runs], method="average")
    truth = [official[run] for run in runs]
    return Correlation(
        float(spearmanr(truth, predicted).statistic), float(kendalltau(truth, predicted).statistic), len(runs)
    )


def random_tie_correlation(
    scores: dict[str, float], official: dict[str, float], repetitions: int = 10, seed: int = 0
) -> Correlation:
    """Mean correlation when tied predicted scores are ordered at random (original EXAM)."""
    runs = _shared(scores, official)
    rng = random.Random(seed)
    results = []
    for _ in range(repetitions):
        jitter = {run: rng.random() for run in runs}
        order = sorted(runs, key=lambda run: (-scores[run], jitter[run]))
        results.append(leaderboard_correlation({run: -float(i) for i, run in enumerate(order)}, official))
    return Correlation(
        sum(r.spearman for r in results) / repetitions, sum(r.kendall for r in results) / repetitions, len(runs)
    )


def tau_ap(scores: dict[str, float], official: dict[str, float]) -> float:
    """AP rank correlation: for each run below the top of the predicted order, the share of the
    runs predicted above it that the official leaderboard also ranks above it (strictly)."""
    runs = sorted(_shared(scores, official), key=lambda run: (-scores[run], run))
    if len(runs) < 2:
        return float("nan")
    total = sum(sum(official[above] < official[run] for above in runs[:i]) / i for i, run in enumerate(runs) if i > 0)
    return 2 * total / (len(runs) - 1) - 1
