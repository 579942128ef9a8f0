"""Caches keyed by content, shared by every job and run: model answers, ranker scores.

A key hashes everything that decides a value (a model's signature: id, revision or weights
digest, settings; and every text put into it). Entries live in append-only JSONL files, one per
writing process, under a folder per kind, signature and shard: parallel jobs never write the
same file, a batch is flushed as soon as it is done. Only successes are stored: a failure is
asked again on the next run.

Nothing read back is trusted: each entry carries a checksum of its key and value, and a line that
is not UTF-8, not a JSON object, lacks a field its reader needs (or holds it with the wrong type),
or fails its checksum is skipped, so its value is computed again; one warning per file counts the
damaged and the edited lines (a line cut short by a killed job is a damaged one). Entries written
before checksums existed are used unchecked: regrading them would cost model calls, and they are
what examflow wrote.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections import Counter
from pathlib import Path
from typing import TextIO

from examflow.errors import writing

log = logging.getLogger(__name__)

CHECKSUM = "checksum"  # the field of an entry that holds its checksum
NUMBER, TEXT, NULL = (int, float), (str,), (type(None),)  # the JSON types a field may hold (a bool is no number)


def digest(value) -> str:
    # surrogatepass: a lone surrogate (a JSON escape of a damaged line) must not stop the check.
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def content_key(signature: dict, payload: dict) -> str:
    """The key of a value: the model's signature and everything put into it."""
    return digest({"signature": signature, **payload})


def checksum(entry: dict) -> str:
    """The checksum of an entry (its key and value): a line edited by hand no longer matches it."""
    return digest(entry)[:16]


def check_entry(entry, fields: dict[str, tuple[type, ...]]) -> tuple[str, dict | None]:
    """(verdict, entry without its checksum): `good`, `unchecked` (written before checksums),
    `damaged` (not an object, or a field of `fields` missing or of another type) or `edited`."""
    if not isinstance(entry, dict) or not all(
        name in entry and type(entry[name]) in types for name, types in fields.items()
    ):
        return "damaged", None
    entry = dict(entry)
    stored = entry.pop(CHECKSUM, None)
    if stored is None:
        return "unchecked", entry
    return ("good", entry) if stored == checksum(entry) else ("edited", None)


def report_damage(path: Path, verdicts: Counter) -> None:
    """One warning for a file with skipped entries."""
    if verdicts["damaged"] or verdicts["edited"]:
        log.warning(
            "%s: skipped %d damaged entries (cut short, not UTF-8, not a JSON object, or a field missing) and %d "
            "edited ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)",
            path, verdicts["damaged"], verdicts["edited"],
        )  # fmt: skip


def signature_digest(signature: dict) -> str:
    return hashlib.sha256(json.dumps(signature, sort_keys=True).encode()).hexdigest()[:16]


class ContentCache:
    def __init__(self, directory: str | Path, kind: str, signature: dict, shard: str, fields: dict[str, tuple]):
        """`fields`: each field of a value that its reader needs, with the JSON types it may hold."""
        self.signature, self.fields = signature, {"key": TEXT, **fields}
        self.folder = Path(directory) / kind / signature_digest(signature) / shard
        self.file: TextIO | None = None  # opened by the first add

    def key(self, payload: dict) -> str:
        return content_key(self.signature, payload)

    def load(self) -> dict[str, dict]:
        """Every stored entry that passes its checks, by key (the last one wins)."""
        found, unchecked = {}, 0
        for path in sorted(self.folder.glob("*.jsonl")):
            verdicts: Counter[str] = Counter()
            # Lines end at b"\n" alone: json.dumps escapes it, but not U+2028 and the like.
            for line in path.read_bytes().split(b"\n"):
                if line:
                    verdict, entry = check_entry(parse_json(line), self.fields)
                    verdicts[verdict] += 1
                    if entry is not None:
                        found[entry.pop("key")] = entry
            report_damage(path, verdicts)
            unchecked += verdicts["unchecked"]
        if unchecked:
            log.info("%s: %d entries written before checksums, used unchecked", self.folder, unchecked)
        return found

    def add(self, entries: list[tuple[str, dict]]) -> None:
        """Append entries and flush them to disk at once."""
        if not entries:
            return
        if self.file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.file = open(self.folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl", "a", encoding="utf-8")
        with writing(self.file.name):  # a line cut short by a full disk is a damaged line, left out when read
            self.file.writelines(
                json.dumps(stamped({"key": key, **value}), ensure_ascii=False) + "\n" for key, value in entries
            )
            self.file.flush()
            os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            file, self.file = self.file, None
            with writing(file.name):
                file.close()


def stamped(entry: dict) -> dict:
    """The entry with its checksum."""
    return {**entry, CHECKSUM: checksum(entry)}


def parse_json(data: bytes):
    """The JSON value of a line; None for one that is not UTF-8 or not JSON (a damaged line)."""
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
