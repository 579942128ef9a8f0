"""Queries: TSV `query_id<TAB>text`, a JSON object `{query_id: text}`, or JSONL with subtopics.

JSONL lines read `{"query_id": "q1", "text": "...", "subtopics": [{"facet_id": "f1", "text": "..."}]}`
(`subtopics` optional; `query_text` is accepted for `text`). A query with subtopics is
graded and judged per subtopic (facet), TREC CAR style.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import cast

import pandas as pd

from examflow.errors import InputError
from examflow.io.irds import irds_queries, is_irds
from examflow.io.lines import (
    FirstLines,
    base_suffix,
    check_id,
    json_entries,
    json_lines,
    required_id,
    required_text,
    split_columns,
    text_lines,
    unknown_format,
)

QUERY_COLUMNS = ["query_id", "facet_id", "query_text", "facet_text"]


def read_queries(path: str | Path) -> pd.DataFrame:
    """One row per query, or per (query, facet) for queries with subtopics."""
    if is_irds(path):
        return irds_queries(cast(str, path))  # cast: an ir_datasets id is a string (`is_irds`)
    reader = {".tsv": _tsv_rows, ".txt": _tsv_rows, ".json": _json_rows, ".jsonl": _jsonl_rows}.get(base_suffix(path))
    if reader is None:
        raise unknown_format(path, "queries format: use .tsv, .json or .jsonl (optionally .gz)")
    rows, first_lines = [], FirstLines(path)
    for number, row in reader(path):
        first_lines.add((row[0], row[1]), number, "query_id", f"duplicate query id {row[0]!r}")
        rows.append(row)
    return pd.DataFrame(rows, columns=QUERY_COLUMNS, dtype=object)  # object keeps None for no facet


def subtopics(queries: pd.DataFrame) -> dict[str, set[str]]:
    """Each query id with the facet ids of its subtopics (none for a query without subtopics)."""
    found: dict[str, set[str]] = {}
    for query_id, facet_id in zip(queries["query_id"], queries["facet_id"]):
        found.setdefault(query_id, set()).update([] if pd.isna(facet_id) else [facet_id])
    return found


# A header line's words (a pandas export writes one): it was read as a query named `query_id` (a stranger's trial).
_HEADER_IDS, _HEADER_TEXTS = {"query_id", "qid", "id", "query-id", "topic_id"}, {"text", "query", "title", "query_text"}


def _tsv_rows(path):
    for i, (number, line) in enumerate(text_lines(path)):
        query_id, text = split_columns(path, number, line, ("query_id", "text"), "\t")
        if i == 0 and query_id.lower() in _HEADER_IDS and text.strip().lower() in _HEADER_TEXTS:
            raise InputError(path, f"a header line ({query_id!r}, {text.strip()!r}): a queries TSV has none, delete it",
                             number)  # fmt: skip
        check_id(path, number, query_id, "query_id")
        if not text.strip():
            raise InputError(path, "empty text", number, "text")
        yield number, (query_id, None, text.strip(), None)


def _json_rows(path):
    for number, query_id, query_text in json_entries(path, "{query_id: text}", "query_id"):
        if not isinstance(query_text, str) or not query_text.strip():
            raise InputError(path, "expected non-empty text", number, query_id)
        yield number, (query_id, None, query_text.strip(), None)


def _jsonl_rows(path):
    for number, record in json_lines(path):
        query_id = required_id(path, number, record, "query_id")
        text_field = "query_text" if "query_text" in record and "text" not in record else "text"  # the docs' name
        text = required_text(path, number, record, text_field).strip()
        subtopics = record.get("subtopics") or []
        if not isinstance(subtopics, list):
            raise InputError(path, "expected a list of {facet_id, text} objects", number, "subtopics")
        if not subtopics:
            _check_no_misspelt_subtopics(path, number, record)
            yield number, (query_id, None, text, None)
        facets: set[str] = set()
        for index, subtopic in enumerate(subtopics):
            where = f"subtopics[{index}]"
            if not isinstance(subtopic, dict):
                raise InputError(path, "expected an object {facet_id, text}", number, where)
            facet_id = required_id(path, number, subtopic, "facet_id", f"{where}.")
            if facet_id in facets:
                raise InputError(
                    path, f"subtopic {facet_id!r} of query {query_id!r} twice", number, f"{where}.facet_id"
                )
            facets.add(facet_id)
            yield number, (query_id, facet_id, text, required_text(path, number, subtopic, "text").strip())


def _check_no_misspelt_subtopics(path, number: int, record: dict) -> None:
    """`subtopic` or `sub_topics` would be left out in silence, and the query evaluated as a page alone."""
    misspelt = difflib.get_close_matches("subtopics", [str(key) for key in record], n=1, cutoff=0.8)
    if misspelt:
        raise InputError(path, "unknown field (did you mean 'subtopics'?)", number, misspelt[0])
