"""Expected failures: input errors that point at the file, line and field a person has to fix,
configuration errors that name the key, and runs that failed for a reason a person can act on.
The CLI prints each as one line and exits 2; anything else is a bug and keeps its traceback."""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
PRINTED = "examflow: error: "  # what the command line prints before a Failure (a job's log holds it)
INTERRUPTED_LINE = "examflow: interrupted (outputs are written only when a step completes)"  # Ctrl-C
TERMINATED_LINE = ("examflow: stopped by SIGTERM: a cluster's time limit, scancel, or kill (outputs are written only "
                   "when a step completes)")  # fmt: skip
DONE = "examflow: done"  # the line a command logs last when it completes: a job's log without it was stopped
# What an LLM client logs, warnings, before it tries a failed call again (examflow.llm): a wait a 429 asked for
# cut to max_retry_after, then the retry. No failure yet, so a step's end names its first other warning
# (examflow.joblogs), such as how many of its pairs failed at last.
RETRY_AFTER_LINE = "Retry-After asks for %.0f s; waiting max_retry_after = %.0f s (the LLM's option)"
RETRY_LINE = "LLM call failed (%s); retry %d in %.1f s"
# How a grading job states its failed pairs (examflow.grading.grades): a step's end names this warning of its
# log before the others (a server's other model named first hid the count among `13 more warnings`). The
# error shown is one pair's in the table's order, not the earliest in time: `e.g.`.
FAILED_PAIRS_LINE = "method %s, shard %s: %d of %d pairs failed (%s; e.g. %s)"
# How rows dropped under `validation: warn` are counted (Problems.summarise): named before a step's other
# warnings but failed pairs (a byte-order mark's notice, logged first, hid a run's passages dropped).
DROPPED_LINE = "%d × %s, dropped (first: %s)"


def _logged(template: str) -> str:
    """A pattern of the messages a %-format logs: each of its fields any text."""
    return "".join(
        re.escape(part) if i % 2 == 0 else ".*" for i, part in enumerate(re.split(r"(%[-.\d]*[sdf])", template))
    )


_RETRYING = re.compile("|".join(map(_logged, (RETRY_AFTER_LINE, RETRY_LINE))), re.DOTALL)


_FAILED_PAIRS = re.compile(_logged(FAILED_PAIRS_LINE), re.DOTALL)
_DROPPED = re.compile(_logged(DROPPED_LINE), re.DOTALL)


def announces_retry(message: str) -> bool:
    """Whether a logged message is one of an LLM client's lines before a retry (RETRY_AFTER_LINE, RETRY_LINE)."""
    return _RETRYING.fullmatch(message) is not None


def counts_failed_pairs(message: str) -> bool:
    """Whether a logged message is a grading job's count of its failed pairs (FAILED_PAIRS_LINE)."""
    return _FAILED_PAIRS.match(message) is not None


def counts_dropped_rows(message: str) -> bool:
    """Whether a logged message counts input rows dropped under `validation: warn` (DROPPED_LINE)."""
    return _DROPPED.match(message) is not None


# The failure of a prompt never sent: more had failed than the grading job may fail (examflow.llm.LLMClient.replies).
NOT_ASKED = "not-asked"
# The failure of a prompt a local model cannot take: no room for its passage within max_input_tokens.
TOO_LONG = "too-long"


class Terminated(KeyboardInterrupt):
    """SIGTERM (a cluster's time limit, `scancel`, `kill`), raised as Ctrl-C is: the step stops as it does on
    Ctrl-C (its progress file says stopped, its log why, its caches keep what was flushed), where the signal's
    default ended the process at once and left a progress file that said running, on another host for ever."""


class Failure(Exception):
    """An expected failure: its message is the whole story for the person running examflow."""


@dataclass
class InputError(Failure):
    """A problem in a user's input file; `str()` reads `path:line: field 'x': message`."""

    path: str | Path
    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        path = str(self.path) or "''"  # an empty path given, which would read as no path at all
        where = path if self.line is None else f"{path}:{self.line}"
        what = self.message if self.field is None else f"field '{self.field}': {self.message}"
        return f"{where}: {what}"


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """An OSError inside names `path` where it names no file: a write or flush that fills the disk
    names none, and the command line said `output: cannot write` (a stranger's full cache disk)."""
    try:
        yield
    except OSError as error:
        if error.filename is None:
            error.filename = str(path)
        raise


def file_in_the_way(path: str, folder: bool = False) -> str | None:
    """What is in the way, in words, where `path` needs a folder: an existing file (or broken link) above
    it (`a file/x` cannot be made), or at it for a `folder` (`a file/` names one, and exists() is false
    there); else None. Found before any work, not by the first mkdir after it."""
    place = os.path.abspath(path)  # `a file/` and `a file/.` are `a file`
    place = place if folder else os.path.dirname(place)
    while not os.path.lexists(place):  # a broken link is in the way: exists() walked past it
        place = os.path.dirname(place)
    if os.path.isdir(place):
        return None
    return f"{place!r} is {'a file' if os.path.exists(place) else 'a broken link'}, not a folder"


class RunSetting(Failure):
    """A bad setting of the run that is in no config file (an environment variable, a profile's resource),
    which its message names."""


class ConfigError(InputError):
    """A problem in the configuration: `str()` reads `config key.path: message`; never echoes a secret."""

    def __init__(self, key: str, message: str):
        self.key = key
        # A command-line option (`--method.backend.x`) names itself; anything else is a config key.
        super().__init__(key if key.startswith("-") else f"config {key}", message)


class Problems:
    """Recoverable input problems of one kind (say, pooled passages missing from the corpus).

    In `error` policy the first problem is raised; in `warn` policy each is counted, the
    caller drops the offending record, and `summarise()` logs the counts with a first example.
    """

    def __init__(self, policy: str):
        if policy not in ("error", "warn"):
            raise ValueError(f"problem policy must be 'error' or 'warn', not {policy!r}")
        self.policy = policy
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, InputError] = {}

    def report(self, kind: str, error: InputError) -> None:
        if self.policy == "error":
            raise error
        self.counts[kind] += 1
        self.examples.setdefault(kind, error)

    def summarise(self) -> None:
        for kind, count in sorted(self.counts.items()):
            log.warning(DROPPED_LINE, count, kind, self.examples[kind])


def first_line(error: BaseException, limit: int = 200) -> str:
    """An exception's first line (its type's name where it says nothing), cut to `limit` characters: a
    library's message inside one of examflow's one-line messages."""
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:limit]


def a(noun: str) -> str:
    """`noun` with its indefinite article: "an integer", "a string"."""
    return f"an {noun}" if noun[0] in "aeiou" else f"a {noun}"


def counted(number: int, one: str, more: str) -> str:
    """A count with its noun (and verb) agreeing: `counted(n, "query has", "queries have")`."""
    return f"1 {one}" if number == 1 else f"{number:,} {more}"


def listed(names: Sequence[str], most: int = 5) -> str:
    """The first `most` names, comma-separated, `...` after them where there are more: a message's examples."""
    return ", ".join(names[:most]) + (", ..." if len(names) > most else "")


def repeated(names: Iterable[str]) -> str | None:
    """The first name given twice (methods and rankers name their output files, columns their cells), or None."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def closest(name: object, known: Iterable[object]) -> str | None:
    """The one of `known` that `name` is a likely typo of, or None. The same name in other case is one
    too: difflib, case-sensitive, takes `BM25` for no `bm25`."""
    if not isinstance(name, str):
        return None
    names = [k for k in known if isinstance(k, str)]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6) or [k for k in names if k.lower() == name.lower()]
    return close[0] if close else None


def suggestion(name: object, known: Iterable[object], also: Mapping[str, str] | None = None) -> str:
    """` (did you mean 'x'?)` for another tool's name of one of `known` (`also`: the OpenAI SDK's `max_retries`,
    which spelling alone takes for `max_retry_after`) or a likely typo of one (`closest`), else nothing."""
    close = (also or {}).get(name) if isinstance(name, str) else None
    close = close if close is not None else closest(name, known)
    return f" (did you mean {close!r}?)" if close is not None else ""
