"""Tiny randomly initialised models, built offline and saved like hub checkpoints.

The tokenizer is a real `tokenizers` word-level tokenizer with T5's special tokens
(pad 0, eos 1, unk 2), wrapped as a PreTrainedTokenizerFast; the model is a two-layer
T5ForConditionalGeneration. Both load through AutoTokenizer / AutoModelForSeq2SeqLM.
"""

from __future__ import annotations

import re
from pathlib import Path

from examflow.prompts import template

WORDS = """the a of and to in is are what how why which who when where do does bees honey nectar water
moon tides ocean sun volcano magma lava compost soil yes no not answer question context passage query
relevant unanswerable true false correct""".split()


def vocabulary() -> list[str]:
    names = [
        "grade-self-rating",
        "grade-qa",
        "grade-nugget-rating",
        "grade-answer-verification",
        "direct-sun",
        "direct-thomas",
        "nrp-monot5",
    ]
    words = set(WORDS) | {str(d) for d in range(10)}
    for name in names:
        words |= set(re.findall(r"\w+|[^\w\s]", template(name)))
    return ["<pad>", "</s>", "<unk>"] + sorted(words)


def build_tiny_t5(
    path: Path,
    seed: int = 0,
    digit_boost: float = 0.0,
    question_answering: bool = False,
    scale: float = 1.0,
    flan: bool = False,
    eos_boost: float = 1.0,
) -> Path:
    """Save a tiny T5 and its tokenizer to `path`; `digit_boost` scales the digit rows of the LM head,
    `scale` every weight (at 3, answers follow the input: at 1 a tiny model says much the same to all).
    With `question_answering`, a T5ForQuestionAnswering (span extraction, as flan-t5-large-squad2).
    With `flan`, configured as T5 v1.1 and FLAN-T5 are: `tie_word_embeddings: false`, which in T5 means
    that the decoder's outputs are not scaled by d_model^-0.5 before the LM head. `eos_boost` scales the
    LM head's row of `</s>`: above 1, answers end (input by input) at different lengths."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration, T5ForQuestionAnswering

    vocab = {token: i for i, token in enumerate(vocabulary())}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B:1 </s>:1", special_tokens=[("</s>", 1)]
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    config = T5Config(
        vocab_size=len(vocab), d_model=32, d_ff=64, d_kv=16, num_layers=2, num_decoder_layers=2, num_heads=2,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, **({"tie_word_embeddings": False} if flan else {}),
    )  # fmt: skip
    torch.manual_seed(seed)
    model = (T5ForQuestionAnswering if question_answering else T5ForConditionalGeneration)(config)
    with torch.no_grad():
        for weight in model.parameters():
            weight.mul_(scale)
    if eos_boost != 1.0:
        with torch.no_grad():
            model.lm_head.weight[vocab["</s>"]] *= eos_boost
    if digit_boost:
        with torch.no_grad():
            for digit in "012345":
                model.lm_head.weight[vocab[digit]] *= digit_boost
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
