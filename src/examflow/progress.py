"""Progress of a run's grading jobs, seen from the console while they run.

Each grading job keeps a small JSON file of its counts under `results_dir/logs/progress/` (one per
method and shard), rewritten atomically as it goes; `run.json` beside them names the run's grading
jobs and when it started. One line sums them up (`progress_line`): the main Snakemake process
prints it at least every period while grading runs (`Reporter`), and `examflow progress` prints it
on demand. Only a shared file system is needed, so it works alike for local and cluster jobs.

The line counts the model's unit of work: prompts for a model that reads them (one a pair for most
methods, but `qa_llm_verify` adds a verification prompt for each answer to a question with a key,
`samples: n` asks each pair n times, and the criteria methods add their aggregation prompts), pairs for
the embedding grader, "requests" where a run has jobs of both. What the grade cache, or an API back
end's reply cache, answers is no work done: the rate and the ETA count only what was sent to the model, over the wall time since this run's
first grading job began. Failures are counted in pairs (grades not given).
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from examflow.errors import Failure, InputError, RunSetting, counted
from examflow.io.tables import write_tables
from examflow.results import last_outcome

log = logging.getLogger(__name__)

FOLDER = "logs/progress"  # under the results folder
RUN = "run.json"
PERIOD_VARIABLE = "EXAMFLOW_PROGRESS_SECONDS"
DEFAULT_PERIOD = 30.0
RUNNING, DONE, FAILED, STOPPED = "running", "done", "failed", "stopped"  # stopped: its process is gone
PROMPTS, PAIRS = "prompts", "pairs"  # a job's unit of work: prompts to a model, or pairs to an embedding grader
WRITE_EVERY = 1.0  # seconds between two rewrites of a job's file; its end is always written


def job_path(results: str | Path, method: str, shard: str) -> Path:
    return Path(results) / FOLDER / method / f"{shard}.json"


@dataclass
class JobCounts:
    """One grading job's counts, in its unit: what the cache answered, what was sent or is to send to the model."""

    job: str  # method/shard
    unit: str = PROMPTS
    cached: int = 0
    shared: int = 0  # the same prompt as another of the job's, answered with it: neither cached nor asked
    to_grade: int | None = None  # None until the job has looked in the cache
    more: bool = False  # a second pass (verification, aggregation) is still to be counted
    graded: int = 0
    unanswered: int = 0  # of the graded, prompts the model gave no answer to (an HTTP error, a timeout)
    failed: int = 0  # graded pairs that got no grade (an HTTP error, a timeout, an unparsable answer), at the end
    started: float = 0.0  # wall-clock seconds (time.time()), comparable across a cluster's nodes
    updated: float = 0.0
    state: str = RUNNING
    host: str = ""  # where its process runs, and which: a job killed outside (SIGKILL, out of memory) is
    pid: int = 0  # found stopped from the same host, though its file still says running


JOB_FIELDS = {field.name for field in fields(JobCounts)}


class JobProgress:
    """A grading job's progress file, rewritten as its back end answers."""

    def __init__(self, path: str | Path, job: str, unit: str = PROMPTS):
        self.path = Path(path)
        now = time.time()
        self.counts = JobCounts(job, unit, started=now, updated=now, host=_host(), pid=os.getpid())
        self.written = 0.0
        self.broken = False
        self._write()

    def planned(self, cached: int, to_grade: int, more: bool = False, shared: int = 0) -> None:
        """A pass over requests: `cached` answered by the cache, `to_grade` to send to the model, `shared` the
        same as another of them; `more`: another pass follows, whose requests depend on this one's answers."""
        self.counts.cached += cached
        self.counts.shared += shared
        self.counts.to_grade = (self.counts.to_grade or 0) + to_grade
        self.counts.more = more
        self._write()

    def graded(self, sent: int, replayed: int = 0, unanswered: int = 0, too_long: int = 0) -> None:
        """`sent` given to the back end, of which `replayed` its own reply cache answered (no work done:
        a job killed between two flushes of the grade cache, or methods that share prompts),
        `unanswered` got no answer (a server down reads as such, not as answered) and `too_long` a local
        model could not take (no room for the passage): never run, so neither answered nor to answer."""
        self.counts.graded += sent - replayed - too_long
        self.counts.unanswered += unanswered
        self.counts.to_grade = (self.counts.to_grade or 0) - replayed - too_long
        self.counts.cached += replayed
        if time.time() - self.written >= WRITE_EVERY:
            self._write()

    def failures(self, pairs: int) -> None:
        """The pairs that got no grade, known once the job has read every answer."""
        self.counts.failed = pairs
        self._write()

    def end(self, state: str) -> None:
        self.counts.state = state
        self._write()

    def _write(self) -> None:
        if self.broken:  # a progress file is a log: it never fails the grading
            return
        self.counts.updated = self.written = time.time()
        try:
            write_tables({self.path: json.dumps(asdict(self.counts))})
        except Failure as error:
            self.broken = True
            log.warning("grading progress is no longer written (the grading goes on): %s", error)


@contextmanager
def job_progress(path: str | Path | None, job: str, unit: str = PROMPTS):
    """A grading job's progress file (None without a path), marked done or failed at the end."""
    progress = JobProgress(path, job, unit) if path else None
    try:
        yield progress
    except KeyboardInterrupt:  # Ctrl-C: a job interrupted is stopped, not failed
        if progress:
            progress.end(STOPPED)
        raise
    except BaseException:
        if progress:
            progress.end(FAILED)
        raise
    if progress:
        progress.end(DONE)


@dataclass
class RunProgress:
    """The grading jobs of one run: those started (with their counts) and those still waiting."""

    jobs: list[JobCounts]
    waiting: int
    ended: bool  # the Snakemake run is over: a job still "running" was stopped
    since: float = 0.0  # when the run started (time.time()); 0: not known
    outcome: str | None = None  # how an ended run ended, as its results folder records it (results.last_outcome)

    def finished(self) -> bool:
        return not self.waiting and all(j.state != RUNNING for j in self.jobs)


def read_progress(results: str | Path) -> RunProgress:
    """This run's grading jobs under `results`: the ones `run.json` names (every job's file when
    there is none), counted only when they started after the run."""
    folder = Path(results) / FOLDER
    run: dict[str, Any] = _read_json(folder / RUN) if (folder / RUN).is_file() else {"started": 0.0, "jobs": None}
    files = {f"{path.parent.name}/{path.stem}": path for path in folder.glob("*/*.json")}
    names = run["jobs"] if run["jobs"] is not None else sorted(files)
    counts = [_job_counts(files[name]) for name in names if name in files]
    started = [c for c in counts if c.started >= run["started"]]  # older ones are an earlier run's
    here = _host()
    for i, job in enumerate(started):
        # read again once its process is found gone: it may have written its end and left meanwhile
        if job.state == RUNNING and _gone(job, here):
            started[i] = _job_counts(files[job.job])
            if started[i].state == RUNNING:
                started[i].state = STOPPED
    ended = bool(run.get("ended"))
    return RunProgress(
        started, len(names) - len(started), ended, run["started"], last_outcome(results) if ended else None
    )


def _host() -> str:
    """This host and its process-id namespace (a container's pids are not the host's)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname()}:{namespace}"


def _gone(job: JobCounts, here: str) -> bool:
    """Whether a job said to run has no process left, as far as this host (`here`) can tell: another
    host's cannot be told."""
    if not job.pid or job.host != here:
        return False
    try:
        os.kill(job.pid, 0)  # a PermissionError: another user's process of that number, alive
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def _job_counts(path: Path) -> JobCounts:
    try:  # a field a later version added is left out: its files read here too
        return JobCounts(**{name: value for name, value in _read_json(path).items() if name in JOB_FIELDS})
    except TypeError as error:
        raise InputError(path, f"not a progress file examflow wrote ({error})") from None


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(path, f"not a progress file examflow wrote ({error})") from None


# Minutes with no grading job started after which the line says where to look: a cluster job that asks
# for more than a node has waits in its queue for ever.
LONG_WAIT = 10


def _long_wait(progress: RunProgress, now: float) -> str:
    minutes = (now - progress.since) / 60 if progress.since and progress.waiting and not progress.ended else 0
    if minutes < LONG_WAIT:
        return ""
    return f" in {minutes:.0f} min (on a cluster, `squeue` says why a job waits: docs/cluster.md, Resources)"


def progress_line(progress: RunProgress, now: float) -> str:
    """`answered 1,920 of 3,345 prompts (57%), 41.3 prompts/s, ETA 0:00:35; grade jobs: 1 running, ...`."""
    jobs = progress.jobs
    if not jobs and progress.ended and progress.waiting:  # not waiting, as in a cluster's queue: never to start
        return f"examflow: grading: {_ended_before(progress)}"
    if not jobs:
        waiting = f"{_jobs(progress.waiting)}, none started yet" if progress.waiting else "no grade job in this run"
        return f"examflow: grading: {waiting}{_long_wait(progress, now)}"
    if not progress.ended and all(j.state == RUNNING and j.to_grade is None for j in jobs):
        waiting = f", {progress.waiting} waiting" if progress.waiting else ""
        return f"examflow: grading: {_jobs(len(jobs))} starting (reading tables, looking in the cache){waiting}"
    graded, to_grade = sum(j.graded for j in jobs), sum(j.to_grade or 0 for j in jobs)
    units = {j.unit for j in jobs}
    unit = units.pop() if len(units) == 1 else "requests"  # prompts to some models, pairs to an embedding grader
    running = 0 if progress.ended else sum(j.state == RUNNING for j in jobs)
    starting = 0 if progress.ended else sum(j.state == RUNNING and j.to_grade is None for j in jobs)
    # The wall time of this run's grading so far: parallel jobs add up their work, not their time.
    seconds = (now if running else max(j.updated for j in jobs)) - min(j.started for j in jobs)
    rate = graded / seconds if seconds > 0 and graded else None
    # A share of a total that jobs or passes not yet counted will add to would read 100% too early.
    all_counted = not (progress.waiting or starting or any(j.more and j.state == RUNNING for j in jobs))
    share = f" ({100 * graded // to_grade}%)" if to_grade and all_counted else ""
    unanswered, cached = sum(j.unanswered for j in jobs), sum(j.cached for j in jobs)
    # every job counted (a cache-only rerun), none with anything to ask: no rate, no share, no "0 of 0"
    idle = all_counted and not to_grade and all(j.to_grade is not None for j in jobs)
    if idle:
        cache = f", the cache answered all {cached:,}" if cached else ""
        words = [f"examflow: no {unit} to ask{cache}"]
    elif any(j.to_grade is not None for j in jobs):
        words = [_answered(graded, unanswered, to_grade, unit, share)]
    else:  # every job stopped (a model that would not load, say) before it counted: not "0 of 0 prompts"
        words = [f"examflow: answered no {unit} (no grade job got as far as counting its {unit})"]
    if (rate or running) and not idle:
        asked = " asked" if unanswered else ""  # not answered: a server down is asked as fast as one up
        words.append(f"{rate:,.1f} {unit}/s{asked}" if rate else f"{unit}/s not known yet")
    # what the running jobs have left: a stopped job's (killed, its process gone) waits for the next run
    left = 0 if progress.ended else sum((j.to_grade or 0) - j.graded for j in jobs if j.state == RUNNING)
    if left > 0 and rate:  # a stopped run has no time left to tell
        partial = "" if all_counted else f" for the {unit} counted so far"
        words.append(f"ETA {_clock(left / rate)}{partial}")
    states = {
        "starting": starting,  # reading their tables, loading the model, looking in the cache
        "running": running - starting,
        "done": sum(j.state == DONE for j in jobs),
        "failed": sum(j.state == FAILED for j in jobs),
        "stopped": sum(j.state == RUNNING for j in jobs) - running + sum(j.state == STOPPED for j in jobs),
        "not started" if progress.ended else "waiting": progress.waiting,
    }
    line = ", ".join(words) + "; grade jobs: " + ", ".join(f"{n} {state}" for state, n in states.items() if n)
    failed = sum(j.failed for j in jobs)
    line += f"; {cached:,} more {unit} answered by the cache" if cached and not idle else ""
    # counted, so that the line's pairs add up to the plan's and the summary's (a stranger's trial)
    shared = sum(j.shared for j in jobs)
    line += f"; {shared:,} more {unit} the same as one asked, answered with it" if shared else ""
    # a failed job stops the run before summary.md is written, and so does a later step that fails (every
    # pair of a method failed, say): each job's log has its counts
    counts = (
        "the grade jobs' logs count"
        if states["failed"]
        else "the grade jobs' logs, and summary.md once the run completes, count"
    )
    pairs = counted(failed, "pair", "pairs")
    return line + (f"; {pairs} failed (no grade: {counts} them by kind)" if failed else "")


def _ended_before(progress: RunProgress) -> str:
    """`the run failed before any of its 2 grade jobs started: ...`, where the run ended with none started."""
    how = {"failed": "failed", "stopped": "was stopped"}.get(progress.outcome or "", "ended")
    where = ": the run's last lines name the step that failed and its log" if progress.outcome == "failed" else ""
    jobs = f"any of its {_jobs(progress.waiting)}" if progress.waiting != 1 else "its one grade job"
    return f"the run {how} before {jobs} started{where}"


def _answered(graded: int, unanswered: int, to_grade: int, unit: str, share: str) -> str:
    """`answered 1,920 of 3,345 prompts (57%)`; with prompts asked but not answered (a server down),
    `answered 0 of 3,345 prompts and got no answer to 3,345 (100% asked)`."""
    if not unanswered:
        return f"examflow: answered {graded:,} of {to_grade:,} {unit}{share}"
    asked = f"{share[:-1]} asked)" if share else ""
    return (
        f"examflow: answered {graded - unanswered:,} of {to_grade:,} {unit} and got no answer to {unanswered:,}{asked}"
    )


def _jobs(count: int) -> str:
    return counted(count, "grade job", "grade jobs")


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def progress_period(environment: dict) -> float:
    """Seconds between two progress lines: $EXAMFLOW_PROGRESS_SECONDS, else 30."""
    text = environment.get(PERIOD_VARIABLE)
    if text is None or not text.strip():  # `EXAMFLOW_PROGRESS_SECONDS=` unsets it, as a shell user means
        return DEFAULT_PERIOD
    try:
        period = float(text)
    except ValueError:
        period = math.nan
    if not (math.isfinite(period) and period > 0):
        raise RunSetting(f"{PERIOD_VARIABLE}: expected a number of seconds above 0, found {text!r}")
    return period


class Reporter:
    """In the main Snakemake process: one progress line at least every `period` seconds while the
    run's grading jobs run, and the last one when they are over (a daemon thread)."""

    def __init__(self, results: str | Path, jobs: Callable[[], list[str]], period: float, emit: Callable[[str], None]):
        self.results, self.jobs, self.period, self.emit = Path(results), jobs, period, emit
        self.names: set[str] = set()
        self.run: dict = {}
        self.last: str | None = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="examflow-progress", daemon=True)

    def start(self) -> None:
        self.run = {"started": time.time(), "jobs": [], "ended": None}
        self.names = set(self.jobs())  # the scheduler has not started: the job set holds still
        self._write_run()  # always: an earlier run's run.json no longer says which jobs are this run's
        self.thread.start()

    def stop(self) -> None:
        """At the end of the run: the last line, if the run graded anything not yet shown."""
        if not self.thread.is_alive():
            return
        self.stopping.set()
        self.thread.join()
        self.run["ended"] = time.time()
        self._write_run()
        self._report(final=True)

    def _loop(self) -> None:
        while not self.stopping.wait(self.period):
            try:
                self._update_jobs()
            except Failure as error:  # run.json could not be written: the line says so, the run goes on
                self.emit(f"examflow: grading progress: {error}")
            self._report(final=False)

    def _update_jobs(self) -> None:
        # The run's jobs grow when a checkpoint adds some (a generated bank); none is ever dropped.
        try:
            names = self.names | set(self.jobs())
        except RuntimeError:  # the scheduler changed its job set meanwhile: next time
            return
        if names != self.names or not (self.results / FOLDER / RUN).exists():
            self.names = names
            self._write_run()

    def _write_run(self) -> None:
        self.run["jobs"] = sorted(self.names)
        write_tables({self.results / FOLDER / RUN: json.dumps(self.run)})

    def _report(self, final: bool) -> None:
        if not self.names:
            return
        try:
            progress = read_progress(self.results)
            line = progress_line(progress, time.time())
        except Failure as error:
            line = f"examflow: grading progress unknown: {error}"
        else:
            if (progress.finished() or final) and line == self.last:
                return  # grading is over and its last line was shown
            if final and not progress.jobs:  # the run stopped before grading: its failure is the news
                return
        self.emit(line)
        self.last = line
