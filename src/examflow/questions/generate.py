"""Question generation with an OpenAI-compatible LLM (docs/methods.md §2, phase 1 of EXAM++).

One prompt per query (TREC DL style) or per query subtopic (TREC CAR style). An answer
that cannot be parsed is asked again, up to `attempts` times in all; the cache keeps every
attempt, so a rerun replays them without an API call.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Protocol, cast

import pandas as pd

from examflow.errors import Failure
from examflow.llm import LLMClient, LLMError
from examflow.prompts import template
from examflow.questions.items import Entry, Item, item_id

log = logging.getLogger(__name__)

_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.DOTALL)
# A list mark to strip: the published enumeration `^\d+[.)]\s*` (not a decimal: 2.5), or a bullet before a space (not
# -40 °C or *bold*).
_ENUMERATION = re.compile(r"^\s*(?:\d+[.)](?!\d)|[-*\u2022](?=\s))\s*")
# A line of a list: a number (not a decimal such as 2.5) or a bullet and a space (not **bold** or ---).
_LIST_LINE = re.compile(r"^\s*(?:\d+[.)](?!\d)|[-*\u2022]\s)\s*\S")


class GenerationError(Failure):
    """Queries left without questions after every attempt."""


# Every attempt's answer is cached: a rerun replays the same answers, even after the server is mended.
RERUN_HINT = ("(every answer is cached, so a rerun replays these: raise `attempts` (questions.attempts, "
              "--attempts) to ask again past them, or delete the cache's llm folder)")  # fmt: skip
FAILED_CALL = "LLM call failed"
FAILED_CALL_HINT = "(a failed call is not cached: a rerun asks again)"


def rerun_hint(reasons: Iterable[str]) -> str:
    """What a rerun does about these failures: cached answers that did not parse come back as they were;
    failed calls, never cached, are asked again; an answer cut at max_tokens is cached and its failure says
    what to change. (A reason is ask_until_parsed's, perhaps after a prefix `...: `; an answer quoted in one
    cannot start a reason.)"""
    calls = [re.match(rf"(?:[^']*: )?{FAILED_CALL} \((cut-off:)?", reason) for reason in reasons]
    unparsable, failed = any(c is None for c in calls), any(c is not None and not c.group(1) for c in calls)
    return " ".join(([RERUN_HINT] if unparsable else []) + ([FAILED_CALL_HINT] if failed else []))


# A prompt a paper printed whole where its format is no sentence of its own, by (style, format): FLAN-T5-EXAM's DL
# prompt ends "Keep the questions short and in a Python list format." (its Table 1).
_WHOLE_PROMPTS = {("qgen-dl", "python-list"): "qgen-dl-python-list"}


def prompt_for(query_text: str, facet_text: str | None, output_format: str) -> tuple[str, str]:
    """(prompt, template name): CAR style for a subtopic, DL style for a whole query, then the output format's
    sentence (`qgen-format-*`); or the whole prompt a paper printed (`_WHOLE_PROMPTS`)."""
    style = "qgen-car" if facet_text else "qgen-dl"
    fields = {"query_title": query_text, "query_subtopic": facet_text}
    if whole := _WHOLE_PROMPTS.get((style, output_format)):
        return template(whole).format(**fields), whole
    return f"{template(style).format(**fields)} {template(f'qgen-format-{output_format}')}", style


def parse_questions(text: str) -> list[str] | None:
    """Questions from a JSON object `{"questions": [...]}`, a JSON or Python list, or the
    enumerated lines of the answer (a chat model's list between an opening and a closing
    sentence); None when the answer is none of these."""
    fenced = _FENCE.search(text)
    body = (fenced.group(1) if fenced else text).strip()
    questions = _structured(body)
    if questions is None or not all(isinstance(q, str) for q in questions):
        # Prose without a numbered or bulleted line stays unparsable: it is no list of questions.
        questions = [line for line in body.splitlines() if _LIST_LINE.match(line)]
    if not questions:
        return None
    cleaned = [_ENUMERATION.sub("", q).strip() for q in questions]
    unique = list(dict.fromkeys(q for q in cleaned if q))
    return unique or None


def _structured(body: str) -> list | None:
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = body.find(opening), body.rfind(closing)
        if start < 0 or end <= start:
            continue
        snippet = body[start : end + 1]
        for load in (json.loads, ast.literal_eval):
            try:
                value = load(snippet)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, dict):
                value = value.get("questions")
            if isinstance(value, list):
                return value
    return None


class _Target(Protocol):
    """A row of a queries table (`examflow.io.queries.QUERY_COLUMNS`) as `itertuples` gives it: a cast, since
    pandas types cells as any scalar; the table's dtype is object, so a whole query's facet is None, not NaN."""

    query_id: str
    facet_id: str | None
    query_text: str
    facet_text: str | None


def generate_bank(queries: pd.DataFrame, llm: LLMClient, output_format: str = "json", attempts: int = 3) -> list[Entry]:
    """A bank entry per query (or subtopic); fails, naming every query that got no questions."""
    targets = list(cast(Iterator[_Target], queries.itertuples(index=False)))
    prompts = [prompt_for(t.query_text, t.facet_text, output_format) for t in targets]
    questions = ask_until_parsed(llm, [(None, p) for p, _ in prompts], [parse_questions] * len(prompts), attempts)
    failed = [i for i, got in enumerate(questions) if isinstance(got, str)]
    if failed:
        lines = [f"  {_name(targets[i])}: {questions[i]}" for i in failed]
        hint = rerun_hint(str(questions[i]) for i in failed)
        # a query with subtopics is asked once per subtopic: those are counted, as they are named
        asked = "queries and subtopics" if any(t.facet_id is not None for t in targets) else "queries"
        raise GenerationError(
            f"no questions for {len(failed)} of {len(targets)} {asked}:\n" + "\n".join(lines) + f"\n{hint}"
        )
    made = datetime.now(UTC).isoformat(timespec="seconds")
    return [_entry(t, cast(list[str], q), name, output_format, llm, made)
            for t, q, (_, name) in zip(targets, questions, prompts)]  # fmt: skip


def ask_until_parsed(
    llm: LLMClient,
    prompts: Sequence[tuple[str | None, str]],
    parsers: Sequence[Callable[[str], list[str] | None]],
    attempts: int,
) -> list[list[str] | str]:
    """Each (system, user) prompt's answer as its parser reads it, asked again while unparsable (the cache
    keeps each attempt: attempt i is its own entry); where none parses in `attempts` tries, or the call
    fails (the client retried it already), the reason, a string."""
    results: list[list[str] | str | None] = [None] * len(prompts)
    last: dict[int, str] = {}
    for attempt in range(attempts):
        pending = [i for i, result in enumerate(results) if result is None]
        users, systems = [prompts[i][1] for i in pending], [prompts[i][0] for i in pending]
        for i, answer in zip(pending, llm.complete_many(users, attempt, systems)):
            if isinstance(answer, LLMError):
                results[i] = f"{FAILED_CALL} ({answer})"
                continue
            parsed = parsers[i](answer)
            if parsed is not None:
                results[i] = parsed
            last[i] = answer
        unparsed = [i for i in pending if results[i] is None]
        if unparsed and attempt + 1 < attempts:  # said: the log showed only the calls it took
            log.warning("%d of %d answers unparsable (the first: %r); asking again, attempt %d of %d",
                        len(unparsed), len(pending), last[unparsed[0]][:120], attempt + 2, attempts)  # fmt: skip
    return [r if r is not None else f"{attempts} unparsable answers, the last: {last[i][:120]!r}"
            for i, r in enumerate(results)]  # fmt: skip


def _name(target: _Target) -> str:
    return f"{target.query_id}/{target.facet_id}" if target.facet_id else target.query_id


def _entry(
    target: _Target, texts: list[str], template_name: str, output_format: str, llm: LLMClient, made: str
) -> Entry:
    info = {
        "generator": "examflow",
        "model": llm.settings.model,
        "prompt_template": template_name,
        "format_instruction": output_format,
        "generated_at": made,
    }
    items = [Item(target.query_id, target.facet_id, item_id(target.query_id, target.facet_id, t), t) for t in texts]
    query_text = f"{target.query_text} / {target.facet_text}" if target.facet_text else target.query_text
    return Entry(target.query_id, target.facet_id, query_text, items, info=info)
