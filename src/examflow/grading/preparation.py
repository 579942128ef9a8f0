"""Prompts for a local model, as token ids: each template filled, its context cut so that the prompt
fits the model's input budget (docs/methods.md §3), each prompt tokenised once.

The cut is the one examflow has always made (`Preparer.fit`): the template without its context and
the context are measured apart, the context cut at a token's end to the budget left, and the filled
prompt measured again, since tokens can merge across the context's edges. Here the two measurements
are made once for each distinct question (template and fields) and each distinct passage of a batch
of requests (a grading job pairs every passage with each of its query's questions), all prompts are
tokenised in one call of the fast tokenizer, and the ids of that call are the model's input: no
prompt is tokenised again to be padded. The model sees the same ids as before, to the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from examflow.prompts import read_by


@dataclass(frozen=True)
class Prompt:
    text: str  # the filled template, its context cut to the budget
    ids: list[int]  # its token ids, special tokens included, at most the budget
    # Where the prompt without its context leaves no room for any of it (or is over the budget on its own): its
    # length in tokens. Not the prompt the method asks (no passage, or the question cut too): never answered.
    too_long: int | None = None


@dataclass(frozen=True)
class _Parts:
    text: str  # the template
    fields: tuple[tuple[str, Any], ...]  # every field but the context
    context: str

    def filled(self, context: str) -> str:
        return self.text.format(context=context, **dict(self.fields))


class Preparer:
    """Turns requests into prompts that fit `max_input_tokens` with `margin` tokens to spare."""

    def __init__(self, tokenizer: Any, max_input_tokens: int):
        self.tokenizer, self.max_input_tokens = tokenizer, max_input_tokens
        self.specials = tokenizer.num_special_tokens_to_add()
        self.right = tokenizer.padding_side == "right"
        # The last call's measurements: a grading job's next requests pair the same questions with the
        # next passages (and may go on with the last passage).
        self.rests: dict[str, int] = {}
        self.ends: dict[str, list[tuple[int, int]]] = {}

    def prepare(self, requests: Sequence[Any], margin: int = 5) -> list[Prompt]:
        """The prompt of each request (`examflow.grading.backends.Request`), in order."""
        parts = [_parts(request) for request in requests]
        self.rests = rests = _measured({part.filled("") for part in parts}, self.rests, self._lengths)
        self.ends = ends = _measured({part.context for part in parts}, self.ends, self._ends)
        budgets = [self.max_input_tokens - rests[p.filled("")] - self.specials - margin for p in parts]
        first = [p.filled(_cut(p.context, ends[p.context], budget)) for p, budget in zip(parts, budgets)]
        ids = self.tokenizer(first).input_ids if first else []
        return [
            self.fit(part, ends[part.context], budget, (prompt, found))
            for part, budget, prompt, found in zip(parts, budgets, first, ids)
        ]

    def fit(self, part: _Parts, ends: list[tuple[int, int]], budget: int, tried: tuple[str, list[int]]) -> Prompt:
        """The prompt cut to `budget` context tokens (`tried`: that prompt and its ids), cut further by
        what it is still over: a text after the context is never cut."""
        prompt, ids = tried
        while True:
            excess = len(ids) - self.max_input_tokens
            cut = _cut(part.context, ends, budget)
            if excess <= 0:  # a passage cut to nothing leaves a question without its context
                return Prompt(prompt, ids, too_long=len(ids) if ends and not cut else None)
            if not cut:  # the template alone is over: cut, as a ranker reads it, and marked
                truncated = self.tokenizer(prompt, truncation=True, max_length=self.max_input_tokens).input_ids
                return Prompt(prompt, truncated, too_long=len(ids))
            budget = min(budget, len(ends)) - excess
            prompt = part.filled(_cut(part.context, ends, budget))
            ids = self.tokenizer(prompt).input_ids

    def pad(self, prompts: Sequence[Prompt], multiple: int = 1) -> Any:
        """A batch of prompts as the model's tensors, padded to the longest on the tokenizer's side, as
        the tokenizer pads (`input_ids`, `attention_mask`); the tokenizer itself is not called. With
        `multiple`, the length is rounded up to a multiple of it (a compiled step then sees few shapes)."""
        import numpy as np
        import torch
        from transformers import BatchEncoding

        longest = -(-max(len(p.ids) for p in prompts) // multiple) * multiple
        ids = np.full((len(prompts), longest), self.tokenizer.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(prompts), longest), dtype=np.int64)
        for row, prompt in enumerate(prompts):
            span = slice(0, len(prompt.ids)) if self.right else slice(longest - len(prompt.ids), longest)
            ids[row, span], mask[row, span] = prompt.ids, 1
        return BatchEncoding({"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)})

    def _lengths(self, texts: list[str]) -> dict[str, int]:
        found = self.tokenizer(texts, add_special_tokens=False).input_ids if texts else []
        return {text: len(ids) for text, ids in zip(texts, found)}

    def _ends(self, contexts: list[str]) -> dict[str, list[tuple[int, int]]]:
        """Each context's tokens' character spans (`offset_mapping`)."""
        if not contexts:
            return {}
        found = self.tokenizer(contexts, add_special_tokens=False, return_offsets_mapping=True).offset_mapping
        return dict(zip(contexts, found))


def _measured(texts: set[str], known: dict, measure: Callable[[list[str]], dict]) -> dict:
    """The measurement of each text: `known`'s, else `measure`d (all at once)."""
    return {text: known[text] for text in texts if text in known} | measure(sorted(texts - known.keys()))


def _parts(request: Any) -> _Parts:
    fields = dict(request.fields)
    context = fields.pop("context", "")
    return _Parts(read_by(request.template, roles=False), tuple(fields.items()), context)  # a local model


def _cut(context: str, ends: list[tuple[int, int]], budget: int) -> str:
    """The context up to the end of its `budget`-th token (all of it within the budget, none below 1)."""
    return context if len(ends) <= budget else context[: ends[budget - 1][1]] if budget > 0 else ""
