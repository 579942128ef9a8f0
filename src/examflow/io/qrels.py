"""TREC qrels: `query_id iteration doc_id relevance`.

For queries with subtopics the query id may be `query_id/facet_id` (TREC CAR): the
judgment then belongs to that facet.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pandas as pd

from examflow.errors import InputError, Problems
from examflow.io.irds import irds_qrels, is_irds
from examflow.io.lines import EMPTY_FILE, FirstLines, integer_field, split_columns, text_lines
from examflow.io.tables import text_series

log = logging.getLogger(__name__)

QRELS_FIELDS = ("query_id", "iteration", "doc_id", "relevance")
JUDGMENT_COLUMNS = ["query_id", "facet_id", "passage_id", "relevance"]


DEFAULT_RANGE = (-2, 4)
Judgment = tuple[str, str | None, str, int]  # query_id, facet_id (None: the whole query), passage_id, relevance


def qrels_ids(table: pd.DataFrame) -> pd.Series:
    """Each row's id in a qrels file: `query_id`, or `query_id/facet_id` for a subtopic's row."""
    query_ids, facet_ids = text_series(table["query_id"]), text_series(table["facet_id"])
    return query_ids.where(facet_ids.isna(), query_ids + "/" + facet_ids)


def read_qrels(
    path: str | Path, queries: pd.DataFrame, unknown_queries: Problems, relevance_range: tuple[int, int] = DEFAULT_RANGE
) -> pd.DataFrame:
    """Judgments; a relevance outside `relevance_range` is an error (TREC CAR's −2 is valid, non-relevant)."""
    if is_irds(path):  # cast: an ir_datasets id is a string (`is_irds`)
        return _irds_judgments(cast(str, path), queries, unknown_queries, relevance_range)
    known = KnownQueries(queries, unknown_queries)
    rows: list[Judgment] = []
    for number, qrels_id, doc_id, grade in qrels_lines(path, relevance_range):
        query_id, facet_id = known.resolve(qrels_id)
        if query_id is None:
            known.report(path, number, qrels_id)
            continue
        rows.append((query_id, facet_id, doc_id, grade))
    return judgment_table(rows)


def read_labels(path: str | Path, empty_ok: bool = False, known: KnownQueries | None = None) -> pd.DataFrame:
    """A qrels file as it is, `query_id, doc_id, relevance` (its query ids unresolved: `q/facet` stays one
    id), labels any integers (a judge's scale is its own: EXAM-Qrels run 0-5, UMBRELA's 0-3). An empty
    file is an error unless `empty_ok` (the EXAM-Qrels of a method whose every pair failed), with a warning.
    With `known` queries, a row of another query is reported to their problems (an error, or dropped)."""
    try:
        rows = []
        for number, qrels_id, doc_id, grade in qrels_lines(path, None):
            if known is None or known.resolve(qrels_id)[0] is not None:
                rows.append((qrels_id, doc_id, grade))
            else:
                known.report(path, number, qrels_id)
    except InputError as error:
        if not (empty_ok and error.message == EMPTY_FILE):
            raise
        log.warning("%s: holds no label, so it judges no query (as the EXAM-Qrels of a method whose every pair "
                    "failed)", path)  # fmt: skip
        rows = []
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]).astype({"relevance": "int64"})


def qrels_lines(path: str | Path, relevance_range: tuple[int, int] | None) -> Iterator[tuple[int, str, str, int]]:
    """(line number, qrels id, doc id, relevance) of each judgment, checked (its range, unless None)."""
    first_lines = FirstLines(path)
    for number, line in text_lines(path):
        qrels_id, _, doc_id, relevance = split_columns(path, number, line, QRELS_FIELDS, None)
        first_lines.add((qrels_id, doc_id), number, "doc_id", f"document {doc_id!r} judged twice for {qrels_id!r}")
        grade = integer_field(path, number, relevance, "relevance")
        if relevance_range is not None and not relevance_range[0] <= grade <= relevance_range[1]:
            low, high = relevance_range
            raise InputError(
                path,
                f"{grade} is outside {low}..{high} (validation.relevance_range, --relevance-range)",
                number,
                "relevance",
            )
        yield number, qrels_id, doc_id, grade


def _irds_judgments(
    spec: str, queries: pd.DataFrame, unknown_queries: Problems, relevance_range: tuple[int, int]
) -> pd.DataFrame:
    """The judgments of an ir_datasets id: each of a whole query (its qrels name no facets)."""
    low, high = relevance_range
    rows = irds_qrels(spec, set(queries["query_id"]), unknown_queries)
    for query_id, doc_id, grade in rows:
        if not low <= grade <= high:
            raise InputError(spec, f"relevance {grade} of {doc_id!r} for {query_id!r} is outside {low}..{high}")
    return judgment_table([(query_id, None, doc_id, grade) for query_id, doc_id, grade in rows])


def judgment_table(rows: list[Judgment]) -> pd.DataFrame:
    """Judgments as a table; the ids as strings, which join with the runs' without a conversion."""
    table = pd.DataFrame(rows, columns=JUDGMENT_COLUMNS, dtype=object).astype({"relevance": "int64"})
    return table.assign(**{column: text_series(table[column]) for column in JUDGMENT_COLUMNS[:3]})


class KnownQueries:
    """The queries a qrels id may name: a query's id, or `query_id/facet_id` of one of its subtopics; a row
    of another goes to `problems`."""

    def __init__(self, queries: pd.DataFrame, problems: Problems):
        self.problems = problems
        self.query_ids = set(queries["query_id"])
        self.facets = set(zip(queries["query_id"], queries["facet_id"].fillna("")))

    def resolve(self, qrels_id: str) -> tuple[str | None, str | None]:
        """(query id, facet id or None) that `qrels_id` names; (None, None) for an unknown one."""
        if qrels_id in self.query_ids:
            return qrels_id, None
        query_id, _, facet_id = qrels_id.partition("/")
        if facet_id and (query_id, facet_id) in self.facets:
            return query_id, facet_id
        return None, None

    def report(self, path: str | Path, number: int, qrels_id: str) -> None:
        page, _, facet = qrels_id.partition("/")
        known_page = facet and page in self.query_ids  # the page is a query: only its subtopic is unknown
        what = f"unknown query id {qrels_id!r}" + (
            f" (no subtopic {facet!r} of query {page!r} here)" if known_page else ""
        )
        self.problems.report("qrels rows with an unknown query id", InputError(path, what, number, "query_id"))
