"""The grade cache: model answers keyed by the back end's signature (model and revision, dtype,
decoding, truncation length), the prompt template's text as the back end reads it and every field put into it (question,
passage, answer key). Only answers are cached, never failures (`examflow.cache`). Answers are
kept in one folder per query, so the number of grading shards can change without a regrade.
An entry is used only if it holds what its back end answers: a text, and the `expected` grade of
`fast` decoding or the `score` of the embedding back end (and null where the back end gives none);
an API back end's entry also keeps the model the server named for the answer (`served`)."""

from __future__ import annotations

from pathlib import Path

from examflow.bounds import served_name
from examflow.cache import NULL, NUMBER, TEXT, ContentCache, content_key
from examflow.grading.backends import Answer, Request
from examflow.prompts import read_by
from examflow.questions.shards import query_folder
from examflow.registry import BACKENDS


class GradeCache:
    def __init__(self, directory: str | Path, signature: dict):
        self.directory, self.signature = directory, signature
        self.roles = BACKENDS[signature["backend"]].roles
        self.folders: dict[str, ContentCache] = {}
        self.fields = {
            "text": TEXT,
            "expected": NUMBER if signature.get("decoding") == "fast" else NULL,
            "score": NUMBER if BACKENDS[signature["backend"]].by_quantiles else NULL,  # similarities
        }

    def _folder(self, query_id: str) -> ContentCache:
        if query_id not in self.folders:
            folder = query_folder(query_id)
            self.folders[query_id] = ContentCache(self.directory, "grades", self.signature, folder, self.fields)
        return self.folders[query_id]

    def holds(self, query_id: str) -> bool:
        """Whether anything of this query was ever cached."""
        return self._folder(query_id).folder.is_dir()

    def key(self, request: Request) -> str:
        # the text the back end reads: a model without roles never sees a system message
        return content_key(
            self.signature, {"template": read_by(request.template, self.roles), "fields": request.fields}
        )

    def answers(self, query_ids) -> dict[str, Answer]:
        """The cached answers of the given queries, by key."""
        found = {}
        for query_id in sorted(set(query_ids)):
            for key, e in self._folder(query_id).load().items():
                served = served_name(e.get("served"))  # none in an entry written before it was kept
                found[key] = Answer(e["text"], expected=e.get("expected"), score=e.get("score"), served=served)
        return found

    def add_answers(self, entries: list[tuple[str, str, Answer]]) -> None:
        """(query id, key, answer) triples; failures are never stored."""
        by_query: dict[str, list] = {}
        for query_id, key, a in entries:
            if a.error is None:
                served = {"served": a.served} if a.served is not None else {}
                by_query.setdefault(query_id, []).append(
                    (key, {"text": a.text, "expected": a.expected, "score": a.score} | served)
                )
        for query_id, stored in by_query.items():
            self._folder(query_id).add(stored)

    def close(self) -> None:
        for folder in self.folders.values():
            folder.close()
