"""Official leaderboards: a JSON object `{run_id: official rank}`, or a TSV with a header naming the
run (`run` or `run_id`) and its `rank` or its `score`; ranks with ties averaged, as given or taken from
the scores (higher is better)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from examflow.errors import InputError, Problems, counted, listed, suggestion
from examflow.io.lines import check_id, json_entries, read_alike, shown, split_columns, text_lines
from examflow.ties import ranks_of

SHAPES = (
    'a JSON object {"run_id": official rank, ...}, or a TSV file whose header names the run (run or run_id) '
    "and its rank or its score (higher is better), one run a line"
)


def read_leaderboard(path: str | Path) -> dict[str, float]:
    """Ranks by run; a repeated run, a rank or score that is not a finite number or a bad run id is an error."""
    return _json_ranks(path) if _looks_like_json(path) else _tsv_ranks(path)


def _looks_like_json(path: str | Path) -> bool:
    """The content decides, not the name: a TSV saved as `.json` is read as the TSV it is."""
    for _, line in text_lines(path):
        if line.strip():
            return line.lstrip().startswith(("{", "["))
    return False


def _json_ranks(path: str | Path) -> dict[str, float]:
    ranks = {}
    for number, run, rank in json_entries(path, f"{{run_id: official rank}} ({SHAPES})", "run_id"):
        ranks[run] = _number(path, number, run, rank, "rank")
    return ranks


def read_leaderboard_scores(path: str | Path) -> dict[str, float] | None:
    """The scores of a TSV leaderboard with a `score` column (higher is better); None where it holds ranks only."""
    if _looks_like_json(path):
        return None
    column, scores = _tsv_values(path, ("score", "rank"))
    return scores if column == "score" else None


def _tsv_ranks(path: str | Path) -> dict[str, float]:
    column, values = _tsv_values(path, ("rank", "score"))
    return values if column == "rank" else ranks_of(values)


def _tsv_values(path: str | Path, preference: tuple[str, str]) -> tuple[str, dict[str, float]]:
    """The run's value of the first column of `preference` that the header names, by run."""
    lines = iter(text_lines(path))
    number, header = next(lines, (1, ""))
    names = tuple(header.split("\t"))
    run_column = next((name for name in ("run_id", "run") if name in names), None)
    value_column = next((name for name in preference if name in names), None)
    if run_column is None or value_column is None or len(names) != len(set(names)):
        raise InputError(path, f"expected {SHAPES}; found the header {header.strip()!r}", number)
    both = "rank" in names and "score" in names  # then, both numbers, they must tell one order
    values: dict[str, float] = {}
    given: dict[str, dict[str, float | str]] = {"rank": {}, "score": {}}
    lines_of: dict[str, int] = {}
    for number, line in lines:
        row = dict(zip(names, split_columns(path, number, line, names, "\t")))
        run = row[run_column]
        check_id(path, number, run, run_column)
        if run in values:
            raise InputError(path, f"run {run!r} is listed twice", number, run_column)
        values[run] = _number(path, number, value_column, _float(row[value_column]), value_column)
        if both:
            for column in given:
                given[column][run] = _float(row[column])
            lines_of[run] = number
    if not values:
        raise InputError(path, f"no run: expected {SHAPES}")
    numbers = {
        c: {r: v for r, v in column.items() if isinstance(v, float) and math.isfinite(v)} for c, column in given.items()
    }
    if both and all(len(column) == len(values) for column in numbers.values()):  # not with placeholders (`-`)
        _one_order(path, numbers["rank"], numbers["score"], lines_of)
    return value_column, values


def _one_order(path, ranks: dict[str, float], scores: dict[str, float], lines_of: dict[str, int]) -> None:
    """A rank column beside a score column: no run may rank below one it scores higher than (ties in
    either may be broken either way). Ranks feed the correlations and scores Pearson's r: two orders
    would make two different comparisons."""
    by_score = sorted(scores, key=lambda run: (-scores[run], ranks[run]))
    for better, worse in zip(by_score, by_score[1:]):
        if scores[better] > scores[worse] and ranks[better] > ranks[worse]:
            message = (f"run {worse!r} (score {scores[worse]:g}) is ranked {ranks[worse]:g}, ahead of run {better!r} "
                       f"(score {scores[better]:g}, ranked {ranks[better]:g}): rank and score disagree")  # fmt: skip
            raise InputError(path, message, lines_of[worse], "rank")


def _float(text: str) -> float | str:
    """A TSV cell as a number where it reads as one; else the text, for the error to show."""
    try:
        return float(text) if read_alike(text) else text
    except ValueError:
        return text


def _number(path, number: int | None, field: str, value, what: str) -> float:
    """`value` (the run's rank or score) as a finite number: a JSON string is no number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(path, f"{what} {value!r} is not a number", number, field)
    try:
        number_value = float(value)  # a whole number of 400 digits is none
    except OverflowError:
        number_value = math.inf
    if not math.isfinite(number_value):
        written = repr(value) if len(repr(value)) <= 40 else shown(str(value))
        raise InputError(path, f"{what} {written} is not a finite number", number, field)
    return number_value


def match_runs(
    path: str | Path,
    official: dict[str, float],
    evaluated: set[str],
    problems: Problems,
    among: str = "",
    meant: Iterable[str] = (),
    hint: str = "",
) -> list[str]:
    """Official runs that are not evaluated go to `problems` (a typo would silently drop them from
    every correlation); evaluated runs that are not official are a note, returned for the log. `among`:
    the runs compared, where they are not all the evaluated runs (`the runs of --runs`); `meant`: other
    runs a typo may mean (left out on purpose); `hint`: said of an unknown run that suggests none."""
    unknown, extra = sorted(set(official) - evaluated), sorted(evaluated - set(official))
    lines = _run_lines(path) if unknown else {}  # the file again, only to name a problem's line
    kind, where = (f"official runs not among {among}", among) if among else ("official runs that are not evaluated",
                                                                          "the evaluated runs")  # fmt: skip
    for run in unknown:  # a typo's likely meaning: an evaluated run the leaderboard lacks
        message = f"official run {run!r} is not among {where}{suggestion(run, [*extra, *meant]) or hint}"
        problems.report(kind, InputError(path, message, lines.get(run), "run_id"))
    if not extra:
        return []
    shown = listed(extra)
    return [
        f"{counted(len(extra), 'evaluated run is', 'evaluated runs are')} not on the official leaderboard and "
        f"take{'s' if len(extra) == 1 else ''} no part in correlations: {shown}"
    ]


def _run_lines(path: str | Path) -> dict[str, int | None]:
    """The line of each run of a leaderboard read (`read_leaderboard`): its key in the JSON object, or its
    row of the TSV, found in its run column."""
    if _looks_like_json(path):
        return {run: number for number, run, _ in json_entries(path, SHAPES, "run_id")}
    lines = iter(text_lines(path))
    names = next(lines, (1, ""))[1].split("\t")
    at = names.index(next(name for name in ("run_id", "run") if name in names))
    return {line.split("\t")[at]: number for number, line in lines}
