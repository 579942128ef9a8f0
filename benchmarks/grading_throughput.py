"""Grading throughput: the reference calling pattern against examflow's beam and fast modes.

    python benchmarks/grading_throughput.py [--prompts 2000] [--max-new-tokens 8] [--threads N]
        [--model base|large] [--device cpu|cuda] [--dtype float32|bfloat16] [--batch-size N]

One randomly initialised model with the google/flan-t5-base (or -large) configuration (no download),
a BPE tokenizer trained here on the benchmark's own text, and the same self-rating prompts
(passages of ~80 words, 10 questions each) for every side; new tokens are capped equally,
since random weights rarely emit EOS.

(a) reference: HF pipeline("text2text-generation") where the installed transformers has it
    (removed in transformers 5, where its calling pattern is replayed: tokenizer with padding,
    generate, decode), batch size 10 = one passage's questions, num_beams=5, early stopping, fp32;
(b) examflow `beam` mode: the same decoding; its answers must equal (a)'s, and every
    difference is checked for a floating-point near-tie between the two best beams;
(c) examflow `fast` mode: one decoder step over the digit tokens;
(d) with --greedy, examflow `greedy` mode.
`--skip beam` or `--skip fast` leaves that decoding untimed. With `--compile always` a compiled decoding's first batch and first whole pass (its compiles) are timed and shown apart, and
`--eager-baseline` times the same decoding eager in the same run and compares their answers.
`--static-search` times `beam` and `greedy` (with --greedy) again through the search of fixed shapes
(`examflow.grading.static_search`; on CUDA each decoder step replayed as a CUDA graph, prompts padded to
a multiple of 64 so that batches share graphs; its first whole pass, which records them, timed apart) and
compares its answers with the search's. Random weights rarely end an answer before the cap (the
lengths of a batch's answers are printed beside each search), which hides what `beam_search` saves by
dropping finished prompts; `--max-new-tokens 2` gives both searches the steps of a self-rating answer
(a digit, then EOS).
Prints pairs/s for each (end to end through `Seq2SeqBackend.answer`: templates, cutting, parsing), the
ratios (b)/(a) and (c)/(a), and beside each decoding its FLOP per pair, the share of the time the GPU
was busy (kernel time over wall time, CUDA's profiler, in a second run) and the model FLOP utilisation
(FLOP per pair × pairs/s ÷ the device's bf16 peak: known GPUs by name, else --peak-tflops).

    python benchmarks/grading_throughput.py --host-only [--prompts 2000] [--chunk 64] [--batch-size 16]

times the preparation alone (templates filled, contexts cut, prompts tokenised and padded into the
model's tensors), on any CPU: examflow's earlier preparation (each prompt measured and cut on its
own, the batch tokenised again) against today's (`examflow.grading.preparation`), on the texts above
and on a grading job's pairs (a query's passages each with its 10 questions), in chunks of the
requests a grading job sends at once; the model inputs of both must be identical.

With --ctranslate2, (e): the same requests through the `ct2_seq2seq` back end (CTranslate2, the model
converted in the run from its folder), float32 and int8 (int8_bfloat16 on CUDA), greedy, beam and fast;
pairs/s and answers equal to examflow's torch path ((d), (b), (c); greedy compared with --greedy).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from independent import earlier_prompt  # noqa: E402  examflow's earlier preparation, the tests' oracle

from examflow.grading.backends import Answer, Request, Seq2SeqBackend  # noqa: E402
from examflow.grading.static_search import StaticSearch  # noqa: E402
from examflow.prompts import template  # noqa: E402

FLAN_T5_BASE = dict(
    vocab_size=32128, d_model=768, d_kv=64, d_ff=2048, num_layers=12, num_decoder_layers=12, num_heads=12,
    feed_forward_proj="gated-gelu", tie_word_embeddings=False, relative_attention_num_buckets=32,
    pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
)  # fmt: skip
FLAN_T5 = {
    "base": FLAN_T5_BASE,
    "large": FLAN_T5_BASE | dict(d_model=1024, d_ff=2816, num_layers=24, num_decoder_layers=24, num_heads=16),
}


def benchmark_texts(prompts: int, seed: int = 13) -> list[Request]:
    rng = random.Random(seed)
    words = [
        f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('nrstl')}{rng.choice('aeiouy')}"
        for _ in range(3000)
    ]
    requests = []
    for _ in range(prompts // 10):
        passage = " ".join(rng.choices(words, k=rng.randint(60, 100))) + "."
        for _ in range(10):
            question = "What " + " ".join(rng.choices(words, k=rng.randint(6, 14))) + "?"
            requests.append(Request("grade-self-rating", {"question": question, "context": passage}))
    return requests


def job_texts(prompts: int, seed: int = 13) -> list[Request]:
    """As `benchmark_texts`, in a grading job's order: each of a query's 20 passages with each of its 10
    questions (the words, lengths and template are the same)."""
    rng = random.Random(seed)
    texts = benchmark_texts(prompts, seed)
    questions = [r.fields["question"] for r in texts]
    passages = [r.fields["context"] for r in texts[::10]]
    requests = []
    for query in range(0, len(passages), 20):
        asked = rng.sample(questions, 10)
        requests += [
            Request("grade-self-rating", {"question": q, "context": p})
            for p in passages[query : query + 20]
            for q in asked
        ]
    return requests[:prompts]


def build_model(directory: Path, requests: list[Request], size: str = "base") -> str:
    from transformers import T5Config, T5ForConditionalGeneration

    build_tokenizer(requests).save_pretrained(directory)
    torch.manual_seed(0)
    T5ForConditionalGeneration(T5Config(**FLAN_T5[size])).save_pretrained(directory)
    return str(directory)


def build_tokenizer(requests: list[Request]):
    """A BPE tokenizer with T5's special tokens, trained on the benchmark's own texts (Metaspace, as T5's)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE(unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Metaspace()
    texts = [template("grade-self-rating")] + [r.fields["question"] + " " + r.fields["context"] for r in requests]
    core.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=8000,
            special_tokens=["<pad>", "</s>", "<unk>"] + list("012345"),
            show_progress=False,  # its bars, off a terminal, are blank lines in the report
        ),
    )
    core.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")


# Dense bfloat16 tensor-core peaks (TFLOP/s) from the vendors' data sheets, by device name, the first
# name the device's contains (so the more specific first; None: not known here). --peak-tflops gives another.
PEAK_BF16_TFLOPS: dict[str, float | None] = {
    "H100 PCIe": 756.0, "H100 NVL": None, "H100": 989.4, "H200": 989.4, "A100": 312.0,
    "L40S": 362.1, "L40": None, "L4": 121.0,
}  # fmt: skip


def flop_per_pair(config, input_tokens: float, new_tokens: int, beams: int) -> float:
    """FLOP (2 × multiply-adds of the matrix products) of one prompt through a T5: the encoder over its
    input tokens, each decoder layer's cross-attention keys and values over them (once a prompt), and
    `new_tokens` decoder steps for each of `beams` hypotheses (the cap: early stops are not counted),
    each step ending in the LM head. flan-t5-large, 195 tokens, one step: about 145 GFLOP."""
    d, inner, ff, vocab = config.d_model, config.num_heads * config.d_kv, config.d_ff, config.vocab_size
    projections = 3 * d * ff if config.is_gated_act else 2 * d * ff
    encoder = config.num_layers * input_tokens * (4 * d * inner + projections + 2 * input_tokens * inner)
    cross = config.num_decoder_layers * input_tokens * 2 * d * inner
    step = config.num_decoder_layers * (6 * d * inner + projections + 2 * input_tokens * inner) + d * vocab
    return 2 * (encoder + cross + new_tokens * beams * step)


def peak_tflops(args) -> float | None:
    if args.peak_tflops or not args.device.startswith("cuda"):
        return args.peak_tflops
    name = torch.cuda.get_device_name()
    return next((peak for key, peak in PEAK_BF16_TFLOPS.items() if key in name), None)


def busy_share(function) -> float | None:
    """The share of `function`'s wall time the GPU spent running kernels (CUDA's profiler, in a run of
    its own so that its overhead stays out of the timings); None without a GPU."""
    if not torch.cuda.is_available():
        return None
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        _, seconds = timed(lambda: (function(), torch.cuda.synchronize()))
    kernels = sum(event.self_device_time_total for event in profiler.key_averages()) / 1e6  # microseconds
    return kernels / seconds


def utilisation(pairs_per_second: float, flop: float, peak: float | None, busy: float | None) -> str:
    """GPU busy share and model FLOP utilisation (FLOP per pair × pairs/s ÷ the peak), where known."""
    shown = [f"GPU busy {busy:.0%}" if busy is not None else "GPU busy – (no GPU)"]
    shown.append(f"MFU {flop * pairs_per_second / (peak * 1e12):.1%} of {peak:g} TFLOP/s" if peak else "MFU –")
    return f"{flop / 1e9:.0f} GFLOP a pair, " + ", ".join(shown)


def ctranslate2_rates(model: str, requests: list[Request], answers: dict, args, flop: dict, peak) -> None:
    """(e): the `ct2_seq2seq` back end end to end (the model converted here, in float32 and int8), each
    decoding's pairs/s and its answers against examflow's torch path."""
    from examflow.grading.ctranslate2_backend import CTranslate2Backend

    device = "cuda" if args.device.startswith("cuda") else "cpu"
    with tempfile.TemporaryDirectory() as cache:
        for compute_type in ("float32", "int8_bfloat16" if device == "cuda" else "int8_float32"):
            for decoding in ("greedy", "beam", "fast"):
                batch = (args.fast_batch_size or args.batch_size) if decoding == "fast" else args.batch_size
                backend = CTranslate2Backend(
                    model, cache, decoding=decoding, batch_size=batch, max_new_tokens=args.max_new_tokens,
                    device=device, compute_type=compute_type, threads=args.threads,
                )  # fmt: skip
                backend.answer(requests[: args.batch_size])  # warm-up
                found, seconds = timed(partial(backend.answer, requests))
                rate = len(requests) / seconds
                used = f"MFU {flop[decoding] * rate / (peak * 1e12):.1%}" if peak else "MFU –"
                print(f"(e) ct2_seq2seq {compute_type} {decoding}: {rate:.2f} pairs/s, {used}; "
                      f"{agreement(found, answers.get(decoding))}", flush=True)  # fmt: skip


def agreement(found: list, torch_answers: list | None) -> str:
    """How many answers equal the torch path's, and for `fast` the largest difference of expected grades."""
    if torch_answers is None:
        return "not compared (add --greedy)"
    same = (
        f"answers equal to the torch path's: {sum(a.text == b.text for a, b in zip(found, torch_answers))}/{len(found)}"
    )
    if found and found[0].expected is not None:
        same += f", largest expected-grade difference {max(abs(a.expected - b.expected) for a, b in zip(found, torch_answers)):.4f}"
    return same


def host_only(requests: list[Request], chunk: int, batch_size: int, repeat: int) -> None:
    """Preparation alone (templates, cutting, tokenising, padding to tensors), earlier and now: prompts/s."""
    from examflow.grading.preparation import Preparer

    tokenizer = build_tokenizer(requests)
    preparer = Preparer(tokenizer, 512)
    chunks = [requests[start : start + chunk] for start in range(0, len(requests), chunk)]

    def batches(items: list, key) -> list[list]:
        ordered = sorted(items, key=key)
        return [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]

    def earlier() -> list:
        encoded = []
        for part in chunks:
            prompts = [earlier_prompt(tokenizer, template(r.template), r.fields, 512, 5) for r in part]
            for batch in batches(prompts, len):
                encoded.append(tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=512))
        return encoded

    def now() -> list:
        return [
            preparer.pad(batch) for part in chunks for batch in batches(preparer.prepare(part), lambda p: len(p.text))
        ]

    before, after = [], []
    for _ in range(repeat):
        old, old_seconds = timed(earlier)
        new, new_seconds = timed(now)
        before.append(old_seconds)
        after.append(new_seconds)
    same = all(torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["attention_mask"], b["attention_mask"])
               for a, b in zip(old, new))  # fmt: skip
    tokens = sum(len(p.ids) for part in chunks for p in preparer.prepare(part)) / len(requests)
    print(f"  {len(requests)} prompts of {tokens:.0f} tokens on average, chunks of {chunk} "
          f"(a grading job's flush), batches of {batch_size}, {os.cpu_count()} cores, best of {repeat}:")  # fmt: skip
    print(f"  earlier: {len(requests) / min(before):,.0f} prompts/s")
    print(
        f"  now:     {len(requests) / min(after):,.0f} prompts/s ({min(before) / min(after):.2f}x); model inputs identical: {same}"
    )


def reference(model_path: str, prompts: list[str], max_new_tokens: int, device: str = "cpu") -> tuple[list[str], str]:
    """(a): one call per passage (its 10 questions), in input order, in float32 as the reference runs."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

    settings = {"num_beams": 5, "early_stopping": True, "max_new_tokens": max_new_tokens, "do_sample": False}
    try:
        pipe = pipeline("text2text-generation", model=model_path, device=device, dtype=torch.float32)
        answers = []
        for start in range(0, len(prompts), 10):
            answers += [
                o["generated_text"]
                for o in pipe(prompts[start : start + 10], batch_size=10, truncation=True, **settings)
            ]
        return answers, "pipeline('text2text-generation')"
    except (KeyError, ValueError):
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        model = AutoModelForSeq2SeqLM.from_pretrained(model_path, dtype=torch.float32).to(device).eval()
        answers = []
        for start in range(0, len(prompts), 10):
            encoded = tokenizer(
                prompts[start : start + 10], return_tensors="pt", padding=True, truncation=True, max_length=512
            ).to(device)
            with torch.no_grad():
                output = model.generate(**encoded, **settings)
            answers += tokenizer.batch_decode(output, skip_special_tokens=True)
        return answers, "the text2text-generation pipeline's calling pattern (pipeline absent in this transformers)"


def eager_rate(backend: Seq2SeqBackend, requests: list[Request], answers: list) -> tuple[float, str]:
    """An eager `backend` (`compile: never`) on the same machine in the same run as the compiled one: its
    pairs/s (after a one-batch warm-up) and how many of the compiled path's `answers` equal its own."""
    backend.answer(requests[: backend.batch_size])
    found, seconds = timed(partial(backend.answer, requests))
    return len(requests) / seconds, agreement(answers, found).replace("torch path", "eager path")


def static_rate(backend: Seq2SeqBackend, requests: list[Request], answers: list) -> tuple[float, str, float | None]:
    """`backend` (eager) with its search replaced by the one of fixed shapes, graphed on CUDA: pairs/s after a
    whole pass that records a graph for each shape of batch, how many answers equal the search's `answers`,
    and the GPU's busy share."""
    search = StaticSearch(backend.model, graphed=backend.device.startswith("cuda"))
    beams = backend.num_beams if backend.decoding == "beam" else 1

    def generate(prompts) -> list[Answer]:  # Seq2SeqBackend._generate with the other search
        encoded = backend._encode(prompts, 64)
        output = search(encoded["input_ids"], encoded["attention_mask"], beams, backend.max_new_tokens)
        return [Answer(text) for text in backend.tokenizer.batch_decode(output, skip_special_tokens=True)]

    backend._generate = generate  # type: ignore[method-assign]
    _, warm = timed(partial(backend.answer, requests))  # a graph recorded for each shape of batch
    print(f"    {backend.decoding}, fixed shapes: first whole pass {len(requests) / warm:.2f} pairs/s", flush=True)
    found, seconds = timed(partial(backend.answer, requests))
    busy = busy_share(partial(backend.answer, requests))
    return len(requests) / seconds, agreement(answers, found).replace("torch path", "dynamic search"), busy


def answer_lengths(backend: Seq2SeqBackend, requests: list[Request]) -> str:
    """The shortest, median and longest answer (EOS included) of the search on a batch of the requests: the
    tokens themselves, since a random model's mostly lie outside the benchmark's small vocabulary."""
    from examflow.grading.beam_search import beam_search

    encoded = backend._encode(backend.preparer.prepare(requests[: backend.batch_size]))
    beams = backend.num_beams if backend.decoding == "beam" else 1
    with torch.inference_mode():
        found = beam_search(
            backend.model, encoded["input_ids"], encoded["attention_mask"], beams, backend.max_new_tokens
        )
    lengths = sorted(map(len, found))
    return f"{lengths[0]}–{lengths[len(lengths) // 2]}–{lengths[-1]}"


def near_ties(backend: Seq2SeqBackend, requests: list[Request], max_new_tokens: int) -> int:
    """How many prompts have their two best beams within 1e-4 in score."""
    encoded = backend._encode(backend.preparer.prepare(requests))
    with torch.no_grad():
        output = backend.model.generate(
            **encoded, num_beams=5, num_return_sequences=2, early_stopping=True, max_new_tokens=max_new_tokens,
            output_scores=True, return_dict_in_generate=True,
        )  # fmt: skip
    scores = output.sequences_scores.view(len(requests), 2)
    return int(((scores[:, 0] - scores[:, 1]).abs() < 1e-4).sum())


def timed(function):
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=2000)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=10, help="examflow batch size (10 is fastest on 2 CPU cores)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument(
        "--model", choices=sorted(FLAN_T5), default="base", help="FLAN-T5 configuration (random weights)"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="examflow's dtype")
    parser.add_argument("--fast-batch-size", type=int, help="batch size of `fast` mode (default: --batch-size)")
    parser.add_argument("--skip-reference", action="store_true", help="time examflow's modes only")
    parser.add_argument("--greedy", action="store_true", help="time `greedy` decoding too, at --batch-size")
    parser.add_argument("--skip", action="append", default=[], choices=["beam", "fast"],
                        help="leave this decoding untimed (repeatable): a GPU lease's minutes for the others")  # fmt: skip
    parser.add_argument("--ctranslate2", action="store_true", help="time the ct2_seq2seq back end too")
    parser.add_argument("--peak-tflops", type=float, help="the device's bf16 peak, for MFU (default: known GPUs)")
    parser.add_argument("--host-only", action="store_true", help="time the prompts' preparation alone (any CPU)")
    parser.add_argument("--chunk", type=int, default=64, help="requests a grading job sends at once (--host-only)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs, best kept (--host-only)")
    parser.add_argument("--compile", choices=["auto", "always", "never"], default="auto",
                        help="the back end's `compile` option (auto: settled by the warm-up batch's size, so eager)")  # fmt: skip
    parser.add_argument("--eager-baseline", action="store_true",
                        help="with a compiled model, time each decoding eager too and compare their answers")  # fmt: skip
    parser.add_argument("--static-search", action="store_true",
                        help="time beam and greedy through the search of fixed shapes too (CUDA graphs on CUDA)")  # fmt: skip
    args = parser.parse_args()
    if args.prompts < 10 or args.prompts % 10:
        parser.error(f"--prompts: a positive multiple of 10 (each passage is asked 10 questions), not {args.prompts}")
    torch.set_num_threads(args.threads)
    requests = benchmark_texts(args.prompts)
    if args.host_only:
        print("every pair with a question of its own (the texts of the timings below):")
        host_only(requests, args.chunk, args.batch_size, args.repeat)
        print("a grading job's pairs (each of a query's passages with each of its 10 questions):")
        host_only(job_texts(args.prompts), args.chunk, args.batch_size, args.repeat)
        return
    with tempfile.TemporaryDirectory() as directory:
        model = build_model(Path(directory), requests, args.model)

        def backend(decoding: str, compile: str = args.compile) -> Seq2SeqBackend:
            batch = args.fast_batch_size or args.batch_size if decoding == "fast" else args.batch_size
            return Seq2SeqBackend(
                model, decoding=decoding, max_new_tokens=args.max_new_tokens, batch_size=batch,
                device=args.device, dtype=args.dtype, compile=compile,
            )  # fmt: skip

        beam, fast = backend("beam"), backend("fast")
        prompts = [beam.prompt(r) for r in requests]
        tokens = sum(len(beam.tokenizer(p).input_ids) for p in prompts) / len(prompts)
        where = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{args.threads} CPU threads"
        print(
            f"flan-t5-{args.model} configuration, {len(prompts)} prompts, {tokens:.0f} tokens each on average, "
            f"{where}, {args.max_new_tokens} new tokens, examflow in {args.dtype}, batch {args.batch_size} "
            f"(fast: {fast.batch_size})"
        )
        ref_answers = None  # --skip-reference: nothing to compare with, no ratio
        if not args.skip_reference:
            (ref_answers, how), ref_time = timed(lambda: reference(model, prompts, args.max_new_tokens, args.device))
        backends = {name: b for name, b in (("fast", fast), ("beam", beam)) if name not in args.skip}  # fast first:
        # a run cut short keeps the headline
        if args.greedy:
            backends["greedy"] = backend("greedy")
        answers, seconds, busy, eager = {}, {}, {}, {}
        for name, engine in backends.items():
            # warm-up: its first batch (kernels, the allocator, a compile), then with a compiled model a
            # whole pass, whose other shapes compile too; timed and shown, not counted
            _, warm = timed(partial(engine.answer, requests[: engine.batch_size]))
            print(f"    {name}: first batch {warm:.1f} s (compiled: {engine.compiled is not None})", flush=True)
            if engine.compiled is not None:
                _, warm = timed(partial(engine.answer, requests))
                print(f"    {name}: first whole pass {len(requests) / warm:.2f} pairs/s (new shapes compiled)")
            answers[name], seconds[name] = timed(partial(engine.answer, requests))
            busy[name] = busy_share(partial(engine.answer, requests))
            if args.eager_baseline and engine.compiled is not None:
                eager[name] = eager_rate(backend(name, "never"), requests, answers[name])
                print(f"    {name}: {len(requests) / seconds[name]:.2f} pairs/s compiled, {eager[name][0]:.2f} eager")
        peak = peak_tflops(args)
        steps = {"beam": (args.max_new_tokens, 5), "greedy": (args.max_new_tokens, 1), "fast": (1, 1)}
        flop = {name: flop_per_pair(beam.model.config, tokens, *steps[name]) for name in steps}
        rate = {name: len(prompts) / seconds[name] for name in backends}

        def line(name: str) -> str:
            used = utilisation(rate[name], flop[name], peak, busy[name])
            spread = f"; answers of {answer_lengths(backends[name], requests)} tokens" if name != "fast" else ""
            return f"{rate[name]:.2f} pairs/s ({seconds[name]:.0f} s); {used}{spread}"

        differ = [i for i, (a, b) in enumerate(zip(ref_answers or [], answers.get("beam", []))) if a != b.text]
        if ref_answers is None:
            print("(a) reference: skipped (--skip-reference)")
        else:
            reference_rate = len(prompts) / ref_time
            print(f"(a) reference, float32, {how}: {reference_rate:.2f} pairs/s ({ref_time:.0f} s)")
        if "beam" in rate:
            compared = f"; answers differing from (a): {len(differ)}" if ref_answers is not None else ""
            print(f"(b) examflow beam: {line('beam')}{compared}")
        if differ and args.dtype == "float32":
            ties = near_ties(beam, [requests[i] for i in differ], args.max_new_tokens)
            print(f"    of those, {ties} have their two best beams within 1e-4 in score (floating-point near-ties)")
        for name, label in (("fast", "(c) examflow fast"), ("greedy", "(d) examflow greedy")):
            if name in rate:
                print(f"{label}: {line(name)}")
        for name in [n for n in ("beam", "greedy") if n in rate and args.static_search]:
            static, agreed, static_busy = static_rate(backend(name, "never"), requests, answers[name])
            used = utilisation(static, flop[name], peak, static_busy)
            print(f"    {name}, fixed shapes{' (CUDA graphs)' if args.device.startswith('cuda') else ''}: "
                  f"{static:.2f} pairs/s ({static / rate[name]:.2f}×); {used}; {agreed}", flush=True)  # fmt: skip
        for name, (rate_eager, agreed) in eager.items():
            print(
                f"    {name} eager: {rate_eager:.2f} pairs/s; compiled {rate[name] / rate_eager:.2f}×; compiled {agreed}"
            )
        if ref_answers is not None:
            ratios = [
                f"({k})/(a) = {rate[n] / reference_rate:.2f}" for n, k in (("beam", "b"), ("fast", "c")) if n in rate
            ]
            print("   ".join(ratios))
        print("FLOP a pair count every new token up to the cap (early stops not subtracted); GPU busy: kernel "
              "time over wall time in a second, profiled run of the same requests", flush=True)  # fmt: skip
        if args.ctranslate2:
            ctranslate2_rates(model, requests, answers, args, flop, peak)


if __name__ == "__main__":
    main()
