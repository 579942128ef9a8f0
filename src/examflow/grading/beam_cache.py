"""Beam search without the redundant cross-attention work of `generate` for T5 models.

`generate(num_beams=5)` copies each prompt's encoder output five times, projects every copy
to cross-attention keys and values, and re-indexes those copies at every step. All beams of a
prompt share one encoder output, and beam search only reorders beams within a prompt, so the
copies are identical and the re-indexing moves nothing. Here keys and values are projected once
per prompt, repeated for the beams, and never reordered: the same answers, a fraction of the
cross-attention cost (on two CPU cores about a fifth of the reference pattern's time).
"""

from __future__ import annotations

from transformers import DynamicCache, EncoderDecoderCache


class SharedCrossAttentionCache(EncoderDecoderCache):
    def reorder_cache(self, beam_idx) -> None:
        self.self_attention_cache.reorder_cache(beam_idx)  # cross-attention: identical across a prompt's beams


def shared_cross_attention_cache(model, encoder_hidden, beams: int) -> SharedCrossAttentionCache | None:
    """A pre-filled cache for `generate(encoder_outputs=..., past_key_values=...)`; None for
    models whose decoder is not laid out like T5's (they decode the plain way)."""
    blocks = getattr(getattr(model, "decoder", None), "block", None)
    if blocks is None or not all(hasattr(block.layer[1], "EncDecAttention") for block in blocks):
        return None
    cross = DynamicCache()
    cache = SharedCrossAttentionCache(DynamicCache(), cross)
    for index, block in enumerate(blocks):
        attention = block.layer[1].EncDecAttention
        shape = (encoder_hidden.shape[0], -1, attention.n_heads, attention.key_value_proj_dim)
        keys = attention.k(encoder_hidden).view(shape).transpose(1, 2)
        values = attention.v(encoder_hidden).view(shape).transpose(1, 2)
        cross.update(keys.repeat_interleave(beams, dim=0), values.repeat_interleave(beams, dim=0), index)
        cache.is_updated[index] = True
    return cache
