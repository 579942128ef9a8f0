"""The fixed-shape search (examflow.grading.static_search) against `generate` on tiny T5 models."""

from __future__ import annotations

import copy

import pytest

from tests.test_beam_search import answers, models, texts  # noqa: F401  (models: the tiny T5s, a fixture)

torch = pytest.importorskip("torch")


def static_answers(tokenizer, model, batch: list[str], max_new_tokens: int, beams: int) -> list[str]:
    from examflow.grading.static_search import StaticSearch

    encoded = tokenizer(batch, return_tensors="pt", padding=True)
    with torch.inference_mode():
        output = StaticSearch(model)(encoded["input_ids"], encoded["attention_mask"], beams, max_new_tokens)
    return tokenizer.batch_decode(output, skip_special_tokens=True)


@pytest.mark.parametrize("beams", [5, 1])
@pytest.mark.parametrize("max_new_tokens", [1, 3, 9])
@pytest.mark.parametrize("batch_size", [1, 5, 12])
def test_answers_equal_generate(models, beams, max_new_tokens, batch_size):  # noqa: F811
    for index, (tokenizer, model) in enumerate(models):
        # one at a time, four prompts say what twelve would: each is a `generate` call of its own
        prompts = texts(tokenizer, seed=index, count=4 if batch_size == 1 else 12)
        for start in range(0, len(prompts), batch_size):
            batch = prompts[start : start + batch_size]
            expected = answers(tokenizer, model, batch, max_new_tokens, ours=False, beams=beams)
            assert static_answers(tokenizer, model, batch, max_new_tokens, beams) == expected


def test_every_step_decodes_the_same_rows_in_the_same_memory(models):  # noqa: F811
    """What a CUDA graph needs: each step's inputs of one shape, its cache where it was, and steps past
    the first finished answer (the rows of finished prompts go on being decoded)."""
    from examflow.grading.static_search import StaticDecoder, StaticSearch

    tokenizer, model = models[0]
    batch = texts(tokenizer, seed=0)
    shapes, addresses = [], []
    original = StaticDecoder.step

    def step(decoder):
        shapes.append(tuple(decoder.tokens.shape))
        addresses.append((decoder.keys.data_ptr(), decoder.values.data_ptr(), decoder.tokens.data_ptr()))
        return original(decoder)

    encoded = tokenizer(batch, return_tensors="pt", padding=True)
    StaticDecoder.step = step  # type: ignore[method-assign]
    try:
        with torch.inference_mode():
            tokens = StaticSearch(model)(encoded["input_ids"], encoded["attention_mask"], 5, 9)
    finally:
        StaticDecoder.step = original  # type: ignore[method-assign]
    assert tokenizer.batch_decode(tokens, skip_special_tokens=True) == answers(tokenizer, model, batch, 9, ours=False)
    lengths = [len(t) for t in tokens]
    # a prompt finished at the first step, and the search went on (until all 5 hypotheses of each were in)
    assert min(lengths) == 1 < max(lengths) <= len(shapes) <= 9
    assert set(shapes) == {(5 * len(batch), 1)} and len(set(addresses)) == 1


def test_one_search_serves_every_batch_of_a_shape(models):  # noqa: F811
    """Batches padded to one length reuse one decoder's memory (on a GPU, one recorded graph): answers
    as generate's, batch after batch, and a decoder made only when the shape of batch changes."""
    from examflow.grading.static_search import StaticDecoder, StaticSearch

    tokenizer, model = models[1]
    prompts = texts(tokenizer, seed=3, count=14)
    search = StaticSearch(model)
    made: list[tuple] = []
    allocate = StaticDecoder.allocate

    def counted(model, projected, beams, steps):
        made.append((projected[0][0].shape[0], beams))
        return allocate(model, projected, beams, steps)

    StaticDecoder.allocate = counted  # type: ignore[method-assign]
    try:
        for beams in (5, 1):
            for start in range(0, len(prompts), 4):  # three batches of 4 prompts, then one of 2
                batch = prompts[start : start + 4]
                encoded = tokenizer(batch, return_tensors="pt", padding=True, pad_to_multiple_of=64)
                tokens = search(encoded["input_ids"], encoded["attention_mask"], beams, 9)
                expected = answers(tokenizer, model, batch, 9, ours=False, beams=beams)
                assert tokenizer.batch_decode(tokens, skip_special_tokens=True) == expected
    finally:
        StaticDecoder.allocate = allocate  # type: ignore[method-assign]
    assert made == [(4, 5), (2, 5), (4, 1), (2, 1)]


def test_what_the_search_of_fixed_shapes_refuses(models):  # noqa: F811
    from examflow.grading.static_search import StaticSearch

    _, model = models[0]
    with pytest.raises(ValueError, match="CUDA graphs need a model on a CUDA device, not cpu"):
        StaticSearch(model, graphed=True)
    block = model.decoder.block[1].layer[0].SelfAttention
    block.has_relative_attention_bias = True  # as UMT5's layers each have theirs
    try:
        with pytest.raises(ValueError, match="first decoder layer alone has a position bias"):
            StaticSearch(model)
    finally:
        block.has_relative_attention_bias = False
    with pytest.raises(ValueError, match="not float16"):
        StaticSearch(copy.deepcopy(model).to(torch.float16))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device; this machine has none")
def test_graphed_steps_answer_as_the_eager_ones(models):  # noqa: F811
    """On a GPU: one recorded graph per shape of batch, replayed, gives the eager steps' answers."""
    from examflow.grading.static_search import StaticSearch

    tokenizer, model = models[0]
    model = model.to("cuda")
    try:
        graphed, eager = StaticSearch(model, graphed=True), StaticSearch(model)
        for beams in (5, 1):
            for batch in (texts(tokenizer, seed=4, count=8)[:4], texts(tokenizer, seed=5, count=8)[:4]):
                encoded = tokenizer(batch, return_tensors="pt", padding=True, pad_to_multiple_of=64).to("cuda")
                inputs = (encoded["input_ids"], encoded["attention_mask"], beams, 9)
                assert graphed(*inputs) == eager(*inputs)
    finally:
        model.to("cpu")
