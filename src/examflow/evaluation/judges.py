"""Judges compared (docs/judges.md): the leaderboards that label sets give, and the labels themselves.

A label set is a qrels file: the official judgments, another team's LLM labels, examflow's EXAM-Qrels.
Every label set ranks the same runs under every measure; each leaderboard is compared with the
official one (the official qrels under the official measure, or a given leaderboard) by the
statistics of `STATISTICS`, each with a bootstrap interval over queries. The labels are compared with
the official ones pair by pair: Cohen's κ, Krippendorff's α (ordinal), a confusion table.

Measures come from ir-measures (trec_eval's through pytrec_eval; `Compat(p=0.9)` and the rest of
ir-measures' syntax as well). A run's score under a label set is its mean over the queries that label
set judges and the run ranks, as trec_eval, the official leaderboard and `examflow evaluate` average
(or, `complete`, over all the judged queries, a missing one counting 0: trec_eval -c). Bootstrap
replicates resample the queries once for all label sets, so the official leaderboard and a judge's see
the same queries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from examflow.defaults import default
from examflow.errors import Failure
from examflow.evaluation.agreement import cohen_kappa
from examflow.evaluation.correlation import kendall_tau_b, percentile_interval, spearman_rho, tau_ap
from examflow.io.autojudge import Measured, format_leaderboard
from examflow.outputs import JUDGES
from examflow.ties import average_ranks, majority, ranks_of, tie_keys, unordered

OFFICIAL = "official"
LEADERBOARD_COLUMNS = ["label_set", "measure", "run_id", "score", "rank"]
AGREEMENT_COLUMNS = ["label_set", "measure", "statistic", "value", "low", "high", "runs", "note"]
LABEL_COLUMNS = ["label_set", "statistic", "value", "pairs"]
CONFUSION_COLUMNS = ["label_set", "label", "official", "count"]
VOTE_COLUMNS = ["label_set", "query_id", "doc_id", "label", "votes", "margin"]


@dataclass(frozen=True)
class Settings:
    top_k: int = default("judges.top_k")  # τ@k: the runs the official leaderboard ranks in its top k
    persistence: float = default("judges.rbo_p")  # RBO's p
    replicates: int = default("evaluation.bootstrap")
    seed: int = default("evaluation.seed")
    level: float = 0.95
    complete: bool = False  # a judged query a run does not rank counts 0 (trec_eval -c), or is left out


def parse_measure(name: str):
    """An ir-measures measure from a trec_eval name as pytrec_eval spells it (`ndcg_cut_10`) or from
    ir-measures' syntax (`nDCG@10`, `Compat(p=0.9)`) that an installed provider computes; a ValueError
    says why a name is none of these."""
    import ir_measures

    from examflow.evaluation.exam_qrels import aborting, measure_meant, measure_problems

    why = measure_problems([name]).get(name)
    if why is None:  # exactly a trec_eval measure, which ir-measures reads as one
        return ir_measures.parse_trec_measure(name)[0]
    if why.startswith("trec_eval computes it as") or aborting(name):  # `P`: nine measures; `P_0`
        raise ValueError(why)
    try:
        measure = ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError) as error:
        raise ValueError(
            f"neither a trec_eval measure{measure_meant(name) or ' (ndcg_cut_10, map, P_20)'} nor ir-measures' syntax "
            f"(nDCG@10, AP(rel=2), Compat(p=0.9)): {error}"
        ) from None
    if measure.params.get("cutoff") == 0:  # pytrec_eval's `ndcg_cut_0`: its C code stops the process
        raise ValueError("a cut-off of 0 (trec_eval stops on it): a cut-off is 1 or more (nDCG@10, P@20)")
    persistence = measure.params.get("p")  # Compat's and RBP's: ir-measures refuses 0 and 1, computes 1.5
    if isinstance(persistence, (int, float)) and not 0 < persistence < 1:
        raise ValueError(f"a persistence p of {persistence:g}: it is between 0 and 1 ({measure.NAME}(p=0.9))")
    try:
        providers = [p for p in ir_measures.DefaultPipeline.providers if p.supports(measure)]
    except AssertionError as error:  # a parameter of the wrong form (`nDCG@10.5`): ir-measures asserts
        raise ValueError(f"ir-measures refuses its parameters: {error}") from None
    if not any(p.is_available() for p in providers):
        names = ", ".join(sorted(p.NAME for p in providers))
        raise ValueError(f"only ir-measures' {names} computes it, not installed" if providers
                         else "no provider of ir-measures computes it")  # fmt: skip
    return measure


def check_measure(name: str):
    """`parse_measure`, and the measure computed once on a made-up query: a provider that cannot (gdeval's
    ERR without Perl) is a ValueError now, not a failure after the grading."""
    import ir_measures

    measure = parse_measure(name)
    # a query id of digits: gdeval (ERR) refuses any other, and would have refused every measure of it
    qrels = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    run = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    try:
        list(ir_measures.iter_calc([measure], qrels, run))
    except Exception as error:  # a provider's own failure, of any kind
        raise ValueError(f"ir-measures could not compute it: {str(error).strip()[:200]}") from None
    return measure


def at_relevance_level(name: str, measure, level: int):
    """The official measure at trec_eval's relevance level `level` (-l), as `examflow official` computes
    it: a trec_eval name's measure with ir-measures' `rel=level` (computed by pytrec_eval at that level),
    or as it is where the level leaves it alone (nDCG); a ValueError where it cannot take one."""
    from examflow.evaluation.exam_qrels import level_free, measure_problems

    trec_name = name not in measure_problems([name])
    if level == 1 or (trec_name and level_free(name)) or "rel" not in measure.SUPPORTED_PARAMS:
        return measure  # the level leaves it alone: it weighs the labels themselves (nDCG, Compat)
    if not trec_name:
        raise ValueError(f"a relevance level goes into ir-measures' syntax itself (AP(rel={level})), not beside it")
    return measure(rel=level)


Run = dict[str, dict[str, float]]  # query -> document -> score, as ir-measures reads a run

GDEVAL_TOPIC, GDEVAL_TOP = re.compile(r"[0-9]+"), 4  # what gdeval.pl reads: `$topic =~ /^[0-9]+$/`, MAX_JUDGMENT


def provider_of(measure) -> str:
    """The name of ir-measures' provider that computes `measure`: the first available one that supports it."""
    import ir_measures

    providers = ir_measures.DefaultPipeline.providers
    return next((p.NAME for p in providers if p.supports(measure) and p.is_available()), "")


def check_gdeval_ids(measure, query_ids: Iterable[str]) -> None:
    """gdeval (ir-measures' provider of ERR) reads a query id as digits, after cutting all before its last `-`
    (`a-1` and `b-1` one topic, and neither id's value found): Perl's `format error` and a non-zero exit
    status said nothing of it (a stranger's trial)."""
    if provider_of(measure) != "gdeval":
        return
    if odd := next((query for query in query_ids if not GDEVAL_TOPIC.fullmatch(query)), None):
        raise Failure(f"{measure}: gdeval, which computes it, reads query ids of digits alone, not {odd!r}: "
                      "choose another measure for these queries")  # fmt: skip


def check_gdeval_labels(measure, labels: pd.DataFrame, label_set: str = "") -> None:
    """`check_gdeval_ids`, and labels up to 4, which is all gdeval reads (of `label_set`, named)."""
    check_gdeval_ids(measure, labels["query_id"])
    if len(labels) and (top := int(labels["relevance"].max())) > GDEVAL_TOP and provider_of(measure) == "gdeval":
        of = f" in label set {label_set!r}" if label_set else ""
        raise Failure(f"{measure}: gdeval, which computes it, reads labels up to {GDEVAL_TOP}, not {top}{of}")


def run_dictionaries(runs: pd.DataFrame) -> dict[str, Run]:
    """Each run by id (sorted), made once: ir-measures would convert a run's table again for every label set
    and measure (half the time of a TREC DL-sized comparison). A document's score is its place in trec_eval's
    order (score descending, ties by descending doc id), counted from the bottom: each provider breaks ties
    its own way (ir-measures' Compat by ascending doc id), and every measure must see the one order that
    pooling, `examflow evaluate` and the official leaderboard take. Counted from 1: Compat's ideal ranking
    breaks a tie of labels by these scores, an unretrieved document's 0, which the last document ranked
    must not share."""
    ordered = runs.sort_values(["run_id", "query_id", "score", "passage_id"], ascending=[True, True, False, False])
    places = ordered.groupby(["run_id", "query_id"], sort=False).cumcount(ascending=False)
    found: dict[str, Run] = {}
    for run, query, doc, place in zip(ordered["run_id"], ordered["query_id"], ordered["passage_id"], places):
        found.setdefault(run, {}).setdefault(query, {})[doc] = float(place + 1)
    return dict(sorted(found.items()))


def per_query_values(
    labels: pd.DataFrame, runs: dict[str, Run], measure, queries: list[str], complete: bool = False, name: str = ""
):
    """Runs (sorted by id) × `queries`: each run's value on each query the label set (`name`) judges and the
    run ranks. A judged query the run does not rank is left out of its mean (NaN: trec_eval's mean, as the
    official leaderboard and `examflow evaluate` take it) or counts 0 (`complete`: trec_eval -c); a
    query the label set does not judge is NaN. `runs`: `run_dictionaries`."""
    import ir_measures

    from examflow.evaluation.exam_qrels import as_trec_eval_reads

    check_gdeval_labels(measure, labels, name)
    qrels: dict[str, dict[str, int]] = {}
    for query, doc, relevance in zip(labels["query_id"], labels["doc_id"], labels["relevance"]):
        qrels.setdefault(query, {})[doc] = int(relevance)
    evaluator = ir_measures.evaluator([measure], as_trec_eval_reads(qrels))
    judged, column = sorted(set(labels["query_id"])), {query: i for i, query in enumerate(queries)}
    table = np.full((len(runs), len(queries)), np.nan)
    for row, run in enumerate(runs.values()):
        try:
            values = {m.query_id: m.value for m in evaluator.iter_calc(run)}
        except Exception as error:  # a provider's own failure (a missing program, ...), of any kind
            raise Failure(f"{measure}: ir-measures could not compute it: {str(error).strip()[:300]}") from None
        ranked = set(run)
        for query in judged:
            table[row, column[query]] = values.get(query, 0.0) if query in ranked else 0.0 if complete else np.nan
    return table


def per_page(labels: pd.DataFrame) -> pd.DataFrame:
    """Judgments of subtopics (`query/facet` ids) as judgments of their pages: a document's highest
    label on the page, since runs rank pages (as the official leaderboard takes them, docs/evaluation.md)."""
    pages = labels.assign(query_id=[query.partition("/")[0] for query in labels["query_id"]])
    return pages.groupby(["query_id", "doc_id"], sort=False)["relevance"].max().reset_index()


def ensemble(members: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """UMBRELA's ensemble (`ensemble_judge`): over the (query, doc) pairs every member judges, the label
    most members gave, a tie going to the lowest such label; with each pair's vote kept: how many
    members gave the label, and by how many it beat the runner-up (0: a tie)."""
    names = list(members)
    merged = members[names[0]].rename(columns={"relevance": names[0]})
    for name in names[1:]:
        merged = merged.merge(members[name].rename(columns={"relevance": name}), on=["query_id", "doc_id"])
    rows = []
    for query, doc, *labels in merged[["query_id", "doc_id", *names]].itertuples(index=False):
        rows.append((query, doc, *majority(labels)))
    votes = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "votes", "margin"])
    return votes[["query_id", "doc_id", "relevance"]], votes


# -- leaderboard agreement: each statistic of (judge's scores, official scores), runs aligned -----------------


@dataclass
class Sides:
    """The judge's leaderboard and the official one, a row for each: the first row all the queries, each
    once; then one per bootstrap sample. Each statistic is taken on every row at once (a sample at a time
    was most of `compare-judges`' time)."""

    scores: np.ndarray  # rows × runs
    official: np.ndarray

    @cached_property
    def predicted(self) -> np.ndarray:
        """The judge's ranks, best first, on the tie keys."""
        return average_ranks(-tie_keys(self.scores))

    @cached_property
    def truth(self) -> np.ndarray:
        """The official ranks, best first, on the tie keys (`ties.ranks_of`)."""
        return average_ranks(-tie_keys(self.official))

    def each(self, statistic: Callable[[np.ndarray, np.ndarray, np.ndarray], float]) -> np.ndarray:
        """A statistic of one row (scores, official scores, official ranks) taken row by row."""
        return np.array([statistic(*row) for row in zip(self.scores, self.official, self.truth)])


def kendall(sides: Sides, settings: Settings) -> np.ndarray:
    return kendall_tau_b(sides.predicted, sides.truth)


def spearman(sides: Sides, settings: Settings) -> np.ndarray:
    return spearman_rho(sides.predicted, sides.truth)


def pearson(sides: Sides, settings: Settings) -> np.ndarray:
    def one(scores: np.ndarray, official: np.ndarray, _: np.ndarray) -> float:
        if np.ptp(scores) == 0 or np.ptp(official) == 0:
            return math.nan  # a constant leaderboard has no linear relation to anything
        return float(np.corrcoef(scores, official)[0, 1])

    return sides.each(one)


def ap_correlation(sides: Sides, settings: Settings) -> np.ndarray:
    def one(scores: np.ndarray, _: np.ndarray, truth: np.ndarray) -> float:
        runs = [str(i) for i in range(len(scores))]
        return tau_ap(dict(zip(runs, scores.tolist())), dict(zip(runs, truth.tolist())))

    return sides.each(one)


def kendall_at_k(sides: Sides, settings: Settings) -> np.ndarray:
    """Kendall's τ-b over the runs the official leaderboard ranks in its top k (ranks ≤ k, ties averaged);
    NaN where fewer than two are."""
    return kendall_tau_b(sides.predicted, sides.truth, counted=sides.truth <= settings.top_k)


def rank_biased_overlap(sides: Sides, settings: Settings) -> np.ndarray:
    """RBO_ext (Webber, Moffat and Zobel 2010, eq. 32) of the two orders of the same runs, with
    persistence p; runs tied on either side are in every order among themselves with equal chance, and
    the result is its expectation over those orders (exact: RBO is linear in the overlaps)."""
    p, n = settings.persistence, sides.scores.shape[1]
    depth = np.arange(1, n + 1)

    def one(scores: np.ndarray, official: np.ndarray, _: np.ndarray) -> float:
        overlap = (_inclusion(scores) * _inclusion(official)).sum(axis=0)  # E|S_d ∩ T_d|, d = 1..n
        return float(overlap[-1] / n * p**n + (1 - p) / p * np.sum(overlap / depth * p**depth))

    return sides.each(one)


def _inclusion(scores: np.ndarray) -> np.ndarray:
    """runs × depths: the chance that a run is among the first d of the order, ties in random order."""
    keys = tie_keys(scores)
    above = np.array([(keys > key).sum() for key in keys])[:, None]  # runs strictly better
    group = np.array([(keys == key).sum() for key in keys])[:, None]
    depth = np.arange(1, len(keys) + 1)[None, :]
    return np.clip((depth - above) / group, 0.0, 1.0)


Statistic = Callable[[Sides, Settings], np.ndarray]  # a value for each row
# Every statistic by its name in agreement.tsv, the report and docs/judges.md (tests check the docs).
STATISTICS: dict[str, Statistic] = {
    "kendall": kendall,
    "spearman": spearman,
    "pearson": pearson,
    "tau_ap": ap_correlation,
    "tau_at_k": kendall_at_k,
    "rbo": rank_biased_overlap,
}


@dataclass(frozen=True)
class Board:
    """One label set's view of the runs under one measure: per-query values, NaN where it judges no query
    (or, as trec_eval averages, where the run does not rank the query: left out of its mean)."""

    label_set: str
    measure: str
    values: np.ndarray  # runs × all queries
    linear: bool = True  # scores, not ranks: Pearson's r means something

    def scores(self, counts: np.ndarray | None = None) -> np.ndarray:
        """Each run's mean over its queries (those with a value), each query counted `counts` times (once
        by default, summed with math.fsum: the same in any query order); NaN for a run without any. For
        a matrix of counts, one row of scores per row of counts."""
        present = np.isfinite(self.values)
        if counts is None:
            return np.array([_mean(row[kept]) for row, kept in zip(self.values, present)])
        # counts: one sample (queries) or many (samples × queries), all in one product
        weights, totals = counts @ present.T.astype(float), counts @ np.nan_to_num(self.values).T
        return np.divide(totals, weights, out=np.full(totals.shape, math.nan), where=weights > 0)

    @classmethod
    def given(cls, scores: np.ndarray, queries: int, linear: bool) -> Board:
        """A leaderboard given as it is (scores, or negated ranks): the same on every sample of queries."""
        return cls(OFFICIAL, "given", np.repeat(scores[:, None], max(queries, 1), axis=1), linear=linear)


def _mean(values: np.ndarray) -> float:
    """math.fsum's mean; NaN of none; a value repeated (a given score) exactly itself, not one ulp off."""
    if not len(values):
        return math.nan
    return float(values[0]) if (values == values[0]).all() else math.fsum(values) / len(values)


def leaderboard_agreement(board: Board, official: Board, settings: Settings) -> list[tuple]:
    """(statistic, value, low, high, runs, note) of the board against the official one, over the runs
    both score. Pearson's r needs official scores (NaN against ranks); τ@k counts only the official top k
    runs. A bootstrap sample in which one of the two judges has no score for a run (it drew none of
    the run's judged queries) is left out. `note`: why a value is empty ("" where it is not)."""
    scores, truth = board.scores(), official.scores()
    both = np.isfinite(scores) & np.isfinite(truth)
    samples = [(s[both], t[both]) for s, t in _replicates(board, official, settings)]
    samples = [(s, t) for s, t in samples if np.isfinite(s).all() and np.isfinite(t).all()]
    sides = Sides(np.array([scores[both], *(s for s, _ in samples)]), np.array([truth[both], *(t for _, t in samples)]))
    rows = []
    for name, statistic in STATISTICS.items():
        runs = int((sides.truth[0] <= settings.top_k).sum()) if name == "tau_at_k" else int(both.sum())
        why = _blank(name, scores[both], truth[both], official.linear, settings)
        if (name == "pearson" and not official.linear) or both.sum() < 2:
            rows.append((name, math.nan, math.nan, math.nan, runs, why))
            continue
        point_and_draws = statistic(sides, settings)  # the point estimate, then one value per replicate
        value = float(point_and_draws[0])
        low, high, left_out = percentile_interval(point_and_draws[1:], settings.level)
        rows.append((name, value, low, high, runs, why if math.isnan(value) else left_out))
    return rows


def _blank(statistic: str, scores: np.ndarray, official: np.ndarray, linear: bool, settings: Settings) -> str:
    """Why a statistic of two leaderboards (the runs both score) would be empty, in words: the summary says it
    where agreement.tsv's cell is blank. RBO is an expectation over the tied orders: empty only short of runs."""
    if statistic == "pearson" and not linear:
        return "the official leaderboard gives ranks"
    if why := unordered(scores, official):
        return why
    return f"fewer than two runs, or no order, in the official top {settings.top_k}" if statistic == "tau_at_k" else ""


def _replicates(board: Board, official: Board, settings: Settings) -> list[tuple[np.ndarray, np.ndarray]]:
    """Both leaderboards on each bootstrap sample of the queries (one sample for both)."""
    queries = board.values.shape[1]
    rng = np.random.default_rng(settings.seed)
    counts = rng.multinomial(queries, np.full(queries, 1 / queries), size=settings.replicates)
    return list(zip(board.scores(counts), official.scores(counts)))


# -- label agreement ---------------------------------------------------------------------------------------------


def label_agreement(labels: pd.DataFrame, official: pd.DataFrame) -> tuple[list[tuple], pd.DataFrame]:
    """(statistic, value, pairs) rows and the confusion table of the pairs both judge."""
    pairs = labels.merge(official, on=["query_id", "doc_id"], suffixes=("", "_official"))
    mine, theirs = pairs["relevance"].to_numpy(), pairs["relevance_official"].to_numpy()
    values = sorted(set(mine) | set(theirs))
    table = pd.crosstab(mine, theirs).reindex(index=values, columns=values, fill_value=0)
    rows = [("cohen_kappa", cohen_kappa(table), len(pairs)), ("krippendorff_alpha", _alpha(mine, theirs), len(pairs))]
    counts = table.to_numpy()
    confusion = [(label, other, int(counts[i, j])) for i, label in enumerate(values) for j, other in enumerate(values)]
    return rows, pd.DataFrame(confusion, columns=["label", "official", "count"])


def _alpha(mine: np.ndarray, theirs: np.ndarray) -> float:
    """Krippendorff's α, ordinal; NaN when both sides use one label (no disagreement to measure against)."""
    import krippendorff

    values = sorted(set(mine) | set(theirs))
    if len(values) < 2:
        return math.nan
    data = np.vstack([mine, theirs]).astype(float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=values))


# -- the whole comparison ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judges:
    official_labels: pd.DataFrame  # query_id, doc_id, relevance
    label_sets: dict[str, pd.DataFrame]  # by name, each as the official labels
    runs: pd.DataFrame  # run_id, query_id, passage_id, rank, score
    measures: dict[str, object]  # by name as given, each parsed by `parse_measure`
    official_measure: tuple[str, object] | None  # (name, parsed): the official leaderboard's measure ...
    official_given: tuple[dict[str, float], bool] | None = None  # ... or the leaderboard given: (values, scores?)
    votes: dict[str, pd.DataFrame] = field(default_factory=dict)  # each ensemble's votes (`ensemble`)
    leaderboards: dict[str, dict[str, Measured]] = field(default_factory=dict)  # other judges' (AutoJudge files)


def compare_judges(judges: Judges, settings: Settings) -> dict[str, pd.DataFrame | str]:
    """The tables of `examflow.outputs.JUDGES`, by file name. The official leaderboard is on the
    leaderboards too; runs a given official leaderboard lacks are on the leaderboards and left out of
    the agreement. Other judges' leaderboards (AutoJudge files) are compared as they are given."""
    every = {OFFICIAL: judges.official_labels, **judges.label_sets}
    topics = [set(values) for given in judges.leaderboards.values() for m in given.values()
              for values in m.per_topic.values()]  # fmt: skip
    queries = sorted(set().union(*(set(labels["query_id"]) for labels in every.values()), *topics))
    run_ids = sorted(set(judges.runs["run_id"]))
    runs = run_dictionaries(judges.runs)
    labelled = [
        Board(name, measure, per_query_values(labels, runs, parsed, queries, settings.complete, name))
        for name, labels in every.items()
        for measure, parsed in judges.measures.items()
    ]
    boards = labelled + [
        outside_board(name, measure, given, run_ids, queries, settings.complete)
        for name, measures in judges.leaderboards.items()
        for measure, given in measures.items()
    ]
    truth, compared = _official_board(judges, boards, runs, queries, settings.complete)
    leaderboards = [row for board in boards for row in _leaderboard_rows(board, run_ids)]
    apart = all(board is not truth for board in boards)  # given, or under a measure no label set is ranked by
    if apart:
        leaderboards += _leaderboard_rows(truth, [run for run, kept in zip(run_ids, compared) if kept])
    # ... which goes to AutoJudge's file too where it was computed (`AP(rel=2)`): a given one has no topics
    computed = [truth] if apart and judges.official_given is None else []
    agreement = [
        (board.label_set, board.measure, *row)
        for board in boards
        if board is not truth  # the official leaderboard itself
        for row in leaderboard_agreement(Board(board.label_set, board.measure, board.values[compared]), truth, settings)
    ]
    labels, confusion = _label_tables(judges)
    votes = [
        table.rename(columns={"relevance": "label"}).assign(label_set=name) for name, table in judges.votes.items()
    ]
    tables: dict[str, pd.DataFrame | str] = {
        "leaderboards": pd.DataFrame(leaderboards, columns=LEADERBOARD_COLUMNS),
        "agreement": pd.DataFrame(agreement, columns=AGREEMENT_COLUMNS),
        "labels": labels,
        "confusion": confusion,
        "votes": pd.concat([pd.DataFrame(columns=VOTE_COLUMNS), *votes], ignore_index=True)[VOTE_COLUMNS],
        "autojudge": format_leaderboard(_per_topic(labelled + computed, run_ids, queries)),
    }
    return {JUDGES[name].path: table for name, table in tables.items()}


def _official_board(judges: Judges, boards: list[Board], runs: dict[str, Run], queries: list[str], complete: bool):
    """The official leaderboard as a board of the runs compared, and which runs those are (a mask)."""
    run_ids = list(runs)
    if judges.official_given is not None:
        given, are_scores = judges.official_given
        compared = np.array([run in given for run in run_ids])
        values = np.array([given[run] if are_scores else -given[run] for run in run_ids if run in given])
        return Board.given(values, len(queries), linear=are_scores), compared
    assert judges.official_measure is not None  # the command asks for one of the two
    name, parsed = judges.official_measure
    # the same measure under another name (`nDCG@10` for `ndcg_cut_10`) is the same leaderboard
    found = [b for b in boards if b.label_set == OFFICIAL and str(judges.measures.get(b.measure)) == str(parsed)]
    if found:
        return found[0], np.ones(len(run_ids), dtype=bool)
    values = per_query_values(judges.official_labels, runs, parsed, queries, complete, OFFICIAL)
    return Board(OFFICIAL, name, values), np.ones(len(run_ids), dtype=bool)


def outside_board(
    name: str, measure: str, given: Measured, run_ids: list[str], queries: list[str], complete: bool = False
) -> Board:
    """Another judge's leaderboard under one of its measures: its per-topic values (NaN where it has none;
    `complete`: 0 on a topic the file scores for other runs, as trec_eval -c counts a judged query a run
    lacks), or where it gives only `all` lines, those scores on every sample of queries."""
    column = {query: i for i, query in enumerate(queries)}
    topics = sorted({topic for values in given.per_topic.values() for topic in values})
    values = np.full((len(run_ids), max(len(queries), 1)), np.nan)
    for row, run in enumerate(run_ids):
        if given.per_topic:
            scored = given.per_topic.get(run)
            if complete and scored is not None:
                values[row, [column[topic] for topic in topics]] = 0.0
            for topic, value in (scored or {}).items():
                values[row, column[topic]] = value
        elif run in given.overall:
            values[row, :] = given.overall[run]
    return Board(name, measure, values)


def _per_topic(boards: list[Board], run_ids: list[str], queries: list[str]) -> pd.DataFrame:
    """Every board's per-query values, a row each (AutoJudge's leaderboard lines; the measure named
    `label_set:measure`)."""
    rows = [
        (run, f"{board.label_set}:{board.measure}", query, value)
        for board in boards
        for run, values in zip(run_ids, board.values)
        for query, value in zip(queries, values)
    ]
    return pd.DataFrame(rows, columns=["run_id", "measure", "topic_id", "value"])


def _leaderboard_rows(board: Board, run_ids: list[str]) -> list[tuple]:
    """(label set, measure, run, score, rank); a given leaderboard of ranks has its ranks and no scores."""
    scores = dict(zip(run_ids, board.scores().tolist()))
    if not board.linear:  # negated ranks
        return [(board.label_set, board.measure, run, math.nan, -scores[run]) for run in run_ids]
    ranks = ranks_of(scores)
    return [(board.label_set, board.measure, run, scores[run], ranks[run]) for run in run_ids]


def _label_tables(judges: Judges) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, confusions = [], [pd.DataFrame(columns=CONFUSION_COLUMNS)]
    for name, labels in judges.label_sets.items():
        statistics, confusion = label_agreement(labels, judges.official_labels)
        rows += [(name, *row) for row in statistics]
        confusions.append(confusion.assign(label_set=name)[CONFUSION_COLUMNS])
    return pd.DataFrame(rows, columns=LABEL_COLUMNS), pd.concat(confusions, ignore_index=True)
