"""Cutting generated responses into passages of at most N tokens, sentence-aware.

Tokens are whitespace-separated words. Paragraphs are packed greedily while they fit;
a paragraph too long for one passage is cut between sentences, and only a single
sentence longer than N tokens is cut inside. Passage ids hash the normalised text, so
a rerun gives the same ids and a passage two systems share is graded once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

import pandas as pd

from examflow.io.responses import Response

SEGMENT_COLUMNS = ["run_id", "query_id", "passage_id", "rank", "score", "text"]

# A sentence ends at . ! or ? (closing quotes/brackets may follow) before whitespace and
# a capital letter, digit or opening quote; abbreviations and initials do not end one.
_END = re.compile(r"[.!?]+[\"')\]\u201d\u2019]*\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])")
_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "no",
    "fig",
    "approx",
    "jr",
    "sr",
    "inc",
    "ltd",
    "co",
    "u.s",
    "cf",
    "al",
}


def passage_id(text: str) -> str:
    return "gen-" + hashlib.md5(" ".join(text.split()).encode("utf-8")).hexdigest()


def split_sentences(paragraph: str) -> list[str]:
    sentences, start = [], 0
    for match in _END.finditer(paragraph):
        before = paragraph[start : match.start() + 1].split()
        last_word = before[-1].rstrip(".").lstrip("\"'([").lower() if before else ""
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    return sentences + [tail] if tail else sentences


def segment(paragraphs: Iterable[str], max_tokens: int) -> list[str]:
    """Passages of at most `max_tokens` words, in order; paragraphs joined by blank lines."""
    passages: list[str] = []
    current: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        if current:
            passages.append("\n\n".join(current))
        current, size = [], 0

    for paragraph in paragraphs:
        for piece in _pieces(paragraph, max_tokens):
            length = len(piece.split())
            if size + length > max_tokens:
                flush()
            current.append(piece)
            size += length
        # A paragraph cut into pieces ends its last passage: pieces never join the next one.
        if len(paragraph.split()) > max_tokens:
            flush()
    flush()
    return passages


def _pieces(paragraph: str, max_tokens: int) -> list[str]:
    """The paragraph whole if it fits, else sentence packs that do, else word windows."""
    if len(paragraph.split()) <= max_tokens:
        return [paragraph]
    packs: list[list[str]] = [[]]
    for sentence in split_sentences(paragraph):
        words = sentence.split()
        if len(words) > max_tokens:
            packs += [words[i : i + max_tokens] for i in range(0, len(words), max_tokens)] + [[]]
        elif len(packs[-1]) + len(words) > max_tokens:
            packs.append(words)
        else:
            packs[-1] += words
    return [" ".join(pack) for pack in packs if pack]


def segment_responses(responses: Iterable[Response], max_tokens: int) -> pd.DataFrame:
    """Each response as a ranked list of its passages (rank 1 = first; score = 1/rank)."""
    rows = []
    for response in responses:
        seen = set()
        for text in segment(response.paragraphs, max_tokens):
            pid = passage_id(text)
            if pid in seen:  # a response that repeats itself ranks the passage once
                continue
            seen.add(pid)
            rank = len(seen)
            rows.append((response.run_id, response.query_id, pid, rank, 1.0 / rank, text))
    return pd.DataFrame(rows, columns=SEGMENT_COLUMNS).astype({"rank": "int64", "score": "float64"})
