"""The grade cache: model answers keyed by the back end's signature (model and revision, dtype,
decoding, truncation length), the prompt template's text and every field put into it (question,
passage, answer key). Only answers are cached, never failures (`examflow.cache`)."""

from __future__ import annotations

from pathlib import Path

from examflow.cache import ContentCache
from examflow.grading.backends import Answer, Request
from examflow.prompts import template


class GradeCache(ContentCache):
    def __init__(self, directory: str | Path, signature: dict, shard: str):
        super().__init__(directory, "grades", signature, shard)

    def key(self, request: Request) -> str:
        return super().key({"template": template(request.template), "fields": request.fields})

    def answers(self) -> dict[str, Answer]:
        return {
            key: Answer(e["text"], expected=e.get("expected"), score=e.get("score")) for key, e in self.load().items()
        }

    def add_answers(self, entries: list[tuple[str, Answer]]) -> None:
        self.add(
            [(k, {"text": a.text, "expected": a.expected, "score": a.score}) for k, a in entries if a.error is None]
        )
