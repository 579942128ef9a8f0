"""`beam_search` over shapes that never change, so that a GPU can replay each decoder step as a CUDA graph.

On one H200 `beam` and `greedy` keep the GPU busy about half the time: a decoder step of flan-t5-large
dispatches some 1,600 operations, and the host's time to launch them, not the GPU's, sets the pace
(docs/performance.md). A CUDA graph launches a recorded step as one, but it replays the same kernels on
the same memory, so here:
- every prompt keeps its rows until the batch ends; a finished prompt's rows are decoded and ignored
  (`beam_search` drops them, which saves arithmetic but changes the shapes at every step);
- the self-attention keys and values live in a cache made once for the whole answer, written at the
  step's position (a tensor on the device, so that one graph serves every step) and reordered in place
  when beams change origin;
- a step attends over the cache's whole length, with the positions not yet written masked out, as T5
  masks them (the dtype's lowest value: they weigh nothing);
- a prompt's beams attend to its encoder output's keys and values as that many queries of one copy,
  where `beam_search` repeats the copy for each beam: at 5 beams a fifth of the memory, and of what the
  cross-attention reads at every step.
The answers are `beam_search`'s (tests/test_static_search.py holds them to `generate`'s on tiny models).
Whether it is faster on a GPU is not measured yet (`benchmarks/gpu_session.sh COMMIT static`), so no back
end uses it: the benchmark runs it with `--static-search`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from examflow.grading.beam_search import (
    Beams,
    advance,
    decoder_start,
    encoder_states,
    flat_rows,
    length_penalty,
    scales_decoder_outputs,
    searchable,
    single_eos,
    until_eos,
)


@dataclass
class StaticDecoder:
    """One T5 decoder step for a batch's rows (prompts × beams), every tensor allocated before the first step
    and reused by later batches of the same shape: `load` a batch, then `step()` reads `tokens` at `position`
    and returns the next token's logits for every row."""

    model: Any  # a T5ForConditionalGeneration (`searchable`)
    beams: int  # rows a prompt has, consecutive
    tokens: torch.Tensor  # (rows, 1) the last token of each row
    position: torch.Tensor  # (1,) the step, from 0
    keys: torch.Tensor  # (layers, rows, heads, steps, d_kv) self-attention cache
    values: torch.Tensor
    cross: list[tuple[torch.Tensor, torch.Tensor]]  # per layer (prompts, heads, source, d_kv): the encoder output's
    cross_bias: torch.Tensor  # (prompts, 1, 1, source) 0, or the lowest value at padding
    self_bias: torch.Tensor  # (1, heads, steps, steps) relative position bias, later positions masked

    @classmethod
    def allocate(cls, model, projected, beams: int, steps: int) -> StaticDecoder:
        """Room for a batch shaped as `encoder_states`' cross-attention keys and values `projected`, each
        prompt with `beams` rows, and answers of up to `steps` tokens."""
        keys = projected[0][0]
        (prompts, heads, source, width), dtype, device = keys.shape, keys.dtype, keys.device
        rows = prompts * beams
        later = torch.ones(steps, steps, dtype=torch.bool, device=device).triu(1)
        own = model.decoder.block[0].layer[0].SelfAttention.compute_bias(steps, steps, device=device).to(dtype)
        cache = (len(projected), rows, heads, steps, width)
        return cls(
            model=model,
            beams=beams,
            tokens=torch.zeros((rows, 1), dtype=torch.long, device=device),
            position=torch.zeros(1, dtype=torch.long, device=device),
            keys=torch.zeros(cache, dtype=dtype, device=device),
            values=torch.zeros(cache, dtype=dtype, device=device),
            cross=[(torch.zeros_like(keys), torch.zeros_like(keys)) for _ in projected],
            cross_bias=torch.zeros((prompts, 1, 1, source), dtype=dtype, device=device),
            self_bias=own.masked_fill(later, torch.finfo(dtype).min),
        )

    def load(self, projected, attention_mask) -> None:
        """A batch of this shape, in place (a recorded graph reads the same memory): its encoder output's keys
        and values, its padding masked, every row at the decoder's start token."""
        for (keys, values), (batch_keys, batch_values) in zip(self.cross, projected):
            keys.copy_(batch_keys)
            values.copy_(batch_values)
        padding = (attention_mask == 0)[:, None, None, :]
        self.cross_bias.zero_().masked_fill_(padding, torch.finfo(self.cross_bias.dtype).min)
        self.tokens.fill_(decoder_start(self.model))
        self.keys.zero_()  # positions not yet written weigh nothing, but left from a batch before they
        self.values.zero_()  # would still be multiplied by that nothing

    def step(self) -> torch.Tensor:
        decoder = self.model.decoder
        hidden = decoder.embed_tokens(self.tokens)
        bias = self.self_bias.index_select(2, self.position)  # this position's row: (1, heads, 1, steps)
        for index, block in enumerate(decoder.block):
            own, cross, feed_forward = block.layer
            hidden = hidden + self._own_attention(index, own, own.layer_norm(hidden), bias)
            keys, values = self.cross[index]  # a prompt's beams share them: read once for all its rows
            normed = cross.layer_norm(hidden)
            hidden = hidden + _attend(cross.EncDecAttention, normed, keys, values, self.cross_bias, self.beams)
            hidden = feed_forward(hidden)
        hidden = decoder.final_layer_norm(hidden)
        if scales_decoder_outputs(self.model.config):
            hidden = hidden * self.model.config.d_model**-0.5
        return self.model.lm_head(hidden)[:, -1, :]

    def _own_attention(self, index: int, layer, normed: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        attention = layer.SelfAttention
        self.keys[index].index_copy_(2, self.position, _heads(attention, attention.k(normed)))
        self.values[index].index_copy_(2, self.position, _heads(attention, attention.v(normed)))
        return _attend(attention, normed, self.keys[index], self.values[index], bias)

    def reorder(self, rows: torch.Tensor, written: int) -> None:
        """Each row's cache of the `written` positions so far taken from row `rows[i]` (the beam it continues),
        in place: a recorded graph reads the same memory."""
        for cache in (self.keys[:, :, :, :written], self.values[:, :, :, :written]):
            cache.copy_(cache.index_select(1, rows))

    def graphed(self) -> Callable[[], torch.Tensor]:
        """`step` recorded once as a CUDA graph and replayed at every call (CUDA only). The recording is
        preceded by a few steps on a side stream, as PyTorch's documentation does, so that lazily made state
        (cuBLAS workspaces, the allocator's pools) exists before it; `load` zeroes what they wrote."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            logits = self.step()

        def replay() -> torch.Tensor:
            graph.replay()
            return logits

        return replay


def _heads(attention, projected: torch.Tensor, group: int = 1) -> torch.Tensor:
    """(rows, 1, heads × d_kv) -> (rows / group, heads, group, d_kv): `group` consecutive rows as positions."""
    shape = (attention.n_heads, attention.key_value_proj_dim)
    return projected.view(projected.shape[0] // group, group, *shape).transpose(1, 2)


def _attend(attention, normed, keys, values, bias, group: int = 1) -> torch.Tensor:
    """T5's attention of one position, as transformers computes it with SDPA (the bias added to the unscaled
    scores), for `group` consecutive rows that attend to one row of `keys` and `values` (a prompt's beams
    to its encoder output), as that many queries of it."""
    query = _heads(attention, attention.q(normed), group)
    out = torch.nn.functional.scaled_dot_product_attention(query, keys, values, attn_mask=bias, scale=1.0)
    return attention.o(out.transpose(1, 2).reshape(normed.shape[0], 1, -1))


class StaticSearch:
    """`beam_search`'s answers, each decoder step over the same rows and memory; `graphed` (CUDA only): each
    step replayed from a CUDA graph, recorded for a shape of batch (prompts, prompt length, beams, new
    tokens) and kept while the batches keep that shape: pad prompts to a few lengths to record few."""

    def __init__(self, model, graphed: bool = False):
        blocks = model.decoder.block if searchable(model) else []
        if not blocks or any(block.layer[0].SelfAttention.has_relative_attention_bias for block in blocks[1:]):
            raise ValueError(
                "the search of fixed shapes takes a T5 whose first decoder layer alone has a position bias"
            )
        if model.dtype == torch.float16:  # transformers clamps T5's activations in float16, and this does not
            raise ValueError("the search of fixed shapes decodes in float32 or bfloat16, not float16")
        if graphed and model.device.type != "cuda":
            raise ValueError(f"CUDA graphs need a model on a CUDA device, not {model.device}")
        self.model, self.graphed = model, graphed
        self.current: tuple[tuple, StaticDecoder, Callable[[], torch.Tensor]] | None = None  # shape, decoder, step

    @torch.inference_mode()  # the cache is written in place at every step: no autograd history may grow on it
    def __call__(self, input_ids, attention_mask, beams: int, max_new_tokens: int) -> list[list[int]]:
        model, device, prompts = self.model, input_ids.device, input_ids.shape[0]
        eos = single_eos(model)
        _, projected = encoder_states(model, input_ids, attention_mask)
        decoder, step = self._decoder(projected, beams, max_new_tokens)
        decoder.load(projected, attention_mask)
        state = Beams.start(prompts, beams, max_new_tokens, device)
        best: list[list[int]] = [[] for _ in range(prompts)]
        open_prompts = set(range(prompts))
        first_rows = (torch.arange(prompts, device=device) * beams)[:, None]
        for position in range(max_new_tokens):
            decoder.position.fill_(position)
            at_limit = position + 1 == max_new_tokens
            state, origin = advance(state, step().float(), eos, length_penalty(model), at_limit)
            done = state.full.all(dim=1).tolist()  # B hypotheses in: nothing can replace them
            for row in [r for r in open_prompts if done[r]]:
                best[row] = until_eos(state.finished[row, 0].tolist(), eos)
                open_prompts.discard(row)
            if not open_prompts:
                break
            if beams > 1:  # one beam always continues itself
                decoder.reorder(flat_rows(first_rows + origin), position + 1)
            decoder.tokens.copy_(state.tokens[:, :, -1].reshape(-1, 1))
        return best

    def _decoder(self, projected, beams: int, steps: int) -> tuple[StaticDecoder, Callable[[], torch.Tensor]]:
        """The decoder (and recorded step) of this batch's shape: the last batch's where it has it, else a
        new one. Only one is kept, holding as much memory as `beam_search` takes for a batch: a grading job's
        batches come sorted by length, so a shape seldom comes back once another has come."""
        shape = (*projected[0][0].shape, beams, steps)
        if self.current is None or self.current[0] != shape:
            self.current = None  # the old decoder's memory is free before the new one takes its own
            decoder = StaticDecoder.allocate(self.model, projected, beams, steps)
            self.current = (shape, decoder, decoder.graphed() if self.graphed else decoder.step)
        return self.current[1], self.current[2]
