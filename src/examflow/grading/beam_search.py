"""Beam search for T5 models that answers as `generate(num_beams=B, early_stopping=True)` does, for less work.

`generate` does three kinds of work that change no answer:
- it copies each prompt's encoder output B times, projects every copy to cross-attention keys and
  values, and re-indexes those copies at every step. All beams of a prompt share one encoder output and
  beam search only reorders beams within a prompt, so here keys and values are projected once per
  prompt, repeated for the beams, and never reordered (on two CPU cores about a fifth of the
  reference pattern's time);
- it keeps decoding a prompt whose B finished hypotheses are all in (with `early_stopping=True`
  nothing can replace them) until every prompt of the batch is finished. Here a finished prompt leaves
  the batch: its rows are dropped from every tensor and cache, and the steps that remain cost only
  what is still open. Grading answers are short and their lengths vary, so a batch is mostly finished
  well before its longest answer is.
- Every operation on the search's state works row by row (a prompt's beams never see another
  prompt's), so dropping a prompt's rows leaves the others' choices as they were.

The search itself follows Hugging Face's (transformers ≥ 4.50): per step the 2B best continuations
over all beams; the first B of them that end (EOS, or the length limit) become hypotheses scored by
log-probability / length^length_penalty; the best B that do not end run on. With B = 1 it is greedy
decoding, and `greedy` uses it for the same saving: answers end at different lengths.
Tests hold both to `generate`'s answers (tests/test_beam_search.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import cast

import torch
from transformers import DynamicCache, EncoderDecoderCache, GenerationConfig
from transformers.modeling_outputs import BaseModelOutput

_NONE = object()
NEVER = -1.0e9  # the score of a slot that holds nothing, as in transformers
# Generation settings that change no beam search answer here: token ids the search reads, what
# `generate` is told by the call this search replaces, sampling (off), and what is returned.
UNUSED = {"decoder_start_token_id", "eos_token_id", "pad_token_id", "bos_token_id", "max_length", "num_beams",
          "early_stopping", "do_sample", "temperature", "top_k", "top_p", "typical_p", "use_cache",
          "output_attentions", "output_hidden_states", "output_scores", "output_logits",
          "return_dict_in_generate", "transformers_version"}  # fmt: skip
# Settings at a value that changes nothing. Any other setting (a repetition penalty, a minimum length,
# suppressed tokens, ...) and the model is decoded by `generate` itself.
NEUTRAL = {"min_length": 0, "repetition_penalty": 1.0, "encoder_repetition_penalty": 1.0, "no_repeat_ngram_size": 0,
           "encoder_no_repeat_ngram_size": 0, "num_return_sequences": 1, "num_beam_groups": 1,
           "diversity_penalty": 0.0, "remove_invalid_values": False, "renormalize_logits": False}  # fmt: skip


class SharedCrossAttentionCache(EncoderDecoderCache):
    def reorder_cache(self, beam_idx) -> None:
        self.self_attention_cache.reorder_cache(beam_idx)  # cross-attention: identical across a prompt's beams


def encoder_states(model, input_ids, attention_mask) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """The encoder's output, and each decoder layer's cross-attention keys and values of it: once per
    prompt, however many beams it has. The model has T5's layout (`searchable`)."""
    hidden = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    projected = []
    for block in model.decoder.block:
        attention = block.layer[1].EncDecAttention
        shape = (hidden.shape[0], -1, attention.n_heads, attention.key_value_proj_dim)
        projected.append(
            (attention.k(hidden).view(shape).transpose(1, 2), attention.v(hidden).view(shape).transpose(1, 2))
        )
    return hidden, projected


def shared_cross_attention_cache(
    projected: list[tuple[torch.Tensor, torch.Tensor]], beams: int
) -> SharedCrossAttentionCache:
    """A cache pre-filled with each prompt's cross-attention keys and values, repeated for its beams."""
    cross = DynamicCache()
    cache = SharedCrossAttentionCache(DynamicCache(), cross)
    for index, (keys, values) in enumerate(projected):
        cross.update(keys.repeat_interleave(beams, dim=0), values.repeat_interleave(beams, dim=0), index)
        cache.is_updated[index] = True
    return cache


@dataclass(frozen=True)
class SearchSteps:
    """The model's two kinds of work in a search: `encode` (input ids, mask) -> `encoder_states`, and
    `decode` (last tokens, encoder output, mask, cache) -> the next token's logits for every beam."""

    encode: Callable
    decode: Callable

    @classmethod
    def eager(cls, model) -> SearchSteps:
        # transformers 5 renamed the argument, and warns at every step under the old name
        cache_argument = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

        def decode(last, hidden, mask, cache):
            return model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=mask,
                         decoder_input_ids=last, use_cache=True, **{cache_argument: cache}).logits[:, -1, :]  # fmt: skip

        return cls(partial(encoder_states, model), decode)

    def compiled(self) -> SearchSteps:
        """Both steps under torch.compile (compiled at their first call), for dynamic shapes: the
        decoder step's change at every step (the cache grows, finished prompts leave), the encoder's
        with each batch's length and size; a few graphs (an empty cache, then any length), not one a
        step or a shape."""
        return SearchSteps(torch.compile(self.encode, dynamic=True), torch.compile(self.decode, dynamic=True))


def searchable(model) -> bool:
    """Whether this search gives `generate`'s answers for the model: T5's layout, an EOS token and no
    generation setting that would add to the search (a setting at its default changes nothing)."""
    blocks = getattr(getattr(model, "decoder", None), "block", None)
    laid_out = blocks is not None and all(hasattr(block.layer[1], "EncDecAttention") for block in blocks)
    config = model.generation_config or GenerationConfig()
    defaults = GenerationConfig().to_dict()
    added = [
        name for name, value in config.to_dict().items()
        if not name.startswith("_") and name not in UNUSED and name != "length_penalty"
        and value is not None and value != defaults.get(name) and value != NEUTRAL.get(name, _NONE)
    ]  # fmt: skip
    eos = config.eos_token_id
    return laid_out and not added and (isinstance(eos, int) or (isinstance(eos, list) and len(eos) == 1))


def single_eos(model) -> int:
    """The model's EOS token (`searchable` has settled that it has one; a list of several is `generate`'s)."""
    eos = model.generation_config.eos_token_id
    return eos[0] if isinstance(eos, list) else eos


def decoder_start(model) -> int:
    """The token a decoder starts from, in `generate`'s order: the generation settings' start token, else
    their BOS token, else (where `generate` would stop with an error) the model's start token."""
    settings = model.generation_config
    found = (settings.decoder_start_token_id, settings.bos_token_id, model.config.decoder_start_token_id)
    return next(token for token in found if token is not None)


def scales_decoder_outputs(config) -> bool:
    """Whether T5 scales the decoder's outputs by d_model^-0.5 before the LM head (original T5, not T5 v1.1 or
    FLAN-T5). transformers 5 keeps it in `scale_decoder_outputs` and says `tie_word_embeddings` of every T5."""
    return bool(getattr(config, "scale_decoder_outputs", config.tie_word_embeddings))


def length_penalty(model) -> float:
    """The model's, or `generate`'s default (transformers 5 leaves unset settings None until it generates)."""
    penalty = model.generation_config.length_penalty
    return 1.0 if penalty is None else float(penalty)


@dataclass
class Beams:
    """The search's state for the open prompts: rows are prompts, columns beams (or finished slots)."""

    tokens: torch.Tensor  # (prompts, B, steps) the running beams' tokens
    scores: torch.Tensor  # (prompts, B) their log-probabilities
    finished: torch.Tensor  # (prompts, B, max new tokens) the finished hypotheses' tokens, padded
    finished_scores: torch.Tensor  # (prompts, B) their length-penalised scores; NEVER: an empty slot
    full: torch.Tensor  # (prompts, B) which finished slots hold a hypothesis

    @classmethod
    def start(cls, prompts: int, beams: int, max_new_tokens: int, device) -> Beams:
        scores = torch.full((prompts, beams), NEVER, device=device)
        scores[:, 0] = 0.0  # one beam to start from: the others would only repeat its continuations
        return cls(
            torch.zeros((prompts, beams, 0), dtype=torch.long, device=device),
            scores,
            torch.zeros((prompts, beams, max_new_tokens), dtype=torch.long, device=device),
            torch.full((prompts, beams), NEVER, device=device),
            torch.zeros((prompts, beams), dtype=torch.bool, device=device),
        )

    def keep(self, prompts: torch.Tensor) -> Beams:
        return Beams(self.tokens[prompts], self.scores[prompts], self.finished[prompts],
                     self.finished_scores[prompts], self.full[prompts])  # fmt: skip


def beam_search(
    model, input_ids, attention_mask, beams: int, max_new_tokens: int, steps: SearchSteps | None = None
) -> list[list[int]]:
    """Each prompt's best hypothesis: its tokens after the decoder's start token, up to its EOS; the
    model's work done by `steps` (eager by default)."""
    steps = steps or SearchSteps.eager(model)
    device, prompts = input_ids.device, input_ids.shape[0]
    eos = single_eos(model)
    hidden, projected = steps.encode(input_ids, attention_mask)
    cache = shared_cross_attention_cache(projected, beams)
    hidden, mask = hidden.repeat_interleave(beams, dim=0), attention_mask.repeat_interleave(beams, dim=0)
    state, open_prompts = Beams.start(prompts, beams, max_new_tokens, device), list(range(prompts))
    best: list[list[int]] = [[] for _ in range(prompts)]
    last = torch.full((prompts * beams, 1), decoder_start(model), dtype=torch.long, device=device)
    for step in range(max_new_tokens):
        logits = steps.decode(last, hidden, mask, cache)
        state, origin = advance(state, logits.float(), eos, length_penalty(model),
                                 at_limit=step + 1 == max_new_tokens)  # fmt: skip
        done = state.full.all(dim=1).tolist()  # B hypotheses in: nothing can replace them
        for row in (r for r, finished in enumerate(done) if finished):
            best[open_prompts[row]] = until_eos(state.finished[row, 0].tolist(), eos)
        still = [r for r, finished in enumerate(done) if not finished]
        if not still:
            break
        kept = torch.tensor(still, dtype=torch.long, device=device)
        first_rows = (kept * beams)[:, None]
        # the self-attention cache: each open beam's row taken from the beam it continues
        cache.self_attention_cache.reorder_cache(flat_rows(first_rows + origin[kept]))
        if len(still) < len(done):  # finished prompts leave the batch
            rows = flat_rows(first_rows + torch.arange(beams, device=device))
            cache.cross_attention_cache.reorder_cache(rows)
            hidden, mask, state = hidden[rows], mask[rows], state.keep(kept)
            open_prompts = [open_prompts[r] for r in still]
        # A compiled step sees one layout: `contiguous()` keeps a one-row view's stride (the steps so far), and
        # under torch.compile each new stride was a new graph, eight of them and the search ran eager.
        last = state.tokens[:, :, -1].reshape(-1, 1).clone(memory_format=torch.contiguous_format)
    return best


def advance(state: Beams, logits: torch.Tensor, eos: int, penalty: float, at_limit: bool) -> tuple[Beams, torch.Tensor]:
    """One step: the new state and, for each running beam, the beam it continues."""
    prompts, beams = state.scores.shape
    log_probs = torch.log_softmax(logits, dim=-1).view(prompts, beams, -1) + state.scores[:, :, None]
    if beams == 1:
        top_scores, top_ids = _greedy_candidates(log_probs.view(prompts, -1), logits)
    else:
        top_scores, top_ids = torch.topk(log_probs.view(prompts, -1), k=2 * beams)
    origin, token = top_ids // logits.shape[-1], top_ids % logits.shape[-1]
    tokens = torch.cat((_take(state.tokens, origin), token[:, :, None]), dim=2)
    ends = (token == eos) | at_limit
    running_scores = top_scores + ends.float() * NEVER
    # topk of ties takes any of them; greedy's one beam is the first candidate that does not end
    running = running_scores.argmax(dim=1, keepdim=True) if beams == 1 else torch.topk(running_scores, k=beams).indices
    # Of the 2B, only the first B may finish, scored by length; a prompt whose slots are full takes none.
    finishing = ends & (torch.arange(2 * beams, device=ends.device) < beams)
    candidates = top_scores / tokens.shape[2] ** penalty
    candidates = candidates + state.full.all(dim=1, keepdim=True).float() * NEVER + (~finishing).float() * NEVER
    scores = torch.cat((state.finished_scores, candidates), dim=1)
    chosen = torch.topk(scores, k=beams).indices
    padded = torch.nn.functional.pad(tokens, (0, state.finished.shape[2] - tokens.shape[2]))
    new = Beams(
        tokens=_take(tokens, running),
        scores=torch.gather(running_scores, 1, running),
        finished=_take(torch.cat((state.finished, padded), dim=1), chosen),
        finished_scores=torch.gather(scores, 1, chosen),
        full=torch.gather(torch.cat((state.full, finishing), dim=1), 1, chosen),
    )
    return new, torch.gather(origin, 1, running)


def _greedy_candidates(log_probs: torch.Tensor, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One beam's two candidates, as `generate`'s greedy search chooses: first the first of the largest
    logits (topk of the log-probabilities may take another of equal value, or one that log_softmax
    rounded to the same), then the best of the rest (what runs on when the first is EOS)."""
    first = logits.argmax(dim=-1, keepdim=True)
    second = log_probs.scatter(1, first, float("-inf")).argmax(dim=-1, keepdim=True)
    ids = torch.cat((first, second), dim=1)
    return torch.gather(log_probs, 1, ids), ids


def flat_rows(index: torch.Tensor) -> torch.LongTensor:
    return cast(torch.LongTensor, index.reshape(-1))  # cast: a LongTensor is a torch.long Tensor, as this is


def _take(tensor: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """`tensor[p, columns[p, j], :]` for every prompt p and column j."""
    return torch.take_along_dim(tensor, columns[:, :, None], dim=1)


def until_eos(tokens: list[int], eos: int) -> list[int]:
    return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens
