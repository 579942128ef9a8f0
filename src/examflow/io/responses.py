"""Generated responses (RAG answers): JSONL `{"run_id", "query_id", "text"}`.

`text` is a string (paragraphs separated by blank lines) or a list of paragraph strings. An empty
one is what the system answered: the run has no passage for that query (counted in a warning).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from examflow.errors import InputError, Problems
from examflow.io.lines import json_lines, misspelling_of, required_id
from examflow.io.runs import GOLD_RUN, RESERVED_RUNS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Response:
    run_id: str
    query_id: str
    paragraphs: tuple[str, ...]


def read_responses(path: str | Path, query_ids: set[str], unknown_queries: Problems) -> list[Response]:
    responses: list[Response] = []
    first_line: dict[tuple[str, str], int] = {}  # (run, query) -> the line of its response
    empty: list[str] = []
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
        response = Response(run_id, query_id, _paragraphs(path, number, record))
        if not response.paragraphs:
            empty.append(f"line {number}, run {run_id!r}, query {query_id!r}")
        responses.append(response)
    silent = sorted({r.run_id for r in responses} - {r.run_id for r in responses if r.paragraphs})
    if silent:  # no passage at all: such a run has no row in any leaderboard; said first, the step's headline
        log.warning("%s: runs with only empty responses, not evaluated: %s", path, ", ".join(silent))
    if empty:  # a system that answered nothing is evaluated as such, not a broken file
        log.warning(
            "%s: %d empty response(s): the run has no passage for that query (first: %s)",
            path, len(empty), empty[0],
        )  # fmt: skip
    return responses


def response_run_ids(path: str | Path, query_ids: set[str] | None = None) -> set[str]:
    """The systems a responses file holds that answered one of the queries (None: any query): one whose every
    response is empty, or to a query not among them, has no passage, so no row in any leaderboard
    (read_responses)."""
    return {
        required_id(path, number, record, "run_id")
        for number, record in json_lines(path)
        if (query_ids is None or required_id(path, number, record, "query_id") in query_ids)  # a JSON number: digits
        and _paragraphs(path, number, record)
    }


# A blank line separates paragraphs: two line breaks with nothing but spaces between (a line of spaces is blank)
BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


def _unix_lines(text: str) -> str:
    """Windows' and old Macs' line breaks as `\n`, and the Unicode paragraph separator as a blank line: the
    same answer cut alike however its lines end (`\r\n\r\n` was no paragraph break, and cut a sentence)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2029", "\n\n")


def _kind(value: object) -> str:
    """What a JSON value is, for an error that cannot repeat it (an answer given as an object of 3 KB)."""
    if isinstance(value, list):
        return "a list holding " + _kind(next(part for part in value if not isinstance(part, str)))
    kinds = {type(None): "null", bool: "true or false", int: "a number", float: "a number", dict: "an object"}
    return kinds.get(type(value), type(value).__name__)


def _paragraphs(path, number: int, record: dict) -> tuple[str, ...]:
    """The non-blank paragraphs of a response's `text`; none for an empty text."""
    text = record.get("text")
    if isinstance(text, str):
        parts = [part.strip() for part in BLANK_LINE.split(_unix_lines(text))]
    elif isinstance(text, list) and all(isinstance(part, str) for part in text):
        parts = [part.strip() for part in text]
    elif "text" not in record:
        raise InputError(path, f"missing{misspelling_of(record, 'text')}", number, "text")
    else:
        raise InputError(path, f"expected a string or a list of strings, found {_kind(text)}", number, "text")
    return tuple(part for part in parts if part)


def read_gold_articles(
    path: str | Path, query_ids: set[str] | None = None, unknown_queries: Problems | None = None
) -> dict[str, str]:
    """JSONL `{"query_id", "text"}`, one article per query; `text` as in responses. An article of a
    query not in `query_ids` (when given) is reported to `unknown_queries`, by default an error."""
    articles: dict[str, str] = {}
    for number, record in json_lines(path):
        query_id = required_id(path, number, record, "query_id")
        if query_ids is not None and query_id not in query_ids:
            (unknown_queries or Problems("error")).report(
                "gold articles with an unknown query id",
                InputError(path, f"unknown query id {query_id!r}", number, "query_id"),
            )
            continue
        if query_id in articles:
            raise InputError(path, f"second gold article for query {query_id!r}", number, "query_id")
        paragraphs = _paragraphs(path, number, record)
        if not paragraphs:  # the reference every run is measured against (n-EXAM gold, ROUGE)
            raise InputError(path, "empty text", number, "text")
        articles[query_id] = "\n\n".join(paragraphs)
    return articles


def gold_responses(articles: dict[str, str]) -> list[Response]:
    """The gold articles as the responses of the run `_gold_`."""
    return [Response(GOLD_RUN, query_id, tuple(text.split("\n\n"))) for query_id, text in articles.items()]
