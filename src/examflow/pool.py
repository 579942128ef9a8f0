"""Pooling (docs/methods.md §1): Pool(q) = judged passages of q ∪ the top-k passages of every run for q."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pandas as pd

from examflow.bounds import LONG_PASSAGE_CHARS
from examflow.errors import InputError, Problems, counted
from examflow.injection import flag_passages
from examflow.io.collection import Origin, read_passages
from examflow.io.lines import trec_line
from examflow.io.qrels import JUDGMENT_COLUMNS
from examflow.io.queries import QUERY_COLUMNS
from examflow.io.runs import GOLD_RUN, RUN_COLUMNS

log = logging.getLogger(__name__)

PASSAGE_COLUMNS = ["query_id", "passage_id", "text", "origin"]
# The columns of each pool table the steps read (examflow.outputs.POOL names their files).
POOL_COLUMNS = {"passages": PASSAGE_COLUMNS, "rankings": RUN_COLUMNS, "queries": QUERY_COLUMNS,
                "judgments": JUDGMENT_COLUMNS}  # fmt: skip
ORIGINS = ("judged", "retrieved", "generated", "gold")


@dataclass(frozen=True)
class Sources:
    """The files the pool's rows were read from, to name the line of a passage the collection lacks."""

    runs: Mapping[str, str | Path] = field(default_factory=dict)  # run id -> its file
    qrels: str | Path | None = None


def normalise_ranks(rankings: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep ranks as written unless a list's ranks repeat, are negative or disagree with its scores.

    Such a list is re-ranked by score, ties broken by descending passage id as trec_eval
    does (trec_eval ignores the rank column), starting from the list's own first rank
    (0-based runs stay 0-based), or from 1 where that is negative: a negative rank would
    put every passage of the list within any budget `rank ≤ k`.
    Returns the table sorted by (run, query, rank), and the lists re-ranked: (run, query, the passage of the
    list's first row, in the file's order, whose rank repeats one, is negative or rises against its score), by
    run and query: the list's first row named a line with nothing wrong on it (a stranger's trial).
    """
    keys = ["run_id", "query_id"]
    table = rankings.sort_values(keys + ["rank", "score"], ascending=[True, True, True, False], kind="stable")
    repeated = rankings.duplicated(keys + ["rank"]).reindex(table.index)  # the repeat in the file's order
    score_rises = table.groupby(keys, sort=False)["score"].diff() > 0
    wrong = table[repeated | score_rises | (table["rank"] < 0)]
    broken = wrong[keys].drop_duplicates()
    if broken.empty:
        return table.reset_index(drop=True), broken.assign(passage_id=[])
    is_broken = table.set_index(keys).index.isin(broken.set_index(keys).index)
    fixed = table[is_broken].sort_values(keys + ["score", "passage_id"], ascending=[True, True, False, False])
    first_rank = fixed.groupby(keys)["rank"].transform("min").where(lambda first: first >= 0, 1)
    fixed = fixed.assign(rank=first_rank + fixed.groupby(keys).cumcount())
    table = pd.concat([table[~is_broken], fixed]).sort_values(keys + ["rank"], kind="stable")
    first_wrong = wrong.sort_index().drop_duplicates(keys)[[*keys, "passage_id"]]
    return table.reset_index(drop=True), first_wrong.sort_values(keys).reset_index(drop=True)


def _say_reranked(reranked: pd.DataFrame, sources: Sources) -> None:
    """How many lists were re-ranked, the first named at its run file's line that shows why: among many runs,
    findable."""
    run, query, passage = reranked.iloc[0]
    path = sources.runs.get(run)
    line = None if path is None else trec_line(path, query, passage)
    at = "" if path is None else f", {path}" if line is None else f", {path}:{line}"
    lists = counted(len(reranked), "ranked list", "ranked lists")
    log.warning("%s had repeated or negative ranks, or ranks against their scores: re-ranked by score (first: run "
                "%r, query %r%s)", lists, run, query, at)  # fmt: skip


def pooled_ids(rankings: pd.DataFrame, judgments: pd.DataFrame, generated_runs: set[str], depth: int) -> pd.DataFrame:
    """(query_id, passage_id, origin) with origin = the sorted, comma-joined sources."""
    gold = rankings["run_id"] == GOLD_RUN
    top = rankings[(rankings["rank"] <= depth) & ~gold]
    sources = [
        judgments[["query_id", "passage_id"]].assign(source="judged"),
        top[["query_id", "passage_id"]].assign(
            source=top["run_id"].isin(generated_runs).map({True: "generated", False: "retrieved"})
        ),
        rankings.loc[gold, ["query_id", "passage_id"]].assign(source="gold"),  # whole articles
    ]
    stacked = pd.concat(sources).drop_duplicates()
    order = {name: position for position, name in enumerate(ORIGINS)}
    stacked = stacked.sort_values("source", key=lambda s: s.map(order), kind="stable")
    origin = stacked.groupby(["query_id", "passage_id"])["source"].agg(",".join)
    return origin.rename("origin").reset_index()


def build_pool(
    queries: pd.DataFrame,
    runs: pd.DataFrame,
    segments: pd.DataFrame | None,
    judgments: pd.DataFrame,
    corpus: str | Path | None,
    depth: int,
    missing_passages: Problems,
    sources: Sources = Sources(),
) -> dict[str, pd.DataFrame]:
    """The pool tables by name: passages, rankings, queries, judgments, summary, the passages that look
    like prompt injection (flagged), and the pooled passages left out under `missing_passages: warn`
    (dropped: missing from the corpus, or with empty text), each named at the line that pooled it
    (`sources`)."""
    segments = segments if segments is not None else pd.DataFrame(columns=RUN_COLUMNS + ["text"])
    clash = set(runs["run_id"]) & set(segments["run_id"])
    if clash:
        raise InputError("config: inputs.responses", f"run ids used both by run files and responses: {sorted(clash)}")
    rankings, reranked = normalise_ranks(pd.concat([runs, segments[RUN_COLUMNS]], ignore_index=True))
    if len(reranked):
        _say_reranked(reranked, sources)
    pool = pooled_ids(rankings, judgments, set(segments["run_id"]), depth)
    texts = dict(zip(segments["passage_id"], segments["text"]))
    origins = partial(_origins, rankings[rankings["rank"] <= depth], judgments, sources)
    texts.update(_corpus_texts(corpus, set(pool["passage_id"]) - texts.keys(), missing_passages, origins))
    kept = pool["passage_id"].isin(texts.keys())
    dropped, pool = pool[~kept], pool[kept]
    passages = pool.assign(text=pool["passage_id"].map(texts))[PASSAGE_COLUMNS]
    passages = passages.sort_values(["query_id", "passage_id"]).reset_index(drop=True)
    say_long_passages(passages)
    return {
        "passages": passages,
        "rankings": rankings,
        "queries": queries.sort_values(["query_id", "facet_id"], na_position="first").reset_index(drop=True),
        "judgments": judgments.sort_values(["query_id", "facet_id", "passage_id"], na_position="first").reset_index(
            drop=True
        ),
        "summary": pool_summary(queries, passages, rankings),
        "flagged": flag_passages(passages, queries),
        "dropped": dropped.sort_values(["query_id", "passage_id"]).reset_index(drop=True),
    }


def say_long_passages(passages: pd.DataFrame) -> None:
    """Warn of passages longer than `LONG_PASSAGE_CHARS`, the longest named: graded as usual, at a cost."""
    lengths = passages["text"].str.len()
    long = passages.loc[lengths > LONG_PASSAGE_CHARS, "passage_id"].nunique()  # one pooled for two queries is one
    if long:
        longest = passages.iloc[int(lengths.to_numpy().argmax())]
        log.warning("%d pooled passage(s) longer than %s characters (the longest: %r of query %r, %s): a local "
                    "grader reads its first max_input_tokens but tokenises the whole text (gigabytes of memory), "
                    "an API grader sends it whole; graded as usual", long, f"{LONG_PASSAGE_CHARS:,}",
                    longest["passage_id"], longest["query_id"], f"{lengths.max():,}")  # fmt: skip


def _corpus_texts(
    corpus, wanted: set[str], missing_passages: Problems, origins: Callable[[list[str]], dict[str, Origin]]
) -> dict[str, str]:
    if not wanted:
        return {}
    if corpus is None:
        raise InputError(
            "--corpus",
            f"{len(wanted)} pooled passages need a corpus (the configuration's inputs.corpus), and none is given",
        )
    return read_passages(corpus, wanted, missing_passages, origins=origins)


def _origins(ranked: pd.DataFrame, judgments: pd.DataFrame, sources: Sources, ids: list[str]) -> dict[str, Origin]:
    """Why each of the pooled passage ids is in the pool, for a message: the first run (by name) that ranks
    it within the depth, with the query, the rank and the run file's line, else the qrels' judgment of it."""
    rows = ranked[ranked["passage_id"].isin(ids)].sort_values(["run_id", "query_id", "rank"])
    first = rows.drop_duplicates("passage_id")
    where = {}
    for passage, run, query, rank in zip(first["passage_id"], first["run_id"], first["query_id"], first["rank"]):
        said = f"run {run!r} ranks it for query {query!r} at rank {rank}"
        where[passage] = Origin.at_line(said, sources.runs.get(run), query, passage)
    judged = judgments[judgments["passage_id"].isin(set(ids) - where.keys())].drop_duplicates("passage_id")
    for passage, query in zip(judged["passage_id"], judged["query_id"]):
        where[passage] = Origin.at_line(f"the qrels judge it for query {query!r}", sources.qrels, query, passage)
    return where


def pool_summary(queries: pd.DataFrame, passages: pd.DataFrame, rankings: pd.DataFrame) -> pd.DataFrame:
    """Per query: pool size, passages by origin, number of ranked lists."""
    counts = pd.DataFrame({"query_id": sorted(set(queries["query_id"]))})
    for origin in ORIGINS:
        has = passages[passages["origin"].str.contains(origin)]
        counts[origin] = counts["query_id"].map(has.groupby("query_id").size()).fillna(0).astype(int)
    counts["pool"] = counts["query_id"].map(passages.groupby("query_id").size()).fillna(0).astype(int)
    counts["runs"] = counts["query_id"].map(rankings.groupby("query_id")["run_id"].nunique()).fillna(0).astype(int)
    return counts
