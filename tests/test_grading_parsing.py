"""docs/methods.md §3 parsing: self-ratings and answer verification."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import REFERENCE, needs_reference

from examflow.grading.backends import Answer
from examflow.grading.methods import Pair, interpret
from examflow.grading.parsing import fuzz_ratio, normalise_answer, parse_self_rating, verify_answer

SAMPLE = REFERENCE / "format-samples/workbench-graded-sample.jsonl.gz"


@pytest.mark.parametrize(
    ("text", "reference", "paper"),
    [
        ("4", 4, 4),
        (" 5.", 5, 5),
        ("(3)", 3, 3),
        ("**2**", 2, 2),
        ("6", 0, 1),  # not 0-5, answerable-looking
        ("Answer: 4", 0, 1),
        ("unanswerable", 1, 0),
        ("No", 1, 0),
        ("no answer.", 1, 0),
        ("It does not say", 1, 0),
        ("Not enough info", 1, 0),  # fuzzy: ratio > 80 after stemming
        ("b)", 1, 0),
        ("(iii)", 1, 0),
        ("", 1, 0),
        ("the Moon's gravity", 0, 1),
    ],
)
def test_parse_self_rating(text, reference, paper):
    assert parse_self_rating(text) == reference
    assert parse_self_rating(text, mode="paper") == paper


PAIR = Pair("q", None, "p", "q/1", "What?", "A passage.")


@pytest.mark.parametrize("minus", ["-", "\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2212", "\u207b", "\uff0d"])
def test_a_negative_number_is_no_grade(minus):
    """An API model's `-3` was read as the grade 3 (strict mode too, and thomas' 0-2 alike): a number
    below the scale is an unparsable answer. `reference` keeps the published parse's 3, marked unparsable."""
    strict = interpret("self_rating", Answer(f"{minus}3"), PAIR, "strict")
    assert (strict.rating, strict.unparsable, strict.error) == (None, True, f"unparsable: not a grade 0-5: '{minus}3'")
    reference = interpret("self_rating", Answer(f"{minus}3"), PAIR, "reference")
    assert (reference.rating, reference.unparsable, reference.error) == (3, True, None)
    thomas = interpret("thomas", Answer(f" {minus}1."), PAIR, "strict")
    assert (thomas.rating, thomas.error) == (None, f"unparsable: not a grade 0-2: ' {minus}1.'")
    for text, grade in [("3", 3), ("(3)", 3), ("- 3", 3), ("**4**", 4), ("+3", 3)]:  # a bullet's dash is no sign
        assert interpret("self_rating", Answer(text), PAIR, "strict").rating == grade
    assert interpret("thomas", Answer("(2)"), PAIR, "strict").rating == 2


def test_fuzzy_ratio_is_rounded_levenshtein():
    assert fuzz_ratio("unknown", "unknown") == 100
    assert fuzz_ratio("abcd", "abce") == 75
    assert fuzz_ratio("not enough inform", "not enough inform") == 100


@pytest.mark.parametrize(
    ("answer", "gold", "correct"),
    [
        ("The Moon.", ["the Moon"], True),
        ("moons", ["Moon"], True),  # stems agree
        ("no", ["false"], True),
        ("Incorrect", ["False"], True),
        ("yes", ["false"], False),
        ("true", ["True"], True),
        ("Jupiter", ["Saturn", "Jupiter"], True),
        ("volcanic explosivity indx", ["Volcanic Explosivity Index"], True),  # fuzzy > 80
        ("ab", ["ab"], True),
        ("a.", ["a"], False),  # ill-formed option letter
        ("(iii)", ["iii"], False),
        ("unknown", ["unknown"], False),  # unanswerable expressions are wrong
        ("x", ["x"], False),  # shorter than 2 characters after normalising
        ("cat", ["car"], False),  # under 4 characters: exact only
        ("photosynthesis", ["respiration"], False),
    ],
)
def test_verify_answer(answer, gold, correct):
    assert verify_answer(answer, gold) is correct


def test_normalise_answer_drops_stopwords_and_stems():
    assert normalise_answer("The bees are fanning their wings!") == "bee fan wing"


@needs_reference("the published FLAN-T5 self-ratings parse back from their answers", SAMPLE.exists())
def test_published_self_ratings_parse_back_from_their_answers():
    checked = 0
    for line in gzip.open(SAMPLE, "rt"):
        _, paragraphs = json.loads(line)
        for paragraph in paragraphs:
            for grades in paragraph["exam_grades"]:
                ratings = {r["question_id"]: r["self_rating"] for r in grades["self_ratings"]}
                for question_id, answer in grades["answers"]:
                    assert parse_self_rating(answer) == ratings[question_id]
                    checked += 1
    assert checked == 120


UNANSWERABLE = {"unanswerable", "no", "no answer", "not enough information", "unknown"}


@pytest.mark.parametrize("mode", ["reference", "paper"])
@pytest.mark.parametrize(
    "answer", ["0", "2.", "(1)", "3", "5", "7", "-2", "unanswerable", "No answer", "relevant", "It is a 2", ""]
)
def test_thomas_reads_other_answers_as_the_reference_implementation(answer, mode):
    """The workbench's Thomas prompt reads its answer with its self-rater (docs/methods.md §3: a digit 0-5 alone is the
    rating; otherwise an unanswerable expression, the empty answer among them, 1 and anything else 0, the
    other way round in `paper` mode) and counts a rating above 2 as 0. Such answers are unparsable, counted;
    `strict` makes them errors."""
    import re

    digit = re.fullmatch(r"[^\w]*([0-5])[^\w]*", answer)
    if digit:
        rating = int(digit.group(1))
    else:
        unanswerable = answer.strip().lower().rstrip(".") in UNANSWERABLE | {""}
        rating = int(unanswerable == (mode == "reference"))
    expected = rating if rating <= 2 else 0
    grade = interpret("thomas", Answer(answer), PAIR, mode)
    assert (grade.rating, grade.error) == (expected, None)
    assert grade.unparsable == (re.fullmatch(r"[^\w]*(?<![-])([0-2])[^\w]*", answer) is None)
    strict = interpret("thomas", Answer(answer), PAIR, "strict")
    assert (strict.rating is None) == grade.unparsable and (strict.error is None) != grade.unparsable
