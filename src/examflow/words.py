"""Content words of English text, as answer verification, ROUGE and pooling's keyword-stuffing check
compare them: lower-cased, stopwords (NLTK's English list, shipped) dropped, lemmatised by simplemma
(which ships its dictionaries: no download)."""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@cache
def stopwords() -> frozenset[str]:
    return frozenset((files("examflow") / "data" / "stopwords-en.txt").read_text(encoding="utf-8").split())


@cache
def _lemma(word: str) -> str:
    import simplemma  # imported on first use: ROUGE with gold articles, and pooling's keyword-stuffing check

    return simplemma.lemmatize(word, lang="en")


def content_words(text: str) -> list[str]:
    """The words of `text` in order: lower-cased, punctuation and stopwords dropped, lemmatised."""
    stop = stopwords()
    return [_lemma(word) for word in _WORD.findall(text.lower()) if word not in stop]
