"""Cutting generated responses into passages of at most N tokens, sentence-aware.

Tokens are whitespace-separated words, except that each Chinese or Japanese character is a token of
its own (those scripts put no spaces between words). Paragraphs are packed greedily while they fit;
a paragraph too long for one passage is cut between sentences, and only a single sentence longer
than N tokens is cut inside. Passage ids hash the normalised text, so a rerun gives the same ids and
a passage two systems share is graded once.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable

import pandas as pd

from examflow.errors import counted
from examflow.io.responses import Response

log = logging.getLogger(__name__)

SEGMENT_COLUMNS = ["run_id", "query_id", "passage_id", "rank", "score", "text"]

# Han ideographs, kana and their punctuation: written without spaces between words.
_CJK = "\u3001-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff01-\uff60"
# A token with the whitespace before it: one CJK character, or a run of anything else but whitespace.
_TOKEN = re.compile(rf"(\s*)([{_CJK}]|[^\s{_CJK}]+)")
_CLOSING, _OPENING = "\"')\\]\u201d\u2019\u300d\u300f\uff09", "\"'(\\[\u201c\u2018"
# A sentence ends at . ! or ? (closing quotes/brackets may follow) before whitespace and a word
# (group 1: its first character, which must not be a small letter: a capital, a digit, or a letter of a
# script without case; abbreviations and initials do not end one), or at 。！？．, the danda । ॥, with or
# without whitespace after.
_END = re.compile(rf"[.!?]+[{_CLOSING}]*\s+(?=[{_OPENING}]?([^\W_]))|[。！？．।॥]+[{_CLOSING}]*\s*(?=\S)")
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "vs", "etc", "e.g", "i.e", "no", "fig", "approx", "jr", "sr",
                  "inc", "ltd", "co", "u.s", "cf", "al"}  # fmt: skip
_INITIALS = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")  # z.B, U.S.A, e.g: letters with points between


def passage_id(text: str) -> str:
    return "gen-" + hashlib.md5(" ".join(text.split()).encode("utf-8")).hexdigest()


def split_sentences(paragraph: str) -> list[str]:
    return [sentence for sentence in map(str.strip, _sentences(paragraph)) if sentence]


def _sentences(paragraph: str) -> list[str]:
    """The paragraph's sentences as they stand in it, each with the whitespace before it."""
    bounds = [0, *_sentence_starts(paragraph), len(paragraph)]
    return [paragraph[a:b] for a, b in zip(bounds, bounds[1:])]


def _sentence_starts(paragraph: str) -> list[int]:
    """Where each sentence after the first begins: where the whitespace before it begins (none after 。)."""
    starts, start = [], 0
    for match in _END.finditer(paragraph):
        initial = match.group(1)
        if initial is not None:  # after . ! or ?: not before a small letter, nor after an abbreviation
            before = paragraph[start : match.start() + 1].split()
            last_word = before[-1].rstrip(".").lstrip("\"'([").lower() if before else ""
            if initial.islower() or last_word in _ABBREVIATIONS or _INITIALS.fullmatch(last_word):
                continue
            if len(last_word) == 1 and last_word.isalpha():
                continue
        starts.append(start := match.start() + len(match.group().rstrip()))
    return starts


def _tokens(text: str) -> list[re.Match[str]]:
    """The text's tokens (group 2), each with the whitespace before it (group 1)."""
    return list(_TOKEN.finditer(text))


def _joined(pieces: list[re.Match[str]]) -> str:
    """Tokens as text: one space where the text had whitespace, none where it had none."""
    return "".join((" " if i and token[1] else "") + token[2] for i, token in enumerate(pieces))


def segment(paragraphs: Iterable[str], max_tokens: int) -> list[str]:
    """Passages of at most `max_tokens` tokens, in order; paragraphs joined by blank lines."""
    passages: list[str] = []
    current: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        if current:
            passages.append("\n\n".join(current))
        current, size = [], 0

    for paragraph in paragraphs:
        pieces = _pieces(paragraph, max_tokens)
        for piece, length in pieces:
            if size + length > max_tokens:
                flush()
            current.append(piece)
            size += length
        # A paragraph cut into pieces ends its last passage: pieces never join the next one.
        if len(pieces) > 1:
            flush()
    flush()
    return passages


def _pieces(paragraph: str, max_tokens: int) -> list[tuple[str, int]]:
    """The paragraph whole if it fits, else sentence packs that do, else token windows; with their sizes."""
    every = _tokens(paragraph)
    if len(every) <= max_tokens:
        return [(paragraph, len(every))]
    # Each sentence tokenised on its own (a sentence may begin inside a run of letters: 。”Apple), the
    # whitespace before it its first token's, so that the tokens joined again keep it or its absence.
    sentences = [_tokens(sentence) for sentence in _sentences(paragraph)]
    packs: list[list[re.Match[str]]] = [[]]
    for sentence in sentences:
        if len(sentence) > max_tokens:  # cut into windows; the last stays open to the sentences after it
            packs += [sentence[i : i + max_tokens] for i in range(0, len(sentence), max_tokens)]
        elif len(packs[-1]) + len(sentence) > max_tokens:
            packs.append(sentence)
        else:
            packs[-1] += sentence
    return [(_joined(pack), len(pack)) for pack in packs if pack]


def segment_responses(responses: Iterable[Response], max_tokens: int) -> pd.DataFrame:
    """Each response as a ranked list of its passages (rank 1 = first; score = 1/rank). A passage a response
    repeats is ranked once, where it first stands, and the passages after it keep their places (moved up, a
    third passage entered the top 2); the repeats are counted in a warning."""
    rows, repeats = [], 0
    for response in responses:
        seen = set()
        for rank, text in enumerate(segment(response.paragraphs, max_tokens), 1):
            pid = passage_id(text)
            repeats += pid in seen
            if pid not in seen:
                seen.add(pid)
                rows.append((response.run_id, response.query_id, pid, rank, 1.0 / rank, text))
    if repeats:
        log.warning("%s: a passage is ranked once, where it first stands; the passages after a repeat keep their "
                    "ranks", counted(repeats, "passage repeats an earlier passage of its response",
                                     "passages repeat an earlier passage of their response"))  # fmt: skip
    return pd.DataFrame(rows, columns=SEGMENT_COLUMNS).astype({"rank": "int64", "score": "float64"})
