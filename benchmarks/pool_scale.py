"""Pooling time and peak memory against the size of the passage collection.

    python benchmarks/pool_scale.py [--passages 1000000 3000000] [--format tsv]

Builds synthetic collections (60 random words a passage) with 43 queries × 30 runs × top 100,
runs `examflow pool` on each in a fresh process, and prints wall time and peak RSS. The pool
is the same size for every collection, so memory should stay flat while time grows linearly.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

MEASURE = "import resource, sys; from examflow.cli import main; code = main(sys.argv[1:]); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024); sys.exit(code)"


def build(directory: Path, passages: int, fmt: str) -> list[str]:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(20000)]
    ids = [f"{i}" for i in range(passages)]
    texts = (" ".join(rng.choices(vocabulary, k=60)) for _ in ids)
    if fmt == "parquet":
        pd.DataFrame({"doc_id": ids, "text": list(texts)}).to_parquet(directory / "corpus.parquet")
    else:
        with open(directory / "corpus.tsv", "w") as out:
            out.writelines(f"{i}\t{t}\n" for i, t in zip(ids, texts))
    (directory / "queries.tsv").write_text("".join(f"q{q}\tquery {q}\n" for q in range(43)))
    runs = []
    for r in range(30):
        path = directory / f"run{r}.run"
        with open(path, "w") as out:
            for q in range(43):
                for rank, doc in enumerate(rng.sample(range(passages), 100), 1):
                    out.write(f"q{q} Q0 {doc} {rank} {100 - rank} run{r}\n")
        runs.append(str(path))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--format", choices=["tsv", "parquet"], default="tsv")
    args = parser.parse_args()
    print(f"{'passages':>10} {'file MiB':>9} {'seconds':>8} {'peak MiB':>9}")
    for passages in args.passages:
        with tempfile.TemporaryDirectory() as name:
            directory = Path(name)
            runs = build(directory, passages, args.format)
            corpus = directory / f"corpus.{args.format}"
            command = [
                sys.executable,
                "-c",
                MEASURE,
                "pool",
                "--queries",
                "queries.tsv",
                "--runs",
                *runs,
                "--corpus",
                corpus.name,
                "--out",
                "pool",
            ]
            start = time.perf_counter()
            result = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=True)
            seconds = time.perf_counter() - start
            size = corpus.stat().st_size / 2**20
            print(f"{passages:>10} {size:>9.0f} {seconds:>8.1f} {int(result.stdout.split()[-1]):>9}")


if __name__ == "__main__":
    main()
