"""Equal scores tie: a rank never breaks a tie that only floating-point summation order made."""

from __future__ import annotations

import itertools
import math
import statistics
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from examflow.evaluation.correlation import (
    bootstrap_intervals,
    leaderboard_correlation,
    random_tie_correlation,
    rank_correlations,
    tau_ap,
)
from examflow.evaluation.evaluate import Settings, correlations
from examflow.evaluation.scores import system_scores
from examflow.ties import tie_keys

# Summed in these orders, the same values give different floats: 1.4500000000000002 vs 1.45.
P20 = [0.45, 0.4, 0.3, 0.05, 0.25]
# EXAM-Cover 10/10, 1/5, 7/7, 2/5 and its reverse: mean 0.65 vs 0.6499999999999999 when summed in order.
COVER = [10 / 10, 1 / 5, 7 / 7, 2 / 5]


def per_query(measure: str, values_by_run: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        (run, f"q{i}", measure, 20, value, 1.0)
        for run, values in values_by_run.items()
        for i, value in enumerate(values)
    ]
    return pd.DataFrame(rows, columns=["run_id", "query_id", "measure", "tau", "value", "weight"])


def scores(table: pd.DataFrame) -> dict[str, float]:
    board = system_scores(table)
    return dict(zip(board["run_id"], board["score"]))


def test_the_cases_below_do_break_naive_summation():
    for values in (P20, COVER):
        assert np.sum(values) != np.sum(values[::-1])


@pytest.mark.parametrize("measure, values", [("P_20", P20), ("exam_cover", COVER), ("ndcg_cut_10", P20)])
def test_runs_whose_per_query_values_are_permutations_tie(measure, values):
    assert (
        len(set(scores(per_query(measure, {"a": values, "b": values[::-1], "c": values[2:] + values[:2]})).values()))
        == 1
    )


def test_count_ratios_with_equal_sums_tie_whatever_the_values():
    # 1/3 + 2/3 + 1/7 + 6/7 and 1/2 + 1/2 + 3/4 + 1/4: both means are exactly 1/2.
    board = scores(per_query("exam_cover", {"a": [1 / 3, 2 / 3, 1 / 7, 6 / 7], "b": [1 / 2, 1 / 2, 3 / 4, 1 / 4]}))
    assert board["a"] == board["b"] == 0.5


def stderrs(measure: str, values_by_run: dict[str, list[float]]) -> dict[str, float]:
    board = system_scores(per_query(measure, values_by_run))
    return dict(zip(board["run_id"], board["stderr"]))


def nearest_root(square: Fraction) -> float:
    """The float nearest to √square, through 60 decimal digits."""
    with localcontext(prec=60):
        return float((Decimal(square.numerator) / Decimal(square.denominator)).sqrt())


@pytest.mark.parametrize("measure", ["P_20", "ndcg_cut_10"])
def test_equal_per_query_values_have_a_standard_error_of_exactly_zero(measure):
    # Six 0.05s (the demo's rag-brief P_20) gave 3.1e-18: their float mean is not quite 0.05.
    assert stderrs(measure, {"a": [0.05] * 6, "b": [1 / 3] * 7, "c": [0.7] * 2}) == {"a": 0.0, "b": 0.0, "c": 0.0}


def test_a_standard_error_that_is_a_ratio_prints_as_that_ratio():
    # By hand: 0.05, 0.15: mean 0.1, s² = 2 · 0.05² / 1, s²/2 = 0.05² (it gave 0.049999999999999996);
    # 0, 0.15, 0.15, 0.15: mean 0.1125, s² = (0.1125² + 3 · 0.0375²) / 3 = 0.005625, s²/4 = 0.0375².
    assert stderrs("P_20", {"a": [0.05, 0.15], "b": [0.0, 0.15, 0.15, 0.15]}) == {"a": 0.05, "b": 0.0375}
    # 0, 1/4, 1/4, 1/4, 1/4: mean 1/5, s² = (1/25 + 4/400) / 4 = 1/80, s²/5 = 1/400 = (1/20)².
    assert stderrs("exam_cover", {"a": [0.0, 0.25, 0.25, 0.25, 0.25]}) == {"a": 0.05}


def test_every_standard_error_is_the_float_nearest_to_the_exact_one():
    rng = np.random.default_rng(3)
    for n in range(2, 80):
        # EXAM-Cover: questions answered of 1 to 65 per query, the ratios the floats stand for
        asked = rng.integers(1, 66, n)
        cover = [Fraction(int(rng.integers(0, q + 1)), int(q)) for q in asked]
        ndcg = (rng.random(n) ** 2).tolist()
        got = stderrs("exam_cover", {"r": [float(c) for c in cover]})["r"]
        assert got == nearest_root(statistics.variance(cover) / n)
        got = stderrs("ndcg_cut_10", {"r": ndcg})["r"]
        assert got == nearest_root(statistics.variance(map(Fraction, ndcg)) / n)
        assert got == pytest.approx(statistics.stdev(ndcg) / math.sqrt(n), rel=1e-15, abs=0)


def hand_made_leaderboard() -> tuple[pd.DataFrame, dict[str, float]]:
    """a and b tie (permuted P@20 values, mean 0.29); c scores 0.2, d 0.1; officially a, b, c, d."""
    table = per_query("P_20", {"a": P20, "b": P20[::-1], "c": [0.2] * 5, "d": [0.1] * 5})
    return table, {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}


def test_a_hand_made_leaderboard_with_ties_gives_the_hand_computed_correlations():
    table, official = hand_made_leaderboard()
    # Predicted ranks 1.5, 1.5, 3, 4 against 1, 2, 3, 4:
    # ρ = 4.5 / √(5 · 4.5) = 3/√10; τ-b = (5 concordant − 0 discordant) / √(6 · (6 − 1 tie)) = 5/√30.
    plain = leaderboard_correlation(scores(table), official)
    assert plain.spearman == pytest.approx(3 / math.sqrt(10), abs=1e-12)
    assert plain.kendall == pytest.approx(5 / math.sqrt(30), abs=1e-12)
    # Through the evaluation's own correlation table, with bootstrap replicates.
    row = correlations(table.assign(method="m"), official, Settings(bootstrap=200)).iloc[0]
    assert row["spearman"] == pytest.approx(3 / math.sqrt(10), abs=1e-12)
    assert row["kendall"] == pytest.approx(5 / math.sqrt(30), abs=1e-12)
    # Random tie breaking puts a above b half of the time: ρ is 1 or 0.8, τ 1 or 2/3 — never anything else.
    broken = random_tie_correlation(scores(table), official, repetitions=1000, seed=3)
    assert 0.8 < broken.spearman < 1 and 2 / 3 < broken.kendall < 1
    ups = (broken.spearman - 0.8) / 0.2
    assert broken.kendall == pytest.approx(2 / 3 + ups / 3, abs=1e-12) and 0.4 < ups < 0.6


def orders(ranking: dict[str, float], best_first: bool) -> list[list[str]]:
    """Every strict order of the runs that breaks the ranking's ties."""
    key = (lambda r: -ranking[r]) if best_first else (lambda r: ranking[r])
    groups = [list(g) for _, g in itertools.groupby(sorted(ranking, key=key), key=key)]
    return [
        [run for part in parts for run in part] for parts in itertools.product(*map(itertools.permutations, groups))
    ]


def tau_ap_by_enumeration(scores: dict[str, float], official: dict[str, float]) -> float:
    """τ_AP averaged over every order of the tied runs, predicted and official, each pair of strict
    orders scored by the plain definition (Yilmaz, Aslam and Robertson 2008)."""
    values = []
    for runs in orders(scores, best_first=True):
        for truth in orders(official, best_first=False):
            position = {run: i for i, run in enumerate(truth)}
            total = sum(sum(position[x] < position[run] for x in runs[:i]) / i for i, run in enumerate(runs) if i)
            values.append(2 * total / (len(runs) - 1) - 1)
    return sum(values) / len(values)


def test_tau_ap_averages_ties_over_their_orders_and_ignores_run_names():
    official = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0}
    predicted = {"a": 0.5, "b": 0.7, "c": 0.7, "d": 0.7, "e": 0.1}
    assert tau_ap(predicted, official) == pytest.approx(tau_ap_by_enumeration(predicted, official), abs=1e-12)
    renamed = {"z": 0.5, "y": 0.7, "x": 0.7, "w": 0.7, "v": 0.1}
    assert tau_ap(renamed, dict(zip("zyxwv", official.values()))) == pytest.approx(tau_ap(predicted, official))
    table, official4 = hand_made_leaderboard()
    noisy = scores(table)
    noisy["b"] = float(np.nextafter(noisy["a"], 0))  # the last bit off, as another summation order gives
    assert tau_ap(noisy, official4) == pytest.approx(tau_ap_by_enumeration(scores(table), official4), abs=1e-12)


def exact_tau_ap_by_enumeration(scores: dict[str, float], official: dict[str, float]) -> Fraction:
    """`tau_ap_by_enumeration` in fractions: the exact expectation, to compare a float with to the last bit."""
    values = []
    for runs in orders(scores, best_first=True):
        for truth in orders(official, best_first=False):
            position = {run: i for i, run in enumerate(truth)}
            hits = (Fraction(sum(position[x] < position[run] for x in runs[:i]), i) for i, run in enumerate(runs) if i)
            values.append(2 * sum(hits, Fraction(0)) / (len(runs) - 1) - 1)
    return sum(values, Fraction(0)) / len(values)


@pytest.mark.parametrize("lowest", ["sysA", "sysB", "sysC", "sysD", "sysE"])
def test_tau_ap_is_the_exact_expectation_to_the_last_bit_under_any_run_names(lowest):
    """A stranger's leaderboard: four runs tied at P@20 0.08 and one at 0.0625, an official tie. Summed in
    floats, the terms' order followed the names: -0.0625 here, -0.06250000000000011 renamed."""
    official = {"sysA": 1.0, "sysB": 2.5, "sysC": 2.5, "sysD": 4.0, "sysE": 5.0}
    predicted = {run: 0.0625 if run == lowest else 0.08 for run in official}
    expected = float(exact_tau_ap_by_enumeration(predicted, official))
    renaming = dict(zip(official, ["zeta", "alpha", "mid", "0", "00"]))
    renamed = ({renaming[r]: v for r, v in side.items()} for side in (predicted, official))
    assert tau_ap(predicted, official) == expected == tau_ap(*renamed)


def test_tau_ap_averages_official_ties_too_and_is_blank_without_an_order():
    official = {"good": 1.0, "neg": 1.0, "mid": 1.0, "NA": 1.0, "bad": 5.0}  # a user's report: -0.5 before
    predicted = {"good": 0.9, "neg": 0.4, "mid": 0.6, "NA": 0.6, "bad": 0.1}
    expected = tau_ap_by_enumeration(predicted, official)
    # By hand: mid, NA and neg each have only officially tied runs above them (1/2 each), bad has four
    # runs officially above it (1): 2 · (1/2 + 1/2 + 1/2 + 1) / 4 − 1 = 0.25.
    assert tau_ap(predicted, official) == pytest.approx(expected, abs=1e-12) and expected == pytest.approx(0.25)
    assert math.isnan(tau_ap(predicted, dict.fromkeys(official, 1.0)))  # the official leaderboard ties every run
    assert math.isnan(tau_ap(dict.fromkeys(predicted, 0.5), official))  # every run scores the same
    reversed_ties = {"a": 2.0, "b": 2.0, "c": 1.0}
    assert tau_ap({"a": 0.3, "b": 0.2, "c": 0.1}, reversed_ties) == pytest.approx(
        tau_ap_by_enumeration({"a": 0.3, "b": 0.2, "c": 0.1}, reversed_ties), abs=1e-12
    )


def test_every_bootstrap_replicate_ranks_on_tie_keys():
    # A replicate's scores are sums in a fixed order: 0.1 + 0.2 + 0.3 against 0.3 + 0.2 + 0.1.
    noisy = np.array([[0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1, 0.2]])
    assert noisy[0, 0] != noisy[0, 1] and tie_keys(noisy)[0, 0] == tie_keys(noisy)[0, 1]
    spearman, kendall = rank_correlations(noisy, np.array([1.0, 2.0, 3.0]))
    # Predicted 1.5, 1.5, 3 against 1, 2, 3: ρ = 1.5 / √(2 · 1.5) = √3/2, τ-b = 2 / √(3 · 2).
    assert spearman[0] == pytest.approx(math.sqrt(3) / 2, abs=1e-12)
    assert kendall[0] == pytest.approx(2 / math.sqrt(6), abs=1e-12)
    # Three queries, each run's values a rotation of the others'; official order a, b, c.
    table = per_query("P_20", {"a": [0.1, 0.2, 0.3], "b": [0.3, 0.1, 0.2], "c": [0.2, 0.3, 0.1]})
    interval = bootstrap_intervals(table, {"a": 1.0, "b": 2.0, "c": 3.0}, replicates=400, seed=1)
    # A replicate that draws each query once, and only such a one, ties all three runs: no order, no
    # correlation. Read on the sums as summed, its runs would differ in the last bits and it would order
    # them. Such replicates are 3!/3³ = 2/9 of all (89 of 400, σ 8.3): far more than the 2.5 % an interval
    # can leave out, so there is none.
    missing = int(interval.note.split(" of 400 ")[0])
    assert abs(missing - 400 * 2 / 9) < 4 * math.sqrt(400 * 2 / 9 * 7 / 9)
    assert math.isnan(interval.spearman_low) and math.isnan(interval.kendall_high)


def test_tie_keys_round_to_twelve_significant_digits():
    keys = tie_keys([1.45, 1.4500000000000002, 1.45000000001, 1234.5678901234, 0.0, -0.25, math.nan])
    assert keys[0] == keys[1] != keys[2]
    assert keys[3] == 1234.56789012 and keys[4] == 0.0 and keys[5] == -0.25 and math.isnan(keys[6])
