"""Generated responses (RAG answers): JSONL `{"run_id", "query_id", "text"}`.

`text` is a string (paragraphs separated by blank lines) or a list of paragraph strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from examflow.errors import InputError, Problems
from examflow.io.lines import json_lines, required_id
from examflow.io.runs import GOLD_RUN, RESERVED_RUNS


@dataclass(frozen=True)
class Response:
    run_id: str
    query_id: str
    paragraphs: tuple[str, ...]


def read_responses(path: str | Path, query_ids: set[str], unknown_queries: Problems) -> list[Response]:
    responses, first_line = [], {}
    for number, record in json_lines(path):
        run_id = required_id(path, number, record, "run_id")
        if run_id in RESERVED_RUNS:
            raise InputError(path, f"run id {run_id!r} is reserved for examflow's own rows", number, "run_id")
        query_id = required_id(path, number, record, "query_id")
        if query_id not in query_ids:
            unknown_queries.report(
                "responses with an unknown query id",
                InputError(path, f"unknown query id {query_id!r}", number, "query_id"),
            )
            continue
        if (run_id, query_id) in first_line:
            raise InputError(
                path,
                f"second response of {run_id!r} to query {query_id!r} (first on line {first_line[run_id, query_id]})",
                number,
                "query_id",
            )
        first_line[run_id, query_id] = number
        responses.append(Response(run_id, query_id, _paragraphs(path, number, record.get("text"))))
    return responses


def response_run_ids(path: str | Path) -> set[str]:
    """The systems a responses file holds."""
    return {required_id(path, number, record, "run_id") for number, record in json_lines(path)}


def _paragraphs(path, number: int, text) -> tuple[str, ...]:
    if isinstance(text, str):
        parts = [part.strip() for part in text.split("\n\n")]
    elif isinstance(text, list) and all(isinstance(part, str) for part in text):
        parts = [part.strip() for part in text]
    elif text is None:
        raise InputError(path, "missing", number, "text")
    else:
        raise InputError(path, "expected a string or a list of strings", number, "text")
    parts = [part for part in parts if part]
    if not parts:
        raise InputError(path, "empty text", number, "text")
    return tuple(parts)


def read_gold_articles(
    path: str | Path, query_ids: set[str] | None = None, unknown_queries: Problems | None = None
) -> dict[str, str]:
    """JSONL `{"query_id", "text"}`, one article per query; `text` as in responses."""
    articles: dict[str, str] = {}
    for number, record in json_lines(path):
        query_id = required_id(path, number, record, "query_id")
        if query_ids is not None and query_id not in query_ids:
            unknown_queries.report(
                "gold articles with an unknown query id",
                InputError(path, f"unknown query id {query_id!r}", number, "query_id"),
            )
            continue
        if query_id in articles:
            raise InputError(path, f"second gold article for query {query_id!r}", number, "query_id")
        articles[query_id] = "\n\n".join(_paragraphs(path, number, record.get("text")))
    return articles


def gold_responses(articles: dict[str, str]) -> list[Response]:
    """The gold articles as the responses of the run `_gold_`."""
    return [Response(GOLD_RUN, query_id, tuple(text.split("\n\n"))) for query_id, text in articles.items()]
