"""Grading methods (docs/methods.md §3): which prompt each pair gets and how its answer becomes a grade.

Question methods pair every pooled passage with every exam question of its query:
`self_rating` (EXAM++), `qa_verify` (answer, then check it against the answer key),
`qa_llm_verify` (answer, then ask the LLM whether it matches the key), `extractive_qa`
(a SQuAD2 span, checked against the key). `nugget_rating` pairs passages with nuggets.
The direct-grading baselines pair passages with the query itself (for a subtopic:
"query / subtopic"). The kinds themselves are listed in `examflow.registry.KINDS`.

An answer that is not a grade is *unparsable*: in the `reference` and `paper` parse modes it
is read as docs/methods.md §3 says and flagged, in `strict` mode it is an error. A failure is never a grade.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from examflow.grading.backends import Answer, Request
from examflow.grading.parsing import FALSE_WORDS, TRUE_WORDS, is_bare_rating, parse_self_rating, verify_answer
from examflow.registry import KINDS

_THOMAS = re.compile(r"[^\w]*([0-2])[^\w]*")
_EXPECTED = {"rating": "a grade 0-5", "thomas": "a grade 0-2", "binary": "yes or no", "verified": "yes or no"}


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
    spec = KINDS[kind]
    return Request(spec.template, {spec.target: pair.question_text, "context": pair.passage_text})


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
    unparsable: bool = False  # the answer was not a grade; read as docs/methods.md §3 says
    error: str | None = None  # `kind: message`; a failed pair has no grade


def interpret(kind: str, answer: Answer, pair: Pair, mode: str = "reference", verdict: Answer | None = None) -> Grade:
    """A grade from the model's answer; failures stay failures (error set, no grade)."""
    if answer.error is not None:
        return Grade(None, error=answer.error)
    text = answer.text or ""
    grade = Grade(text, answer=text.strip(), expected=answer.expected, score=answer.score)
    if answer.score is not None:  # embedding similarity: graded from pool quantiles at merge
        return grade
    how = KINDS[kind].grade
    if how == "rating":
        grade.unparsable = not is_bare_rating(text)
        grade.rating = None if grade.unparsable and mode == "strict" else parse_self_rating(text, mode)
    elif how == "correct":
        grade.correct = verify_answer(text, list(pair.gold_answers)) if pair.gold_answers else None
    elif how == "verified":
        if verdict is not None and verdict.error is not None:
            return Grade(text, answer=text.strip(), error=verdict.error)
        word = (verdict.text or "").strip().lower().rstrip(".") if verdict is not None else None
        grade.correct = {"yes": True, "no": False}.get(word)
        grade.unparsable = verdict is not None and grade.correct is None
    elif how == "thomas":
        match = _THOMAS.fullmatch(text)
        grade.rating = int(match.group(1)) if match else None
        grade.unparsable = match is None
    else:  # binary direct grading: relevant iff the answer is yes, correct or true
        word = text.strip().lower()
        grade.rating = int(word in TRUE_WORDS)
        grade.unparsable = word not in TRUE_WORDS | FALSE_WORDS
    if grade.unparsable and (mode == "strict" or how == "thomas"):
        # Thomas's 0-2 scale has no published reading of other answers: always an error.
        unread = verdict.text if how == "verified" else text
        return Grade(
            text, answer=text.strip(), unparsable=True, error=f"unparsable: not {_EXPECTED[how]}: {unread[:80]!r}"
        )
    if grade.correct is not None:
        grade.rating = int(grade.correct)
    return grade
