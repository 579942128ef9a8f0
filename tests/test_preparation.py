"""Prompts tokenised once: the model's input ids and masks equal those of examflow's earlier preparation
(each prompt measured and cut on its own, then the batch tokenised again), replayed here as the oracle."""

from __future__ import annotations

import random

import pytest
import torch
from independent import earlier_prompt
from tiny_models import build_tiny_t5

from examflow.grading.backends import Request
from examflow.grading.preparation import Preparer
from examflow.prompts import read_by, template

WORDS = "bees make honey from nectar the moon raises tides lava magma compost feeds soil honeybees".split()


def earlier(tokenizer, request: Request, max_input_tokens: int, margin: int) -> str:
    return earlier_prompt(tokenizer, template(request.template), request.fields, max_input_tokens, margin)


@pytest.fixture(scope="module")
def bpe():
    """A BPE tokenizer with T5's Metaspace pre-tokenizer: tokens merge across spaces' edges as T5's do."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Metaspace()
    texts = [template(name) for name in ("grade-self-rating", "grade-qa", "direct-thomas")] + [" ".join(WORDS)] * 3
    core.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "</s>", "<unk>"]))
    core.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


@pytest.fixture(scope="module")
def word_level(tmp_path_factory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(build_tiny_t5(tmp_path_factory.mktemp("tiny"), seed=1))


def requests(seed: int, n: int) -> list[Request]:
    """A grading job's order: each passage with each of its query's questions; some passages far too
    long, some empty, some with odd spacing at their edges."""
    rng = random.Random(seed)
    questions = [" ".join(rng.choices(WORDS, k=rng.randint(1, 30))) + "?" for _ in range(4)]
    made = []
    while len(made) < n:
        words = rng.choices(WORDS, k=rng.choice([0, 1, 5, 40, 200, 900]))
        passage = rng.choice(["", " ", "\n"]) + " ".join(words) + rng.choice(["", " ", ".", "\n\n"])
        name = rng.choice(["grade-self-rating", "grade-qa", "direct-thomas"])
        target = "query" if name == "direct-thomas" else "question"
        made += [Request(name, {target: question, "context": passage}) for question in questions]
    return made[:n]


@pytest.mark.parametrize("tokenizer_name", ["bpe", "word_level"])
@pytest.mark.parametrize("max_input_tokens, margin", [(512, 5), (64, 5), (40, 0), (12, 5)])
def test_prompts_and_model_inputs_equal_the_earlier_preparation(request, tokenizer_name, max_input_tokens, margin):
    tokenizer = request.getfixturevalue(tokenizer_name)
    preparer = Preparer(tokenizer, max_input_tokens)
    for seed in range(3):
        asked = requests(seed, 60)
        # In chunks, as a grading job sends them: the second reuses the first's measurements.
        prompts = [p for start in range(0, 60, 25) for p in preparer.prepare(asked[start : start + 25], margin)]
        expected = [earlier(tokenizer, r, max_input_tokens, margin) for r in asked]
        assert [p.text for p in prompts] == expected
        for start in range(0, 60, 7):  # batches that pad differently
            old = tokenizer(expected[start : start + 7], return_tensors="pt", padding=True, truncation=True,
                            max_length=max_input_tokens)  # fmt: skip
            new = preparer.pad(prompts[start : start + 7])
            assert torch.equal(old["input_ids"], new["input_ids"])
            assert torch.equal(old["attention_mask"], new["attention_mask"])
        # Where the template alone is over, the prompt is marked with its length without the passage (a
        # grader fails it); a ranker reads the prompt's first tokens and its end.
        over = [p for p in prompts if len(tokenizer(p.text).input_ids) > max_input_tokens]
        eos = [tokenizer.eos_token_id]
        assert all(p.ids == tokenizer(p.text).input_ids[: max_input_tokens - 1] + eos for p in over)
        # ... and so is one whose passage had words and was cut to none (the question graded alone)
        bare = [read_by(r.template, False).format(**(r.fields | {"context": ""})) for r in asked]
        cut_away = [p for p, r, b in zip(prompts, asked, bare) if p.text == b and r.fields["context"].strip()]
        assert [p for p in prompts if p.too_long is not None] == [p for p in prompts if p in over or p in cut_away]
        assert all(p.too_long == len(tokenizer(p.text).input_ids) for p in over + cut_away)
        assert (
            (max_input_tokens == 512 and not over) or (max_input_tokens == 12 and over) or max_input_tokens in (64, 40)
        )


def test_a_long_context_is_cut_and_the_question_stays_whole(bpe):
    question = "how do bees make honey from nectar?"
    asked = Request("grade-self-rating", {"question": question, "context": " ".join(WORDS * 200)})
    [prompt] = Preparer(bpe, 400).prepare([asked])
    assert question in prompt.text and 400 - 5 - 3 <= len(prompt.ids) <= 400
    assert prompt.ids == bpe(prompt.text).input_ids


def test_padding_follows_the_tokenizers_side(bpe):
    import copy

    left = copy.deepcopy(bpe)
    left.padding_side = "left"
    prompts = Preparer(left, 64).prepare(requests(5, 20))
    old = left([p.text for p in prompts], return_tensors="pt", padding=True, truncation=True, max_length=64)
    new = Preparer(left, 64).pad(prompts)
    assert torch.equal(old["input_ids"], new["input_ids"]) and torch.equal(old["attention_mask"], new["attention_mask"])
    assert new["attention_mask"][:, 0].min() == 0  # some prompt is padded, on the left


def test_lengths_rounded_up_for_a_compiled_step_are_masked_padding(tmp_path):
    from examflow.grading.backends import Seq2SeqBackend

    backend = Seq2SeqBackend(str(build_tiny_t5(tmp_path, seed=4, scale=2.0)), decoding="fast")
    prompts = backend.preparer.prepare(requests(7, 6))
    exact, rounded = backend.preparer.pad(prompts), backend.preparer.pad(prompts, 64)
    longest = max(len(p.ids) for p in prompts)
    assert exact["input_ids"].shape[1] == longest and rounded["input_ids"].shape[1] == -(-longest // 64) * 64 > longest
    assert torch.equal(rounded["input_ids"][:, :longest], exact["input_ids"])
    assert rounded["attention_mask"][:, longest:].sum() == 0 and (rounded["input_ids"][:, longest:] == 0).all()
    start = torch.zeros((len(prompts), 1), dtype=torch.long)
    with torch.inference_mode():
        logits = [backend._first_step(e["input_ids"], e["attention_mask"], start) for e in (exact, rounded)]
    # equal up to rounding: kernels for another length sum in another order (on an AMX CPU up to 5e-5 on
    # this model's logits of up to 11); padding left unmasked moves them by about 9
    torch.testing.assert_close(logits[1], logits[0], rtol=1e-4, atol=1e-4)
    assert torch.equal(logits[0].argmax(-1), logits[1].argmax(-1))
