"""Caches keyed by content, shared by every job and run: model answers, ranker scores.

A key hashes everything that decides a value (a model's signature: id, revision or weights
digest, settings; and every text put into it). Entries live in append-only JSONL files, one per
writing process, under a folder per kind, signature and shard: parallel jobs never write the
same file, a batch is flushed as soon as it is done, and a line cut short by a killed job is
ignored. Only successes are stored: a failure is asked again on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def content_key(signature: dict, payload: dict) -> str:
    """The key of a value: the model's signature and everything put into it."""
    return digest({"signature": signature, **payload})


def signature_digest(signature: dict) -> str:
    return hashlib.sha256(json.dumps(signature, sort_keys=True).encode()).hexdigest()[:16]


class ContentCache:
    def __init__(self, directory: str | Path, kind: str, signature: dict, shard: str):
        self.signature = signature
        self.folder = Path(directory) / kind / signature_digest(signature) / shard
        self.file = None

    def key(self, payload: dict) -> str:
        return content_key(self.signature, payload)

    def load(self) -> dict[str, dict]:
        """Every stored entry by key (the last one wins)."""
        found = {}
        for path in sorted(self.folder.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:  # the last line of a killed writer
                    continue
                found[entry.pop("key")] = entry
        return found

    def add(self, entries: list[tuple[str, dict]]) -> None:
        """Append entries and flush them to disk at once."""
        if not entries:
            return
        if self.file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.file = open(self.folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl", "a", encoding="utf-8")
        self.file.writelines(json.dumps({"key": key, **value}, ensure_ascii=False) + "\n" for key, value in entries)
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
