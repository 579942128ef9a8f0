"""A simple detector of passages that try to instruct the grader ("ignore the question", "answer 5").

A retrieved web page or a generated answer can carry text aimed at the LLM that grades it. Such a
passage is still graded like any other: the detector only lists it, so that a person can look.
It favours recall on the plain phrasings; it is no defence against a determined attacker.
"""

from __future__ import annotations

import re

import pandas as pd

_GRADE = r"(?:[0-5]|five|four|yes|true|correct|relevant|highly relevant|answerable)"
PATTERNS = [
    # "Ignore the question", "disregard all previous instructions", "forget the rules above"
    r"\b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,40}?\b(?:instructions?|questions?|prompts?|rules?|context|task|guidelines?)\b",
    # "answer 5", "rate this passage as 5", "respond with yes", "output: 5", "you must answer relevant"
    rf"\b(?:answer|respond|reply|rate|grade|score|output|say|return|mark|judge)\b(?:\s+(?:this|it|the|that|passage|document|text|with|only|as|a|an|exactly|:))*\s*[\"'“]?{_GRADE}\b",
    # "you are now a ...", "as an AI language model", "system prompt", chat-template markers
    r"\byou are now\b|\bas an ai (?:language )?model\b|\bsystem prompt\b|<\|im_start\|>|\[/?INST\]|^\s*(?:system|assistant)\s*:",
    # "this passage is highly relevant / answers every question", addressed to the grader
    r"\b(?:this|the) (?:passage|document|text|context) (?:is|should be (?:rated|graded|considered)) (?:highly |very |fully )?(?:relevant|complete|the best)\b",
    r"\b(?:note|attention|message) to (?:the )?(?:grader|evaluator|assessor|ai|llm|model|judge)\b",
]
_DETECTOR = re.compile("|".join(f"(?:{p})" for p in PATTERNS), re.IGNORECASE | re.MULTILINE)
FLAGGED_COLUMNS = ["query_id", "passage_id", "origin", "phrase"]


def injected_phrase(text: str) -> str | None:
    """The first phrase of `text` that reads like an instruction to the grader, or None."""
    match = _DETECTOR.search(text)
    return match.group(0).strip() if match else None


def flag_passages(passages: pd.DataFrame) -> pd.DataFrame:
    """The pooled passages that look like prompt injection, with the phrase that gave them away."""
    phrases = passages["text"].map(injected_phrase)
    flagged = passages[phrases.notna()].assign(phrase=phrases[phrases.notna()])
    return flagged[FLAGGED_COLUMNS].reset_index(drop=True)
