"""NRP and its statistics (docs/methods.md §6): ranker selection, the rank of each answer among the judged
documents, per-system means, weighted dimensions, a Wilcoxon test and agreement with an expert.

For an answer a to query q and a quality dimension with judged documents D_q, scored by the
ranker chosen for that dimension: r = |{d ∈ D_q : s(d) ≥ s(a)}| (ties go against the answer,
zero-based), NRP = 1 − r/|D_q| (`docs`, the paper) or 1 − r/(|D_q| + 1) (`list`, the published
numbers: the authors' code ranks the answer within the list of the documents and the answer). A
system's NRP is the mean over its samples of a query, then over queries. Every table holding an NRP
value says which denominator it was computed with.
"""

from __future__ import annotations

import logging
import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Protocol, cast

import pandas as pd
import pytrec_eval

from examflow.defaults import default
from examflow.errors import ConfigError, Failure, InputError
from examflow.evaluation.scores import standard_error
from examflow.nrp.inputs import COMBINED, answer_name, combined_dimensions, complete_answers, rankers_needing_texts
from examflow.nrp.rankers import QueryItems, Scores, make_ranker

log = logging.getLogger("examflow")

DENOMINATORS = {"docs": "1 − r/|D_q|", "list": "1 − r/(|D_q| + 1)"}
EXACT = "exact"  # per_answer's column of each NRP as a Fraction, for means rounded once (not written)
PER_ANSWER_COLUMNS = ["llm", "prompt", "sample", "query_id", "ranker", "dimension", "denominator", "rank", "n_docs",
                      "nrp", "answer"]  # fmt: skip
PER_SYSTEM_COLUMNS = ["llm", "prompt", "ranker", "dimension", "denominator", "nrp", "stderr", "n_queries", "n_empty"]
SELECTION_COLUMNS = ["ranker", "dimension", "ndcg_cut_10", "chosen"]
WILCOXON_COLUMNS = ["llm_a", "prompt_a", "llm_b", "prompt_b", "ranker", "dimension", "denominator", "n_pairs",
                    "mean_difference", "statistic", "p_value"]  # fmt: skip
EXPERT_COLUMNS = ["ranker", "query_id", "n_items", "kendall", "ci_low", "ci_high"]


class _Answer(Protocol):
    """A row of an answers table (`ANSWER_COLUMNS`) as `itertuples` gives it: a cast, since pandas types
    cells as any scalar, and every cell of this table is a string."""

    llm: str
    prompt: str
    sample: str
    query_id: str
    text: str
    answer: str


@dataclass
class NRPInputs:
    queries: dict[str, str]  # query id -> text, in the order of the queries file
    documents: dict[str, str] | None  # judged document id -> text; None: no corpus (`run` rankers only)
    judgments: dict[str, pd.DataFrame]  # dimension -> (query_id, passage_id, relevance), exclusions dropped
    answers: pd.DataFrame  # examflow.nrp.inputs.ANSWER_COLUMNS
    expert: pd.DataFrame | None = None  # query_id, item, rank


@dataclass
class NRPSettings:
    rankers: list[dict]  # checked ranker settings, in order of preference on ties
    weights: dict[str, float]  # dimension -> weight of its NRP in the combined score
    fixed: dict[str, str] = field(default_factory=dict)  # dimension -> ranker name, skipping selection
    denominator: str = default("nrp.denominator")  # "docs" or "list"
    wilcoxon: list[tuple[str, str, str, str]] = field(default_factory=list)  # (llm a, prompt a, llm b, prompt b)
    cache_dir: str | Path = default("cache_dir")


# A grading back end's advice where the hub cannot be reached, in rankers' words (`openai` is no ranker).
OFFLINE_RANKERS = ("without the hub: the model's folder as `model` (saved by save_pretrained, or copied from a hub "
                   "cache), or the `embedding` ranker (packaged), `bm25` or `run`; HF_HUB_OFFLINE=1 fails at once, "
                   "without retries")  # fmt: skip


def _ranker_scores(index: int, ranker: dict, items: list[QueryItems], cache_dir: str | Path) -> Scores:
    """A ranker's scores. Its model is loaded by a grading back end's code, whose errors name the back end's
    option (`backend.model`) and back ends: they name the ranker's (`--ranker[i].model`, the workflow's
    `nrp.rankers[i]`) and rankers."""
    from examflow.grading.backends import OFFLINE

    try:
        return make_ranker(ranker).scores(items, cache_dir)
    except ConfigError as error:
        if not error.key.startswith("backend."):
            raise
        message = error.message.replace(OFFLINE, OFFLINE_RANKERS)
        raise ConfigError(f"--ranker[{index}].{error.key.removeprefix('backend.')}", message) from None


def nrp_tables(inputs: NRPInputs, settings: NRPSettings) -> dict[str, pd.DataFrame]:
    """per_answer.tsv, per_system.tsv, ranker_selection.tsv and, where asked, wilcoxon.tsv and expert_agreement.tsv."""
    if inputs.documents is None and rankers_needing_texts(settings.rankers):
        raise Failure(f"NRP: the rankers {', '.join(rankers_needing_texts(settings.rankers))} need the judged "
                      "documents' texts (a corpus); only `run` rankers work without")  # fmt: skip
    judged = sorted(set().union(*(set(j["query_id"]) for j in inputs.judgments.values())))
    # a judged query no system answered is left out (a warning names it), not scored 0 for every system
    answers = complete_answers(inputs.answers, sorted(set(judged) & set(inputs.answers["query_id"])))
    items = query_items(inputs, answers, judged)
    scores = {r["name"]: _ranker_scores(i, r, items, settings.cache_dir) for i, r in enumerate(settings.rankers)}
    for name, scored in scores.items():
        check_scores(name, scored)
    selection = select_rankers(scores, inputs.judgments, [r["name"] for r in settings.rankers], settings.fixed)
    chosen = dict(zip(selection.loc[selection["chosen"], "dimension"], selection.loc[selection["chosen"], "ranker"]))
    per_answer = pd.concat(
        [nrp_per_answer(answers, inputs.judgments[d], scores[chosen[d]], settings.denominator).assign(
            ranker=chosen[d], dimension=d) for d in inputs.judgments],
        ignore_index=True,
    )  # fmt: skip
    if len(inputs.judgments) > 1:
        per_answer = pd.concat([per_answer, combine(per_answer, settings.weights)], ignore_index=True)
    per_answer = per_answer.assign(denominator=settings.denominator)
    tables = {"per_answer.tsv": per_answer[PER_ANSWER_COLUMNS], "per_system.tsv": per_system(per_answer),
              "ranker_selection.tsv": selection}  # fmt: skip
    if settings.wilcoxon:
        tables["wilcoxon.tsv"] = wilcoxon_tests(per_answer, settings.wilcoxon)
    if inputs.expert is not None:
        tables["expert_agreement.tsv"] = expert_agreement(inputs.expert, scores, list(inputs.queries))
    return tables


def check_scores(ranker: str, scores: Scores) -> None:
    """A NaN score (a model's overflow) compares as neither above nor below: it would rank the answer
    first, or a document nowhere, and give a wrong NRP."""
    for (query_id, item), score in scores.items():
        if math.isnan(score):
            raise Failure(f"ranker {ranker}: the score of {item!r} for query {query_id!r} is not a number (NaN)")


def denominator_of(per_system: pd.DataFrame, path: str | Path) -> str:
    """The denominator an NRP table was computed with; tables written before it was recorded have none."""
    values = set(per_system["denominator"]) if "denominator" in per_system else set()
    if len(values) != 1 or not values <= set(DENOMINATORS):
        raise InputError(path, "no single NRP denominator (docs or list): rewrite it with `examflow nrp`",
                         None, "denominator")  # fmt: skip
    return values.pop()


def query_items(inputs: NRPInputs, answers: pd.DataFrame, query_ids: list[str]) -> list[QueryItems]:
    """Per query: every document judged in some dimension, and every answer (empty ones as "")."""
    judged = pd.concat(inputs.judgments.values())
    texts = inputs.documents or {}
    items = []
    for query_id in query_ids:
        documents = sorted(set(judged.loc[judged["query_id"] == query_id, "passage_id"]))
        mine = answers[answers["query_id"] == query_id]
        rows = cast(Iterator[_Answer], mine.itertuples(index=False))
        named = {answer_name(a.llm, a.prompt, a.sample): a.text for a in rows}
        items.append(QueryItems(query_id, inputs.queries[query_id], {d: texts.get(d) for d in documents}, named))
    return items


def nrp_per_answer(answers: pd.DataFrame, judgments: pd.DataFrame, scores: Scores, denominator: str) -> pd.DataFrame:
    """rank r (zero-based, ties against the answer), |D_q| and NRP of every answer to a judged query."""
    documents = judgments.groupby("query_id")["passage_id"].agg(list).to_dict()
    rows = []
    for a in cast(Iterator[_Answer], answers[answers["query_id"].isin(documents)].itertuples(index=False)):
        mine = documents[a.query_id]
        score = scores[a.query_id, answer_name(a.llm, a.prompt, a.sample)]
        rank = sum(scores[a.query_id, d] >= score for d in mine)
        exact = exact_nrp(rank, len(mine), denominator)
        rows.append((a.llm, a.prompt, a.sample, a.query_id, rank, len(mine), float(exact), exact, a.answer))
    columns = ["llm", "prompt", "sample", "query_id", "rank", "n_docs", "nrp", EXACT, "answer"]
    return pd.DataFrame(rows, columns=columns)


def nrp(rank: int, n_docs: int, denominator: str = "docs") -> float:
    return float(exact_nrp(rank, n_docs, denominator))  # rounded once: 1 − 4/5 is 0.2, not 0.19999999999999996


def exact_nrp(rank: int, n_docs: int, denominator: str = "docs") -> Fraction:
    if denominator not in ("docs", "list"):
        raise ValueError(f"NRP denominator must be 'docs' or 'list', not {denominator!r}")
    size = n_docs if denominator == "docs" else n_docs + 1
    return Fraction(size - rank, size)


def combine(per_answer: pd.DataFrame, weights: dict[str, float]) -> pd.DataFrame:
    """The weighted sum over dimensions of each answer's NRP (dimension `combined`)."""
    keys = ["llm", "prompt", "sample", "query_id", "answer"]
    wide = per_answer.set_index([*keys, "dimension"])[EXACT].unstack()
    counted = {dimension: weights[dimension] for dimension in combined_dimensions(weights)}
    chosen = per_answer.drop_duplicates("dimension").set_index("dimension")["ranker"]
    rankers = "+".join(chosen[dimension] for dimension in counted)
    # Answers to queries judged in every dimension that counts only: a missing dimension would count as 0.
    judged = wide[list(counted)].dropna()
    exact = [
        sum(Fraction(w) * value for w, value in zip(counted.values(), row)) for row in judged.itertuples(index=False)
    ]
    combined = judged.index.to_frame(index=False).assign(nrp=[float(x) for x in exact], **{EXACT: exact})
    return combined.assign(ranker=rankers, dimension=COMBINED, rank=pd.NA, n_docs=pd.NA)  # type: ignore[arg-type]  # pandas-stubs: assign's scalars omit pd.NA


def per_system(per_answer: pd.DataFrame) -> pd.DataFrame:
    """Mean over the samples of (system, query), then over queries; standard error over queries."""
    keys = ["llm", "prompt", "ranker", "dimension", "denominator"]
    by_query = per_answer.groupby([*keys, "query_id"], sort=False).agg(
        nrp=(EXACT, statistics.mean), n_empty=("answer", lambda v: int((v != "given").sum()))
    )  # each answer's exact NRP: a mean of means is rounded once, at the end
    rows = []
    for key, group in by_query.groupby(level=keys, sort=True):
        values = group["nrp"].to_numpy(dtype=object)
        # One query has no spread to estimate: no standard error (not 0, which would claim certainty).
        # From exact sums, rounded once, as every examflow standard error: [0, 1, 0, 0, 0] gives 0.2, not 0.19999999999999998
        stderr = standard_error(values, exact=False) if len(values) > 1 else math.nan
        rows.append((*key, exact_mean(values), stderr, len(values), int(group["n_empty"].sum())))
    return pd.DataFrame(rows, columns=PER_SYSTEM_COLUMNS)


def select_rankers(
    scores: dict[str, Scores], judgments: dict[str, pd.DataFrame], order: list[str], fixed: dict[str, str]
) -> pd.DataFrame:
    """nDCG@10 of every ranker on every dimension's judged documents; the best (first on ties) is
    chosen unless the configuration fixes one. Negative judgments count as non-relevant gains of 0."""
    rows = []
    for dimension, judged in judgments.items():
        qrels: dict[str, dict[str, int]] = {}
        for q, d, r in judged[["query_id", "passage_id", "relevance"]].itertuples(index=False):
            qrels.setdefault(q, {})[d] = max(int(r), 0)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
        values = {}
        for name in order:
            run = {q: {d: _finite(scores[name][q, d]) for d in docs} for q, docs in qrels.items()}
            per_query = [v["ndcg_cut_10"] for v in evaluator.evaluate(run).values()]
            values[name] = exact_mean(per_query)
        best = fixed.get(dimension) or max(order, key=lambda name: (values[name], -order.index(name)))
        if len(order) > 1 and dimension not in fixed and not any(r > 0 for q in qrels.values() for r in q.values()):
            log.warning("dimension %s: no document is judged above 0, so every ranker's nDCG@10 is 0 and the first, "
                        "%s, is chosen: fix one (ranker: NAME) to choose", dimension, best)  # fmt: skip
        rows += [(name, dimension, values[name], name == best) for name in order]
    return pd.DataFrame(rows, columns=SELECTION_COLUMNS)


def _finite(score: float) -> float:
    return score if math.isfinite(score) else -1e300  # trec_eval takes no infinities


def wilcoxon_tests(per_answer: pd.DataFrame, pairs: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """Wilcoxon signed-rank test on the paired per-answer NRP (same query, same sample) of two systems."""
    from scipy.stats import wilcoxon

    rows = []
    for llm_a, prompt_a, llm_b, prompt_b in pairs:
        for (ranker, dimension, denominator), group in per_answer.groupby(["ranker", "dimension", "denominator"]):
            a = group[(group["llm"] == llm_a) & (group["prompt"] == prompt_a)]
            b = group[(group["llm"] == llm_b) & (group["prompt"] == prompt_b)]
            paired = a.merge(b, on=["query_id", "sample"], suffixes=("_a", "_b"))
            difference = paired[f"{EXACT}_a"] - paired[f"{EXACT}_b"]  # Fractions: the mean is rounded once
            statistic = p_value = math.nan
            if (difference != 0).any():
                # the exact differences, each rounded once: NRP values are fractions such as fifths, and
                # subtracted as floats equal differences come out apart (0.8 - 1.0 and 0.2 - 0.4) and rank apart
                test = wilcoxon(difference.map(float))
                statistic, p_value = float(test.statistic), float(test.pvalue)
            mean = exact_mean(difference) if len(difference) else math.nan
            rows.append((llm_a, prompt_a, llm_b, prompt_b, ranker, dimension, denominator, len(paired), mean,
                         statistic, p_value))  # fmt: skip
    return pd.DataFrame(rows, columns=WILCOXON_COLUMNS)


def expert_agreement(
    expert: pd.DataFrame, scores: dict[str, Scores], order: list[str], level: float = 0.95
) -> pd.DataFrame:
    """Per query (in `order`, the queries file's), Kendall's τ-b between the expert's ranks and each
    ranker's scores of the same items; the mean over the queries where τ is defined (`_mean_`, its
    `n_items` counting them) with a t-based confidence interval."""
    groups = dict(tuple(expert.groupby("query_id", sort=False)))
    rows = []
    for name, ranked in scores.items():
        values = []
        for query_id in (q for q in order if q in groups):
            group = groups[query_id]
            tau = kendall_tau_b(group["rank"].tolist(), [-ranked[query_id, item] for item in group["item"]])
            values.append(tau)
            rows.append((name, query_id, len(group), float(tau), math.nan, math.nan))
        rows.append((name, "_mean_", sum(not math.isnan(v) for v in values), *mean_interval(values, level)))
    return pd.DataFrame(rows, columns=EXPERT_COLUMNS)


def kendall_tau_b(x: list[float], y: list[float]) -> float | Fraction:
    """Kendall's τ-b = (C − D) / √((n0 − n1)(n0 − n2)), NaN when either side ties every pair: an exact
    Fraction when the product is a square (always without ties), so that 8/√100 is 0.8 and a mean of
    τs that is 0 is 0 (scipy's two roots, 8/√10/√10, give 0.7999999999999999)."""
    balance = tied_x = tied_y = 0
    for i in range(len(x)):
        for j in range(i):
            sx, sy = _sign(x[i], x[j]), _sign(y[i], y[j])
            balance += sx * sy
            tied_x += sx == 0
            tied_y += sy == 0
    pairs = len(x) * (len(x) - 1) // 2
    product = (pairs - tied_x) * (pairs - tied_y)
    if not product:
        return math.nan
    root = math.isqrt(product)
    return Fraction(balance, root) if root * root == product else balance / math.sqrt(product)


def _sign(a: float, b: float) -> int:
    return (a > b) - (a < b)  # by comparison: −∞ − (−∞) would be NaN


def mean_interval(values: Sequence[float | Fraction], level: float = 0.95) -> tuple[float, float, float]:
    """The mean and its t-based confidence interval (NaN bounds for fewer than two values)."""
    from scipy.stats import t

    kept = [v for v in values if not math.isnan(v)]
    mean = exact_mean(kept) if kept else math.nan
    if len(kept) < 2:
        return mean, math.nan, math.nan
    spread = statistics.stdev(map(float, kept))
    half = float(t.ppf((1 + level) / 2, len(kept) - 1)) * spread / math.sqrt(len(kept))
    return mean, mean - half, mean + half


def exact_mean(values) -> float:
    """The mean of the exact sum, rounded once: the mean of equal values is that value (0.8, not
    0.8000000000000002 as a float sum divided would give)."""
    return float(statistics.mean(values))  # exact for floats and Fractions alike
