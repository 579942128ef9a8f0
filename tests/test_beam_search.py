"""examflow's beam search against `generate(num_beams=5, early_stopping=True)` on tiny T5 models."""

from __future__ import annotations

import random

import pytest

from tests.tiny_models import build_tiny_t5

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Tiny T5s whose answers differ in length: some end at once, some run to the limit."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    built = []
    for seed, scale, flan, eos_boost in ((1, 3.0, False, 4.0), (2, 2.0, True, 4.0), (8, 3.0, False, 2.5)):
        path = build_tiny_t5(tmp_path_factory.mktemp(f"beam{seed}"), seed=seed, scale=scale, flan=flan,
                             eos_boost=eos_boost)  # fmt: skip
        built.append((AutoTokenizer.from_pretrained(path), AutoModelForSeq2SeqLM.from_pretrained(path).eval()))
    return built


def texts(tokenizer, seed: int, count: int = 12) -> list[str]:
    words = sorted(w for w in tokenizer.get_vocab() if not w.startswith("<"))  # its order differs by process
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(count)]


def answers(tokenizer, model, batch: list[str], max_new_tokens: int, ours: bool, beams: int = 5) -> list[str]:
    from examflow.grading.beam_search import beam_search

    encoded = tokenizer(batch, return_tensors="pt", padding=True)
    with torch.inference_mode():
        if ours:
            output = beam_search(model, encoded["input_ids"], encoded["attention_mask"], beams, max_new_tokens)
        else:  # one beam: greedy decoding
            output = model.generate(**encoded, num_beams=beams, early_stopping=beams > 1, max_new_tokens=max_new_tokens,
                                    do_sample=False)  # fmt: skip
    return tokenizer.batch_decode(output, skip_special_tokens=True)


@pytest.mark.parametrize("beams", [5, 1])
@pytest.mark.parametrize("max_new_tokens", [1, 3, 9])
@pytest.mark.parametrize("batch_size", [1, 5, 12])
def test_answers_equal_generate(models, beams, max_new_tokens, batch_size):
    for index, (tokenizer, model) in enumerate(models):
        # one at a time, four prompts say what twelve would: each is a `generate` call of its own
        prompts = texts(tokenizer, seed=index, count=4 if batch_size == 1 else 12)
        for start in range(0, len(prompts), batch_size):
            batch = prompts[start : start + batch_size]
            ours = answers(tokenizer, model, batch, max_new_tokens, ours=True, beams=beams)
            assert ours == answers(tokenizer, model, batch, max_new_tokens, ours=False, beams=beams)


def test_finished_prompts_leave_the_batch(models):
    """The rows each step decodes: all prompts' beams at first, fewer once some prompts are finished,
    and no step past the longest answer; generate's answers all the same."""
    from examflow.grading.beam_search import beam_search

    tokenizer, model = models[0]
    batch = texts(tokenizer, seed=0)
    rows: list[int] = []
    hook = model.decoder.register_forward_pre_hook(lambda _, args, kwargs: rows.append(len(kwargs["input_ids"])),
                                                   with_kwargs=True)  # fmt: skip
    encoded = tokenizer(batch, return_tensors="pt", padding=True)
    try:
        with torch.inference_mode():
            tokens = beam_search(model, encoded["input_ids"], encoded["attention_mask"], 5, 9)
    finally:
        hook.remove()
    assert tokenizer.batch_decode(tokens, skip_special_tokens=True) == answers(tokenizer, model, batch, 9, ours=False)
    lengths = [len(t) for t in tokens]  # an answer's tokens, its EOS included
    assert min(lengths) < max(lengths)  # some answers end early, some late (else this test shows nothing)
    # every open prompt decodes its 5 beams; prompts leave as they finish, and none comes back
    assert rows[0] == 5 * len(batch) and all(r % 5 == 0 for r in rows)
    assert rows == sorted(rows, reverse=True) and rows[-1] < rows[0]


def test_every_decoder_step_gets_its_last_tokens_in_one_layout(models):
    """A compiled step guards on the strides of its inputs. A one-row view of the beams' tokens counts as
    contiguous at any stride, and its stride was the number of steps so far: with one prompt left open,
    every step made a new graph, until torch.compile gave up and ran the search eager."""
    from examflow.grading.beam_search import SearchSteps, beam_search

    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    for tokenizer, model in models:
        eager = SearchSteps.eager(model)

        def decode(last, hidden, mask, cache, eager=eager):
            seen.append((tuple(last.shape), last.stride()))
            return eager.decode(last, hidden, mask, cache)

        encoded = tokenizer(texts(tokenizer, seed=1, count=17)[12:], return_tensors="pt", padding=True)
        with torch.inference_mode():
            for beams in (1, 5):
                beam_search(model, encoded["input_ids"], encoded["attention_mask"], beams, 9,
                            SearchSteps(eager.encode, decode))  # fmt: skip
    assert (1, 1) in {shape for shape, _ in seen}  # one prompt of five left open, at one beam
    assert {stride for _, stride in seen} == {(1, 1)}  # as a new (rows, 1) tensor is laid out


def test_a_model_with_other_generation_settings_is_left_to_generate(models):
    from examflow.grading.beam_search import searchable

    tokenizer, model = models[1]
    assert searchable(model)
    model.generation_config.repetition_penalty = 1.3  # generate would add a logits processor
    try:
        assert not searchable(model)
    finally:
        model.generation_config.repetition_penalty = None
    assert searchable(model)


def test_greedy_takes_the_first_of_the_largest_logits_as_generate_does():
    """`generate`'s greedy step is the arg-max of the logits: of equal logits the first, of two that
    log_softmax rounds alike the larger. The top 2 of the log-probabilities took the other (a reviewer's
    repro: bfloat16 logits tie often)."""
    from examflow.grading.beam_search import Beams, advance

    tied = torch.zeros(1, 202)
    tied[0, 100] = tied[0, 201] = 28.125
    larger = torch.tensor([0.3]).nextafter(torch.tensor([1.0]))
    close = torch.cat((torch.arange(3000) * 1e-4, larger, torch.tensor([0.3])))[None]
    for logits, first in ((tied, 100), (close, 3000)):
        best_two = torch.log_softmax(logits, dim=-1).topk(2).values
        assert best_two[0, 0] == best_two[0, 1]  # alike after log_softmax: only the logits tell them apart
        state, _ = advance(Beams.start(1, 1, 4, "cpu"), logits, eos=1, penalty=1.0, at_limit=False)
        assert state.tokens[0, 0].tolist() == [first] and not state.full.any()
        state, _ = advance(Beams.start(1, 1, 4, "cpu"), logits, eos=first, penalty=1.0, at_limit=False)
        assert state.full.all() and state.finished[0, 0, 0].item() == first  # the first is EOS: it ends there


def test_several_eos_tokens_are_left_to_generate_and_the_start_token_is_generate_s(models):
    """A list of EOS ids: the search knew only the first (a reviewer's repro answered past the second).
    A start token in the generation settings: the search read the model's."""
    from examflow.grading.beam_search import searchable

    tokenizer, model = models[0]
    settings = model.generation_config
    eos, start, bos = settings.eos_token_id, settings.decoder_start_token_id, settings.bos_token_id
    batch = texts(tokenizer, seed=3)
    before = answers(tokenizer, model, batch, 3, ours=True)
    try:
        settings.eos_token_id = [eos, 5]
        assert not searchable(model)
        settings.eos_token_id = [eos]
        assert searchable(model)
        settings.decoder_start_token_id = 7  # a word: generate's output starts with it, the search's after it
        encoded = tokenizer(batch, return_tensors="pt", padding=True)
        for beams in (5, 1):
            with torch.inference_mode():
                output = model.generate(**encoded, num_beams=beams, early_stopping=beams > 1, max_new_tokens=3)
            expected = tokenizer.batch_decode(output[:, 1:], skip_special_tokens=True)
            assert answers(tokenizer, model, batch, 3, ours=True, beams=beams) == expected
        assert answers(tokenizer, model, batch, 3, ours=True) != before  # the start token was read
        settings.decoder_start_token_id, settings.bos_token_id = None, 7  # generate's next choice: BOS
        with torch.inference_mode():
            output = model.generate(**encoded, num_beams=5, early_stopping=True, max_new_tokens=3)
        expected = tokenizer.batch_decode(output[:, 1:], skip_special_tokens=True)
        assert answers(tokenizer, model, batch, 3, ours=True) == expected
    finally:
        settings.eos_token_id, settings.decoder_start_token_id, settings.bos_token_id = eos, start, bos


@pytest.mark.slow
def test_compiled_steps_answer_as_generate(models):
    """The search's encoder and decoder step under torch.compile (inductor and this machine's C++
    compiler), prompts padded to a multiple of 64 as the back end pads them for a compiled step: every
    answer equal to generate's, in batches whose rows leave at different steps, down to one. On one
    model: each model is a compile of its own (40 s and more here)."""
    from examflow.grading.beam_search import SearchSteps, beam_search

    tokenizer, model = models[0]
    steps = SearchSteps.eager(model).compiled()
    prompts = texts(tokenizer, seed=0, count=17)
    lengths = []
    for beams in (5, 1):
        for start, stop in ((0, 12), (12, 17)):
            batch = prompts[start:stop]
            padded = tokenizer(batch, return_tensors="pt", padding=True, pad_to_multiple_of=64)
            with torch.inference_mode():
                tokens = beam_search(model, padded["input_ids"], padded["attention_mask"], beams, 9, steps)
            expected = answers(tokenizer, model, batch, 9, ours=False, beams=beams)
            assert tokenizer.batch_decode(tokens, skip_special_tokens=True) == expected
            lengths.append(sorted(len(t) for t in tokens))
    # rows left a batch at several steps, and in some batch one row ran on alone
    assert any(len(set(batch)) > 2 for batch in lengths)
    assert any(batch[-1] > batch[-2] for batch in lengths)
