"""Grading one shard with one method: pairs, cache look-ups, batches, progress, the grades table."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any, Protocol, cast

import pandas as pd

from examflow.bounds import STORED_CHARS, clip
from examflow.errors import NOT_ASKED, TOO_LONG
from examflow.grading.backends import Answer, Request, expected_signature, make_backend
from examflow.grading.cache import GradeCache
from examflow.grading.grades import GRADE_COLUMNS, GRADE_DTYPES, GaveUp, error_kind, unanswered
from examflow.grading.methods import (
    Grade,
    Pair,
    aggregation_request,
    interpret,
    request,
    verification_request,
    vote,
)
from examflow.io.tables import optional
from examflow.progress import PAIRS, PROMPTS, JobProgress
from examflow.prompts import template
from examflow.registry import AGGREGATE, KINDS, Method, criterion_id

log = logging.getLogger(__name__)


# What a method grades passages against: (query_id, facet_id, target_id, text, gold answers, choices).
Target = tuple[str, str | None, str, str, tuple[str, ...] | None, tuple[tuple[str, str], ...] | None]


class _Passage(Protocol):
    """A row of the pooled passages as `itertuples` gives it: a cast, since pandas types cells as any
    scalar; these cells are strings."""

    query_id: str
    passage_id: str
    text: str


class _Query(Protocol):
    """A row of a queries table (`examflow.io.queries.QUERY_COLUMNS`) as `itertuples` gives it: a cast,
    since pandas types cells as any scalar. A whole query's facet is missing (`_optional`)."""

    query_id: str
    facet_id: str | float | None
    query_text: str
    facet_text: str | float | None


class _Question(Protocol):
    """A row of a questions table (`examflow.questions.shards.QUESTION_COLUMNS`) as `itertuples` gives it:
    a cast, since pandas types cells as any scalar. Missing cells: None, or NaN once read back (`_optional`)."""

    query_id: str
    facet_id: str | float | None
    question_id: str
    question_text: str
    gold_answers: Iterable[str] | float | None  # a list, or an array once read back
    choices: str | float | None  # JSON of {key: choice}


def make_pairs(kind: str, passages: pd.DataFrame, questions: pd.DataFrame, queries: pd.DataFrame) -> list[Pair]:
    """Every pooled passage of a query with each of the query's questions, nuggets or facets."""
    by_query: dict[str, list[Target]] = {}
    for target in pair_targets(kind, questions, queries):
        by_query.setdefault(target[0], []).append(target)
    # (tests pair questions without a queries table: None)
    query_texts = dict(zip(queries["query_id"], queries["query_text"])) if queries is not None and len(queries) else {}
    return [
        Pair(query_id, facet_id, p.passage_id, target_id, text, p.text, gold, choices, query_texts.get(query_id))
        for p in cast(Iterator[_Passage], passages.itertuples(index=False))
        for query_id, facet_id, target_id, text, gold, choices in by_query.get(p.query_id, [])
    ]


def pair_targets(kind: str, questions: pd.DataFrame, queries: pd.DataFrame) -> list[Target]:
    """What a method grades each passage against: (query_id, facet_id, target_id, text, gold answers,
    choices) for each question or nugget of `kind`'s target, or each query (or facet) for direct grading."""
    target, criteria = KINDS[kind].target, KINDS[kind].criteria
    if target == "query":
        queried: list[Target] = [
            (q.query_id, facet, f"{q.query_id}/{facet}" if facet else q.query_id,
             f"{q.query_text} / {q.facet_text}" if facet else q.query_text, None, None)
            for q in cast(Iterator[_Query], queries.itertuples(index=False))
            for facet in [optional(q.facet_id)]
        ]  # fmt: skip
        if not criteria:
            return queried
        # criteria-based: the query once per criterion, `query[/facet]/criterion`
        return [(q, f, f"{i}/{criterion_id(name)}", t, g, c) for q, f, i, t, g, c in queried for name, _ in criteria]
    chosen = questions[questions["kind"] == target]
    return [_question_target(q) for q in cast(Iterator[_Question], chosen.itertuples(index=False))]


def _question_target(q: _Question) -> Target:
    gold: Iterable[str] | None = optional(q.gold_answers)
    choices: str | None = optional(q.choices)
    return (q.query_id, optional(q.facet_id), q.question_id, q.question_text,
            tuple(gold) if gold is not None else None,
            tuple(sorted(json.loads(choices).items())) if choices else None)  # fmt: skip


def samples_of(asked: Request, n: int) -> list[Request]:
    """A request asked `n` times: sample i > 0 a field of its own, so that each has its own cache entry and API
    attempt (the first is the request itself: a method's first sample shares the unsampled one's answers)."""
    return [replace(asked, fields=asked.fields | {"sample": i}) if i else asked for i in range(n)]


class ShardGrader:
    """Grades one shard with one method (checked: `examflow.registry.check_method`)."""

    def __init__(
        self,
        method: Method,
        cache_dir: str,
        flush_every: int = 64,
        progress: JobProgress | None = None,
        max_error_rate: float | None = None,
    ):
        self.method = method
        # The share of pairs that may fail (grading.max_error_rate): past it the job stops asking, as it will fail.
        self.max_error_rate = max_error_rate
        self.kind = method.kind
        self.cache_dir = cache_dir
        self.loaded: Any = None  # the back end, made when a pair needs the model: a cached job loads none
        self.cache = GradeCache(cache_dir, expected_signature(method.backend))
        self.flush_every = flush_every
        self.sent = 0  # prompts given to the back end (an API back end's reply cache may answer some)
        self.too_long = 0  # of those, prompts a local model could not take (no room for the passage): not run
        self.known: dict[str, Answer] | None = None  # the cache, read once per job
        self.progress = progress  # the job's progress file (examflow.progress), if it keeps one
        # The models an API back end's server named for the answers, fresh or cached (none for a local model).
        self.served: Counter[str] = Counter()

    @property
    def stored(self) -> int:
        """Replies an API back end's server gave, each stored in its reply cache as it came (0 for a local model)."""
        return getattr(self.loaded, "stored", 0)

    @property
    def replayed(self) -> int:
        """Of the prompts sent, those an API back end's own reply cache answered: a job killed between two
        flushes of the grade cache finds its last replies there."""
        return getattr(self.loaded, "replayed", 0)

    @property
    def backend(self) -> Any:
        """The back end, its model loaded the first time it is asked for."""
        return self.loaded if self.loaded is not None else self._load()

    def _load(self) -> Any:
        """Load the back end. Where its signature is not the one expected before its model was loaded, its
        answers are looked up again under its own: never another configuration's."""
        self.loaded = make_backend(self.method.backend, self.cache_dir)
        if self.loaded.signature != self.cache.signature:
            log.warning("the back end's signature %s is not the one expected before its model was loaded, %s: "
                        "its answers are looked up under its own", self.loaded.signature, self.cache.signature)  # fmt: skip
            self.cache, self.known = GradeCache(self.cache_dir, self.loaded.signature), None
        return self.loaded

    def _todo(self, requests: list, query_ids: list[str]) -> tuple[list[str], list[int]]:
        """Every request's cache key, and which of them to ask: those the cache does not answer, each prompt
        once (a passage under two ids puts the same prompt twice; its answer is both pairs')."""
        keys = [self.cache.key(r) for r in requests]
        if self.known is None:
            self.known = self.cache.answers(query_ids)
        first: dict[str, int] = {}
        return keys, [i for i, key in enumerate(keys) if key not in self.known and first.setdefault(key, i) == i]

    def answers(
        self, requests: list, query_ids: list[str], more: bool = False, allowed: float | None = None
    ) -> list[Answer]:
        """Cached answers where there are any; the rest from the model, flushed batch by batch (`more`:
        another pass follows, for the progress line). `allowed`: how many answers may fail (a job's
        max_error_rate of its pairs, where each request is a pair); past it the job stops asking (GaveUp)."""
        keys, todo = self._planned(requests, query_ids, more)
        known = cast(dict[str, Answer], self.known)
        unit = work_unit(self.method)  # an embedding grader is sent pairs
        if not todo:  # the cache answers all: no model is loaded for nothing
            return self._served([known[key] for key in keys])
        start = time.monotonic()
        batches = [todo[offset : offset + self.flush_every] for offset in range(0, len(todo), self.flush_every)]
        chunks = [[requests[i] for i in batch] for batch in batches]
        failures: list[str] = []  # this pass's failed pairs (a prompt not asked is none; a shared one fails each)
        pairs_of = Counter(keys)

        def ask(chunk: list) -> list[Answer]:  # an API back end stops within a chunk once the job must fail
            if allowed is None or not getattr(self.backend, "gives_up", False):
                return self.backend.answer(chunk)
            return self.backend.answer(chunk, give_up_after=math.floor(allowed) - len(failures))

        # A local model prepares the next chunk's prompts while it answers this one.
        answered = getattr(self.backend, "answer_chunks", None)
        replies = answered(chunks) if answered else map(ask, chunks)
        replayed, without, sent, never_run = self.replayed, 0, 0, 0  # never run: too long to ask
        stored = self.stored
        try:
            # `replies` first: zip ends by exhausting it, which ends the preparing thread.
            for fresh, batch in zip(replies, batches):
                asked = [a for a in fresh if not _not_asked(a)]
                self.sent += len(asked)
                too_long = sum(a.error is not None and error_kind(a.error) == TOO_LONG for a in asked)
                self.too_long += too_long
                self.cache.add_answers([(query_ids[i], keys[i], a) for i, a in zip(batch, fresh)])
                known.update({keys[i]: a for i, a in zip(batch, fresh)})
                failed = sum(unanswered(a.error) for a in asked)
                without, sent, never_run = without + failed, sent + len(asked), never_run + too_long
                _progress(sent - never_run, len(todo) - never_run, time.monotonic() - start, unit, without)
                if self.progress:
                    self.progress.graded(len(asked), self.replayed - replayed, failed, too_long)
                replayed, stored = self.replayed, self.stored
                failures += [
                    a.error
                    for i, a in zip(batch, fresh)
                    if a.error and not _not_asked(a)
                    for _ in range(pairs_of[keys[i]])
                ]
                if allowed is not None and len(failures) > allowed:
                    getattr(replies, "close", lambda: None)()  # a local model's preparing thread ends
                    raise self._gave_up(keys)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM within a chunk: the replies that came are stored, so counted
            if self.progress:
                self.progress.graded(self.stored - stored)
            raise
        return self._served([known[key] for key in keys])

    def _planned(self, requests: list, query_ids: list[str], more: bool) -> tuple[list[str], list[int]]:
        """`_todo`, the model loaded where there is any (its signature may move the keys), and said."""
        keys, todo = self._todo(requests, query_ids)
        if todo and self.loaded is None:
            expected = self.cache.signature
            self._load()
            if self.cache.signature != expected:
                keys, todo = self._todo(requests, query_ids)
        shared = sum(key not in cast(dict, self.known) for key in keys) - len(todo)
        log.info("%d of %d %s cached; %d to grade%s", len(requests) - len(todo) - shared, len(requests),
                 work_unit(self.method), len(todo),
                 f" ({shared} more the same as one of them, answered with it)" if shared else "")  # fmt: skip
        if self.progress:  # prompts: one shared by pairs is neither cached nor sent again
            self.progress.planned(len(requests) - len(todo) - shared, len(todo), more, shared)
        return keys, todo

    def _gave_up(self, keys: list[str]) -> GaveUp:
        """The job's stop: the answers received kept, the failed pairs counted as its table would count them
        (a prompt two pairs share fails both; a cut-off answer cached by an earlier run is one)."""
        self.cache.close()
        known = cast(dict[str, Answer], self.known)
        received = [a if a is not None and not _not_asked(a) else None for a in map(known.get, keys)]
        self._served([a for a in received if a is not None])
        return GaveUp([a.error for a in received if a is not None and a.error is not None], received)

    def _served(self, answers: list[Answer]) -> list[Answer]:
        """The answers, their models counted (the grades' metadata records them)."""
        self.served.update(a.served for a in answers if a.served is not None)
        return answers

    def grade(self, pairs: list[Pair]) -> pd.DataFrame:
        if self.method.samples > 1:
            return self.voted(pairs)
        second = bool(self.method.entry.verification or self.method.entry.aggregation)
        # Each first answer is a pair's: one that fails fails its pair (an aggregation adds rows, which the job's
        # allowance counts: no early stop there).
        rate = None if self.method.entry.aggregation else self.max_error_rate
        allowed = None if rate is None else rate * len(pairs)
        try:
            answers = self.answers([request(self.kind, p) for p in pairs], [p.query_id for p in pairs], second, allowed)
        except GaveUp as stop:
            raise self._unparsable_too(stop, pairs) from None
        verdicts: list[Answer | None] = [None] * len(pairs)
        if self.method.entry.verification:  # a second prompt: does the answer match the key?
            needed = [
                i
                for i, (p, a) in enumerate(zip(pairs, answers))
                if p.gold_answers and a.error is None and a.text is not None
            ]
            asked = [verification_request(self.kind, pairs[i], cast(str, answers[i].text)) for i in needed]
            for i, verdict in zip(needed, self.answers(asked, [pairs[i].query_id for i in needed])):
                verdicts[i] = verdict
        mode = self.method.mode
        grades = [interpret(self.kind, a, p, mode, v) for p, a, v in zip(pairs, answers, verdicts)]
        tables = [self.table(pairs, grades, request(self.kind, pairs[0]).template if pairs else "")]
        if self.method.entry.aggregation:
            tables.append(self.table(*self.aggregate(pairs, grades), self.method.entry.aggregation))
        self.cache.close()
        return pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]

    def _unparsable_too(self, stop: GaveUp, pairs: list[Pair]) -> GaveUp:
        """A job's stop, the answers that came but are no grade counted with its failures (its line names them)."""
        read = [interpret(self.kind, a, p, self.method.mode) for p, a in zip(pairs, stop.received) if a and not a.error]
        stop.failures += [g.error for g in read if g.error is not None and error_kind(g.error) == "unparsable"]
        return stop

    def voted(self, pairs: list[Pair]) -> pd.DataFrame:
        """Each pair asked `samples` times (sample i > 0 a field of its own, so that each has its own cache
        entry and API attempt), the grade their majority (`examflow.grading.methods.vote`)."""
        n = self.method.samples
        asked = [request(self.kind, p) for p in pairs]
        sampled = [each for r in asked for each in samples_of(r, n)]
        answers = self.answers(sampled, [p.query_id for p in pairs for _ in range(n)])
        mode = self.method.mode
        grades = [
            vote([interpret(self.kind, a, p, mode) for a in answers[j * n : (j + 1) * n]]) for j, p in enumerate(pairs)
        ]
        self.cache.close()
        return self.table(pairs, grades, asked[0].template if asked else "")

    def aggregate(self, pairs: list[Pair], grades: list[Grade]) -> tuple[list[Pair], list[Grade]]:
        """The aggregation prompt's grade of each (passage, query or subtopic) whose criteria all got one."""
        asked, requests = aggregation_requests(self.kind, pairs, grades)
        answers = self.answers(requests, [p.query_id for p in asked])
        return asked, [interpret(self.kind, a, p, self.method.mode) for p, a in zip(asked, answers)]

    def table(self, pairs: list[Pair], grades: list[Grade], name: str) -> pd.DataFrame:
        """The grades table of `pairs`, asked with the template `name`."""
        prompt_hash = hashlib.md5(template(name).encode()).hexdigest()[:12] if name else ""
        model = self.cache.signature.get("model")
        # The grade was read off the whole answer; the table keeps a bounded part of it.
        rows = [
            (p.query_id, p.facet_id, p.passage_id, p.question_id, self.method.name, self.kind, model, name, prompt_hash,
             _kept(g.raw), _kept(g.answer), g.rating, g.correct, g.expected, g.score, g.unparsable, _kept(g.error),
             g.votes, g.margin)
            for p, g in zip(pairs, grades)
        ]  # fmt: skip
        table = pd.DataFrame(rows, columns=GRADE_COLUMNS, dtype=object)
        return table.astype(GRADE_DTYPES)


def aggregation_requests(kind: str, pairs: list[Pair], grades: list[Grade]) -> tuple[list[Pair], list[Request]]:
    """The aggregation prompt of each (passage, query or subtopic) whose criteria all got a grade, as a pair
    `target/relevance`; a target with a failed criterion is not asked (its failure is counted). The prompt
    holds the grades: the plan asks the cache for it from the cached criteria's grades, as grading does."""
    criteria = [criterion_id(name) for name, _ in KINDS[kind].criteria]
    graded: dict[tuple[str, str], dict[str, int]] = {}
    first: dict[tuple[str, str], Pair] = {}
    for pair, grade in zip(pairs, grades):
        target, criterion = pair.question_id.rsplit("/", 1)
        if grade.error is None and grade.rating is not None:
            graded.setdefault((pair.passage_id, target), {})[criterion] = grade.rating
            first.setdefault((pair.passage_id, target), pair)
    whole = [key for key, found in graded.items() if len(found) == len(criteria)]
    asked = [replace(first[key], question_id=f"{key[1]}/{AGGREGATE}") for key in whole]
    return asked, [aggregation_request(kind, p, [graded[k][c] for c in criteria]) for p, k in zip(asked, whole)]


def _kept(text: str | None) -> str | None:
    return None if text is None else clip(text, STORED_CHARS)


def _not_asked(answer: Answer) -> bool:
    """Whether an answer is a prompt the back end did not send: the job had more failures than it may."""
    return answer.error is not None and error_kind(answer.error) == NOT_ASKED


def work_unit(method: Method) -> str:
    """What a method's job sends its back end: pairs to an embedding grader, prompts to a model."""
    return PAIRS if method.backend.entry.by_quantiles else PROMPTS


def _progress(done: int, total: int, seconds: float, unit: str, without: int) -> None:
    rate = done / seconds if seconds > 0 else float("inf")
    eta = time.strftime("%H:%M:%S", time.gmtime((total - done) / rate if rate > 0 else 0))
    none = f" ({without} got no answer)" if without else ""
    log.info("asked %d/%d %s%s, %.1f %s/s, ETA %s", done, total, unit, none, rate, unit, eta)
