"""Grading methods (docs/methods.md §3): which prompt each pair gets and how its answer becomes a grade.

Question methods pair every pooled passage with every exam question of its query:
`self_rating` (EXAM++), `qa_verify` (answer, then check it against the answer key),
`qa_llm_verify` (answer, then ask the LLM whether it matches the key), `extractive_qa`
(a SQuAD2 span, checked against the key). `nugget_rating` pairs passages with nuggets.
The direct-grading baselines and UMBRELA pair passages with the query itself (for a subtopic:
"query / subtopic"). The kinds themselves are listed in `examflow.registry.KINDS`.

An answer that is not a grade is *unparsable*: in the `reference` and `paper` parse modes it
is read as docs/methods.md §3 says and flagged, in `strict` mode it is an error. A failure is never a grade.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from examflow.grading.backends import Answer, Request
from examflow.grading.parsing import (
    FALSE_WORDS,
    TRUE_WORDS,
    bare_grade,
    is_bare_rating,
    parse_criterion,
    parse_nugget_label,
    parse_self_rating,
    parse_umbrela,
    verify_answer,
)
from examflow.registry import KINDS, criterion_id
from examflow.ties import majority

# A nugget's assignment as a grade: EXAM-Cover at τ 2 counts the nuggets a run supports (nuggetizer's
# strict scores), at τ 1 those it supports at least partly.
SUPPORT_GRADES = {"support": 2, "partial_support": 1, "not_support": 0}


@dataclass(frozen=True)
class Pair:
    query_id: str
    facet_id: str | None
    passage_id: str
    question_id: str  # for direct methods: the query (or query/facet) id
    question_text: str
    passage_text: str
    gold_answers: tuple[str, ...] | None = None
    choices: tuple[tuple[str, str], ...] | None = None
    query_text: str | None = None  # the query's own text (nuggetizer's assigner names it beside the nugget)


def request(kind: str, pair: Pair) -> Request:
    spec = KINDS[kind]
    fields: dict[str, object] = {spec.target: pair.question_text, "context": pair.passage_text}
    if spec.listed:  # as nuggetizer fills its assigner's template: the nuggets as a Python list, and the query
        fields |= {"query": pair.query_text, "nuggets": str([pair.question_text]), "num_nuggets": 1}
    if spec.criteria:  # the target's id ends in its criterion
        name, definition = next(c for c in spec.criteria if criterion_id(c[0]) == pair.question_id.rsplit("/", 1)[1])
        fields |= {"criterion": name, "definition": definition}
    return Request(spec.template, fields)


def aggregation_request(kind: str, pair: Pair, grades: list[int]) -> Request:
    """The last prompt of a criteria-based kind that aggregates by LLM: the query, the passage and each
    criterion's grade (`name: grade` lines, in the criteria's order), as the paper's `aggregate_scores`."""
    spec = KINDS[kind]
    if spec.aggregation is None:
        raise ValueError(f"method kind {kind!r} asks no aggregation")
    scores = "\n".join(f"{name}: {grade}" for (name, _), grade in zip(spec.criteria, grades, strict=True))
    return Request(spec.aggregation, {"query": pair.question_text, "context": pair.passage_text, "scores": scores})


def correct_answer(pair: Pair) -> str | None:
    """The answer key as the verification prompt states it (docs/methods.md §3)."""
    if not pair.gold_answers:
        return None
    gold = pair.gold_answers[0]
    others = [text for _, text in (pair.choices or ()) if text.lower() not in ("all of the above", "none of the above")]
    if gold.lower() == "all of the above" and others:
        return "all of " + " and ".join(others)
    if gold.lower() == "none of the above" and others:
        return "neither " + " nor ".join(others)
    return gold


def verification_request(kind: str, pair: Pair, answer: str) -> Request:
    """The second prompt of a kind that verifies each answer: does it match the key?"""
    name = KINDS[kind].verification
    if name is None:
        raise ValueError(f"method kind {kind!r} asks no verification")
    fields = {"question": pair.question_text, "correct_answer": correct_answer(pair), "answer": answer}
    return Request(name, fields)


@dataclass
class Grade:
    raw: str | None
    answer: str | None = None
    rating: int | None = None
    correct: bool | None = None
    expected: float | None = None
    score: float | None = None
    unparsable: bool = False  # the answer was not a grade; read as docs/methods.md §3 says
    error: str | None = None  # `kind: message`; a failed pair has no grade
    votes: int | None = None  # a vote over samples: how many gave the rating ...
    margin: int | None = None  # ... and by how many it beat the runner-up (0: a tie)


def vote(grades: list[Grade]) -> Grade:
    """One grade from the grades of a pair's samples: their majority (a tie to the lowest rating), the
    vote's count and margin kept, every answer in `raw`; a failed sample fails the pair (its error)."""
    failed = next((i for i, grade in enumerate(grades) if grade.error is not None), None)
    if failed is not None:  # its error first (the failure's kind leads), then which sample it was
        grade = grades[failed]
        error = f"{grade.error} (sample {failed + 1} of {len(grades)})"
        return Grade(grade.raw, answer=grade.answer, unparsable=grade.unparsable, error=error)
    rating, votes, margin = majority([cast(int, grade.rating) for grade in grades])
    raw = "\n".join(f"[sample {i + 1}] {grade.raw}" for i, grade in enumerate(grades))
    chosen = next(grade for grade in grades if grade.rating == rating)
    return Grade(raw, answer=chosen.answer, rating=rating, votes=votes, margin=margin)


def interpret(kind: str, answer: Answer, pair: Pair, mode: str = "reference", verdict: Answer | None = None) -> Grade:
    """A grade from the model's answer; failures stay failures (error set, no grade)."""
    if answer.error is not None:
        return Grade(None, error=answer.error)
    text = answer.text or ""
    grade = Grade(text, answer=text.strip(), expected=answer.expected, score=answer.score)
    if answer.score is not None:  # embedding similarity: graded from pool quantiles at merge
        return grade
    if verdict is not None and verdict.error is not None:
        return Grade(text, answer=text.strip(), error=verdict.error)
    if verdict is not None:  # the verification's reply, which the grade is read from, kept after the answer
        grade.raw = f"{text}\n[verdict] {verdict.text or ''}"
    reading = READINGS[KINDS[kind].grade]
    read = reading.read(grade, text, pair, mode, verdict)
    if grade.unparsable and (mode == "strict" or reading.always_strict):
        return Grade(
            grade.raw, answer=text.strip(), unparsable=True, error=f"unparsable: not {reading.expected}: {read[:80]!r}"
        )
    if grade.correct is not None:
        grade.rating = int(grade.correct)
    return grade


# Each reading fills in a grade from the answer's text and says which text it read.
def _rating(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    grade.unparsable = not is_bare_rating(text)
    grade.rating = None if grade.unparsable and mode == "strict" else parse_self_rating(text, mode)
    return text


def _correct(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    grade.correct = verify_answer(text, list(pair.gold_answers)) if pair.gold_answers else None
    return text


def _verified(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    """The verdict of the second prompt (none for a question without a key): yes or no."""
    word = (verdict.text or "").strip().lower().rstrip(".") if verdict is not None else None
    grade.correct = {"yes": True, "no": False}.get(word) if word is not None else None
    grade.unparsable = verdict is not None and grade.correct is None
    return (verdict.text or "") if verdict is not None else ""


def _thomas(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    """A grade 0-2; any other answer read as the reference implementation's Thomas prompt reads it: as a
    self-rating in the mode's way, a rating above 2 counting 0."""
    grade.rating = bare_grade(text, 2)
    grade.unparsable = grade.rating is None
    if grade.unparsable and mode != "strict":
        rating = parse_self_rating(text, mode)
        grade.rating = rating if rating <= 2 else 0
    return text


def _umbrela(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    grade.rating = parse_umbrela(text, strict=mode == "strict")
    grade.unparsable = grade.rating is None
    return text


def _assigned(labels: tuple[str, ...]) -> Callable[[Grade, str, Pair, str, Answer | None], str]:
    """The reading of nuggetizer's assigner answer whose label must be one of `labels`."""

    def read(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
        label = parse_nugget_label(text)
        grade.rating = SUPPORT_GRADES[label] if label in labels else None
        grade.unparsable = grade.rating is None
        return text

    return read


def _criterion(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    grade.rating = parse_criterion(text, strict=mode == "strict")
    grade.unparsable = grade.rating is None
    return text


def _binary(grade: Grade, text: str, pair: Pair, mode: str, verdict: Answer | None) -> str:
    """Relevant iff the answer is yes, correct or true."""
    word = text.strip().lower()
    grade.rating = int(word in TRUE_WORDS)
    grade.unparsable = word not in TRUE_WORDS | FALSE_WORDS
    return text


@dataclass(frozen=True)
class Reading:
    """How an answer becomes a grade (a kind's `grade` in `examflow.registry.KINDS` names one)."""

    read: Callable[[Grade, str, Pair, str, Answer | None], str]
    expected: str  # what an answer should be, for the error of one that is not
    always_strict: bool = False  # an answer that is not a grade is an error in every parse mode
    strict_reads_less: bool = False  # `mode: strict` reads fewer answers than the other modes


def strict_in_every_mode(kind: str) -> bool:
    """Whether an answer of `kind` that is not a grade fails whatever the method's `mode`."""
    return READINGS[KINDS[kind].grade].always_strict


def read_outside_strict(kind: str) -> bool:
    """Whether `mode: reference` or `paper` reads answers of `kind` that `mode: strict` refuses (a label
    stated amid words)."""
    return READINGS[KINDS[kind].grade].strict_reads_less


READINGS = {
    "rating": Reading(_rating, "a grade 0-5"),
    "correct": Reading(_correct, "an answer"),  # any answer is read: never unparsable
    "verified": Reading(_verified, "yes or no"),
    "thomas": Reading(_thomas, "a grade 0-2"),
    "binary": Reading(_binary, "yes or no"),
    # UMBRELA grades an answer it cannot read 0; here that is a failure, in every parse mode.
    "umbrela": Reading(_umbrela, "a grade 0-3", always_strict=True, strict_reads_less=True),
    "support": Reading(
        _assigned(("support", "partial_support", "not_support")),
        "a list of one label: support, partial_support or not_support",
        always_strict=True,
    ),
    "criterion": Reading(_criterion, "a grade 0-3", always_strict=True, strict_reads_less=True),
    "support_2grade": Reading(
        _assigned(("support", "not_support")), "a list of one label: support or not_support", always_strict=True
    ),
}
