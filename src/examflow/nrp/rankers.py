"""NRP's rankers: each scores a query's judged documents and its answers (higher is better).

- `monot5`: `Query: {q} Document: {d} Relevant:`, the text cut so that the suffix always fits,
  score = log-softmax of the `true` and `false` logits at the first decoder step (Nogueira et
  al. 2020), through the seq2seq back end's loading, truncation and length-sorted batching;
- `embedding`: cosine similarity of query and text with a sentence-embedding model;
- `bm25`: BM25 with the statistics (document frequencies, mean length) of the query's judged
  documents, for documents and answers alike, tokenised and weighted by `bm25s`;
- `run`: the scores of a TREC run file, so that any external ranker plugs in (answers are named
  `{llm}/{prompt}/{sample}` there); it reads no text. A run has no score for the empty string, so
  an empty or missing answer scores −∞ there and ranks below every judged document.

The model rankers score each distinct (query, text) pair once, cached by content like the grades:
the judged documents of a query once, not once per answer, and equal texts get equal scores.
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from examflow.cache import NUMBER, ContentCache
from examflow.errors import InputError, Problems, counted
from examflow.grading.backends import EmbeddingBackend, Request, Seq2SeqBackend
from examflow.grading.preparation import Prompt
from examflow.grading.signatures import embedding_signature
from examflow.io.runs import NO_JUDGED_DOCUMENT, read_run
from examflow.registry import RANKERS

log = logging.getLogger("examflow")


@dataclass
class QueryItems:
    """What a ranker scores for one query: its judged documents and its answers, by id. An empty
    or missing answer's text is ""; a document's text is None when no corpus was read (`run` only)."""

    query_id: str
    text: str
    documents: dict[str, str | None]
    answers: dict[str, str]

    @property
    def items(self) -> dict[str, str | None]:
        return self.documents | self.answers


def _read(texts: dict[str, str | None]) -> dict[str, str]:
    """Texts as a ranker that reads them (`reads_texts`) has them: such a ranker runs only with a corpus
    (`nrp_tables`), so no text is None (a cast)."""
    return cast(dict[str, str], texts)


SAVE_EVERY = 1024  # pairs scored between two saves to the cache
Scores = dict[tuple[str, str], float]  # (query id, document id or answer name) -> score


class PairRanker(ABC):
    """A model that scores (query, text) pairs; each distinct pair once, cached by content."""

    signature: dict
    name = "ranker"  # as configured (`make_ranker`)

    def scores(self, queries: list[QueryItems], cache_dir: str | Path) -> Scores:
        pairs = sorted({(q.text, text) for q in queries for text in _read(q.items).values()})
        cache = ContentCache(cache_dir, "nrp", self.signature, "scores", {"score": NUMBER})
        keys = {pair: cache.key({"query": pair[0], "text": pair[1]}) for pair in pairs}
        known = {key: entry["score"] for key, entry in cache.load().items()}
        todo = [pair for pair in pairs if keys[pair] not in known]
        # what a rerun after a stopped job resumes from, as a grading job says it
        log.info("ranker %s: %d of %d (query, text) pairs scored by the cache; %d to score", self.name,
                 len(pairs) - len(todo), len(pairs), len(todo))  # fmt: skip
        self.begin(len(todo))
        try:  # saved a chunk at a time: a job stopped partway keeps what it scored
            for start in range(0, len(todo), SAVE_EVERY):
                chunk = todo[start : start + SAVE_EVERY]
                fresh = {keys[pair]: score for pair, score in zip(chunk, self.score_pairs(chunk))}
                cache.add([(key, {"score": score}) for key, score in fresh.items()])
                known.update(fresh)
        finally:
            cache.close()
        return {
            (q.query_id, item): known[keys[(q.text, text)]] for q in queries for item, text in _read(q.items).items()
        }

    def begin(self, pairs: int) -> None:
        """Told the number of pairs to score before the first (a back end may settle its settings)."""
        return None  # nothing to settle here

    @abstractmethod
    def score_pairs(self, pairs: list[tuple[str, str]]) -> list[float]:
        """One score per (query text, text) pair, higher for a better match: the model's part."""


class MonoT5(PairRanker):
    TEMPLATE = "nrp-monot5"

    def __init__(self, model: str, revision=None, batch_size=16, max_input_tokens=512, device="auto", dtype="auto"):
        self.backend = Seq2SeqBackend(
            model, decoding="fast", batch_size=batch_size, max_input_tokens=max_input_tokens, device=device,
            dtype=dtype, revision=revision, reads=("true", "false"),
        )  # fmt: skip
        self.signature = {"ranker": "monot5", **self.backend.signature}
        self.true_false = self.backend.read_ids

    def begin(self, pairs: int) -> None:
        self.backend.begin(pairs)  # `compile: auto` settles on the job's size, not a chunk's

    def prompt(self, query: str, text: str) -> str:
        """The input, cut to `max_input_tokens` with `Relevant:` whole at its end."""
        return self.backend.prompt(Request(self.TEMPLATE, {"query": query, "context": text}), margin=0)

    def score_pairs(self, pairs: list[tuple[str, str]]) -> list[float]:
        def step(prompts: list[Prompt]) -> list[float]:
            logits = self.backend.first_step_logits(prompts, self.true_false)
            return self.backend.torch.log_softmax(logits, dim=-1)[:, 0].tolist()

        requests = [Request(self.TEMPLATE, {"query": q, "context": t}) for q, t in pairs]
        return self.backend.batched(self.backend.preparer.prepare(requests, margin=0), step)


class Embedding(PairRanker):
    def __init__(self, model: str, batch_size: int = 1, device: str = "auto"):
        self.options: dict[str, Any] = {"model": model, "unit": "passage", "batch_size": batch_size, "device": device}
        # the signature needs no model: a job the cache answers whole never loads one (seconds of imports)
        self.signature = {"ranker": "embedding", **embedding_signature(self.options, False)}

    @cached_property
    def backend(self) -> EmbeddingBackend:
        return EmbeddingBackend(**self.options)

    def score_pairs(self, pairs: list[tuple[str, str]]) -> list[float]:
        answers = self.backend.answer([Request("embedding", {"query": q, "context": t}) for q, t in pairs])
        return [cast(float, answer.score) for answer in answers]  # cast: this back end scores every answer


class BM25:
    """BM25 with the statistics of each query's judged documents, for its documents and answers alike."""

    def __init__(self, k1: float = 1.5, b: float = 0.75, method: str = "lucene"):
        self.k1, self.b, self.method = k1, b, method

    def scores(self, queries: list[QueryItems], cache_dir=None) -> Scores:
        import bm25s
        from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer  # the library's own BM25 weights

        idf_of, tfc = _select_idf_scorer(self.method), _select_tfc_scorer(self.method)
        scores = {}
        for query in queries:
            documents = self._tokens(bm25s, list(_read(query.documents).values()))
            frequencies = Counter(token for tokens in documents for token in set(tokens))
            mean_length = sum(map(len, documents)) / len(documents) if documents else 1.0
            terms = self._tokens(bm25s, [query.text])[0]
            idf = {t: idf_of(frequencies[t], N=len(documents)) for t in set(terms) if frequencies[t]}
            for item, tokens in zip(query.items, self._tokens(bm25s, list(_read(query.items).values()))):
                counts, length = Counter(tokens), len(tokens)
                scores[query.query_id, item] = math.fsum(
                    weight * tfc(counts[t], length, mean_length, self.k1, self.b, None)
                    for t in terms if (weight := idf.get(t)) and counts[t]
                )  # fmt: skip
        return scores

    @staticmethod
    def _tokens(bm25s, texts: list[str]) -> list[list[str]]:
        return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False) if texts else []


class RunScores:
    """The scores of a TREC run over the judged documents and the answers (docid `{llm}/{prompt}/{sample}`).
    A judged document the run lacks scores −∞; so does an empty or missing answer, whatever line the run
    has for its name (the run scored some other text), which ties it with the documents the run lacks and
    ranks it below every judged document. A given answer the run lacks is an error."""

    def __init__(self, path: str):
        self.path = path

    def scores(self, queries: list[QueryItems], cache_dir=None) -> Scores:
        outside = Problems("warn")  # a run over more topics than were judged: counted, not scored
        table = read_run(self.path, {q.query_id for q in queries}, outside, NO_JUDGED_DOCUMENT)
        outside.summarise()
        given = {(q, d): float(s) for q, d, s in table[["query_id", "passage_id", "score"]].itertuples(index=False)}
        scores, unused = {}, 0
        for query in queries:
            for item in query.documents:
                scores[query.query_id, item] = given.get((query.query_id, item), -math.inf)
            for item, text in query.answers.items():
                if not text:
                    unused += (query.query_id, item) in given
                    scores[query.query_id, item] = -math.inf
                elif (query.query_id, item) in given:
                    scores[query.query_id, item] = given[query.query_id, item]
                else:
                    raise InputError(self.path, f"no score for answer {item!r} of query {query.query_id!r}")
        if unused:
            log.warning("%s: %s answers that are empty or missing; not used (they rank below every judged document)",
                        self.path, counted(unused, "line scores", "lines score"))  # fmt: skip
        return scores


def make_ranker(spec: dict):
    """A ranker from its checked settings (`examflow.registry.check_ranker`), by its entry's factory."""
    from importlib import import_module

    module, name = RANKERS[spec["kind"]].factory.split(":")
    options = {k: v for k, v in spec.items() if k not in ("kind", "name")}
    ranker = getattr(import_module(module), name)(**options)
    ranker.name = spec.get("name", spec["kind"])  # for its log lines
    return ranker
