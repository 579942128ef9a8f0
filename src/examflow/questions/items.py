"""What a bank holds: entries (a query, or a subtopic of one) of items (exam questions or nuggets), their
ids, and how they are written; every bank format (examflow.questions.bank, .autojudge) reads into these."""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from examflow.io.tables import write_tables

KINDS = {"question": ("question_id", "question_text"), "nugget": ("nugget_id", "nugget_text")}
IMPORTANCE = ("vital", "okay")  # AutoNuggetizer's ratings of a nugget


@dataclass
class Item:
    query_id: str
    facet_id: str | None
    item_id: str
    text: str
    kind: str = "question"
    gold_answers: list[str] | None = None
    choices: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    importance: str | None = None  # a nugget's: vital or okay


@dataclass
class Entry:
    """The items of one query (and facet), in bank order."""

    query_id: str
    facet_id: str | None
    query_text: str | None
    items: list[Item]
    test_collection: str | None = None
    info: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    line: int | None = field(default=None, compare=False)  # where it starts in the bank file


def item_id(query_id: str, facet_id: str | None, text: str) -> str:
    digest = hashlib.md5(text.strip().encode("utf-8")).hexdigest()
    return f"{query_id}/{facet_id}/{digest}" if facet_id else f"{query_id}/{digest}"


def write_records(records: list[dict[str, Any]], path: str | Path) -> None:
    """JSON lines (gzipped for `.gz`), written as every table is (`write_tables`: its folder made, nothing
    half-written, a failure one line)."""
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    write_tables({path: gzip.compress(text.encode("utf-8")) if Path(path).suffix == ".gz" else text})
