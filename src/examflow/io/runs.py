"""TREC run files: `query_id Q0 doc_id rank score run_tag`, one run per file."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from examflow.errors import ConfigError, InputError, Problems
from examflow.io.lines import FirstLines, integer_field, number_text, shown, split_columns, text_lines

RUN_FIELDS = ("query_id", "Q0", "doc_id", "rank", "score", "run_tag")
RUN_COLUMNS = ["run_id", "query_id", "passage_id", "rank", "score"]
GOLD_RUN = "_gold_"  # gold articles, segmented and graded like a system's responses
OVERALL_RUN = "_overall_"  # every pooled passage: the most a run could cover
RESERVED_RUNS = (GOLD_RUN, OVERALL_RUN)

log = logging.getLogger(__name__)


# How a run's row of a query outside `query_ids` is counted, and named: unknown to the collection,
# (compare-judges) judged by none of the label sets, or (NRP's run ranker) with no judged document.
UNKNOWN_QUERY = ("run rows with an unknown query id", "unknown query id")
UNJUDGED_QUERY = ("run rows of queries no label set judges", "query judged by no label set")
NO_JUDGED_DOCUMENT = ("run rows of queries with no judged document", "query with no judged document")  # NRP


def read_runs(
    paths: Iterable[str | Path], query_ids: set[str], unknown_queries: Problems, outside=UNKNOWN_QUERY
) -> pd.DataFrame:
    """All runs as one table; a run's id is its run tag, unique across files."""
    tables = [read_run(path, query_ids, unknown_queries, outside) for path in runs_by_tag(paths).values()]
    if not tables:
        raise InputError("config: inputs.runs", "no run files given")
    return pd.concat(tables, ignore_index=True)


def runs_by_tag(paths: Iterable[str | Path]) -> dict[str, str | Path]:
    """Each run file by its run tag (on its first line), which one file alone may have: two would be one
    run in every table."""
    origin: dict[str, str | Path] = {}
    for path in paths:
        number, tag = _first_tag(path)
        if tag in origin:
            raise InputError(path, f"run tag {tag!r} is also the tag of {origin[tag]}", number, "run_tag")
        origin[tag] = path
    return origin


def run_tag(path: str | Path) -> str:
    """The run tag on a run file's first line (one run per file: read_run checks the rest)."""
    return _first_tag(path)[1]


def _first_tag(path: str | Path) -> tuple[int, str]:
    for number, line in text_lines(path, say_bom=False):  # said as the file is read whole
        return number, split_columns(path, number, line, RUN_FIELDS, None)[5]
    raise AssertionError("text_lines raises on an empty file")


NO_KNOWN_QUERY = "no rows for any known query"


def read_run(path: str | Path, query_ids: set[str], unknown_queries: Problems, outside=UNKNOWN_QUERY) -> pd.DataFrame:
    """One run; negative ranks are kept here, counted in a warning, and re-ranked by pooling."""
    rows, first_lines, tag, negative = [], FirstLines(path), None, []
    for number, line in text_lines(path):
        query_id, _, doc_id, rank, score, run_tag = split_columns(path, number, line, RUN_FIELDS, None)
        if tag is None:
            tag = run_tag
            if tag in RESERVED_RUNS:
                raise InputError(path, f"run tag {tag!r} is reserved for examflow's own rows", number, "run_tag")
        elif run_tag != tag:
            raise InputError(path, f"second run tag {run_tag!r} after {tag!r}: one run per file", number, "run_tag")
        what = f"document {doc_id!r} ranked twice for query {query_id!r}"
        first_lines.add((query_id, doc_id), number, "doc_id", what)
        if query_id not in query_ids:
            unknown_queries.report(
                outside[0],
                InputError(path, f"{outside[1]} {query_id!r}", number, "query_id"),
            )
            continue
        rows.append((tag, query_id, doc_id, integer_field(path, number, rank, "rank"), _finite(path, number, score)))
        if rows[-1][3] < 0:
            negative.append(number)
    if not rows:
        raise InputError(path, NO_KNOWN_QUERY)
    if negative:
        log.warning(
            "%s: %d negative ranks (first on line %d, field 'rank'): their lists are re-ranked by score, from 1",
            path, len(negative), negative[0],
        )  # fmt: skip
    return pd.DataFrame(rows, columns=RUN_COLUMNS).astype({"rank": "int64", "score": "float64"})


def _finite(path, number: int, text: str) -> float:
    try:
        value = float(number_text(path, number, text, "score"))
    except ValueError:
        raise InputError(path, f"not a number: {shown(text)}", number, "score") from None
    if not math.isfinite(value):
        raise InputError(path, f"not a finite number: {shown(text)}", number, "score")
    return value


def run_files(patterns: Iterable[str], key: str) -> list[str]:
    """Run files by name or by pattern (`runs/*.run`), each once, a pattern's in sorted order. A name that
    is a file is taken as it is, even with `[` or `*` in it; `key` (the option or configuration key) names a
    pattern that matches no file."""
    import glob

    files: dict[Path, str] = {}  # each file once, however it is named (`runs/a.run`, `../x/runs/a.run`)
    for pattern in patterns:
        matched = [pattern] if Path(pattern).is_file() else sorted(p for p in glob.glob(pattern) if Path(p).is_file())
        if not matched and Path(pattern).is_dir():
            raise ConfigError(key, f"{pattern!r} is a folder: name its run files ({Path(pattern) / '*'!s}, say)")
        if not matched:
            raise ConfigError(key, f"no such run file, and no file matches {pattern!r} as a pattern")
        for path in matched:
            if path.startswith("-"):  # a command line reads it as an option (config.py's `path: true`)
                raise ConfigError(key, f"{pattern!r} matches {path!r}, which starts with '-' and a command line "
                                  "reads as an option: give it as an absolute path")  # fmt: skip
            files.setdefault(Path(path).resolve(), path)
    return list(files.values())
