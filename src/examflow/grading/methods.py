"""Grading methods (SPEC §3): which prompt each pair gets and how its answer becomes a grade.

Question methods pair every pooled passage with every exam question of its query:
`self_rating` (EXAM++), `qa_verify` (answer, then check it against the answer key),
`qa_llm_verify` (answer, then ask the LLM whether it matches the key), `extractive_qa`
(a SQuAD2 span, checked against the key). `nugget_rating`
pairs passages with nuggets. The direct-grading baselines pair passages with the query
itself (for a subtopic: "query / subtopic").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from examflow.grading.backends import Answer, Request
from examflow.grading.parsing import parse_self_rating, verify_answer

# extractive_qa sends no prompt: the span extractor reads question and passage as a pair.
QUESTION_KINDS = {
    "self_rating": "grade-self-rating",
    "qa_verify": "grade-qa",
    "qa_llm_verify": "grade-qa",
    "extractive_qa": "grade-qa",
}
NUGGET_KINDS = {"nugget_rating": "grade-nugget-rating"}
DIRECT_KINDS = {
    "faggioli": "direct-faggioli",
    "faggioli_few": "direct-faggioli-few",
    "helm": "direct-helm",
    "sun": "direct-sun",
    "sun_few": "direct-sun-few",
    "thomas": "direct-thomas",
}
KINDS = QUESTION_KINDS | NUGGET_KINDS | DIRECT_KINDS
RATING_KINDS = {"self_rating", "nugget_rating"}
RELEVANT_WORDS = {"yes", "correct", "true"}
_THOMAS = re.compile(r"[^\w]*([0-2])[^\w]*")


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


def request(kind: str, pair: Pair) -> Request:
    if kind in QUESTION_KINDS:
        return Request(QUESTION_KINDS[kind], {"question": pair.question_text, "context": pair.passage_text})
    if kind in NUGGET_KINDS:
        return Request(NUGGET_KINDS[kind], {"nugget": pair.question_text, "context": pair.passage_text})
    return Request(DIRECT_KINDS[kind], {"query": pair.question_text, "context": pair.passage_text})


def correct_answer(pair: Pair) -> str | None:
    """The answer key as the verification prompt states it (SPEC §3)."""
    if not pair.gold_answers:
        return None
    gold = pair.gold_answers[0]
    others = [text for _, text in (pair.choices or ()) if text.lower() not in ("all of the above", "none of the above")]
    if gold.lower() == "all of the above" and others:
        return "all of " + " and ".join(others)
    if gold.lower() == "none of the above" and others:
        return "neither " + " nor ".join(others)
    return gold


def verification_request(pair: Pair, answer: str) -> Request:
    fields = {"question": pair.question_text, "correct_answer": correct_answer(pair), "answer": answer}
    return Request("grade-answer-verification", fields)


@dataclass
class Grade:
    raw: str | None
    answer: str | None = None
    rating: int | None = None
    correct: bool | None = None
    expected: float | None = None
    score: float | None = None
    error: str | None = None


def interpret(kind: str, answer: Answer, pair: Pair, mode: str = "reference", verdict: Answer | None = None) -> Grade:
    """A grade from the model's answer; failures stay failures (error set, no grade)."""
    if answer.error is not None:
        return Grade(None, error=answer.error)
    text = answer.text or ""
    grade = Grade(text, answer=text.strip(), expected=answer.expected, score=answer.score)
    if answer.score is not None:  # embedding similarity: graded from pool quantiles at merge
        return grade
    if kind in RATING_KINDS:
        grade.rating = parse_self_rating(text, mode)
    elif kind in ("qa_verify", "extractive_qa"):
        grade.correct = verify_answer(text, list(pair.gold_answers)) if pair.gold_answers else None
    elif kind == "qa_llm_verify":
        grade.correct = _verdict(verdict)
        if verdict is not None and verdict.error is not None:
            grade.error = f"verification: {verdict.error}"
    elif kind == "thomas":
        match = _THOMAS.fullmatch(text)
        grade.rating = int(match.group(1)) if match else None
        grade.error = None if match else f"unparsable: not a grade 0-2: {text[:80]!r}"
    else:
        grade.rating = int(text.strip().lower() in RELEVANT_WORDS)
    if grade.correct is not None:
        grade.rating = int(grade.correct)
    return grade


def _verdict(verdict: Answer | None) -> bool | None:
    if verdict is None or verdict.error is not None:
        return None
    word = (verdict.text or "").strip().lower().rstrip(".")
    return True if word == "yes" else False if word == "no" else None
