"""Nugget banks created by an LLM as AutoNuggetizer creates them (Pradeep et al. 2024, castorini/nuggetizer's
`Nuggetizer.create`), with its creator and scorer prompts (docs/banks.md).

Per query, the documents go to the creator in windows of `WINDOW`, `[1] text` a line, each call given the
nugget list so far and returning the updated list (at most `max_nuggets`, read as nuggetizer reads it: a
Python list after ```python fences are dropped; the last window's list must not be empty). The final list goes to the scorer in windows of
`WINDOW` nuggets, which labels each `vital` or `okay`. Where nuggetizer asks again up to 500 times and
then keeps the previous list (or labels a window `okay`), examflow asks again up to `attempts` times and
then fails the query: a bank is never silently short. Every answer is cached (`LLMClient`), so a rerun
makes no call.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import cast

import pandas as pd

from examflow.llm import LLMClient
from examflow.prompts import chat_template
from examflow.questions.generate import FAILED_CALL, GenerationError, ask_until_parsed, rerun_hint
from examflow.questions.items import IMPORTANCE, Entry, Item, item_id

WINDOW = 10  # nuggetizer's creator_window_size and scorer_window_size
MAX_NUGGETS = 30  # nuggetizer's creator_max_nuggets
CREATOR, SCORER = "nugget-create", "nugget-score"


def creator_prompt(query: str, documents: list[str], nuggets: list[str], max_nuggets: int) -> tuple[str, str]:
    """(system, user) of the creator for one window of documents, as nuggetizer's `create_nugget_prompt`."""
    system, user = chat_template(CREATOR)
    context = "\n".join(f"[{i + 1}] {text}" for i, text in enumerate(documents))
    fields = {"query": query, "context": context, "nuggets": nuggets, "nuggets_length": len(nuggets),
              "creator_max_nuggets": max_nuggets}  # fmt: skip
    return str(system), user.format(**fields)


def scorer_prompt(query: str, nuggets: list[str]) -> tuple[str, str]:
    """(system, user) of the scorer for one window of nuggets, as nuggetizer's `create_score_prompt`."""
    system, user = chat_template(SCORER)
    return str(system), user.format(query=query, nuggets=nuggets, num_nuggets=len(nuggets))


def parse_list(answer: str) -> list[str] | None:
    """The answer as nuggetizer reads it: fences dropped, a Python literal that must be a list of strings."""
    cleaned = answer.replace("```python", "").replace("```", "").strip()
    try:
        value = ast.literal_eval(cleaned)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return value


def parse_nuggets(answer: str, last: bool, max_nuggets: int) -> list[str] | None:
    """The creator's list (`parse_list`). A query's last window must leave a nugget in it (within `max_nuggets`,
    not blank): the final list is the bank's, and one left empty is asked again, as an unparsable answer is,
    where nuggetizer keeps it. (Cached as it came, an empty list failed every rerun, `attempts` raised or not.)"""
    nuggets = parse_list(answer)
    if nuggets is not None and last and not any(nugget.strip() for nugget in nuggets[:max_nuggets]):
        return None
    return nuggets


def parse_labels(answer: str, count: int) -> list[str] | None:
    """`count` labels, each vital or okay (lower-cased, as nuggetizer keeps them); else None (nuggetizer
    would zip a short list with its nuggets and drop the rest)."""
    labels = parse_list(answer)
    if labels is None or len(labels) != count:
        return None
    lowered = [label.strip().lower() for label in labels]
    return lowered if all(label in IMPORTANCE for label in lowered) else None


@dataclass
class _Query:
    query_id: str
    text: str
    documents: list[str]
    nuggets: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    failure: str | None = None


def create_nugget_banks(
    queries: list[tuple[str, str, list[str]]], llm: LLMClient, attempts: int = 3, max_nuggets: int = MAX_NUGGETS
) -> list[Entry]:
    """A nugget bank entry per (query id, query text, documents); the queries go window by window side by
    side (each window's calls in parallel). Fails naming every query left without nuggets."""
    states = [_Query(query_id, text, documents) for query_id, text, documents in queries]
    for query in states:
        if not query.documents:
            query.failure = "no documents to create nuggets from"
    for start in range(0, max((len(q.documents) for q in states), default=0), WINDOW):
        asked = [q for q in states if q.failure is None and start < len(q.documents)]
        prompts = [creator_prompt(q.text, q.documents[start : start + WINDOW], q.nuggets, max_nuggets) for q in asked]
        lasts = [start + WINDOW >= len(q.documents) for q in asked]
        parsers = [partial(parse_nuggets, last=last, max_nuggets=max_nuggets) for last in lasts]
        for query, last, answer in zip(asked, lasts, ask_until_parsed(llm, prompts, parsers, attempts)):
            if isinstance(answer, str):
                wanted = "nugget texts, at least one" if last else "nugget texts"
                query.failure = f"documents {start + 1}-{start + WINDOW}: {_wanted(answer, wanted)}"
            else:
                query.nuggets = answer[:max_nuggets]
    for query in states:  # a blank nugget would count in |Q|, a repeated one twice (nuggetizer keeps both)
        query.nuggets = list(dict.fromkeys(n.strip() for n in query.nuggets if n.strip()))
    for start in range(0, max_nuggets, WINDOW):
        asked = [q for q in states if q.failure is None and start < len(q.nuggets)]
        windows = [q.nuggets[start : start + WINDOW] for q in asked]
        prompts = [scorer_prompt(q.text, window) for q, window in zip(asked, windows)]
        parsers = [partial(parse_labels, count=len(window)) for window in windows]
        for query, window, answer in zip(asked, windows, ask_until_parsed(llm, prompts, parsers, attempts)):
            if isinstance(answer, str):
                wanted = f"{len(window)} labels, each vital or okay"
                query.failure = f"nuggets {start + 1}-{start + len(window)}: {_wanted(answer, wanted)}"
            else:
                query.labels += answer
    failed = [q for q in states if q.failure is not None]
    if failed:
        lines = "\n".join(f"  {q.query_id}: {q.failure}" for q in failed)
        hint = rerun_hint(cast(str, q.failure) for q in failed)  # cast: the failed ones have a failure
        raise GenerationError(f"no nuggets for {len(failed)} of {len(states)} queries:\n{lines}\n{hint}")
    made = datetime.now(UTC).isoformat(timespec="seconds")
    return [_entry(query, llm, made) for query in states]


def _wanted(reason: str, wanted: str) -> str:
    """An unparsable answer's reason with what the prompt asked for (`['vital']` reads as a list: of too few)."""
    return reason if reason.startswith(FAILED_CALL) else f"{reason} (asked for a Python list of {wanted})"


def _entry(query: _Query, llm: LLMClient, made: str) -> Entry:
    info = {"generator": "examflow (AutoNuggetizer's creator and scorer)", "model": llm.settings.model,
            "prompt_template": f"{CREATOR}, {SCORER}", "documents": len(query.documents), "generated_at": made}  # fmt: skip
    items = [
        Item(query.query_id, None, item_id(query.query_id, None, text), text, "nugget", importance=label)
        for text, label in zip(query.nuggets, query.labels, strict=True)
    ]
    return Entry(query.query_id, None, query.text, items, info=info)


def pool_documents(passages: pd.DataFrame, judgments: pd.DataFrame, which: str) -> dict[str, list[str]]:
    """Each query's documents for the creator: `judged`, its pooled passages judged relevant (label ≥ 1 for
    the query or any subtopic), best label first, then by passage id; `pool`, every pooled passage but the
    gold articles, by passage id."""
    pooled = passages[passages["origin"] != "gold"]
    if which == "pool":
        ordered = pooled.sort_values(["query_id", "passage_id"], kind="stable")
        return _by_query(ordered)
    best = judgments.groupby(["query_id", "passage_id"], as_index=False)["relevance"].max()
    relevant = pooled.merge(best[best["relevance"] >= 1], on=["query_id", "passage_id"])
    ordered = relevant.sort_values(["query_id", "relevance", "passage_id"], ascending=[True, False, True])
    return _by_query(ordered)


def _by_query(ordered: pd.DataFrame) -> dict[str, list[str]]:
    return {str(query): group["text"].tolist() for query, group in ordered.groupby("query_id", sort=True)}
