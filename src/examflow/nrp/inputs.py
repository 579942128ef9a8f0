"""NRP's inputs beyond EXAM's readers: generated answers and an expert's ranking of a few items.

Answers are JSONL `{"llm", "prompt", "sample", "query_id", "text"}`; an answer is named
`{llm}/{prompt}/{sample}` wherever it meets a document id (a run file, an expert ranking).
An expert ranking is JSON `{query_id: [item, ...]}` (best first) or TSV `query_id<TAB>item<TAB>rank`
(rank 1 is best; equal ranks tie); an item is a judged document id or an answer's name.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from examflow.errors import InputError, Problems
from examflow.io.lines import base_suffix, check_id, json_entries, json_lines, required_id, split_columns, text_lines
from examflow.io.qrels import read_qrels

ANSWER_COLUMNS = ["llm", "prompt", "sample", "query_id", "text", "answer"]
EXPERT_COLUMNS = ["query_id", "item", "rank"]


def answer_name(llm: str, prompt: str, sample: str) -> str:
    return f"{llm}/{prompt}/{sample}"


def read_answers(path: str | Path, query_ids: set[str], unknown_queries: Problems) -> pd.DataFrame:
    """One row per answer; `answer` says whether its text is `given` or `empty` (scored as "")."""
    rows, first_line = [], {}
    for number, record in json_lines(path):
        llm, prompt, sample, query_id = (
            required_id(path, number, record, f) for f in ("llm", "prompt", "sample", "query_id")
        )
        if query_id not in query_ids:
            unknown_queries.report(
                "answers with an unknown query id",
                InputError(path, f"unknown query id {query_id!r}", number, "query_id"),
            )
            continue
        text = record.get("text")
        if text is not None and not isinstance(text, str):
            raise InputError(path, f"expected a string or null, found {type(text).__name__}", number, "text")
        key = (llm, prompt, sample, query_id)
        if key in first_line:
            raise InputError(path, f"a second answer {answer_name(llm, prompt, sample)} to query {query_id!r} "
                             f"(first on line {first_line[key]})", number, "sample")  # fmt: skip
        first_line[key] = number
        given = bool(text and text.strip())
        rows.append((llm, prompt, sample, query_id, text if given else "", "given" if given else "empty"))
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


def complete_answers(answers: pd.DataFrame, query_ids: list[str]) -> pd.DataFrame:
    """Every (llm, prompt) system with each of its samples for every query: an absent answer is
    `missing`, scored as the empty string."""
    grid = (
        answers[["llm", "prompt", "sample"]].drop_duplicates().merge(pd.DataFrame({"query_id": query_ids}), how="cross")
    )
    full = grid.merge(
        answers[answers["query_id"].isin(query_ids)], on=["llm", "prompt", "sample", "query_id"], how="left"
    )
    missing = full["answer"].isna()
    full.loc[missing, ["text", "answer"]] = ["", "missing"]
    return full.sort_values(["llm", "prompt", "query_id", "sample"]).reset_index(drop=True)[ANSWER_COLUMNS]


def read_expert(path: str | Path, known: dict[str, set[str]]) -> pd.DataFrame:
    """The expert's ranks; `known`: each query's judged documents and answer names."""
    rows = _expert_json(path) if base_suffix(path) == ".json" else _expert_tsv(path)
    seen = set()
    for number, query_id, item, _ in (rows := list(rows)):
        if query_id not in known:
            raise InputError(path, f"unknown query id {query_id!r}", number, "query_id")
        if item not in known[query_id]:
            raise InputError(path, f"{item!r} is no judged document or answer of query {query_id!r}", number, "item")
        if (query_id, item) in seen:
            raise InputError(path, f"item {item!r} ranked twice for query {query_id!r}", number, "item")
        seen.add((query_id, item))
    return pd.DataFrame([row[1:] for row in rows], columns=EXPERT_COLUMNS)


def read_judgments(
    qrels: dict[str, str], queries: pd.DataFrame, unknown: Problems, cannot_judge: dict[str, set[int]]
) -> dict[str, pd.DataFrame]:
    """Each quality dimension's judgments, its "cannot judge" labels left out (they are no judgments)."""
    judgments = {}
    for dimension, path in qrels.items():
        table = read_qrels(path, queries, unknown)
        judgments[dimension] = table[~table["relevance"].isin(cannot_judge.get(dimension, set()))].reset_index(
            drop=True
        )
    return judgments


def _expert_json(path):
    for number, query_id, items in json_entries(path, "{query_id: [item, ...]}", "query_id"):
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items) or len(items) < 2:
            raise InputError(path, "expected a list of at least two item ids, best first", number, query_id)
        for rank, item in enumerate(items, 1):
            check_id(path, number, item, "item")
            yield number, query_id, item, float(rank)


def _expert_tsv(path):
    for number, line in text_lines(path):
        query_id, item, rank = split_columns(path, number, line, ("query_id", "item", "rank"), "\t")
        check_id(path, number, query_id, "query_id")
        check_id(path, number, item, "item")
        try:
            value = float(rank)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(path, f"not a finite number: {rank!r}", number, "rank")
        yield number, query_id, item, value
