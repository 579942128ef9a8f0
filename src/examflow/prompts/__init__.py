"""Prompt templates shipped as text files (one per prompt, verbatim from the papers)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def template(name: str) -> str:
    """The template `name` (file name without `.txt`), without its final newline."""
    return (files(__package__) / f"{name}.txt").read_text(encoding="utf-8").removesuffix("\n")
