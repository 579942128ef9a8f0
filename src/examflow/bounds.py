"""Bounds on the text examflow keeps of what others wrote (model replies, servers' messages): a
reply of any size must not make a grades table, a cache or a log of that size."""

from __future__ import annotations

from collections.abc import Callable

STORED_CHARS = 2000  # of a grade row's raw answer, parsed answer and error
MESSAGE_CHARS = 300  # of a server's message in an error or a log line
# of a log's line named again at a run's end: examflow's words around such a message (a failed-pairs warning with
# every hint, 1,100 and more) stay whole, a line of a hostile size does not
LINE_CHARS = 2000
# A pooled passage past any grader's reading (a local model reads 512 tokens, an API model's context some 10^5):
# graded all the same, but a local grader tokenises it whole (a 50 MB passage took 7 GB: a stranger's trial).
LONG_PASSAGE_CHARS = 1_000_000


def clip(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def clip_middle(text: str, limit: int) -> str:
    """`text`, or its first and last `limit // 2` characters and how many between were left out: a warning's
    end says what to do (`snakemake --forcerun`, a setting to raise), which `clip` would cut. A text that the
    marker would not shorten stays whole."""
    half = limit // 2
    marker = f" … [{len(text) - 2 * half} characters] … "
    if len(text) - 2 * half <= len(marker):
        return text
    return f"{text[:half]}{marker}{text[len(text) - half :]}"


def served_name(value: object, kept: Callable[[str], str] = str) -> str | None:
    """A model's name as a reply or a cache entry gives it, bounded (`kept`: made fit to keep); None for no
    name (a missing one, an empty one, one that is no text)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return clip(kept(value), MESSAGE_CHARS)
