"""Ties: scores equal but for floating-point summation noise must tie wherever a rank is taken
(docs/methods.md §5). Every rank is taken on scores rounded to 12 significant digits: far coarser
than summation noise, far finer than any real difference between two systems."""

from __future__ import annotations

import numpy as np

SIGNIFICANT_DIGITS = 12


def tie_keys(scores) -> np.ndarray:
    """Scores rounded to 12 significant digits: what every rank is taken on."""
    scores = np.asarray(scores, dtype=float)
    finite = np.isfinite(scores) & (scores != 0)
    magnitude = np.floor(np.log10(np.abs(np.where(finite, scores, 1.0))))
    scale = 10.0 ** (SIGNIFICANT_DIGITS - 1 - magnitude)
    return np.where(finite, np.round(scores * scale) / scale, scores)


def ranks_of(scores: dict[str, float]) -> dict[str, float]:
    """Official ranks of scores, best (highest) first, ties as averaged ranks — on the tie keys, so
    that scores equal but for summation noise tie."""
    return dict(zip(scores, average_ranks(-tie_keys([list(scores.values())]))[0].tolist()))


def unordered(scores, official) -> str:
    """Why a leaderboard and the official one, the same runs aligned, have no order to compare, in words
    ("" when they have one): where it is so, τ, ρ, r and τ_AP are empty."""
    if len(scores) < 2:
        return f"{len(scores)} run(s) on both leaderboards: no order to compare"
    if len(set(tie_keys(scores).tolist())) == 1:
        return "this leaderboard ties every run: no order to compare"
    if len(set(tie_keys(official).tolist())) == 1:
        return "the official leaderboard ties every run: no order to compare"
    return ""


def average_ranks(values) -> np.ndarray:
    """Each row's ranks, lowest first, ties as averaged ranks."""
    import pandas as pd

    return pd.DataFrame(values).rank(axis=1, method="average").to_numpy()


def majority(labels) -> tuple[int, int, int]:
    """(label, votes, margin) of a majority vote as UMBRELA's ensemble takes it: the label given most often,
    a tie going to the lowest such label; how many gave it, and by how many it beat the runner-up (0: a tie)."""
    from collections import Counter

    counts = Counter(labels).most_common()
    top = counts[0][1]
    label = min(value for value, count in counts if count == top)
    runner = max((count for value, count in counts if value != label), default=0)
    return label, top, top - runner
