"""TREC AutoJudge's bank formats (trec-auto-judge's `autojudge_base.nugget_data`), read and written.

- Question banks, `NuggetBanks` v3: one line per query `{"query_id", "title_query", "format_version": "v3",
  "nugget_bank": {question text: {"question", "question_id", "query_id", "answers"?, ...}}}` (or the
  questions as a list); `answers` keyed by answer text (or a list of `{"answer", ...}`) become the answer
  key. examflow's ids are its own (`query/md5(text)`); AutoJudge's `question_id` (md5 of the text) and
  every other field are kept. A subtopic goes in the question's `metadata.facet_id` and comes back from
  there.
- Nugget banks, `NuggetizerNuggetBanks`: nuggetizer's own lines `{"qid", "query", "nuggets": [{"text",
  "importance"}]}`, which `examflow.questions.bank.read_bank` reads as nuggetizer's; the query's text is
  required there, and a nugget bank with subtopics has no such form: both are refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
from itertools import takewhile
from pathlib import Path
from typing import Any

from examflow.errors import InputError, counted
from examflow.io.lines import required_id
from examflow.questions.items import Entry, Item, item_id, write_records

log = logging.getLogger(__name__)

V3 = "v3"


def is_v3(record: dict) -> bool:
    return record.get("format_version") == V3 or "nugget_bank" in record


def v3_entries(path, number: int, record: dict) -> list[tuple[Entry, list[str]]]:
    """The entries (one per subtopic named in the questions' metadata, and the query's own) of a v3 line, each with
    its items' places in the line (`nugget_bank[2]`)."""
    query_id = required_id(path, number, record, "query_id")
    if record.get("format_version", V3) != V3:
        raise InputError(path, f"format_version {record['format_version']!r}: examflow reads AutoJudge's v3", number,
                         "format_version")  # fmt: skip
    listed = record.get("nugget_bank")
    questions = list(listed.values()) if isinstance(listed, dict) else listed
    if isinstance(listed, dict):
        _warn_rekeyed(path, number, listed)
    if not isinstance(questions, list):
        raise InputError(path, "expected an object or a list of questions", number, "nugget_bank")
    extra = {k: v for k, v in record.items() if k not in ("query_id", "title_query", "format_version", "nugget_bank")}
    entries: dict[str | None, Entry] = {}
    places: dict[str | None, list[str]] = {}  # each item's place in the line, `nugget_bank[2]`, by its entry
    ids: dict[str, str] = {}  # AutoJudge's question ids, each with its place
    for index, raw in enumerate(questions):
        where = f"nugget_bank[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("question"), str):
            raise InputError(path, "expected a question object with a `question` text", number, where)
        _claim_id(path, number, ids, raw.get("question_id"), where)
        metadata = raw["metadata"] if isinstance(raw.get("metadata"), dict) else {}
        facet, choices = metadata.get("facet_id"), metadata.get("choices")
        if facet is not None and not isinstance(facet, str):
            raise InputError(path, "expected a string", number, f"{where}.metadata.facet_id")
        if choices is not None and not (
            isinstance(choices, dict) and all(isinstance(c, str) for c in choices.values())
        ):
            raise InputError(path, "expected an object of choice texts by key", number, f"{where}.metadata.choices")
        entry = entries.setdefault(facet, Entry(query_id, facet, record.get("title_query"), [], extra=extra))
        text = raw["question"]
        kept = {k: v for k, v in raw.items() if k not in ("question", "query_id")}  # answers kept whole
        entry.items.append(Item(query_id, facet, item_id(query_id, facet, text), text,
                                gold_answers=_answers(path, number, raw.get("answers"), f"{where}.answers"),
                                choices=choices, extra={"autojudge": kept}))  # fmt: skip
        places.setdefault(facet, []).append(where)
    found = [(entry, places[facet]) for facet, entry in entries.items()]
    return found or [(Entry(query_id, None, record.get("title_query"), [], extra=extra), [])]


def _claim_id(path, number: int, ids: dict[str, str], question_id: object, where: str) -> None:
    """AutoJudge's `question_id` names one question of its query: written back twice (bank-export keeps it), a
    reader keyed by it would take one question for the other."""
    if question_id is None:
        return
    if isinstance(question_id, bool) or not isinstance(question_id, (str, int)):
        raise InputError(path, f"expected a string or whole number, not {json.dumps(question_id)}", number,
                         f"{where}.question_id")  # fmt: skip
    if (named := str(question_id)) in ids:  # `1` and "1" are one id, as every id read elsewhere
        raise InputError(path, f"{named!r} is already the id of {ids[named]}: an id names one question", number,
                         f"{where}.question_id")  # fmt: skip
    ids[named] = where


def _warn_rekeyed(path, number: int, bank: dict) -> None:
    """A question keyed by another text than its own (one of the two edited): its `question` is graded."""
    other = [
        (key, raw["question"]) for key, raw in bank.items() if isinstance(raw, dict) and raw.get("question") != key
    ]
    if other:
        log.warning("%s:%d: %s keyed by another text than %s `question`, which is graded (first: key %r, question "
                    "%r)", path, number, counted(len(other), "question", "questions"),
                    "its" if len(other) == 1 else "their", *other[0])  # fmt: skip


def _answers(path, number: int, answers: Any, where: str) -> list[str] | None:
    """An answer key from AutoJudge's answers: a dict keyed by answer text, or a list of `{"answer"}`."""
    if answers is None:
        return None
    texts: list | None = None
    if isinstance(answers, dict):
        texts = list(answers)
    elif isinstance(answers, list):
        texts = [answer.get("answer") if isinstance(answer, dict) else answer for answer in answers]
    if texts is None or not all(isinstance(text, str) for text in texts):
        raise InputError(path, "expected an object keyed by answer text, or a list of {answer: text}", number, where)
    return texts or None


def autojudge_records(entries: list[Entry], path) -> list[dict[str, Any]]:
    """A line per query: AutoJudge v3 for a question bank, nuggetizer's for a nugget bank."""
    kinds = {item.kind for entry in entries for item in entry.items}
    if len(kinds) > 1:
        raise InputError(path, "holds questions and nuggets: AutoJudge banks hold one or the other")
    by_query: dict[str, list[Entry]] = {}
    for entry in entries:
        by_query.setdefault(entry.query_id, []).append(entry)
    if kinds == {"nugget"}:
        return [_nuggetizer_record(path, query, group) for query, group in by_query.items()]
    return [_v3_record(query, group) for query, group in by_query.items()]


def _v3_record(query_id: str, entries: list[Entry]) -> dict[str, Any]:
    bank = []
    for entry in entries:
        for item in entry.items:
            kept = dict(item.extra.get("autojudge", {}))
            question = {"question": item.text, "question_id": kept.pop("question_id", _md5(item.text)),
                        "query_id": query_id}  # fmt: skip
            given = kept.pop("answers", None)
            if item.gold_answers and _answers(None, 0, given, "") != item.gold_answers:  # a key edited here
                given = {answer: {"answer": answer} for answer in item.gold_answers}
            if given is not None and item.gold_answers:
                question["answers"] = given
            # AutoJudge's questions have no subtopic nor choices: both go into its free-form metadata
            metadata = dict(kept.get("metadata", {}))  # keys set again keep their places: a re-export is the same
            if entry.facet_id is not None:
                metadata["facet_id"] = entry.facet_id
            if item.choices:
                metadata["choices"] = item.choices
            if metadata:
                kept["metadata"] = metadata
            bank.append(question | kept)
    title = _page_text(entries)
    extra = next((e.extra for e in entries if e.extra), {})
    return {"query_id": query_id, "title_query": title, "format_version": V3} | extra | {"nugget_bank": bank}


def _page_text(entries: list[Entry]) -> str | None:
    """A query's own text for `title_query`: its page entry's; else what its subtopic entries' texts share
    before their last ` / ` (a generated bank writes `page / subtopic`: the first subtopic's whole text titled
    its page, a stranger's trial; and a page's own title may hold ` / `); else the first entry's."""
    page = next((e.query_text for e in entries if e.facet_id is None and e.query_text), None)
    parts = [e.query_text.split(" / ")[:-1] for e in entries if e.query_text]
    same = takewhile(lambda column: len(set(column)) == 1, zip(*parts)) if len(parts) == len(entries) else ()
    shared = [column[0] for column in same]  # whole parts, never a part cut short
    return page or (" / ".join(shared) if shared else entries[0].query_text)


def _nuggetizer_record(path, query_id: str, entries: list[Entry]) -> dict[str, Any]:
    if any(entry.facet_id is not None for entry in entries):
        raise InputError(path, f"query {query_id!r}: nuggets of subtopics have no nuggetizer form (a line a query)")
    (entry,) = entries
    nuggets = [{"text": item.text} | ({"importance": item.importance} if item.importance else {}) | item.extra
               for item in entry.items]  # fmt: skip
    if entry.query_text is None:  # a TSV bank has none; AutoJudge's model requires it
        raise InputError(path, f"query {query_id!r}: nuggetizer's lines need the query's text, which the bank does "
                         "not hold: give the queries (--queries FILE)")  # fmt: skip
    return {"qid": query_id, "query": entry.query_text} | entry.extra | {"nuggets": nuggets}


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def write_autojudge(entries: list[Entry], source, path: str | Path) -> None:
    """Write `entries` (read from `source`) in AutoJudge's form (gzipped for `.gz`), atomically."""
    write_records(autojudge_records(entries, source), path)
