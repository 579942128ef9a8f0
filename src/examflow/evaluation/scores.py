"""System scores from per-query values, computed so that equal scores compare equal.

Many systems have mathematically equal scores (a mean of k/20 values, a count over |Q|), and in
floating point the same values summed in another order can differ in the last bit: a rank then
breaks a tie that is not there, and a published correlation is not reproduced. So:

- measures that are ratios of counts (EXAM-Cover, n-EXAM, EXAM, P@k, recall@k, R-prec,
  reciprocal rank, ...) are summed exactly, as fractions: equal scores are the same float;
- other measures (MAP, nDCG) are summed with `math.fsum`, which is exact before one final
  rounding, so per-query values that are permutations of one another give the same float;
- every rank (point estimate, random ties, τ_AP, each bootstrap replicate) is taken on scores
  rounded to 12 significant digits (`tie_keys`), far coarser than summation noise and far finer
  than any real difference between two systems' scores.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

import numpy as np
import pandas as pd

SIGNIFICANT_DIGITS = 12
# Denominators of per-query count ratios (questions of a query, k, ranks, relevant passages)
# stay far below this; two such ratios differ by at least 1 / MAX_DENOMINATOR², float noise by 1e-16.
MAX_DENOMINATOR = 10**6
_COUNT_RATIOS = {"exam_cover", "n_exam_cover", "exam", "Rprec", "recip_rank", "set_P", "set_recall"}
_COUNT_RATIO_FAMILIES = ("P_", "recall_", "success_", "num_", "relative_P_")


def is_count_ratio(measure: str) -> bool:
    return measure in _COUNT_RATIOS or measure.startswith(_COUNT_RATIO_FAMILIES)


@cache
def _fraction(value: float) -> Fraction:
    """The ratio of small integers that a per-query value of a count-ratio measure stands for."""
    return Fraction(value).limit_denominator(MAX_DENOMINATOR)


def aggregate(values: np.ndarray, weights: np.ndarray, exact: bool) -> float:
    """Σ value / Σ weight (0 when Σ weight is 0), independent of the order of the values."""
    if exact:
        total = sum(map(_fraction, weights.tolist()), Fraction(0))
        return float(sum(map(_fraction, values.tolist()), Fraction(0)) / total) if total > 0 else 0.0
    total = math.fsum(weights)
    return math.fsum(values) / total if total > 0 else 0.0


def system_scores(per_query: pd.DataFrame) -> pd.DataFrame:
    """Score = Σ value / Σ weight; standard error = sample stdev / √n for plain means."""
    keys = ["measure", "tau", "run_id"]
    rows = []
    for (measure, tau, run_id), group in per_query.groupby(keys, sort=True, dropna=False):
        values, weights = group["value"].to_numpy(float), group["weight"].to_numpy(float)
        n = len(values)
        plain_mean = bool((weights == 1).all())
        stderr = (
            float(np.sort(values).std(ddof=1) / math.sqrt(n))
            if n > 1 and plain_mean
            else (0.0 if plain_mean else math.nan)
        )
        rows.append((measure, tau, run_id, aggregate(values, weights, is_count_ratio(measure)), stderr, n))
    return pd.DataFrame(rows, columns=[*keys, "score", "stderr", "n_queries"])


def tie_keys(scores) -> np.ndarray:
    """Scores rounded to 12 significant digits: what every rank is taken on."""
    scores = np.asarray(scores, dtype=float)
    finite = np.isfinite(scores) & (scores != 0)
    magnitude = np.floor(np.log10(np.abs(np.where(finite, scores, 1.0))))
    scale = 10.0 ** (SIGNIFICANT_DIGITS - 1 - magnitude)
    return np.where(finite, np.round(scores * scale) / scale, scores)
