"""TREC AutoJudge leaderboards (trec-auto-judge's `autojudge_base.leaderboard`): one line per run, measure and
topic, and one `all` line per run and measure, the mean of its topics' values.

Three layouts are read and written:
- `tot`: `run_id measure topic_id value`, whitespace-separated, no header: the track's upload file
  (`trec-leaderboard.txt`, "congruent to trec_eval -q");
- `ir_measures`: `run_id topic_id measure value`, what `Leaderboard.write` writes by default;
- `jsonl`: one object `{"run_id", "topic_id", "measure", "value"}` a line, the official `*.eval.jsonl` files.
A judge's leaderboard from another team enters `examflow compare-judges` as a label set of its own
(`--leaderboard NAME=FILE`): each of its measures is one leaderboard, its per-topic values resampled by the
bootstrap like every other; the `all` lines are the scores only where a measure has no per-topic line.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd

from examflow.errors import InputError, Problems, counted, listed, suggestion
from examflow.io.lines import FirstLines, check_id, json_lines, number_text, split_columns, text_lines
from examflow.registry import LEADERBOARD_LAYOUTS

log = logging.getLogger(__name__)

ALL = "all"  # the topic id of a run's mean over its topics


def format_leaderboard(values: pd.DataFrame, layout: str = "tot") -> str:
    """`values` (run_id, measure, topic_id, value; NaN where a run has no value on a topic) as AutoJudge
    lines: per topic, then the `all` line of each run and measure (math.fsum of its values / their count)."""
    kept = values[np.isfinite(values["value"].to_numpy(dtype=float))]
    kept = kept.sort_values(["run_id", "measure", "topic_id"], kind="stable")
    means = [
        (run, measure, ALL, math.fsum(group["value"]) / len(group))
        for (run, measure), group in kept.groupby(["run_id", "measure"], sort=True)
    ]
    rows = [*kept[["run_id", "measure", "topic_id", "value"]].itertuples(index=False, name=None), *means]
    order = [LEADERBOARD_LAYOUTS["tot"].index(column) for column in LEADERBOARD_LAYOUTS[layout]]
    if layout == "jsonl":
        return "".join(json.dumps({LEADERBOARD_LAYOUTS["tot"][i]: _json(row[i]) for i in order}) + "\n" for row in rows)
    return "".join("\t".join(_cell(row[i]) for i in order) + "\n" for row in rows)


def _json(value):
    return float(value) if isinstance(value, float | np.floating) else str(value)


def _cell(value) -> str:
    return repr(float(value)) if isinstance(value, float | np.floating) else str(value)


@dataclass(frozen=True)
class Measured:
    """One measure of an AutoJudge leaderboard: per-topic values, or (none given) the `all` scores."""

    per_topic: dict[str, dict[str, float]]  # run -> topic -> value
    overall: dict[str, float]  # run -> the `all` line's value
    lines: dict[str, int]  # run -> its first line (for errors)


def known_runs(
    path,
    measures: dict[str, Measured],
    run_ids: set[str],
    where: str,
    problems: Problems,
    generated=frozenset(),
    hint: str = "",
) -> dict[str, Measured]:
    """The measures of the runs evaluated (`where` names them); another run goes to `problems` (a typo would
    drop it from every statistic of the judge) and, under `warn`, is left out. A `generated` response's run
    is left out as no problem: the judges compare the run files' runs (the caller says so). `hint`: said of
    an unknown run that suggests no run."""
    kept = {}
    for name, measured in measures.items():
        for run in sorted(set(measured.lines) - run_ids - generated):
            # a typo's likely meaning: a run it lacks, else any (one line of a run mistyped)
            likely = suggestion(run, (run_ids | generated) - set(measured.lines)) or suggestion(
                run, run_ids | generated
            )
            likely = likely or hint
            message = f"run {run!r} is not among the runs of {where}{likely}"
            error = InputError(path, message, measured.lines[run], "run_id")
            problems.report("runs of another judge's leaderboard that are not evaluated", error)
        kept[name] = Measured(*({run: v for run, v in part.items() if run in run_ids} for part in astuple(measured)))
    return kept


def read_autojudge(path, layout: str = "tot") -> dict[str, Measured]:
    """The measures of an AutoJudge leaderboard file, by name; a line that is not four columns, a value that
    is not a finite number, a bad id or a repeated (run, measure, topic) is an error naming its line."""
    seen = FirstLines(path)
    measures: dict[str, Measured] = {}
    for number, row in _rows(path, layout):
        for name in ("run_id", "measure", "topic_id"):
            check_id(path, number, row[name], name)
        key = (row["run_id"], row["measure"], row["topic_id"])
        seen.add(key, number, "topic_id", f"run {key[0]!r}, measure {key[1]!r}, topic {key[2]!r} again")
        value = _value(path, number, row["value"])
        entry = measures.setdefault(row["measure"], Measured({}, {}, {}))
        entry.lines.setdefault(row["run_id"], number)
        if row["topic_id"] == ALL:
            entry.overall[row["run_id"]] = value
        else:
            entry.per_topic.setdefault(row["run_id"], {})[row["topic_id"]] = value
    for name, entry in measures.items():
        only_all = sorted(set(entry.overall) - set(entry.per_topic))
        if entry.per_topic and only_all:
            raise InputError(path, f"measure {name!r}: run {only_all[0]!r} has only an `all` line, other runs "
                             "per-topic lines: give every run its topics, or every run only `all`",
                             entry.lines[only_all[0]], "topic_id")  # fmt: skip
    return measures


def _rows(path, layout: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {column: text}) for each line; a JSON line's ids may be numbers, its value a number."""
    columns = LEADERBOARD_LAYOUTS[layout]
    if layout != "jsonl":
        for number, line in text_lines(path):
            yield number, dict(zip(columns, split_columns(path, number, line, columns, None)))
        return
    for number, record in json_lines(path):
        row = {}
        for name in columns:
            value = record.get(name)
            kinds = str | int | float if name == "value" else str | int  # an id of 101.0 would match no topic
            if value is None or isinstance(value, bool) or not isinstance(value, kinds):
                wanted = "a string or number" if name == "value" else "a string or whole number"
                found = "missing" if value is None else f"expected {wanted}, found {json.dumps(value)}"
                raise InputError(path, found, number, name)
            row[name] = value if isinstance(value, str) else repr(value)
        yield number, row


def check_some_topic(path, measures: dict[str, Measured], known: set[str], what: str, layout: str) -> set[str]:
    """The leaderboard's topics, some of them `known` (`what` they are): none is a file read in another
    column order (`layout`, the order read and where it was set), a measure's name taken for a topic."""
    topics = {t for m in measures.values() for values in m.per_topic.values() for t in values}
    if topics and not topics & known:
        shown = ", ".join(sorted(topics)[:3])
        raise InputError(path, f"no topic ({shown}, ...) is {what}: is the column order {layout} right?")
    return topics


def judged_topics(
    path, measures: dict[str, Measured], judged: set[str], layout: str, complete: bool = False
) -> dict[str, Measured]:
    """The measures with their per-topic values of the judged queries only; the others are left out, counted
    in one warning (a typo would otherwise move a run's mean). None judged at all is an error; an `all`
    line that is not the mean of its topics (AutoJudge's `fix_aggregate` may count missing topics) is a
    warning: the judged topics' values are what is compared (`complete`: a topic a run lacks as 0)."""
    topics = check_some_topic(path, measures, judged, "a judged query", f"`{layout}` (--leaderboard-layout)")
    if unknown := sorted(topics - judged):
        log.warning("%s: %s left out of the means: %s", path, counted(len(unknown), "topic is no judged query and is",
                    "topics are no judged query and are"), listed(unknown))  # fmt: skip
    kept = {}
    for name, measured in measures.items():
        per_topic = {
            run: {t: v for t, v in values.items() if t in judged} for run, values in measured.per_topic.items()
        }
        kept[name] = Measured(per_topic, measured.overall, measured.lines)
        every = len({t for values in per_topic.values() for t in values}) if complete else 0
        for run, overall in measured.overall.items():
            _check_overall(path, name, run, overall, measured.per_topic.get(run), per_topic.get(run) or {}, every)
    return kept


def _check_overall(path, measure: str, run: str, overall: float, its: dict | None, compared: dict, every: int) -> None:
    """Warn where an `all` line is none of the means it may be: of all the run's topics (as the judge took
    it), of its judged topics (`compared`), or over the file's `every` judged topics, 0 where it has none
    (under query_mode all, as examflow compares them then; 0: not that mode)."""
    if not its:
        return
    means = [_mean(its), *([_mean(compared)] if compared else [])]
    means += [math.fsum(compared.values()) / every] if every else []
    if not any(math.isclose(overall, m, rel_tol=1e-9, abs_tol=1e-12) for m in means):
        log.warning("%s: measure %r, run %r: the `all` line (%g) is not the mean of its topics (%g)%s; the judged "
                    "topics are compared", path, measure, run, overall, means[0],
                    f", nor {means[-1]:g} over the judged ones" if not math.isclose(means[-1], means[0]) else "")  # fmt: skip


def _mean(values: dict[str, float]) -> float:
    return math.fsum(values.values()) / len(values)


def _value(path, number: int, text: str) -> float:
    try:
        value = float(number_text(path, number, text, "value"))
    except ValueError:
        header = " (AutoJudge leaderboards have no header line)" if number == 1 else ""
        raise InputError(path, f"value {text!r} is not a number{header}", number, "value") from None
    if not math.isfinite(value):
        raise InputError(path, f"value {text!r} is not a finite number", number, "value")
    return value
