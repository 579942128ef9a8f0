"""Question diagnostics (docs/methods.md §5, "Human in the loop"): which questions to look at before the next edit.

Per question, at a threshold τ:
- how many judged-relevant and judged-non-relevant passages answer it (grade ≥ τ): a question that
  non-relevant passages answer more often than relevant ones is a *bad question* (a subtopic's question
  counts its subtopic's judgments, where there are such);
- its *discrimination*: Spearman's ρ across the official runs between answering it (some passage the
  run ranks ≤ k does) and the official leaderboard (better runs should answer it more);
- the change of Kendall's τ between EXAM-Cover and the official leaderboard when the question is left
  out (positive: the leaderboard agrees better without it).
And the judged-relevant passages that answer no question (*uncovered passages*): what the bank misses.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from examflow.evaluation.correlation import rank_correlations
from examflow.evaluation.cover import KEYS

QUESTION_COLUMNS = ["query_id", "question_id", "question_text", "answered_relevant", "answered_nonrelevant",
                    "relevant_share", "bad", "discrimination", "loo_kendall_change"]  # fmt: skip
UNCOVERED_COLUMNS = ["query_id", "passage_id", "judgment", "label", "text"]


def judged_relevance(judgments: pd.DataFrame, relevant_judgment: int) -> pd.DataFrame:
    """(query_id, passage_id, judgment, relevant): a passage's best judgment for its query (any facet)."""
    best = judgments.groupby(KEYS)["relevance"].max().rename("judgment").reset_index()
    return best.assign(relevant=best["judgment"] >= relevant_judgment)


def judged_answers(
    answering: pd.DataFrame, judgments: pd.DataFrame, facets: pd.Series | None, relevant_judgment: int
) -> pd.DataFrame:
    """(question_id, relevant) of each judged passage that answers a question. Where the judgments name
    subtopics, a subtopic's question (`facets`: question_id → facet_id) meets its own subtopic's judgments, as
    κ pairs labels with them: a passage judged relevant to another subtopic of the page only, or not judged
    for this one, does not count for it (a stranger counted 18 of 26 subtopic questions answered by passages
    judged for other subtopics only). Any other question meets each passage's best judgment on its page."""
    if facets is None or judgments["facet_id"].isna().all():  # judgments of pages alone: every question is the page's
        facets = pd.Series(dtype=object)
    facet = answering["question_id"].map(facets)
    own = facet.notna()
    page = answering[~own].merge(judged_relevance(judgments, relevant_judgment), on=KEYS)
    of_facets = judgments.dropna(subset=["facet_id"]).groupby(["query_id", "facet_id", "passage_id"], as_index=False)
    best = of_facets["relevance"].max()
    best["facet_id"] = best["facet_id"].astype(str)  # ids are text: an empty table's is no float column
    faceted = answering[own].assign(facet_id=facet[own].astype(str))
    faceted = faceted.merge(best, on=["query_id", "facet_id", "passage_id"])
    faceted = faceted.assign(relevant=faceted["relevance"] >= relevant_judgment)
    return pd.concat([page[["question_id", "relevant"]], faceted[["question_id", "relevant"]]], ignore_index=True)


def question_diagnostics(
    levels: pd.DataFrame,
    exam: pd.DataFrame,
    judgments: pd.DataFrame,
    rankings: pd.DataFrame,
    official: dict[str, float] | None,
    tau: float,
    k: int,
    relevant_judgment: int,
    facets: pd.Series | None = None,
) -> pd.DataFrame:
    """`levels`: best_levels of the method's grades (gold passages left out); `exam`: its questions
    (query_id, question_id, question_text); `facets`: each question's subtopic, None for a page's
    (`judged_answers`). Worst questions first: bad ones, then by Δτ."""
    answering = levels[levels["level"] >= tau][[*KEYS, "question_id"]].drop_duplicates()
    judged = judged_answers(answering, judgments, facets, relevant_judgment)
    counts = (
        judged.groupby(["question_id", "relevant"])
        .size()
        .unstack(fill_value=0)
        .reindex(columns=[True, False], fill_value=0)
    )
    table = exam.copy()
    table["answered_relevant"] = table["question_id"].map(counts[True]).fillna(0).astype(int)
    table["answered_nonrelevant"] = table["question_id"].map(counts[False]).fillna(0).astype(int)
    answered = table["answered_relevant"] + table["answered_nonrelevant"]
    table["relevant_share"] = table["answered_relevant"] / answered.where(answered > 0)
    table["bad"] = table["answered_nonrelevant"] > table["answered_relevant"]
    table["discrimination"], table["loo_kendall_change"] = np.nan, np.nan
    if official:
        hits = _run_hits(answering, rankings, k, official)
        table["discrimination"] = _discrimination(hits, table["question_id"], official)
        table["loo_kendall_change"] = _leave_one_out(hits, exam, rankings, k, official)
    order = table.assign(_bad=~table["bad"], _change=-table["loo_kendall_change"].fillna(-np.inf))
    order = order.sort_values(["_bad", "_change", "relevant_share", "question_id"], na_position="last", kind="stable")
    return order[QUESTION_COLUMNS].reset_index(drop=True)


def _run_hits(answering: pd.DataFrame, rankings: pd.DataFrame, k: int, official: dict[str, float]) -> pd.DataFrame:
    """(run_id, query_id, question_id) for every question an official run's top-k answers."""
    ranked = rankings[(rankings["rank"] <= k) & rankings["run_id"].isin(official)][["run_id", *KEYS]]
    return ranked.drop_duplicates().merge(answering, on=KEYS)[["run_id", "query_id", "question_id"]].drop_duplicates()


def _discrimination(hits: pd.DataFrame, question_ids: pd.Series, official: dict[str, float]) -> np.ndarray:
    runs = sorted(official)
    answered = hits.groupby(["question_id", "run_id"]).size().unstack(fill_value=0)
    answered = answered.reindex(index=question_ids, columns=runs, fill_value=0)
    # Answering plays the part of a score: ρ > 0 when the officially better runs answer the question.
    spearman, _ = rank_correlations(answered.to_numpy(float), np.array([official[run] for run in runs]))
    return spearman


def _leave_one_out(
    hits: pd.DataFrame, exam: pd.DataFrame, rankings: pd.DataFrame, k: int, official: dict[str, float]
) -> np.ndarray:
    """Kendall's τ of EXAM-Cover without each question, minus τ with all of them (query mode `present`).

    Leaving out question x of query q changes only q's share of each run that ranks passages for q:
    (covered - [the run answers x]) / (|Q_q| - 1) instead of covered / |Q_q|. All questions at once:
    one row of run scores per question."""
    sizes = exam.groupby("query_id")["question_id"].nunique()
    ranked = rankings[
        (rankings["rank"] <= k) & rankings["run_id"].isin(official) & rankings["query_id"].isin(sizes.index)
    ]
    cover = ranked[["run_id", "query_id"]].drop_duplicates()
    if cover.empty:  # no official run ranks the exam's queries: there is no τ to change
        return np.full(len(exam), np.nan)
    covered = hits.groupby(["run_id", "query_id"]).size().rename("covered").reset_index()
    cover = cover.merge(covered, how="left").fillna({"covered": 0})
    cover["size"] = cover["query_id"].map(sizes)
    cover["share"] = cover["covered"] / cover["size"]
    runs = sorted(cover["run_id"].unique())
    ranks = np.array([official[run] for run in runs])
    n_queries = cover.groupby("run_id").size().reindex(runs).to_numpy(float)
    base = cover.groupby("run_id")["share"].sum().reindex(runs).to_numpy() / n_queries
    full = rank_correlations(base[None, :], ranks)[1][0]
    questions = exam[["query_id", "question_id"]].reset_index(drop=True).rename_axis("row").reset_index()
    left_out = questions.merge(cover[cover["size"] >= 2], on="query_id")
    answered = left_out.merge(hits[["run_id", "question_id"]].drop_duplicates(), how="left", indicator=True)
    lost = (answered["_merge"] == "both").to_numpy(float)
    delta = np.zeros((len(questions), len(runs)))
    column = pd.Index(runs).get_indexer(answered["run_id"])
    n_covered, size, share = (answered[name].to_numpy() for name in ("covered", "size", "share"))
    delta[answered["row"].to_numpy(), column] = (n_covered - lost) / (size - 1) - share
    kendall = rank_correlations(base + delta / n_queries, ranks)[1] - full
    # A question alone in its query, or of a query no official run ranks, cannot be left out.
    return np.where(questions["query_id"].isin(left_out["query_id"]).to_numpy(), kendall, np.nan)


def uncovered_passages(
    labels: pd.DataFrame, judgments: pd.DataFrame, passages: pd.DataFrame, tau: float, relevant_judgment: int
) -> pd.DataFrame:
    """Judged-relevant passages whose EXAM-Label stays below τ: no question of the bank asks what they say."""
    judged = judged_relevance(judgments, relevant_judgment)
    best = labels.rename(columns={"qrels_id": "query_id"}).groupby(KEYS)["label"].max().reset_index()
    table = judged[judged["relevant"]].merge(best, on=KEYS, how="left")
    table = table[table["label"].fillna(-1) < tau]  # a judged passage nobody graded answers nothing either
    table = table.merge(passages[[*KEYS, "text"]], on=KEYS, how="left")  # a judged passage outside the pool: no text
    table["text"] = table["text"].fillna("").astype(str).str.slice(0, 200)
    return table.sort_values(["judgment", "query_id", "passage_id"], ascending=[False, True, True])[UNCOVERED_COLUMNS]
