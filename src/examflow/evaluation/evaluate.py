"""`examflow evaluate`: per-query values of every measure, leaderboards, correlation with an
official leaderboard, agreement with official judgments, and the EXAM-Qrels files."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeAlias, cast

import pandas as pd

from examflow.defaults import default
from examflow.errors import InputError, counted, listed
from examflow.evaluation.agreement import AGREEMENT_COLUMNS, CUTS, agreement_tables, kappas, paired, per_page
from examflow.evaluation.correlation import (
    Interval,
    bootstrap_intervals,
    leaderboard_correlation,
    random_tie_correlation,
    tau_ap,
)
from examflow.evaluation.cover import (
    KEYS,
    PER_QUERY_COLUMNS,
    RATIOS_OF_SUMS,
    best_levels,
    complete,
    cover_counts,
    cover_measures,
    without_passages,
)
from examflow.evaluation.diagnostics import (
    QUESTION_COLUMNS,
    UNCOVERED_COLUMNS,
    question_diagnostics,
    uncovered_passages,
)
from examflow.evaluation.exam_qrels import DEFAULT_MEASURES, aggregations, exam_labels, format_qrels, trec_scores
from examflow.evaluation.impact import Baseline, answer_key
from examflow.evaluation.nuggets import nugget_values
from examflow.evaluation.rouge import ROUGE_MEASURE, rouge_per_query
from examflow.evaluation.scores import system_scores
from examflow.io.runs import GOLD_RUN, OVERALL_RUN, RESERVED_RUNS
from examflow.io.tables import among, optional
from examflow.outputs import Facts
from examflow.registry import DEFAULT_TAU, KINDS, NUGGET_SUPPORT, Kind
from examflow.ties import tie_keys, unordered

log = logging.getLogger(__name__)

LEADERBOARD_COLUMNS = ["method", "measure", "tau", "run_id", "kind", "score", "stderr", "n_queries", "failed_pairs"]
ANSWER_CHECKING = [name for name, kind in KINDS.items() if kind.checks_answers]  # QA kinds: no key, no grade
RUN_KINDS = {OVERALL_RUN: "pool", GOLD_RUN: "gold"}  # special rows; every other run is a `system`
# An output of `evaluate`: a table, a qrels file's text, or (`baselines`, no file) each method's Baseline.
Output: TypeAlias = pd.DataFrame | str | dict[str, Baseline]
CORRELATION_COLUMNS = [
    "method", "measure", "tau", "spearman", "kendall", "n_runs", "spearman_low", "spearman_high",
    "kendall_low", "kendall_high", "spearman_random_ties", "kendall_random_ties", "tau_ap", "note",
]  # fmt: skip


@dataclass
class Settings:
    # The configuration's defaults (examflow.defaults), for callers that leave a setting out.
    taus: list[int] = field(default_factory=lambda: default("evaluation.tau"))
    k: int = default("evaluation.k")
    measures: list[str] = field(default_factory=lambda: list(DEFAULT_MEASURES))
    query_mode: str = default("evaluation.query_mode")  # or "all": queries a run lacks count 0 (trec_eval -c)
    n_exam: str = default("evaluation.n_exam")  # or "gold"
    relevant_judgment: int = default("evaluation.min_relevant_judgment")
    bootstrap: int = default("evaluation.bootstrap")
    seed: int = default("evaluation.seed")
    diagnostics_tau: float = DEFAULT_TAU  # the threshold of the question diagnostics and the baseline's comparison


@dataclass
class Inputs:
    grades: pd.DataFrame  # one or more methods
    rankings: pd.DataFrame
    questions: pd.DataFrame | None  # the bank; None: each method's graded questions are its exam
    passages: pd.DataFrame  # query_id, passage_id, origin (and text for ROUGE)
    judgments: pd.DataFrame
    gold: dict[str, str] | None = None
    # True: grades made over the pool given (`--grades`, `--pool`), which must cover it (`check_graded`), any
    # outside it left out (`within_pool`). False: an Autograder Workbench file, whose passages are those it
    # holds, and where a method may have left some ungraded: they answer nothing there, as here.
    graded_pool: bool = True

    @cached_property
    def gold_passages(self) -> pd.DataFrame:
        """Gold articles are graded for n-EXAM, but are no pooled passages: no qrels, no labels."""
        return self.passages[self.passages["origin"] == "gold"]


def per_query_values(
    grades: pd.DataFrame, inputs: Inputs, settings: Settings, labels: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One method's (run, query, measure, τ, value, weight) rows; `labels`: its EXAM-Labels, if at hand."""
    gold_only = inputs.gold_passages
    if settings.n_exam == "gold" and gold_only.empty:
        raise InputError(
            "n-EXAM gold (evaluation.n_exam, --n-exam)",
            "needs graded gold articles (inputs.gold_articles, --gold-articles with their passages pooled), and there are none",
        )
    examined = grades[~aggregations(grades)]  # criteria_llm's exam is the four criteria; its fifth grade a label
    questions = exam_questions(examined, inputs.questions)
    query_ids = sorted(set(questions["query_id"]))
    runs = inputs.rankings[~inputs.rankings["run_id"].isin(RESERVED_RUNS)]
    run_ids = sorted(runs["run_id"].unique())  # unique, not set(): a Python string of each of a million rows
    counts = cover_counts(best_levels(examined), inputs.rankings, questions, settings.taus, settings.k, gold_only)
    if settings.query_mode == "all":
        counts = complete(counts, query_ids, run_ids)
    else:  # the pool, like a run, is averaged over the queries it has passages for (a question alone is none)
        with_passages = without_passages(examined, gold_only)["query_id"].unique()
        counts = counts[(counts["run_id"] != OVERALL_RUN) | counts["query_id"].isin(with_passages)]
    has_answer_keys = bool(grades["correct"].notna().any())
    if not has_answer_keys and "kind" in grades and grades["kind"].isin(ANSWER_CHECKING).any():
        log.warning("method %s: no graded question has an answer key (gold_answers): no answer is checked, "
                    "EXAM-Cover is 0 and there is no EXAM score", grades["method"].iat[0])  # fmt: skip
    parts = [cover_measures(counts, settings.n_exam, exam=has_answer_keys)]
    if settings.measures:
        if labels is None:
            labels = exam_labels(without_passages(grades, gold_only))
        if labels.empty:  # nothing for trec_eval to judge (the leaderboard lost its measures in silence)
            pooled = without_passages(grades, gold_only)
            failed = int(pooled["error"].notna().sum())
            why = (  # (a pool of failures alone stopped at `_check_answered`)
                f"no pooled passage has every grade its label needs: {failed} of {len(pooled)} graded pairs failed"
                if len(pooled) else "no pooled passage is graded"
            )  # fmt: skip
            log.warning("method %s: no passage has an EXAM-Label (%s): %s have no value", grades["method"].iat[0],
                        why, ", ".join(settings.measures))  # fmt: skip
        values = trec_scores(labels, runs, settings.taus, settings.measures, complete=settings.query_mode == "all")
        parts.append(values.assign(weight=1.0))
    if "kind" in grades and set(grades["kind"].dropna()) & NUGGET_SUPPORT:  # (published grades name no kind)
        nuggets = nugget_values(best_levels(grades), inputs.rankings, _nuggets(questions, inputs.questions), settings.k)
        if settings.query_mode == "all" and len(nuggets):  # (none: no run ranks a nugget query's passage <= k)
            nuggets = pd.concat(
                [_fill_missing(part, query_ids, run_ids, cast(str, name)) for name, part in nuggets.groupby("measure")]
            )  # cast: grouped by the measure's name
        parts.append(nuggets)
    if inputs.gold:
        rouge = rouge_per_query(runs, inputs.passages, inputs.gold, settings.k)
        with_gold = sorted(set(query_ids) & set(inputs.gold))
        parts.append(_fill_missing(rouge, with_gold, run_ids, ROUGE_MEASURE) if settings.query_mode == "all" else rouge)
    table = pd.concat([part[PER_QUERY_COLUMNS] for part in parts], ignore_index=True)
    # (a part without rows, as trec_eval's where no passage has a label, would leave the numbers objects)
    return table.astype({"tau": "Int64", "value": float, "weight": float})


def _nuggets(exam: pd.DataFrame, bank: pd.DataFrame | None) -> pd.DataFrame:
    """The exam's nuggets with their importance (None where the bank rates none)."""
    rated = bank[["question_id", "importance"]] if bank is not None and "importance" in bank else None
    return exam.merge(rated, on="question_id", how="left") if rated is not None else exam.assign(importance=None)


def exam_questions(grades: pd.DataFrame, bank: pd.DataFrame | None) -> pd.DataFrame:
    """(query_id, question_id) of a method's exam: the bank's items of the kind it grades
    (questions or nuggets), or, without a bank or for direct grading, what it graded. Grades that
    name their kind say which; published ones do not, and are taken as direct where no id is the bank's."""
    graded = grades[["query_id", "question_id"]].drop_duplicates()
    if bank is None or not exam_is_the_bank(grades, bank):
        return graded
    target = grades_target(grades)
    if "kind" in bank:
        known = bank[bank["question_id"].isin(graded["question_id"])]
        bank = bank[bank["kind"].isin({target} if target else set(known["kind"]))]
    return bank[["query_id", "question_id"]].drop_duplicates()


def exam_is_the_bank(grades: pd.DataFrame, bank: pd.DataFrame | None) -> bool:
    """Whether a method's exam is the bank's items (`exam_questions`), not what it graded."""
    target = grades_target(grades)
    if bank is None or target == "query":
        return False
    return target is not None or bool(bank["question_id"].isin(grades["question_id"]).any())


def grades_kind(grades: pd.DataFrame) -> Kind | None:
    """The one method kind the grades name; None where they name none (published grades) or several."""
    kinds = set(grades["kind"].dropna()) if "kind" in grades else set()
    return KINDS[next(iter(kinds))] if len(kinds) == 1 and next(iter(kinds)) in KINDS else None


def grades_target(grades: pd.DataFrame) -> str | None:
    """What the grades' kind pairs a passage with (question, nugget or query); None where they name none."""
    kind = grades_kind(grades)
    return kind.target if kind is not None else None


def within_exam(grades: pd.DataFrame, bank: pd.DataFrame | None, method: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A method's grades of the items of its exam, and the exam (`exam_questions`). Grades of questions that the bank
    given does not hold (grades older than an edit of the bank, or a bank cut down on purpose) would
    count answers that |Q_q| does not: an EXAM-Cover above 1. They are left out, and said."""
    items = ~aggregations(grades)
    exam = exam_questions(grades[items], bank)
    outside = items & ~grades["question_id"].isin(exam["question_id"])
    questions = grades.loc[outside, "question_id"].nunique()
    if outside.any() and outside.sum() == items.sum():  # nothing left to score: grades of another bank
        raise InputError("--questions", f"method {method}: none of its {questions} graded items is in the bank given")
    if outside.any():
        log.warning("method %s: the bank given does not hold %d of its graded questions (%d grades): left out",
                    method, questions, int(outside.sum()))  # fmt: skip
    return grades[~outside], exam


def within_pool(grades: pd.DataFrame, passages: pd.DataFrame, method: str) -> pd.DataFrame:
    """A method's grades of the passages of the pool given. Grades of passages it does not hold (grades
    made over another pool: a run withdrawn since) would count in the pool's rows (`_overall_`, n-EXAM's
    denominator, the qrels): they are left out, and said."""
    pooled = among(grades, passages, KEYS)
    if not pooled.any():
        raise InputError("--pool", f"method {method}: none of its graded passages is in the pool given")
    if not pooled.all():
        outside = grades.loc[~pooled, KEYS].drop_duplicates()
        log.warning("method %s: the pool given does not hold %d of its graded passages (first: %r of query %r): "
                    "left out", method, len(outside), outside.iloc[0]["passage_id"], outside.iloc[0]["query_id"])  # fmt: skip
    return grades[pooled]


def check_graded(grades: pd.DataFrame, exam: pd.DataFrame, passages: pd.DataFrame, method: str) -> None:
    """Every pooled passage of a query is graded against every item of the query's exam: one that is not
    (grades made before a run or a question was added) would count as answering nothing, a score too low."""
    items = grades.loc[~aggregations(grades), [*KEYS, "question_id"]]
    per_query = exam.groupby("query_id").size().rename("items")
    expected = passages[KEYS].drop_duplicates().join(per_query, on="query_id", how="inner")
    graded = items.groupby(KEYS, sort=False)["question_id"].nunique().rename("graded")
    counts = expected.join(graded, on=KEYS).fillna({"graded": 0})
    short = counts[counts["graded"] < counts["items"]]
    if len(short):
        first = short.iloc[0]
        raise InputError(
            "--grades",
            f"method {method}: {len(short)} pooled passages lack grades of items of their query's exam (first: "
            f"{first['passage_id']!r} of query {first['query_id']!r}, {int(first['graded'])} of "
            f"{int(first['items'])} graded): grade the pool given (examflow grade), or evaluate over the pool "
            "and bank the grades were made for",
        )


def _check_answered(pooled: pd.DataFrame, labels: pd.DataFrame, method: str) -> None:
    """A method none of whose pairs got a grade is an error: every run would score 0 (failures answer
    nothing), however much `max_error_rate` allowed; so is one whose every answer that came is no grade. A
    query that lost every label to failures (each of its passages lost a grade, or a criterion, its label
    needs) is a warning: trec_eval's measures leave it out, while EXAM-Cover counts what the grades that came
    answer."""
    failed = pooled["error"].notna()
    if len(pooled) and failed.all():
        raise InputError("--grades", f"method {method}: every one of its {len(pooled):,} graded pairs failed: no score "
                         "would mean anything (the grade logs count the failures by kind)")  # fmt: skip
    # An answer that is no grade, read as the published parse reads it (`mode` reference or paper): a tiny model's
    # `H H H` was every answer, each a 0, and the run ended with leaderboards (a stranger's trial).
    # A published workbench file has no `unparsable` column; beside examflow's grades its rows hold NaN there.
    flagged = pooled["unparsable"] if "unparsable" in pooled else pd.Series(False, index=pooled.index)
    read = flagged.astype("boolean").fillna(False).astype(bool) & ~failed
    if len(pooled) and (failed | read).all():
        raise InputError("--grades", f"method {method}: none of its {len(pooled):,} graded pairs of pooled passages "
                         f"(gold articles' aside) got a grade from its model: {int(read.sum()):,} answers are no "
                         f"grade, each read as the method's `mode` says (docs/methods.md §3)"
                         f"{f', and {int(failed.sum()):,} failed' if failed.any() else ''}: no score would mean "
                         "anything (the grades' `raw` column holds the answers)")  # fmt: skip
    if lost := sorted(set(pooled.loc[failed, "query_id"]) - set(labels["qrels_id"])):
        one = len(lost) == 1
        log.warning("method %s: no passage of %d quer%s has an EXAM-Qrels label, %s grades having failed (%s): "
                    "trec_eval's measures leave %s out, and EXAM-Cover counts what the grades that came answer",
                    method, len(lost), "y" if one else "ies", "its" if one else "their", listed(lost),
                    "it" if one else "them")  # fmt: skip


def _warn_queries_without_exam(exam: pd.DataFrame, passages: pd.DataFrame, method: str, of_bank: bool) -> None:
    """A pooled query with an empty exam has no EXAM-Cover and no EXAM-Qrels: no measure scores it, and every run
    is averaged over the others. Said, with its likely cause: a bank that missed the query (`of_bank`), or, where
    the exam is what the method graded, a shard left out of the merge by hand (both had been silent)."""
    if missing := sorted(set(passages["query_id"]) - set(exam["query_id"])):
        one = len(missing) == 1
        queries = counted(len(missing), "pooled query", "pooled queries")
        what = f"the bank holds no item of {queries}" if of_bank else f"no grade of {queries}"
        cause = "" if of_bank else "; were all the shards merged?"
        log.warning("method %s: %s (%s): no measure scores %s, and every run is averaged over the other queries%s",
                    method, what, listed(missing), "it" if one else "them", cause)  # fmt: skip


def facts_of(inputs: Inputs, official: dict[str, float] | None) -> Facts:
    """What the inputs hold, for `examflow evaluate` without the workflow's `--facts`."""
    return Facts(
        official=bool(official),
        judgments=len(inputs.judgments) > 0,
        facets=bool(inputs.grades["facet_id"].notna().any()),
    )


def evaluate(
    inputs: Inputs, settings: Settings, official: dict[str, float] | None, facts: Facts | None = None
) -> dict[str, Output]:
    """Output tables by file name, exactly those of `examflow.outputs.EVALUATION` that `facts` ask for
    (default: what the inputs hold) but the impact tables; `baselines` (not a file): each method's
    Baseline for edit impact."""
    if inputs.grades.empty:  # (pd.concat of no leaderboard raised a traceback)
        raise InputError("--grades", "no grades to evaluate: no query of the exam has a pooled passage (are the "
                         "bank's query ids those of the runs and qrels?)")  # fmt: skip
    facts = facts or facts_of(inputs, official)
    _warn_beyond_the_budget(inputs.rankings, settings)
    leaderboards, per_queries, diagnostics, uncovered = [], [], [], []
    outputs: dict[str, Output] = {}
    baselines: dict[str, Baseline] = {}
    judged: dict[str, pd.DataFrame] = {}  # each method's EXAM-Labels beside the judgments
    tops: dict[str, int | None] = {}  # each judged method's highest grade, where its kind is known
    for key, graded in inputs.grades.groupby("method", sort=True):
        method = cast(str, key)  # the method column holds names
        in_pool = within_pool(graded, inputs.passages, method) if inputs.graded_pool else graded
        grades, exam = within_exam(in_pool, inputs.questions, method)
        if inputs.graded_pool:
            check_graded(grades, exam, inputs.passages, method)
            pooled_passages = without_passages(inputs.passages, inputs.gold_passages)
            _warn_queries_without_exam(exam, pooled_passages, method, exam_is_the_bank(in_pool, inputs.questions))
        pooled = without_passages(grades, inputs.gold_passages)
        labels = exam_labels(pooled)
        _check_answered(pooled, labels, method)
        if facts.judgments:
            judged[method] = judged_pairs(grades, inputs.judgments, labels if pooled is grades else None)
            tops[method] = kind.top if (kind := grades_kind(grades)) is not None else None
        per_query = per_query_values(grades, inputs, settings, labels).assign(method=method)
        per_queries.append(per_query)
        board = system_scores(per_query, RATIOS_OF_SUMS[settings.n_exam]).assign(method=method)
        _warn_unscored(board, inputs.rankings, method, settings.query_mode)
        leaderboards.append(board.assign(failed_pairs=_failed_per_row(board, grades, inputs, settings)))
        outputs[f"qrels/{method}.qrels"] = format_qrels(labels)
        if facts.facets:  # CAR-style subtopics: one qrels query per facet too
            outputs[f"qrels/{method}.facets.qrels"] = facet_qrels(pooled, method)
        examined = pooled[~aggregations(pooled)]  # criteria_llm's aggregation grade is a label, no item
        exam = exam_texts(exam, inputs.questions)
        tau = settings.diagnostics_tau
        facets = examined.drop_duplicates("question_id").set_index("question_id")["facet_id"]
        diagnostics.append(
            question_diagnostics(best_levels(examined), exam, inputs.judgments, inputs.rankings, official, tau,
                                 settings.k, settings.relevant_judgment, facets).assign(method=method)
        )  # fmt: skip
        uncovered.append(
            uncovered_passages(labels, inputs.judgments, inputs.passages, tau, settings.relevant_judgment).assign(
                method=method
            )
        )
        systems = board[~board["run_id"].isin(RESERVED_RUNS)][["measure", "tau", "run_id", "score"]]
        baselines[method] = Baseline(_with_bank_fields(exam, inputs.questions), labels, systems)
    leaderboard = sort_leaderboard(pd.concat(leaderboards, ignore_index=True))
    per_query = pd.concat(per_queries, ignore_index=True)
    outputs["leaderboard.tsv"] = leaderboard
    outputs["per_query.tsv"] = per_query[["method", *PER_QUERY_COLUMNS]]
    outputs["questions.tsv"] = pd.concat(diagnostics, ignore_index=True)[["method", *QUESTION_COLUMNS]]
    outputs["uncovered.tsv"] = pd.concat(uncovered, ignore_index=True)[["method", *UNCOVERED_COLUMNS]]
    if facts.official:
        outputs["correlation.tsv"] = correlations(per_query, official or {}, settings)
    if facts.judgments:
        outputs["kappa.tsv"], outputs["agreement.tsv"] = agreement(judged, tops, settings)
    outputs["baselines"] = baselines
    return outputs


def _warn_beyond_the_budget(rankings: pd.DataFrame, settings: Settings) -> None:
    """A run's queries whose passages are all ranked above k as written: EXAM-Cover has none of them to
    score (`present`: the query leaves the run's mean, as in the reference; `all`: it counts 0), while the
    trec_eval measures, which order by score, still count them. A run could drop its hard queries so."""
    systems = rankings[~rankings["run_id"].isin(RESERVED_RUNS)]
    best = systems.groupby(["run_id", "query_id"], sort=True)["rank"].min()
    beyond = best[best > settings.k]
    if len(beyond):
        run, query = cast("tuple[str, str]", beyond.index[0])  # cast: the (run_id, query_id) of a groupby
        rank = beyond.iloc[0]
        effect = "left out of the run's mean" if settings.query_mode == "present" else "counted 0"
        log.warning(
            "%s no passage ranked <= k = %d as written (first: run %r, query %r, from rank %d): %s EXAM-Cover is "
            "%s, while trec_eval's measures count %s", counted(len(beyond), "run and query pair has",
            "run and query pairs have"), settings.k, run, query, rank, *(("its", effect, "it") if len(beyond) == 1
            else ("their", effect, "them")),
        )  # fmt: skip


def facet_qrels(pooled: pd.DataFrame, method: str) -> str:
    """One qrels query per subtopic (`query/facet`; queries without subtopics keep their id); empty, with a
    warning, when the method graded no target with a facet id (a bank without them on subtopic queries)."""
    if not pooled["facet_id"].notna().any():
        log.warning("method %s: no graded question has a facet id: its per-subtopic qrels are empty", method)
        return ""
    return format_qrels(exam_labels(pooled, per_facet=True))


def exam_texts(exam: pd.DataFrame, bank: pd.DataFrame | None) -> pd.DataFrame:
    """The exam's questions with their facets and texts, from the bank where it has them."""
    texts = (bank if bank is not None else pd.DataFrame(columns=["question_id"])).drop_duplicates("question_id")
    texts = texts.set_index("question_id").reindex(exam["question_id"])
    return exam.assign(
        facet_id=texts.get("facet_id", pd.Series(None, index=texts.index)).to_numpy(),
        question_text=texts.get("question_text", pd.Series("", index=texts.index)).fillna("").to_numpy(),
    )[["query_id", "facet_id", "question_id", "question_text"]]


def _with_bank_fields(exam: pd.DataFrame, bank: pd.DataFrame | None) -> pd.DataFrame:
    """The exam with what else of the bank its scores depend on, where the bank has it: each nugget's
    importance (the weighted nugget scores) and each question's answer key and choices (the answers
    checked against them). A change of either is a bank edit, listed as re-rated or re-keyed. A question
    without a key holds None: keys added to a bank that had none are re-keyed questions too."""
    if bank is None:
        return exam
    questions = bank.drop_duplicates("question_id").set_index("question_id")
    if "importance" in bank and bank["importance"].notna().any():
        exam = exam.assign(importance=exam["question_id"].map(questions["importance"]))
    none = [None] * len(questions)
    answers, choices = (questions[c] if c in questions else none for c in ("gold_answers", "choices"))
    keys = {
        question: answer_key(key, offered) if optional(key) is not None or optional(offered) is not None else None
        for question, key, offered in zip(questions.index, answers, choices)
    }
    return exam.assign(answer_key=exam["question_id"].map(keys).astype(object))


def sort_leaderboard(board: pd.DataFrame) -> pd.DataFrame:
    """Best first within each (method, measure, τ); the special rows (`_overall_`, `_gold_`) marked and last."""
    board = board.assign(kind=board["run_id"].map(RUN_KINDS).fillna("system"), _key=-tie_keys(board["score"]))
    board = board.assign(_special=board["kind"] != "system")
    order = ["method", "measure", "tau", "_special", "_key", "run_id"]
    return board.sort_values(order, na_position="first", kind="stable")[LEADERBOARD_COLUMNS].reset_index(drop=True)


def _failed_per_row(board: pd.DataFrame, grades: pd.DataFrame, inputs: Inputs, settings: Settings) -> pd.Series:
    """Each leaderboard row's failed pairs, those that may have moved its value: among the run's top k for
    EXAM's measures; for trec_eval's, in the pools of the queries it ranks, since a label anywhere in a
    query's pool is in map's and nDCG's normalisation."""
    top = failed_pairs(grades, inputs.rankings, settings.k, inputs.gold_passages)
    pools = failed_in_pools(grades, inputs.rankings, inputs.gold_passages)
    counts = board["run_id"].map(pools).where(board["measure"].isin(settings.measures), board["run_id"].map(top))
    return counts.fillna(0).astype(int)


def failed_in_pools(grades: pd.DataFrame, rankings: pd.DataFrame, gold_passages: pd.DataFrame) -> pd.Series:
    """Per run, the failed pairs of the pooled passages (no gold article) of the queries it ranks."""
    failed = without_passages(grades.loc[grades["error"].notna(), KEYS], gold_passages)
    if failed.empty:  # the common case: no pass over every ranking to find the runs' pools
        return pd.Series(dtype=int)
    per_query = failed["query_id"].value_counts().rename("failed")
    ranked = rankings[["run_id", "query_id"]].drop_duplicates()
    return ranked.join(per_query, on="query_id").groupby("run_id")["failed"].sum()


def failed_pairs(grades: pd.DataFrame, rankings: pd.DataFrame, k: int, gold_passages: pd.DataFrame) -> pd.Series:
    """Per run, the failed (passage, question) pairs among the passages it is scored on (rank ≤ k);
    `_overall_`: every failed pair of the pool. They answer nothing: they can only lower EXAM-Cover."""
    failed = grades.loc[grades["error"].notna(), KEYS].value_counts().rename("failed").reset_index()
    if failed.empty:
        return pd.Series(dtype=int)
    ranked = rankings[(rankings["rank"] <= k) | (rankings["run_id"] == GOLD_RUN)][["run_id", *KEYS]].drop_duplicates()
    per_run = ranked.merge(failed, on=KEYS).groupby("run_id")["failed"].sum()
    per_run[OVERALL_RUN] = int(without_passages(failed, gold_passages)["failed"].sum())
    return per_run


def correlations(per_query: pd.DataFrame, official: dict[str, float], settings: Settings) -> pd.DataFrame:
    rows = []
    for key, values in per_query.groupby(["method", "measure", "tau"], sort=True, dropna=False):
        board = system_scores(values)
        scores = dict(zip(board["run_id"], board["score"]))
        plain, random_ties = leaderboard_correlation(scores, official), random_tie_correlation(scores, official)
        # no order to compare (every run tied): no interval either
        undefined = math.isnan(plain.spearman) and math.isnan(plain.kendall)
        interval = (
            Interval.empty() if undefined else bootstrap_intervals(values, official, settings.bootstrap, settings.seed)
        )
        reasons = [blank_reason(scores, official, settings.bootstrap), _unscored(scores, official), interval.note]
        note = "; ".join(filter(None, reasons))
        rows.append(
            (*key, plain.spearman, plain.kendall, plain.n_runs, interval.spearman_low, interval.spearman_high,
             interval.kendall_low, interval.kendall_high, random_ties.spearman, random_ties.kendall,
             tau_ap(scores, official), note)
        )  # fmt: skip
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS).astype({"tau": "Int64"})


def blank_reason(scores: dict[str, float], official: dict[str, float], bootstrap: int) -> str:
    """Why a correlation column is empty, in words ("" when none is)."""
    shared = [run for run in official if run in scores]
    if len(shared) < 2:
        return f"{counted(len(shared), 'official run', 'official runs')} evaluated: no order to compare"
    if why := unordered([scores[run] for run in shared], [official[run] for run in shared]):
        return why
    return "no bootstrap replicates (evaluation.bootstrap: 0)" if bootstrap < 1 else ""


def _unscored(scores: dict[str, float], official: dict[str, float]) -> str:
    """The official runs a correlation leaves out for want of a score, in words ("" when none)."""
    absent = [run for run in official if run not in scores]
    return (
        f"{counted(len(absent), 'official run', 'official runs')} without a score left out: {listed(absent)}"
        if absent
        else ""
    )


def _warn_unscored(board: pd.DataFrame, rankings: pd.DataFrame, method: str, query_mode: str) -> None:
    """Evaluated runs that a measure gives no score: none of their queries has a value to average (under
    `present`, a run whose queries have no questions or no passage ranked <= k). They leave its correlations.
    One warning for each set of such runs, naming the measures."""
    runs = set(rankings["run_id"].unique()) - set(RESERVED_RUNS)
    unscored: dict[tuple[str, ...], list[str]] = {}
    for measure, scored in board.groupby("measure", sort=False)["run_id"]:
        missing = tuple(sorted(runs - set(scored.unique())))
        if missing:
            unscored.setdefault(missing, []).append(cast(str, measure))  # cast: grouped by the measure's name
    for missing, measures in unscored.items():
        log.warning(
            "method %s: %d evaluated run(s) have no %s score (first: %r): no query of theirs has a value to "
            "average under evaluation.query_mode %s; they take no part in its correlations",
            method, len(missing), ", ".join(measures), missing[0], query_mode,
        )  # fmt: skip


def judged_pairs(grades: pd.DataFrame, judgments: pd.DataFrame, page_labels: pd.DataFrame | None) -> pd.DataFrame:
    """A method's EXAM-Labels of its graded passages beside their judgments. Judgments of subtopics meet
    labels of subtopics; a method whose questions have no facet ids (a bank without them on subtopic
    queries) is compared per page, each passage with its highest judgment on the page. `page_labels`: the
    page labels of these grades, where they are at hand."""
    if judgments["facet_id"].notna().any() and grades["facet_id"].notna().any():
        return paired(exam_labels(grades, per_facet=True), judgments)
    return paired(page_labels if page_labels is not None else exam_labels(grades), per_page(judgments))


def agreement(
    judged: dict[str, pd.DataFrame], tops: dict[str, int | None], settings: Settings
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """kappa.tsv (method, table, kappa, n_pairs) and the contingency counts in long form, from each
    method's `judged_pairs`; `tops`: each method's highest grade, where its kind is known."""
    summaries, counts = [], []
    for method, pairs in sorted(judged.items()):
        tables = agreement_tables(pairs, settings.relevant_judgment)
        values = kappas(tables)
        for name, cut in CUTS.items():
            # κ of labels all below the cut (UMBRELA's 0-3 under STRICT) reads 0.000 whatever the agreement
            if len(pairs) and not (pairs["label"] >= cut).any():
                values[name] = math.nan
                top = tops.get(method)
                if top is not None and top < cut:  # its scale stops below: expected, each run (a stranger's noise)
                    log.info("method %s: its grades stop at %d, below %s's %d: its κ is left empty", method, top,
                             name.upper(), cut)  # fmt: skip
                    continue
                scale = (
                    "; a judge whose grades stop below 4 (UMBRELA's 0-3, a nugget's 0-2) never reaches it"
                    if cut == 4
                    else ""
                )
                log.warning("method %s: no judged passage's EXAM-Label reaches %d: %s κ is left empty (it would read "
                            "0 whatever the agreement%s)", method, cut, name.upper(), scale)  # fmt: skip
        summaries += [(method, name, value, len(pairs)) for name, value in values.items()]
        for name, table in tables.items():
            # cast: a table with one level of columns stacks into a Series
            long = (
                cast(pd.Series, table.stack())
                .rename("count")
                .reset_index()
                .set_axis(["label", "judgment", "count"], axis=1)
            )
            counts.append(long.assign(method=method, table=name))
    summary = pd.DataFrame(summaries, columns=["method", "table", "kappa", "n_pairs"])
    return summary, pd.concat(counts)[["method", *AGREEMENT_COLUMNS]]


def _fill_missing(per_query: pd.DataFrame, query_ids: list[str], run_ids: list[str], measure: str) -> pd.DataFrame:
    """Query mode `all` for a per-query measure without τ: a run's missing queries count 0 (every query of a
    run of `run_ids` that has no value at all)."""
    runs = sorted(set(per_query["run_id"]) | set(run_ids))
    full = pd.MultiIndex.from_product([runs, query_ids], names=["run_id", "query_id"]).to_frame(index=False)
    merged = full.merge(per_query, on=["run_id", "query_id"], how="left")
    return merged.fillna({"measure": measure, "value": 0.0, "weight": 1.0})
