"""Question banks: the reference implementation's JSONL formats and a simple TSV.

A bank holds, per query and facet, an ordered list of items: exam questions (optionally
with answer keys and multiple-choice options) or nuggets (optionally with their importance, `vital`
or `okay`, as AutoNuggetizer rates them). Four JSONL variants are read:
- current: one object per query × facet with `items` (what examflow writes);
- older: the same with `questions` instead of `items`;
- oldest: one flat line per question `{query_id, query_text, qid, question, choices, correctKey, correct, facet_id}`;
- nuggetizer's: one object per query `{qid, query, nuggets: [{text, importance}, ...]}`.
Fields examflow does not use are kept, so read → write → read is lossless.

Ids follow docs/methods.md §2: `{query_id}[/{facet_id}]/{md5(text.strip())}`. In the current format an
id that no longer matches its text (the text was edited) is re-derived, so an edited
question gets a new id; items marked `"keep_id": true` (imported from older banks, whose
ids were made differently and are joined with published grades) keep theirs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from examflow.errors import InputError, Problems, counted, listed, repeated
from examflow.io.lines import (
    FirstLines,
    base_suffix,
    check_id,
    cr_hint,
    json_lines,
    required_id,
    split_columns,
    text_lines,
    unknown_format,
)
from examflow.questions.autojudge import is_v3, v3_entries
from examflow.questions.items import IMPORTANCE, KINDS, Entry, Item, item_id, write_records

log = logging.getLogger(__name__)


def read_bank(path: str | Path) -> list[Entry]:
    if base_suffix(path) == ".tsv":
        return _read_tsv(path)
    if base_suffix(path) != ".jsonl":
        raise unknown_format(path, "bank format: use .jsonl (optionally .gz) or .tsv")

    entries: dict[tuple[str, str | None], Entry] = {}
    edited, rated, owners = 0, Rated(path), Owners(path)
    blank: list[tuple[int, str]] = []  # (line, query) of each item with blank text
    for number, record in json_lines(path):
        if is_v3(record):  # TREC AutoJudge's question bank: a line a query, its subtopics in the questions
            for entry, places in v3_entries(path, number, record):
                for item, place in zip(entry.items, places, strict=True):
                    owners.claim(item, number, place)
                blank += [(number, entry.query_id) for item in entry.items if not item.text.strip()]
                _add(path, entries, entry, number)
            continue
        flat = "qid" in record and "question" in record
        nuggetizer = "qid" in record and "nuggets" in record
        if nuggetizer:
            entry, changed = _nuggetizer_entry(path, number, record)
        else:
            entry, changed = _flat_question(path, number, record) if flat else _entry(path, number, record)
        listed = "nuggets" if nuggetizer else "items" if "items" in record else "questions"
        for index, item in enumerate(entry.items):
            if item.kind == "nugget":
                rated.add(item, number, f"{listed}[{index}].importance")
            at = f"{listed}[{index}]."
            keys = FLAT_KEY_FIELDS if flat else {what: at + name for what, name in JSONL_KEY_FIELDS.items()}
            owners.claim(item, number, "qid" if flat else f"{at}{KINDS[item.kind][0]}", keys)
        edited += changed
        blank += [(number, entry.query_id) for item in entry.items if not item.text.strip()]
        if flat and (entry.query_id, entry.facet_id) in entries:
            entries[entry.query_id, entry.facet_id].items += entry.items
        else:
            _add(path, entries, entry, number)
    if edited:
        log.info("%s: %s derived from %s text; `keep_id: true` on an item keeps its id", path,
                 counted(edited, "item whose id is not its text's (edited, or named by hand) got a new id",
                         "items whose ids are not their text's (edited, or named by hand) got new ids"),
                 "its" if edited == 1 else "their")  # fmt: skip
    if blank:  # published banks hold a few parsing leftovers; they count in |Q_q| there, so they stay
        log.warning("%s: %s, kept: graded and counted in %s query's number of questions, as in the published "
                    "banks (the first: line %d, query %r); a bank of your own should leave them out", path,
                    counted(len(blank), "item with blank text", "items with blank text"),
                    "its" if len(blank) == 1 else "their", *blank[0])  # fmt: skip
    owners.drop_repeats(entries.values())
    return _not_empty(path, list(entries.values()))


def _add(path, entries: dict[tuple[str, str | None], Entry], entry: Entry, number: int) -> None:
    """`entry`, read on line `number`; a second entry for its query and facet is an error."""
    key = (entry.query_id, entry.facet_id)
    if key in entries:
        raise InputError(
            path,
            f"second entry for query {key[0]!r}" + (f", facet {key[1]!r}" if key[1] is not None else " (no facet)"),
            number,
            "query_id",
        )
    entry.line = number
    entries[key] = entry


class Owners:
    """An item id names one item of the bank. Written twice for one text of one query, the second is dropped
    (`drop_repeats`); for another text, or another query (ids numbered within each query, `x0`, in an
    older bank), one of the two would be dropped and its query's exam shrink: an error."""

    def __init__(self, path):
        self.path, self.first = path, {}
        self.repeats: list[tuple[Item, str, str]] = []  # each repeat, where it is, where its first is

    def claim(self, item: Item, number: int, field: str, columns: dict[str, str] | None = None) -> None:
        """`item`, read at `field` of line `number`; `columns`: the field of each of its keys, where a
        line holds them apart (a TSV bank's `answers`)."""
        first, line, first_field = self.first.setdefault(item.item_id, (item, number, field))
        if first is item:  # the first of its id: nothing to compare (most items of a large bank)
            return
        # ids hash the stripped text: `What?` and `What? ` (or two blank items) are one question, dropped once
        if (first.query_id, first.facet_id, first.text.strip()) != (item.query_id, item.facet_id, item.text.strip()):
            place = f"query {first.query_id!r}" + (f", facet {first.facet_id!r}" if first.facet_id else "")
            raise InputError(self.path, f"id {item.item_id!r} is already that of {first.text!r} of {place} (line "
                             f"{line}): an id names one item of the bank", number, field)  # fmt: skip
        # A repeat is dropped: one with other answer keys would lose them in silence (a second line meant
        # to add an answer), and which answers count as correct.
        mine, theirs = _keys(item), _keys(first)
        for what in (what for what in mine if mine[what] != theirs[what]):
            shown = {"answer keys": first.gold_answers, "choices": first.choices}.get(what, first.importance)
            advice = "write the item once" + (", with all its answers" if what == "answer keys" else "")
            raise InputError(self.path, f"{item.text!r} repeats the item of line {line} with other {what} ({shown!r} "
                             f"there): {advice}", number, (columns or {}).get(what, field))  # fmt: skip
        # two items of one JSONL line read `line 1 repeats line 1` unless named by their place, `items[2]`
        apart, place, first_place = number != line, field.split(".")[0], first_field.split(".")[0]
        where = (f"line {number}", f"line {line}") if apart else (f"line {number}, {place},", f"{first_place} there")
        self.repeats.append((item, *where))

    def drop_repeats(self, entries: Iterable[Entry]) -> None:
        """The repeats claimed, dropped from their entries, with a count and where the first of them is."""
        if not self.repeats:
            return
        repeated = {id(item) for item, _, _ in self.repeats}
        for entry in entries:
            entry.items = [item for item in entry.items if id(item) not in repeated]
        item, here, there = self.repeats[0]
        log.warning("%s: %s dropped (the same text for the same query as an earlier item; first: %s repeats %s, %r "
                    "of query %r, id %s)", self.path, counted(len(self.repeats), "repeated item", "repeated items"),
                    here, there, item.text, item.query_id, item.item_id)  # fmt: skip


def _keys(item: Item) -> dict[str, object]:
    """What an item's repeat must repeat: its answers in any order, its choices and its importance."""
    return {"answer keys": frozenset(item.gold_answers or ()), "choices": item.choices or {},
            "importance": item.importance}  # fmt: skip


class Rated:
    """A bank rates the importance of all its nuggets or of none: a nugget without one would count as
    neither vital nor okay in the scores that weigh them. The first nugget read decides."""

    def __init__(self, path):
        self.path, self.first = path, None

    def add(self, item: Item, number: int | None, field: str) -> None:
        rated = item.importance is not None
        if self.first is None:
            self.first = rated
        elif rated != self.first:
            which = (
                "has no importance, and earlier nuggets have one"
                if not rated
                else "has an importance, and earlier nuggets none"
            )
            raise InputError(self.path, f"nugget {item.item_id!r} {which}: rate all or none", number, field)


def _importance(path, number: int | None, value, field: str) -> str | None:
    if value is None:
        return None
    if value not in IMPORTANCE:
        raise InputError(path, f"expected vital or okay, found {value!r}", number, field)
    return value


def _nuggetizer_entry(path, number: int, record: dict) -> tuple[Entry, int]:
    """nuggetizer's nugget file: `{qid, query, nuggets: [{text, importance, ...}]}`, one line a query."""
    query_id = required_id(path, number, record, "qid")
    if not isinstance(record["nuggets"], list):
        raise InputError(path, "expected a list of nuggets", number, "nuggets")
    entry = Entry(query_id, None, record.get("query"), [], extra={k: v for k, v in record.items()
                                                                   if k not in ("qid", "query", "nuggets")})  # fmt: skip
    for index, raw in enumerate(record["nuggets"]):
        where = f"nuggets[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
            raise InputError(path, "expected an object with a text", number, where)
        importance = _importance(path, number, raw.get("importance"), f"{where}.importance")
        extra = {k: v for k, v in raw.items() if k not in ("text", "importance")}
        text = raw["text"]
        entry.items.append(Item(query_id, None, item_id(query_id, None, text), text, "nugget", extra=extra,
                                importance=importance))  # fmt: skip
    return entry, 0


def entry_lines(entries: list[Entry]) -> dict[tuple[str, str | None], int]:
    """Every (query id, facet id) of the bank, with the line of its entry (of its first line, flat)."""
    # cast: the entries come from read_bank, which numbers every one
    return {(entry.query_id, entry.facet_id): cast(int, entry.line) for entry in entries}


def known_targets(
    path, lines: dict[tuple[str, str | None], int], subtopics: dict[str, set[str]], problems: Problems
) -> set[tuple[str, str | None]]:
    """The (query id, facet id) pairs of `lines` that the queries hold (`subtopics`: each query's facet
    ids). Each other one is a problem at the line of its entry, an unknown query once however many of
    its facets the bank names; its questions are for no query or subtopic, yet would be graded and
    count in their query's |Q|."""
    kept, unknown_queries = set(), set()
    for (query_id, facet_id), line in sorted(lines.items(), key=lambda pair: pair[1]):
        if query_id not in subtopics:
            if query_id not in unknown_queries:
                unknown_queries.add(query_id)
                problems.report(
                    "bank entries with an unknown query id",
                    InputError(path, f"unknown query id {query_id!r}", line, "query_id"),
                )
        elif facet_id is not None and facet_id not in subtopics[query_id]:
            problems.report(
                "bank entries with an unknown facet id",
                InputError(path, _unknown_facet(query_id, facet_id, subtopics[query_id]), line, "facet_id"),
            )
        else:
            kept.add((query_id, facet_id))
    return kept


def _unknown_facet(query_id: str, facet_id: str, known: set[str]) -> str:
    if not known:
        return f"facet id {facet_id!r} on query {query_id!r}, which has no subtopics"
    names = sorted(known)
    shown = listed(names)
    return f"unknown facet id {facet_id!r}: not a subtopic of query {query_id!r} (its subtopics: {shown})"


def _not_empty(path, entries: list[Entry]) -> list[Entry]:
    if not any(entry.items for entry in entries):
        raise InputError(path, "the bank holds no questions or nuggets")
    return entries


def _entry(path, number: int, record: dict) -> tuple[Entry, int]:
    query_id = required_id(path, number, record, "query_id")
    facet_id = _facet(path, number, record)
    list_field = "items" if "items" in record else "questions"
    if "items" in record and "questions" in record:  # the older variant's list beside the current one's: lost
        raise InputError(path, "both items and questions: a line holds one list of its items", number, "questions")
    raw_items = record.get(list_field)
    if not isinstance(raw_items, list):
        raise InputError(path, "expected a list of items", number, list_field)
    known = {"query_id", "facet_id", "query_text", "test_collection", "info", list_field}
    extra = {k: v for k, v in record.items() if k not in known}
    entry = Entry(
        query_id, facet_id, record.get("query_text"), [], record.get("test_collection"), record.get("info"), extra
    )
    edited = 0
    for index, raw in enumerate(raw_items):
        item = _item(path, number, f"{list_field}[{index}]", raw, query_id, facet_id)
        derived = item_id(query_id, facet_id, item.text)
        # Only the current format is edited by hand; older ones keep the ids they were graded with.
        if list_field == "items" and item.item_id != derived and not raw.get("keep_id"):
            item.item_id, edited = derived, edited + 1
        entry.items.append(item)
    return entry, edited


def _facet(path, number: int, record: dict) -> str | None:
    return None if record.get("facet_id") is None else required_id(path, number, record, "facet_id")


def _item(path, number: int, where: str, raw, query_id: str, facet_id: str | None) -> Item:
    if not isinstance(raw, dict):
        raise InputError(path, "expected an object", number, where)
    kind = "nugget" if "nugget_text" in raw else "question"
    id_field, text_field = KINDS[kind]
    text = raw.get(text_field)
    if not isinstance(text, str):
        raise InputError(path, "missing or not a string", number, f"{where}.{text_field}")
    answers = raw.get("gold_answers")
    if answers is not None and not (isinstance(answers, list) and all(isinstance(a, str) for a in answers)):
        raise InputError(path, "expected a list of strings", number, f"{where}.gold_answers")
    choices = _choices(path, number, raw, f"{where}.choices")
    importance = _importance(path, number, raw.get("importance"), f"{where}.importance") if kind == "nugget" else None
    known = {"query_id", "facet_id", id_field, text_field, "gold_answers", "choices", "keep_id"}
    known |= {"importance"} if kind == "nugget" else set()
    extra = {k: v for k, v in raw.items() if k not in known}
    given = required_id(path, number, raw, id_field, f"{where}.") if raw.get(id_field) is not None else None
    item_key = given or item_id(query_id, facet_id, text)
    return Item(query_id, facet_id, item_key, text, kind, answers, choices, extra, importance)


def _choices(path, number: int, record: dict, field: str) -> dict[str, str] | None:
    choices = record.get("choices")
    if choices is not None and not (isinstance(choices, dict) and all(isinstance(v, str) for v in choices.values())):
        raise InputError(path, "expected an object {key: option text}", number, field)
    return choices


def _flat_question(path, number: int, record: dict) -> tuple[Entry, int]:
    """Oldest format: one question per line, grouped by (query, facet) in file order."""
    query_id = required_id(path, number, record, "query_id")
    facet_id = _facet(path, number, record)
    text = record["question"]
    if not isinstance(text, str):
        raise InputError(path, "not a string", number, "question")
    correct = record.get("correct")
    extra = {
        k: v
        for k, v in record.items()
        if k not in {"query_id", "query_text", "qid", "question", "choices", "correct", "facet_id"}
    }
    extra |= {"correct": correct} if correct is not None and not isinstance(correct, str) else {}
    answers = [correct] if isinstance(correct, str) else None
    question_id = required_id(path, number, record, "qid")
    item = Item(
        query_id, facet_id, question_id, text, "question", answers, _choices(path, number, record, "choices"), extra
    )
    return Entry(query_id, facet_id, record.get("query_text"), [item]), 0


TSV_IDS = {"query_id", "facet_id", "nugget_id"}
TSV_COLUMNS = {
    "question": {"query_id", "facet_id", "question", "answers", "choices"},
    "nugget": {"query_id", "facet_id", "nugget", "nugget_id", "importance"},
}


def _read_tsv(path) -> list[Entry]:
    """Hand-written banks: a header naming `query_id` and either `question` (optional `facet_id`,
    `answers`, `choices`) or `nugget` (optional `facet_id`, `nugget_id`, `importance`).

    `answers` and `choices` separate their values with ` | `; choices get keys A, B, C, ...; a nugget's
    importance is `vital` or `okay`, and a `nugget_id` given is kept as its id.
    """
    lines = text_lines(path)
    _, header = next(lines)
    names = tuple(name.strip(" ") for name in header.split("\t"))  # `question  `: an editor's end spaces
    if twice := repeated(names):  # the row's last cell of the name would win, the others' lost
        raise InputError(path, f"the column {twice!r} is named twice", 1)
    if {"nugget_id", "text"} <= set(names) and "nugget" not in names:  # `query_id, nugget_id, text, importance`
        names = tuple("nugget" if name == "text" else name for name in names)
    kind = next((k for k, allowed in TSV_COLUMNS.items() if {"query_id", k} <= set(names) <= allowed), None)
    if kind is None:
        raise InputError(path, "header must name query_id and question (and may name facet_id, answers, choices), "
                         "or query_id and nugget (and may name facet_id, nugget_id, importance; with nugget_id the "
                         f"text may be named text); it names {', '.join(map(repr, names))}{cr_hint(header)}", 1)  # fmt: skip
    entries: dict[tuple[str, str | None], Entry] = {}
    rated, first_lines, owners = Rated(path), FirstLines(path), Owners(path)
    for number, line in lines:
        cells = split_columns(path, number, _with_optional_cells(line, names, kind), names, "\t")
        # texts lose their outer spaces; an id keeps them and is refused, as in every other input
        row = {name: cell if name in TSV_IDS else cell.strip() for name, cell in zip(names, cells)}
        if not row[kind]:
            raise InputError(path, "empty", number, kind)
        check_id(path, number, row["query_id"], "query_id")
        facet_id = row.get("facet_id") or None
        if facet_id:
            check_id(path, number, facet_id, "facet_id")
        entry = entries.setdefault((row["query_id"], facet_id), Entry(row["query_id"], facet_id, None, [], line=number))
        item = _tsv_item(path, number, kind, row, facet_id)
        if kind == "nugget":  # a nugget twice would count twice in nuggetizer's scores, or lose a rating
            rated.add(item, number, "importance")
            first_lines.add(item.item_id, number, "nugget", f"nugget {item.item_id!r} twice")
        owners.claim(item, number, kind, TSV_KEY_COLUMNS)
        entry.items.append(item)
    owners.drop_repeats(entries.values())
    return _not_empty(path, list(entries.values()))


def _with_optional_cells(line: str, names: tuple[str, ...], kind: str) -> str:
    """The line with the empty cells of the optional columns it leaves off at its end (editors drop a
    line's trailing tabs): `q1<TAB>Why?` under `query_id, question, answers` has no answer key."""
    short = len(names) - (line.count("\t") + 1)
    return line + "\t" * short if short > 0 and not {"query_id", kind} & set(names[-short:]) else line


# Where a line holds an item's keys, for an error that names one.
TSV_KEY_COLUMNS = {"answer keys": "answers", "choices": "choices", "importance": "importance"}
JSONL_KEY_FIELDS = {"answer keys": "gold_answers", "choices": "choices", "importance": "importance"}
FLAT_KEY_FIELDS = {"answer keys": "correct", "choices": "choices"}


def _tsv_item(path, number: int, kind: str, row: dict[str, str], facet_id: str | None) -> Item:
    query_id, text = row["query_id"], row[kind]
    if kind == "nugget":
        given = row.get("nugget_id") or None
        if given:
            check_id(path, number, given, "nugget_id")
        importance = _importance(path, number, row.get("importance") or None, "importance")
        # A nugget id is its query's (nugget files number each query's nuggets 1, 2, 3, ...)
        scope = f"{query_id}/{facet_id}/" if facet_id else f"{query_id}/"
        key = (given if given.startswith(scope) else scope + given) if given else item_id(query_id, facet_id, text)
        return Item(query_id, facet_id, key, text, "nugget", importance=importance)
    answers = _values(path, number, row, "answers") or None
    options = _values(path, number, row, "choices")
    if len(set(options)) < len(options):
        twice = next(option for option in options if options.count(option) > 1)
        raise InputError(path, f"choice {twice!r} twice: two keys for one answer", number, "choices")
    choices = {chr(ord("A") + i): option for i, option in enumerate(options)} or None
    return Item(query_id, facet_id, item_id(query_id, facet_id, text), text, "question", answers, choices)


def _values(path, number: int, row: dict[str, str], column: str) -> list[str]:
    """A cell's values, separated by `|`, spaces around each dropped; none where the cell is blank. An empty
    value (`x | | y`, ` | `) is an error: an answer or a choice left out, or a `|` too many, read as none."""
    cell = row.get(column, "")
    if not cell.strip():
        return []
    values = [value.strip() for value in cell.split("|")]
    if "" in values:
        raise InputError(path, f"an empty value in {cell!r} (values are separated by `|`)", number, column)
    return values


def entry_record(entry: Entry) -> dict[str, Any]:
    """An entry as a line of the current format."""
    record: dict[str, Any] = {
        "query_id": entry.query_id,
        "facet_id": entry.facet_id,
        "query_text": entry.query_text,
        "test_collection": entry.test_collection,
        "info": entry.info,
    }
    record |= entry.extra
    record["items"] = [_item_record(item) for item in entry.items]
    return record


def _item_record(item: Item) -> dict[str, Any]:
    id_field, text_field = KINDS[item.kind]
    record: dict[str, Any] = {
        "query_id": item.query_id,
        "facet_id": item.facet_id,
        id_field: item.item_id,
        text_field: item.text,
    }
    record |= {"gold_answers": item.gold_answers} if item.gold_answers is not None else {}
    record |= {"choices": item.choices} if item.choices is not None else {}
    record |= {"importance": item.importance} if item.importance is not None else {}
    record |= item.extra
    if item.item_id != item_id(item.query_id, item.facet_id, item.text):
        record["keep_id"] = True  # imported id: keep it when reading this file back
    return record


def write_bank(entries: list[Entry], path: str | Path) -> None:
    """Write in the current format (gzipped for `.gz`), atomically."""
    write_records([entry_record(entry) for entry in entries], path)
