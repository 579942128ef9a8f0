"""The grade cache: model answers keyed by content, shared by every job and run.

A key hashes the back end's signature (model and revision, dtype, decoding, truncation
length), the prompt template's text and every field put into it (question, passage,
answer key). Entries live in append-only JSONL files, one per writing process, under a
folder per back end signature and shard: parallel jobs never write the same file, a batch
is flushed as soon as it is graded, and a line cut short by a killed job is ignored.
Only answers are cached, never failures: those are asked again on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

from examflow.grading.backends import Answer, Request
from examflow.prompts import template


def signature_digest(signature: dict) -> str:
    return hashlib.sha256(json.dumps(signature, sort_keys=True).encode()).hexdigest()[:16]


class GradeCache:
    def __init__(self, directory: str | Path, signature: dict, shard: str):
        self.signature = signature
        self.folder = Path(directory) / "grades" / signature_digest(signature) / shard
        self.file = None

    def key(self, request: Request) -> str:
        payload = {"signature": self.signature, "template": template(request.template), "fields": request.fields}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def load(self) -> dict[str, Answer]:
        found = {}
        for path in sorted(self.folder.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:  # the last line of a killed writer
                    continue
                found[entry["key"]] = Answer(entry["text"], expected=entry.get("expected"), score=entry.get("score"))
        return found

    def add(self, entries: list[tuple[str, Answer]]) -> None:
        """Append successful answers and flush them to disk at once."""
        lines = [
            json.dumps({"key": k, "text": a.text, "expected": a.expected, "score": a.score}, ensure_ascii=False) + "\n"
            for k, a in entries
            if a.error is None
        ]
        if not lines:
            return
        if self.file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.file = open(self.folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl", "a", encoding="utf-8")
        self.file.writelines(lines)
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
