"""Leaderboard correlation (docs/methods.md §5): published numbers and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import REFERENCE, needs_reference, write

from examflow.errors import InputError
from examflow.evaluation.correlation import (
    Interval,
    bootstrap_intervals,
    kendall_tau_b,
    leaderboard_correlation,
    percentile_interval,
    random_tie_correlation,
    rank_correlations,
    spearman_rho,
    tau_ap,
)
from examflow.io.leaderboard import read_leaderboard

APPENDIX = REFERENCE / "flan-t5-exam-appendix"


def published_scores(path, column: str) -> dict[str, float]:
    """Per-system scores from the appendix's leaderboard TSVs: a title line may come first and
    notes (a qrels file name, a correlation line) may follow the table."""
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    start = next(i for i, row in enumerate(rows) if row[0].lower() == "method")
    index = rows[start].index(column)
    scores = {}
    for row in rows[start + 1 :]:
        try:
            scores[row[0]] = float(row[index])
        except (IndexError, ValueError):
            continue
    return scores


@needs_reference("the published correlations of the EXAM papers reproduce")
@pytest.mark.parametrize(
    ("table", "column", "leaderboard", "spearman", "kendall"),
    [
        ("car-results/leaderboard-car-genq-self-rating-4.tsv", "exam", "cary3", 0.869, 0.687),
        ("car-results/leaderboard-car-tqa-cc-verified.tsv", "exam", "cary3", 0.937, 0.841),
        ("car-results/leaderboard-car-tqa-cc-verified.tsv", "n-exam", "cary3", 0.853, 0.721),
        ("dl20-results/exam-qrels-leaderboard-dl20-qrels-genq-self-rating-4.tsv", "exam", "dl20", 0.955, 0.836),
    ],
)
def test_published_correlations_reproduce_to_the_printed_decimals(table, column, leaderboard, spearman, kendall):
    official = read_leaderboard(REFERENCE / f"derived/official_{leaderboard}_leaderboard.json")
    result = leaderboard_correlation(published_scores(APPENDIX / table, column), official)
    assert (round(result.spearman, 3), round(result.kendall, 3)) == (spearman, kendall)


def test_only_runs_on_the_official_leaderboard_count_and_ties_are_averaged():
    official = {"a": 1, "b": 2.5, "c": 2.5, "d": 4}
    scores = {"a": 0.9, "b": 0.5, "c": 0.5, "d": 0.1, "not-official": 1.0}
    perfect = leaderboard_correlation(scores, official)
    assert (perfect.spearman, perfect.kendall, perfect.n_runs) == (1.0, 1.0, 4)
    reversed_scores = {run: -score for run, score in scores.items()}
    assert leaderboard_correlation(reversed_scores, official).kendall == -1.0


def test_random_tie_breaking_averages_over_orders():
    official = {"a": 1, "b": 2, "c": 3}
    tied = {"a": 0.5, "b": 0.5, "c": 0.1}
    # With ties averaged, a and b share rank 1.5: tau-b = 0.8165; broken at random, a-b is
    # right half the time: tau is 1 or 1/3, the mean of 10 fixed-seed draws lies between.
    assert round(leaderboard_correlation(tied, official).kendall, 4) == 0.8165
    broken = random_tie_correlation(tied, official, repetitions=10, seed=0)
    assert 1 / 3 <= broken.kendall <= 1 and broken.n_runs == 3
    assert broken == random_tie_correlation(tied, official, repetitions=10, seed=0)
    # every run tied: an order drawn at random correlates by chance alone (-0.233 for one stranger): empty
    everyone = random_tie_correlation({"a": 0.5, "b": 0.5, "c": 0.25 + 0.25}, official, repetitions=10, seed=0)
    assert math.isnan(everyone.spearman) and math.isnan(everyone.kendall) and everyone.n_runs == 3


def test_tau_ap_hand_computed():
    official = {"a": 1, "b": 2, "c": 3, "d": 4}
    assert tau_ap({"a": 4, "b": 3, "c": 2, "d": 1}, official) == 1.0
    assert tau_ap({"a": 1, "b": 2, "c": 3, "d": 4}, official) == -1.0
    # Predicted b, a, c, d: i=1 (a): 0/1; i=2 (c): 2/2; i=3 (d): 3/3 -> 2/3 * 2 - 1 = 1/3
    assert tau_ap({"b": 4, "a": 3, "c": 2, "d": 1}, official) == pytest.approx(1 / 3)
    # Swapping the bottom pair costs less than swapping the top pair.
    assert tau_ap({"a": 4, "b": 3, "d": 2, "c": 1}, official) > tau_ap({"b": 4, "a": 3, "c": 2, "d": 1}, official)


def test_bad_leaderboards_name_the_problem(tmp_path):
    with pytest.raises(InputError, match="lb.json:1: field 'run2': rank 'first' is not a number"):
        read_leaderboard(write(tmp_path / "lb.json", '{"run1": 1, "run2": "first"}'))
    with pytest.raises(InputError, match="bad.json:1: not valid JSON"):
        read_leaderboard(write(tmp_path / "bad.json", '{"run1": 1,'))


def test_correlations_are_scipys_to_the_last_bit_and_vectorised_ones_agree():
    from scipy.stats import kendalltau, rankdata, spearmanr

    rng = np.random.default_rng(7)
    official = np.array([1, 2, 2, 4, 5, 6, 7, 7.5, 9, 10])
    scores = rng.integers(0, 4, size=(50, 10)) / 3  # many ties in the predicted scores
    spearman, kendall = rank_correlations(scores, official)
    for row, rho, tau in zip(scores, spearman, kendall):
        runs = {f"r{i}": s for i, s in enumerate(row)}
        point = leaderboard_correlation(runs, {f"r{i}": o for i, o in enumerate(official)})
        predicted = rankdata(-row, method="average")
        if len(set(row)) == 1:
            assert np.isnan([point.spearman, point.kendall, rho, tau]).all()
            continue
        # exactly scipy's numbers (examflow does not import scipy.stats: a second at start-up)
        assert point.spearman == spearmanr(official, predicted).statistic
        assert point.kendall == kendalltau(official, predicted).statistic
        # and the vectorised ones, to the last bit: a point outside its own interval by one step was seen
        assert rho == point.spearman and tau == point.kendall


def test_bootstrap_intervals_resample_queries_with_a_fixed_seed():
    official = {"a": 1, "b": 2, "c": 3}
    # a beats b beats c on every query: every resample agrees with the official order
    agree = pd.DataFrame(
        [(run, f"q{q}", score, 1.0) for q in range(5) for run, score in (("a", 0.9), ("b", 0.5), ("c", 0.1))],
        columns=["run_id", "query_id", "value", "weight"],
    )
    assert bootstrap_intervals(agree, official, replicates=200) == Interval(1.0, 1.0, 1.0, 1.0)
    # one query where c wins by far: resamples that draw it often reverse the order
    mixed = pd.concat([agree, pd.DataFrame([("a", "q5", 0.0, 1.0), ("c", "q5", 9.0, 1.0)], columns=agree.columns)])
    first = bootstrap_intervals(mixed, official, replicates=200, seed=3)
    assert first == bootstrap_intervals(mixed, official, replicates=200, seed=3)  # fixed seed, same interval
    assert first.spearman_low == -1.0 and first.spearman_high == 1.0
    assert math.isnan(bootstrap_intervals(agree[agree["run_id"] == "a"], official).kendall_low)  # one run: none


def test_a_bootstrap_sample_without_any_query_of_a_run_is_left_out():
    """Run C ranks q1 only: a sample that draws q2 alone gives C no score (its mean is over the queries it
    has), not a score of 0, which would put it last. Every other sample orders the runs as the official
    leaderboard does."""
    per_query = pd.DataFrame(
        [("A", "q1", 0.9), ("A", "q2", 0.9), ("B", "q1", 0.5), ("B", "q2", 0.5), ("C", "q1", 0.7)],
        columns=["run_id", "query_id", "value"],
    ).assign(weight=1.0)
    interval = bootstrap_intervals(per_query, {"A": 1, "C": 2, "B": 3}, replicates=200)
    assert interval.kendall_low == interval.kendall_high == 1.0
    assert interval.spearman_low == interval.spearman_high == 1.0


def test_replicates_without_an_order_are_counted_and_past_the_tail_empty_the_interval():
    """Draws with no value (a replicate that ties every run): up to 2.5 % of them at 95 % are left out and
    said; more, and the interval is empty. Percentiles by hand (linear, as numpy's default): of 0 .. 97,
    the 2.5th lies at 0.025 · 97 = 2.425 and the 97.5th at 0.975 · 97 = 94.575."""
    values = np.arange(98.0)
    low, high, note = percentile_interval(np.concatenate([[np.nan] * 2, values]), 0.95)
    assert (low, high) == pytest.approx((2.425, 94.575))
    assert note == "2 of 100 bootstrap replicates have no order to compare, left out of the interval"
    low, high, note = percentile_interval(np.concatenate([[np.nan] * 3, values[:97]]), 0.95)
    assert math.isnan(low) and math.isnan(high)
    assert note == "3 of 100 bootstrap replicates have no order to compare: more than 2.5%, so no 95% interval"
    assert percentile_interval(values, 0.9)[2] == "" and math.isnan(percentile_interval(np.array([]), 0.95)[0])


@pytest.mark.parametrize("ordering", [1, 4])
def test_a_correlation_that_few_queries_order_has_an_interval_only_where_most_replicates_order_it(ordering):
    """40 queries, of which `ordering` rank the three runs as the official leaderboard does; on the others
    every run scores 0. A replicate that draws none of them ties the runs: about (1 - k/40)^40 of them,
    37 % for one query (an interval of [1, 1] read as certain, where a third of the replicates had no ρ),
    1.5 % for four (fewer than 25 of 1,000: left out, and said)."""
    per_query = pd.DataFrame(
        [(run, f"q{q:02d}", score if q < ordering else 0.0, 1.0)
         for q in range(40) for run, score in (("a", 0.9), ("b", 0.5), ("c", 0.1))],
        columns=["run_id", "query_id", "value", "weight"],
    )  # fmt: skip
    interval = bootstrap_intervals(per_query, {"a": 1, "b": 2, "c": 3})
    missing = int(interval.note.split(" of 1,000 ")[0])
    expected = 1000 * (1 - ordering / 40) ** 40
    assert abs(missing - expected) < 4 * math.sqrt(expected)  # binomial: four standard deviations
    if ordering == 1:
        assert math.isnan(interval.spearman_low) and math.isnan(interval.kendall_high)
        assert interval.note.endswith("have no order to compare: more than 2.5%, so no 95% interval")
    else:
        assert interval == Interval(1.0, 1.0, 1.0, 1.0, interval.note) and 0 < missing <= 25
        assert interval.note.endswith("have no order to compare, left out of the interval")


def test_the_vectorised_correlations_are_the_leaderboard_s_to_the_last_bit_on_many_tied_leaderboards():
    """A point estimate lay outside its bootstrap interval by one float step (kendall 0.5477225575051662,
    kendall_high ...661): on small leaderboards full of ties the two sides' divisions rounded apart."""
    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(2, 12))
        scores = rng.integers(0, int(rng.integers(1, 6)), size=(1, n)).astype(float)
        official = rng.integers(1, int(rng.integers(2, 6)), size=n).astype(float)
        runs = [f"r{i:02d}" for i in range(n)]
        point = leaderboard_correlation(dict(zip(runs, scores[0])), dict(zip(runs, official)))
        spearman, kendall = rank_correlations(scores, official)
        for mine, theirs in ((spearman[0], point.spearman), (kendall[0], point.kendall)):
            assert mine == theirs or (np.isnan(mine) and np.isnan(theirs)), (scores, official)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_one_run_has_no_correlation_and_no_numpy_warning():
    """One official run: six `RuntimeWarning: divide by zero` lines of numpy's among the step's output (a
    stranger by hand); the note says why there is no correlation."""
    one = np.array([[1.0]])
    assert np.isnan(spearman_rho(one, one)).all() and np.isnan(kendall_tau_b(one, one)).all()
