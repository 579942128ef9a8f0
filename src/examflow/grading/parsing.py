"""Turning model answers into grades, exactly as docs/methods.md §3 says.

`parse_self_rating` reads a 0–5 self-rating; `verify_answer` checks an extracted answer
against an answer key. Both match "unanswerable expressions" fuzzily: lower-cased,
Porter-stemmed, Levenshtein ratio (0–100, rounded) above 80.
"""

from __future__ import annotations

import re
import string
from functools import cache

from examflow.words import stopwords

_RATING = re.compile(r"[^\w]*([0-5])[^\w]*")  # the published parse (docs/methods.md §3): `-3` reads as 3
# A minus sign, however typed: hyphen-minus, the hyphens and dashes U+2010-2015, the minus sign, super- and
# subscript minus, and the small and full-width hyphen-minus.
_MINUS_SIGNS = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u207b\u208b\ufe58\ufe63\uff0d")
_MINUS = "".join(sorted(_MINUS_SIGNS))  # for a regex's character class: `-` sorts first, where it is itself

UNANSWERABLE = [
    "unanswerable",
    "no",
    "no answer",
    "not enough information",
    "unknown",
    "it is not possible to tell",
    "it does not say",
    "no relevant information",
]
# Ill-formed multiple-choice answers: a bare option letter or numeral, however bracketed.
_OPTIONS = ["A", "B", "C", "D", "a", "b", "c", "d", "i", "ii", "iii", "iv"]
ILL_FORMED = [form.format(x) for x in _OPTIONS for form in ("{}", "{}.", "{})", "({})", "[{}]")]
TRUE_WORDS, FALSE_WORDS = {"yes", "correct", "true"}, {"no", "incorrect", "false"}


# Importing nltk takes seconds (it loads scipy.stats): only answers that need a stemmer pay for it.
@cache
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@cache
def _tokenizer():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()  # word_tokenize without the punkt download


def fuzz_ratio(a: str, b: str) -> int:
    """Similarity 0–100, rounded: fuzzywuzzy's `ratio` on the Levenshtein backend."""
    import Levenshtein  # 14 ms (rapidfuzz): paid only where an answer is compared, not by every evaluation

    return int(round(100 * Levenshtein.ratio(a, b)))


@cache
def _stemmed_expressions() -> tuple[str, ...]:
    return tuple(_stemmer().stem(e.lower()) for e in UNANSWERABLE + ILL_FORMED)


def is_unanswerable(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped in UNANSWERABLE or stripped in ILL_FORMED:
        return True
    stemmed = _stemmer().stem(stripped.lower())  # the whole answer as one string
    return any(fuzz_ratio(stemmed, expression) > 80 for expression in _stemmed_expressions())


def is_bare_rating(text: str) -> bool:
    """Whether the answer is a digit 0–5 alone (punctuation around it allowed, but no minus sign)."""
    return bare_grade(text, 5) is not None


def bare_grade(text: str, top: int) -> int | None:
    """The grade of an answer that is a digit 0..`top` alone, punctuation around it allowed; else None.
    A minus sign against the digit makes a negative number, not a grade: `-3` is none (where the
    published parse reads 3)."""
    match = _bare(top).fullmatch(text)
    return int(match.group(1)) if match else None


@cache
def _bare(top: int) -> re.Pattern:
    return re.compile(rf"[^\w]*(?<![{_MINUS}])([0-{top}])[^\w]*")


def parse_self_rating(text: str, mode: str = "reference") -> int:
    """The rating 0–5 in a self-rating answer.

    A bare digit (punctuation around it allowed) is the rating. Anything else is 1 or 0
    by whether it is an unanswerable expression: `reference` gives 1 to unanswerable
    ones, as the published grades do; `paper` gives them 0, as the papers describe.
    """
    match = _RATING.fullmatch(text)
    if match:
        return int(match.group(1))
    if mode not in ("reference", "paper"):
        raise ValueError(f"self-rating mode must be 'reference' or 'paper', not {mode!r}")
    return int(is_unanswerable(text) == (mode == "reference"))


_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise_answer(text: str) -> str:
    """Lower-case, drop punctuation, tokenise, drop stopwords, Porter-stem, join by spaces."""
    tokens = _tokenizer().tokenize(text.lower().translate(_PUNCTUATION))
    return " ".join(_stemmer().stem(token) for token in tokens if token not in stopwords())


def verify_answer(answer: str, gold_answers: list[str]) -> bool:
    """Whether an extracted answer matches one of the answer key's answers."""
    answer = answer.strip().removesuffix(".")
    golds = [gold.strip().removesuffix(".") for gold in gold_answers]
    for gold in golds:
        if gold.lower() == "true" and answer.lower() in TRUE_WORDS:
            return True
        if gold.lower() == "false" and answer.lower() in FALSE_WORDS:
            return True
    if is_unanswerable(answer):
        return False
    normalised = normalise_answer(answer)
    for gold in (normalise_answer(g) for g in golds):
        if len(normalised) >= 2 and normalised == gold:
            return True
        if len(normalised) >= 4 and fuzz_ratio(normalised, gold) > 80:
            return True
    return False


# UMBRELA's reading of a 0-3 label (castorini/umbrela, `parse_fewshot_response`): the answer lower-cased,
# then each pattern in turn, and the first that matches anywhere gives the label of its last match. Two
# departures, both so that no answer becomes a grade it does not state: where no pattern matches,
# UMBRELA grades 0 and examflow records a failure; and a final score stated outside 0-3 ("##final score: 4",
# a bare "-2") is a failure too, where UMBRELA's later patterns would read some other digit of the answer.
_UMBRELA_PATTERNS = [re.compile(pattern, re.IGNORECASE | re.MULTILINE | re.DOTALL) for pattern in (
    r'"o"\s*[:-=]?\s*(0|1|2|3)', r"\'o\'\s*[:-=]?\s*(0|1|2|3)", r"o\s*[:-=]?\s*(0|1|2|3)",
    r'"overall_score"\s*[:-=]?\s*(0|1|2|3)', r'"overall"\s*[:-=]?\s*(0|1|2|3)',
    r'"overall score"\s*[:-=]?\s*(0|1|2|3)', r'"final score"\s*[:-=]?\s*(0|1|2|3)',
    r"final score\s*[:-=]?\s*(0|1|2|3)", r"final score is (0|1|2|3)", r'"final_score"\s*[:-=]?\s*(0|1|2|3)',
    r'"score"\s*[:-=]?\s*(0|1|2|3)', r'"o_score"\s*[:-=]?\s*(0|1|2|3)', r"output score is (0|1|2|3)",
    r"score is (0|1|2|3)", r"score of\s+(0|1|2|3)", r"assign(?:ing)?\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
    r"conclude(?:s|d)?\s+with\s+(?:a\s+)?score of\s+(0|1|2|3)",
    r"give(?:n)?\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
    r"i (?:would )?(?:give|assign)\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)", r"score:\s*(0|1|2|3)",
    r"[a-zA-Z]+\s+is\s+(0|1|2|3)\s", r"relevance category\s*[:-=]?\s*(0|1|2|3)",
    r"relevance category is (0|1|2|3)", r"it falls into the category (0|1|2|3)", r"category\s*(0|1|2|3)",
    r"relevance category (0|1|2|3)", r"relevance category for this passage would be (0|1|2|3)",
    r"the relevance category would be (0|1|2|3)", r"\n*(0|1|2|3)",
)]  # fmt: skip
_STATED_SCORE = re.compile(rf"final score\s*(?:is|[:=])?\s*([{_MINUS}]?\d+)", re.IGNORECASE)


# `strict`: the label stated as the prompts ask for it, on the answer's last line ("##final score: 2"; the
# basic prompt: "the relevance category on the last line"), a whole number 0-3 and nothing else there.
# UMBRELA's cascade reads any digit it finds, so that a refusal that cites "section 2" or "a scale 0 to 3"
# becomes a grade; strict makes it a failure.
_UMBRELA_LAST_LINE = re.compile(
    r"#*\s*(?:(?:final score(?: \(o\))?|relevance category|category|score)(?: is)?\s*(?:[:=]|-(?=\s))?\s*)?([0-3])\.?",
    re.IGNORECASE,
)
# `strict` for a criterion's or an aggregation's grade: the answer's first line is the score the prompt asks for
# ("2", "Score: 2", "2/3") and nothing else.
_CRITERION_LINE = re.compile(r"(?:score\s*(?:[:=]|-(?=\s))?\s*)?([0-3])(?:\s*/\s*3)?\.?", re.IGNORECASE)


_CRITERION = re.compile(r"\b[0-3]\b")


def parse_criterion(text: str, strict: bool = False) -> int | None:
    """A criterion's (or the aggregation's) grade 0-3: the answer's first stand-alone digit 0-3, as the criteria
    paper's code reads it (`find_first_number`; where it finds none it grades 0, here None, and where a minus
    sign makes it negative it reads the digit, here None); `strict`: only a first line that is the score."""
    if strict:
        return stated_line(text, _CRITERION_LINE, last=False)
    found = _CRITERION.search(text)
    return _unsigned(text, found, 0) if found else None


def stated_line(text: str, pattern: re.Pattern[str], last: bool) -> int | None:
    """The grade a line of the answer (its last, or its first, that holds a letter or digit: `###`, the
    few-shot prompt's separator, is none) states in full by `pattern`, markdown emphasis and repeated
    spaces aside; or None."""
    plain = (" ".join(re.sub(r"[*_`]", "", line).split()) for line in text.splitlines())
    lines = [line for line in plain if any(ch.isalnum() for ch in line)]
    found = pattern.fullmatch(lines[-1 if last else 0]) if lines else None
    return int(found.group(1)) if found else None


def parse_umbrela(text: str, strict: bool = False) -> int | None:
    """UMBRELA's label 0-3 of an answer, or None where it states none (or one outside 0-3); `strict`: only
    a label stated in full on the last line."""
    if strict:
        return stated_line(text, _UMBRELA_LAST_LINE, last=True)
    answer = text.strip().lower()
    stated = _STATED_SCORE.findall(answer)
    if stated and not (stated[-1].isdigit() and 0 <= int(stated[-1]) <= 3):  # negative, or above 3
        return None
    for pattern in _UMBRELA_PATTERNS:
        matches = list(pattern.finditer(answer))
        if matches:
            return _unsigned(answer, matches[-1], 1)
    return None


def _unsigned(text: str, match: re.Match[str], group: int) -> int | None:
    """The digit `match` found, or None where a minus sign against it makes it a negative number: UMBRELA's
    and the criteria paper's patterns read `-2` as 2, a grade the answer does not state. A hyphen between
    a word and the digit (`category-2`) is no sign."""
    start = match.start(group)
    signed = start > 0 and text[start - 1] in _MINUS_SIGNS and (start < 2 or not text[start - 2].isalnum())
    return None if signed else int(match.group(group))


_LIST = re.compile(r"\[.*?\]", re.DOTALL)


def parse_nugget_label(text: str) -> str | None:
    """The one label of nuggetizer's assigner answer for a list of one nugget: the first Python list in the
    answer (`['support']`), lower-cased; None where there is no such list, or it does not hold exactly one
    string."""
    import ast

    found = _LIST.search(text)
    if found is None:
        return None
    try:
        labels = ast.literal_eval(found.group())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(labels, list) or len(labels) != 1 or not isinstance(labels[0], str):
        return None
    return labels[0].strip().lower()
