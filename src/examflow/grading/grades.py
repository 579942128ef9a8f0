"""The grades table: one row per (passage, question) pair and method, failures included."""

from __future__ import annotations

import logging
import shlex
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from examflow.bounds import MESSAGE_CHARS, clip
from examflow.errors import FAILED_PAIRS_LINE, TOO_LONG, Failure
from examflow.grading.methods import read_outside_strict, strict_in_every_mode
from examflow.registry import Method

if TYPE_CHECKING:
    from examflow.grading.backends import Answer

log = logging.getLogger(__name__)

GRADE_COLUMNS = [
    "query_id", "facet_id", "passage_id", "question_id", "method", "kind", "model", "prompt", "prompt_hash",
    "raw", "answer", "rating", "correct", "expected", "score", "unparsable", "error", "votes", "margin",
]  # fmt: skip

# What a reader of a grades table needs (a published one, converted, names no `kind` nor `prompt`).
GRADES_READ = ["method", "query_id", "facet_id", "passage_id", "question_id", "rating", "correct", "error"]

GRADE_DTYPES: dict[str, str | type] = {
    "rating": "Int64", "correct": "boolean", "expected": "Float64", "score": "Float64", "unparsable": bool,
    "votes": "Int64", "margin": "Int64",
}  # fmt: skip


def empty_grades() -> pd.DataFrame:
    return pd.DataFrame(columns=GRADE_COLUMNS, dtype=object).astype(GRADE_DTYPES)


def error_kind(error: str) -> str:
    """A failure's kind, the prefix of its error (`timeout`, `http-500`, `malformed`, `unparsable`, ...)."""
    return error.split(":", 1)[0]


def failure_counts(grades: pd.DataFrame) -> dict[str, int]:
    """Failed pairs by kind, most frequent first."""
    return kind_counts(grades["error"].dropna())


def kind_counts(errors: Iterable[str]) -> dict[str, int]:
    """Errors by kind, most frequent first."""
    kinds = Counter(map(error_kind, errors))
    return dict(sorted(kinds.items(), key=lambda item: (-item[1], item[0])))


# Failures a rerun meets again, and what to change instead: answers, cached, and prompts that cannot be asked.
_ASK_AGAIN = "delete the config's `cache_dir`/grades (and an openai back end's `cache_dir`/llm) to ask the model again"
_LASTING_FAILURES = {
    "unparsable": f"; an unparsable answer is an answer and stays: see the method's `mode`, or {_ASK_AGAIN}",
    "cut-off": "; an answer cut at max_tokens is an answer and stays: raise max_tokens, or set cut_off: keep",
    TOO_LONG: "; a prompt with no room for its passage is never asked, and fails again: raise max_input_tokens",
}


# A failure a rerun asks again (never cached) that will likely meet the same
_FILTERED = {"filtered": "; a content filter says the same to the same prompt: another model, server or prompt"}


def unanswered(error: str | None) -> bool:
    """Whether an answer's failure is that the model gave none (an HTTP error, a timeout), not one that
    lasts (an answer cut off at max_tokens or unparsable, a prompt too long to ask)."""
    return error is not None and error_kind(error) not in _LASTING_FAILURES


def check_failures(
    grades: pd.DataFrame,
    method: Method,
    shard: str,
    max_error_rate: float,
    cache_dir: str | None = None,
    out: str = "grade",
) -> None:
    """Log the failed and unparsable pairs; fail when more pairs failed than `max_error_rate` allows, and
    within the allowance warn of them, with how to ask again: `snakemake --forcerun` of the job's table, `out`."""
    errors = grades["error"].dropna().tolist()
    kinds = ", ".join(f"{count} {kind}" for kind, count in kind_counts(errors).items())
    log.info("%d failed pairs%s; %d unparsable answers (mode %s)", len(errors), f" ({kinds})" if kinds else "",
             int(grades["unparsable"].sum()), method.mode)  # fmt: skip
    if read := int((grades["unparsable"] & grades["error"].isna()).sum()):  # grades, yet the model gave none
        log.warning("method %s, shard %s: %d of %d answers are no grade, each read as mode %s says (docs/methods.md "
                    "§3: a grade by the published parse, or none); the grades' `raw` column holds them, and `mode: "
                    "strict` fails them instead",
                    method.name, shard, read, len(grades), method.mode)  # fmt: skip
    if len(errors) <= max_error_rate * len(grades):
        if errors:  # the line a run's end names for this step (examflow.joblogs), not its retries
            log.warning("%s, within grading.max_error_rate = %g: no grade for them; the run goes on "
                        "(`snakemake --forcerun %s` asks again those that got no answer)%s",
                        _failed_pairs(method, shard, errors, len(grades)), max_error_rate, shlex.quote(out),
                        _hint(errors, cache_dir, method))  # fmt: skip
        return
    every_one = len(errors) == len(grades)
    raise Failure(_too_many(method, shard, max_error_rate, errors, len(grades), every_one, cache_dir=cache_dir))


class GaveUp(Exception):
    """A grading job stopped asking its model: more answers had failed than its pairs may. `failures`: the failed
    pairs' errors, in the order asked; `received`: each request's answer, None where it was not asked."""

    def __init__(self, failures: list[str], received: list[Answer | None]):
        super().__init__(f"{len(failures)} answers failed")
        self.failures, self.received = failures, received

    @property
    def unasked(self) -> int:
        return sum(a is None for a in self.received)

    @property
    def answered(self) -> int:
        """The pairs with an answer that did not fail."""
        return len(self.received) - self.unasked - len(self.failures)

    def failure(self, method: Method, shard: str, max_error_rate: float, cache_dir: str | None = None) -> Failure:
        """The job's failure, worded as `check_failures` words one, with the pairs it did not ask."""
        return Failure(_too_many(method, shard, max_error_rate, self.failures, len(self.received),
                                 every_one=self.answered == 0, unasked=self.unasked, cache_dir=cache_dir))  # fmt: skip


def _too_many(
    method: Method,
    shard: str,
    max_error_rate: float,
    errors: list[str],
    total: int,
    every_one: bool,
    unasked: int = 0,
    cache_dir: str | None = None,
) -> str:
    """Why a job failed: its failed pairs by kind and one's error; whether a rerun asks again
    (`every_one`: no pair got an answer); the pairs it stopped before asking."""
    rerun = (
        "No pair got an answer from the model: a rerun asks it again for every pair"
        if every_one and all(map(unanswered, errors))
        else "The answers received are cached: a rerun asks the model again only for the pairs that got none"
    )
    stopped = f": it stopped asking, {unasked} pair{'s' if unasked > 1 else ''} not asked" if unasked else ""
    return (
        f"{_failed_pairs(method, shard, errors, total)}, more than grading.max_error_rate = {max_error_rate:g} "
        f"allows{stopped}. {rerun}{_hint(errors, cache_dir, method)}"
    )


def _failed_pairs(method: Method, shard: str, errors: list[str], total: int) -> str:
    """A job's failed pairs: how many, by kind, and one's error (the kinds alone hide a typo in a URL,
    a 404's why)."""
    kinds = ", ".join(f"{count} {kind}" for kind, count in kind_counts(errors).items())
    return FAILED_PAIRS_LINE % (method.name, shard, len(errors), total, kinds, clip(errors[0], MESSAGE_CHARS))


# UMBRELA's, the nugget and criteria kinds' answers: no `mode` reads one that is not a grade
_UNPARSABLE_IN_EVERY_MODE = (
    f"; an unparsable answer is an answer and stays, and no `mode` of this kind reads it: another model or prompt, "
    f"or {_ASK_AGAIN}"
)
# ... but `mode: strict` refuses some that the others read (UMBRELA's and the criteria's label amid words): the
# cached answers are read again, where deleting the cache paid for every call again (a stranger's trial)
_UNPARSABLE_IN_STRICT = (
    "; an unparsable answer is an answer and stays: `mode: reference` reads a label stated amid words, as this "
    f"kind's authors read it, from the cache without asking again; else another model or prompt, or {_ASK_AGAIN}"
)


def _hint(errors: list[str], cache_dir: str | None, method: Method) -> str:
    """What to change instead of rerunning, for the failures a rerun meets again."""
    failed = kind_counts(errors)
    texts = _LASTING_FAILURES | _FILTERED
    if strict_in_every_mode(method.kind):
        strict = method.mode == "strict" and read_outside_strict(method.kind)
        texts |= {"unparsable": _UNPARSABLE_IN_STRICT if strict else _UNPARSABLE_IN_EVERY_MODE}
    hint = "".join(text for kind, text in texts.items() if kind in failed)
    # `cache_dir` defaults to results/cache, outside results_dir: the folder by name (a stranger looked there)
    return hint + (f" (here: {cache_dir})" if cache_dir and "unparsable" in failed else "")
