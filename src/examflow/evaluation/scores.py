"""System scores from per-query values, computed so that equal scores compare equal.

Many systems have mathematically equal scores (a mean of k/20 values, a count over |Q|), and in
floating point the same values summed in another order can differ in the last bit: a rank then
breaks a tie that is not there, and a published correlation is not reproduced. So:

- measures that are ratios of counts (EXAM-Cover, n-EXAM, EXAM, P@k, recall@k, R-prec,
  reciprocal rank, ...) are summed exactly, as fractions: equal scores are the same float;
- other measures (MAP, nDCG) are summed with `math.fsum`, which is exact before one final
  rounding, so per-query values that are permutations of one another give the same float;
- standard errors come from exact integer sums of the same values (the ratios, or each float's
  own exact value) and are rounded once: equal values give exactly 0, and a standard error that
  is a ratio of integers (1/20) is that ratio's float;
- every rank (point estimate, random ties, τ_AP, each bootstrap replicate) is taken on scores
  rounded to 12 significant digits (`examflow.ties.tie_keys`), far coarser than summation noise and far finer
  than any real difference between two systems' scores.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import cast

import numpy as np
import pandas as pd

from examflow.registry import NUGGET_MEASURES

# Denominators of per-query count ratios (questions of a query, k, ranks, relevant passages)
# stay far below this; two such ratios differ by at least 1 / MAX_DENOMINATOR², float noise by 1e-16.
MAX_DENOMINATOR = 10**6
# nugget scores too: credits of 0, 1/2 and 1 (weights 1 and 1/2) over a query's nuggets
_COUNT_RATIOS = {"exam_cover", "n_exam_cover", "exam", "Rprec", "recip_rank", "set_P", "set_recall", *NUGGET_MEASURES}
_COUNT_RATIO_FAMILIES = ("P_", "recall_", "success_", "num_", "relative_P_")


def is_count_ratio(measure: str) -> bool:
    return measure in _COUNT_RATIOS or measure.startswith(_COUNT_RATIO_FAMILIES)


@cache
def _ratio(value: float) -> tuple[int, int]:
    """The ratio of small integers (numerator, denominator) that a per-query value of a
    count-ratio measure stands for."""
    fraction = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    return fraction.numerator, fraction.denominator


def _scaled(values: list[float], exact: bool) -> tuple[list[int], int]:
    """The values as integers over one common denominator, so that their sums are exact: the
    count ratios they stand for (`exact`), or else each float's own exact value."""
    ratios = [_ratio(value) for value in values] if exact else [value.as_integer_ratio() for value in values]
    common = math.lcm(*(denominator for _, denominator in ratios))
    return [numerator * (common // denominator) for numerator, denominator in ratios], common


def aggregate(values: np.ndarray, weights: np.ndarray, exact: bool) -> float:
    """Σ value / Σ weight (0 when Σ weight is 0), independent of the order of the values."""
    if exact:
        numerators, common = _scaled(values.tolist(), True)
        weight_numerators, weight_common = _scaled(weights.tolist(), True)
        total = sum(weight_numerators)
        # an int / int quotient is rounded once, like the Fraction it stands for
        return sum(numerators) * weight_common / (total * common) if total > 0 else 0.0
    weight_sum = math.fsum(weights)
    return math.fsum(values) / weight_sum if weight_sum > 0 else 0.0


def standard_error(values: np.ndarray, exact: bool) -> float:
    """√(s² / n), s² the sample variance of n ≥ 2 values (floats, or Fractions): from exact sums, rounded once."""
    if not np.isfinite(np.asarray(values, dtype=float)).all():
        return math.nan
    n = len(values)
    scaled, common = _scaled(values.tolist(), exact)
    # s² / n = spread / scale exactly, in integers
    spread = n * sum(x * x for x in scaled) - sum(scaled) ** 2
    return _nearest_root(spread, n * n * (n - 1) * common * common)


# Bits of the radicand: its integer root then has 55, two more than a float, enough to round to odd.
_ROOT_BITS = 2 * 53 + 3


def _nearest_root(numerator: int, denominator: int) -> float:
    """The float nearest to √(numerator / denominator), for integers ≥ 0 and > 0.

    The root is taken as an integer of about 55 bits, scaled by a power of two, and its last bit is
    set when the root is inexact (rounding to odd): converting it to a float then rounds once,
    correctly, and a root that is a ratio of integers (1/20) comes out as that ratio's float.
    """
    shift = (numerator.bit_length() - denominator.bit_length() - _ROOT_BITS) // 2
    if shift >= 0:
        denominator <<= 2 * shift
    else:
        numerator <<= -2 * shift
    root = math.isqrt(numerator // denominator)
    root |= root * root * denominator != numerator
    return float(root << shift) if shift >= 0 else root / (1 << -shift)


def system_scores(per_query: pd.DataFrame, ratios_of_sums: frozenset[str] = frozenset()) -> pd.DataFrame:
    """Score = Σ value / Σ weight; standard error = sample stdev / √n for plain means, none for the
    measures in `ratios_of_sums` (n-EXAM `gold`), even where every weight happens to be 1."""
    keys = ["measure", "tau", "run_id"]
    grouped = per_query.groupby(keys, sort=True, dropna=False)
    # Each group's values are slices of two arrays, in the rows' order: a third of the time that making a
    # frame of each group took.
    group = grouped.ngroup().to_numpy()
    order, ends = np.argsort(group, kind="stable"), np.cumsum(np.bincount(group, minlength=grouped.ngroups))
    columns = (np.split(per_query[name].to_numpy(float)[order], ends[:-1]) for name in ("value", "weight"))
    rows = []
    for (measure, tau, run_id), values, weights in zip(grouped.size().index, *columns):
        n, exact = len(values), is_count_ratio(cast(str, measure))  # cast: the measure column holds names
        plain_mean = measure not in ratios_of_sums and bool((weights == 1).all())
        stderr = standard_error(values, exact) if n > 1 and plain_mean else (0.0 if plain_mean else math.nan)
        rows.append((measure, tau, run_id, aggregate(values, weights, exact), stderr, n))
    return pd.DataFrame(rows, columns=[*keys, "score", "stderr", "n_queries"])
