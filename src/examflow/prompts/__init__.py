"""Prompt templates shipped as text files (one per prompt, verbatim from the papers).

A template whose method has a system message (nuggetizer's, for one) starts with a line `[system]`, the
system message, a line `[user]`, then the user message. A chat API gets the two as two messages;
`template` gives them as one text, the system message first and a blank line between, which identifies
the prompt (digests, a chat back end's cache keys). A model without roles (FLAN-T5) reads the user message
alone (`read_by`), as the criteria-based judgments' code gives FLAN-T5 its prompt when the tokenizer has
no chat template.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files

SYSTEM, USER = "[system]\n", "\n[user]\n"


@cache
def chat_template(name: str) -> tuple[str | None, str]:
    """(system message or None, user template) of the template `name` (file name without `.txt`)."""
    text = (files(__package__) / f"{name}.txt").read_text(encoding="utf-8").removesuffix("\n")
    if not text.startswith(SYSTEM):
        return None, text
    system, _, user = text.removeprefix(SYSTEM).partition(USER)
    return system, user


@cache
def template(name: str) -> str:
    """The template `name` as one text: its system message (if any), a blank line, its user message."""
    system, user = chat_template(name)
    return user if system is None else f"{system}\n\n{user}"


def read_digest(names: list[str], roles: bool) -> str:
    """A digest of the templates `names` as a back end reads them (`read_by`): a grading job's params hold
    it, so that an edit of a prompt reruns the jobs that send it."""
    return hashlib.md5("\0".join(read_by(name, roles) for name in names).encode()).hexdigest()[:16]


def read_by(name: str, roles: bool) -> str:
    """What a back end reads of the template `name`: both messages with roles, the user message without."""
    return template(name) if roles else chat_template(name)[1]
