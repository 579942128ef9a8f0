"""Job logs: a rerun keeps every earlier attempt's log beside the new one."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import takewhile
from pathlib import Path
from typing import Any

from examflow.bounds import LINE_CHARS, clip_middle
from examflow.errors import (
    DONE,
    INTERRUPTED_LINE,
    PRINTED,
    TERMINATED_LINE,
    announces_retry,
    counts_dropped_rows,
    counts_failed_pairs,
    listed,
)

# What a step's log says when it holds neither an expected failure nor the line of a step done.
STOPPED = "the step stopped without an error of its own: killed (out of memory, a time limit, a signal)"
# An empty log: a job killed at once, or one a cluster's scheduler never ran (sbatch's error is Snakemake's)
# (A signal, or the memory running out, within a job's first seconds, while it imports, leaves it as empty: the
# exit status that tells the two apart is Snakemake's alone.)
SILENT = ("the step wrote nothing: killed before its first line (a signal, out of memory: Snakemake's output "
          "above gives its exit status, 137 for SIGKILL), or it never started (on a cluster: a job the scheduler "
          "refused or cancelled; its error is in Snakemake's output above)")  # fmt: skip
INTERRUPTED = "the step was interrupted"
TERMINATED = "the step was stopped by SIGTERM: a cluster's time limit, scancel, or kill"
NO_STEP_FAILED = ("examflow: no step of this run failed by its log: the run was stopped (Ctrl-C, SIGTERM to "
                  "snakemake), or Snakemake's own error above stopped it (mend that first); what completed is kept, "
                  "and a rerun goes on from there")  # fmt: skip
BUG = "the step stopped on an unexpected error, a bug in examflow: its log holds the traceback; please report it"


def failures_logged(folder: str | Path, since: float) -> list[tuple[Path, str]]:
    """The logs under `folder` written since `since` (a run's start) of steps that did not complete, each
    with what stopped it: an expected failure's line, or else how it ended (`stopped`): what a failed run
    ends by naming, where Snakemake's output shows it inside each failed job's log among its own lines."""
    return [(log, ended) for log, lines in _logs_since(folder, since) if (ended := _what_stopped(lines))]


def _what_stopped(lines: list[str]) -> str | None:
    """What stopped the step whose log holds `lines`: its expected failure's line, or else how it ended; None
    where it completed."""
    errors = [i for i, line in enumerate(lines) if line.startswith(PRINTED)]
    if errors:
        return _first_lines(lines, errors[-1])
    return None if any(line.endswith(DONE) for line in lines) else stopped(lines)


def _first_lines(lines: list[str], start: int) -> str:
    """An error's first line; where it ends in a colon, a list follows it (`no questions for 4 of 4 queries:`,
    then an indented line per query, `  q1: why`): its first item too, or the line named nothing of why, and
    the others by their names (`2 of 4` named one query: a stranger's trial)."""
    message = lines[start].removeprefix(PRINTED)
    first = next((i for i in range(start + 1, len(lines)) if lines[i].strip()), None)
    if not message.endswith(":") or first is None:
        return message
    following = lines[first].strip()
    # an item is `  NAME: why`, and a name may hold a colon itself (TREC CAR's `enwiki:Aftertaste`)
    items = takewhile(lambda line: line.startswith("  "), lines[first + 1 :])
    others = [line.strip().split(": ", 1)[0] for line in items]
    return f"{message} {following}" + (f"; and {listed(others)}" if others else "")


def _logs_since(
    folder: str | Path, since: float, key: Callable[[Path], Any] | None = None, pattern: str = "*.log"
) -> Iterator[tuple[Path, list[str]]]:
    """The job logs under `folder` written since `since` (a run's start), in `key`'s order, each with its
    lines; one moved aside by a retry (unless `pattern` asks for those), or unreadable, is skipped: the log
    itself is no failure."""
    for log in sorted(Path(folder).rglob(pattern), key=key):
        try:
            if log.stat().st_mtime >= since:
                yield log, log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue


# A line examflow's logging wrote (examflow.cli's format): a log without one is of a step examflow never ran in.
LOGGED = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ examflow[\w.]*: ")


def stopped(lines: list[str]) -> str:
    """How a step whose log (its `lines`) names no failure and no end ended."""
    said = [line for line in lines if line.strip()]
    if TERMINATED_LINE in lines:
        return TERMINATED
    # Ctrl-C before examflow's own handler is in place (the step still importing): Python's traceback
    if INTERRUPTED_LINE in lines or (said and said[-1].strip() == "KeyboardInterrupt"):
        return INTERRUPTED
    if "Traceback (most recent call last):" in lines:
        return BUG
    if said and not any(LOGGED.match(line) for line in said):  # `python: command not found`, a broken env
        return f"the step failed before examflow ran: {said[-1]}"
    return STOPPED if said else SILENT


def retries_logged(folder: str | Path, since: float) -> list[tuple[Path, str]]:
    """The steps of this run whose attempt did not complete and that were run again (`retries`: a preempted
    node, a model that failed), each by its latest such attempt: the log `keep_earlier` moved aside
    (`NAME.log.N`), written since `since`, with what stopped it. (An earlier run's attempt, moved aside in this
    one, was written before it started.)"""
    latest: dict[Path, tuple[int, Path, str]] = {}
    for log, lines in _logs_since(folder, since, pattern="*.log.*"):
        if log.suffix[1:].isdigit() and (ended := _what_stopped(lines)):
            attempt, step = int(log.suffix[1:]), log.with_suffix("")
            if attempt > latest.get(step, (0,))[0]:
                latest[step] = (attempt, log, ended)
    return [(log, ended) for _, log, ended in latest.values()]


def name_retries(folder: str | Path, since: float, most: int = 8) -> None:
    """`onsuccess`: the steps of this run that completed only when run again, one line on stderr for the steps
    whose attempts stopped alike (the tables are whole, but a cluster's preempted nodes or a flaky model are
    worth knowing of); past `most` lines, how many more steps."""
    alike: dict[str, list[Path]] = {}
    for log, message in retries_logged(folder, since):
        alike.setdefault(message, []).append(log)

    def line(message: str, logs: list[Path]) -> str:
        steps = "a step" if len(logs) == 1 else f"{len(logs)} steps"
        whose = "that attempt's log" if len(logs) == 1 else "their attempts' logs"
        return (f"{steps} completed when run again; an earlier attempt stopped: {_shown(message)} "
                f"({whose}: {_listed(logs)})")  # fmt: skip

    _say_alike(alike, most, line, f"completed when run again (their logs are under {folder})")


def name_failures(folder: str | Path, since: float, parsed: Iterable[str] = ()) -> None:
    """`onerror` (Snakemake's main process): first the warnings of the parse and of the steps that completed
    (`name_warnings`: the rerun after a mend runs those steps no more, and would never name them; a stranger's
    trial), then each expected failure this run's steps stopped on, one line each on stderr, last in the
    output; where none did, that the run was stopped (SIGTERM to snakemake ended it with Snakemake's `At least
    one job did not complete` alone, a stranger's trial)."""
    failed = failures_logged(folder, since)
    name_warnings(folder, since, parsed, leave_out={log for log, _ in failed})
    # Ctrl-C in a terminal interrupts the jobs with snakemake: each one's log says so, and none failed
    interrupted = [log for log, message in failed if message == INTERRUPTED]
    for log, message in failed:
        if message != INTERRUPTED:
            print(f"examflow: a step failed: {message} (its log: {log})", file=sys.stderr)
    if interrupted:
        steps = "a step" if len(interrupted) == 1 else f"{len(interrupted)} steps"
        own = "its" if len(interrupted) == 1 else "their"
        print(f"examflow: the run was interrupted (Ctrl-C): {steps} stopped unfinished, with no failure of {own} "
              f"own ({_listed(interrupted)}); what completed is kept, and a rerun goes on from there",
              file=sys.stderr)  # fmt: skip
    elif not failed:
        print(NO_STEP_FAILED, file=sys.stderr)


def warnings_logged(folder: str | Path, since: float) -> list[tuple[Path, str, int]]:
    """The logs under `folder` written since `since` that hold warnings, each with its headline warning's text
    (its first line) and how many it holds: what a run that completes names at its end, where Snakemake
    shows no log of a job that succeeded (rows dropped under `validation: warn`, runs off the leaderboard).
    The headline is the first warning that announces no retry: a grading job's retries come before the line
    that counts the pairs that failed in the end, the one a person has to read."""
    found = []
    # the steps of one job first (pool, bank, judges, evaluate, ...), then grading's many shards, whose
    # warnings could fill every line
    for log, lines in _logs_since(folder, since, key=lambda log: (log.relative_to(folder).parts[0] == "grade", log)):
        warned = [line for line in lines if (match := LOGGED.match(line)) and " WARNING " in match.group()]
        messages = [LOGGED.sub("", line, count=1) for line in warned]
        if messages:
            found.append((log, _headline(messages), len(messages)))
    return found


def _headline(messages: list[str]) -> str:
    """The warning a step's end names: its count of failed pairs, else of rows dropped, else its first that
    announces no retry."""
    for named in (counts_failed_pairs, counts_dropped_rows, lambda message: not announces_retry(message)):
        if found := next((message for message in messages if named(message)), None):
            return found
    return messages[0]


class ParseWarnings(logging.Handler):
    """The warnings of the workflow's parse (a threshold no grade reaches, runs off the official leaderboard),
    kept to be named again when the run ends: printed before anything ran, they are far out of sight then.
    (The Snakefile removes it from its logger where the parse ends: later warnings are not the parse's.)"""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "repeat", True):  # `extra={"repeat": False}`: a warning of the start alone
            self.messages.append(record.getMessage())


def name_warnings(
    folder: str | Path, since: float, parsed: Iterable[str] = (), most: int = 8, leave_out: Collection[Path] = ()
) -> None:
    """`onsuccess` (Snakemake's main process): each warning of the parse (`parsed`), and each step of this
    run that warned, its headline warning (`warnings_logged`), one line each on stderr (steps whose headlines
    are the same, one line: a judge's scale said by each of its steps hid the retries after it); past `most`
    lines, how many more steps. `leave_out`: logs of steps that failed, named as such."""
    parsed = list(dict.fromkeys(parsed))  # each once
    for message in parsed:
        print(f"examflow: the configuration warned: {_shown(message)}", file=sys.stderr)
    # a step that warned only what the parse did (the runs off the official leaderboard, again) is said above
    said = {(message, 1) for message in parsed}
    alike: dict[str, list[tuple[Path, int]]] = {}
    for log, first, count in warnings_logged(folder, since):
        if (first, count) not in said and log not in leave_out:
            alike.setdefault(first, []).append((log, count))
    _say_alike(alike, most, _warned, f"warned (their logs are under {folder})")


def _say_alike(alike: dict[str, list], most: int, line: Callable[[str, list], str], rest: str) -> None:
    """One line on stderr for each group of steps alike (`line` of its message and its steps), `most` lines at
    most; then how many more steps `rest` says of."""
    for message, steps in list(alike.items())[:most]:
        print(f"examflow: {line(message, steps)}", file=sys.stderr)
    if more := sum(len(steps) for steps in list(alike.values())[most:]):
        print(f"examflow: {more} more step{'s' if more > 1 else ''} {rest}", file=sys.stderr)


def _warned(first: str, steps: list[tuple[Path, int]]) -> str:
    """The line of the steps whose headline warning is `first`, each (its log, how many warnings it holds)."""
    if len(steps) == 1:
        log, count = steps[0]
        # its other warnings, not failed pairs or steps (a stranger read `and 2 more` of retries as either)
        more = f"and {count - 1} more warning{'s' if count > 2 else ''}; " if count > 1 else ""
        return f"a step warned: {_shown(first)} ({more}its log: {log})"
    logs = _listed([log for log, _ in steps])
    # their other warnings counted, as one step's are: without, a step's dropped rows went unseen (a stranger)
    others = sum(count for _, count in steps) - len(steps)
    also = f", and {others} more warning{'s' if others > 1 else ''}" if others else ""
    return f"{len(steps)} steps warned: {_shown(first)} (the headline of their warnings{also}; their logs: {logs})"


def _shown(message: str) -> str:
    """A log's line as a run's end names it: whole, unless of a hostile size (its start and its end)."""
    return clip_middle(message, LINE_CHARS)


def _listed(logs: list[Path]) -> str:
    """The first two logs by name, then how many more."""
    return ", ".join(map(str, logs[:2])) + (f" and {len(logs) - 2} more" if len(logs) > 2 else "")


def keep_earlier(log: str | Path) -> Path | None:
    """Move an existing `NAME.log` to the first free `NAME.log.N` (N = 1, 2, ...: the order of the
    attempts), so that the job about to write `NAME.log` does not overwrite it; where it went, if
    anywhere."""
    log = Path(log)
    if not log.exists():
        return None
    number = 1
    while Path(f"{log}.{number}").exists():
        number += 1
    kept = Path(f"{log}.{number}")
    os.replace(log, kept)
    return kept


class KeepEarlierLogs(logging.Filter):
    """On Snakemake's logger in its main process: when a record of kind `event` announces a job (by
    its `jobid`), that job's earlier logs move aside. Snakemake announces every job, a retried one
    and one a checkpoint adds included, before it removes the job's logs, locally and on a cluster."""

    def __init__(self, event: str, logs_of: Callable[[int], Iterable[str]], warn: Callable[[str], None]):
        super().__init__()
        self.event, self.logs_of, self.warn = event, logs_of, warn

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "event", None) == self.event:
            jobid: int = record.jobid  # type: ignore[attr-defined]  # an extra field Snakemake's logger adds, like `event`
            for log in self.logs_of(jobid):
                try:
                    keep_earlier(log)
                except OSError as error:  # the job still runs; its log replaces the earlier one
                    self.warn(f"examflow: the earlier log {log} could not be kept: {error}")
        return True  # the record itself is shown as ever
