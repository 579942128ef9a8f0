"""`examflow compare-judges` at TREC DL 2019 scale: wall time.

    python benchmarks/compare_judges_scale.py [--runs 37] [--topics 43] [--depth 1000] [--keep DIR]

Builds a campaign of the shape an organiser compares judges on: official qrels (215 judged documents a
topic, labels 0-3), two label sets (a noisy copy of the official labels and random labels) and runs
that rank `--depth` documents a topic, better runs putting better documents first. Then runs
`compare-judges` in a fresh process under nDCG@10 and Compat(p=0.9) with 1,000 bootstrap replicates
and prints its wall time. Measured on this project's 2-core AMD EPYC, one after the other: 59.4 s with
the judges of 09f5176 (ir-measures converted each run's table again for every label set and measure),
41.3 s with each run made into ir-measures' form once (`judges.run_dictionaries`); same tables, byte for
byte. Most of what is left: ir-measures' Compat (pure Python) and the bootstrap's statistics.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

from workdir import kept_or_temporary


def build(directory: Path, runs: int, topics: int, depth: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    queries, documents = [str(1000 + i) for i in range(topics)], [f"d{j}" for j in range(int(depth * 1.2))]
    truth: dict[tuple[str, str], int] = {}
    files = {name: (directory / f"{name}.qrels").open("w") for name in ("official", "noisy", "random")}
    for query in queries:
        for doc in rng.sample(documents, 215):
            label = truth[query, doc] = rng.choice([0, 0, 0, 1, 1, 2, 3])
            files["official"].write(f"{query} 0 {doc} {label}\n")
            files["noisy"].write(f"{query} 0 {doc} {max(0, min(3, label + rng.choice([-1, 0, 0, 1])))}\n")
            files["random"].write(f"{query} 0 {doc} {rng.randint(0, 3)}\n")
    for handle in files.values():
        handle.close()
    (directory / "runs").mkdir(exist_ok=True)
    for r in range(runs):
        with (directory / "runs" / f"r{r}.run").open("w") as out:
            for query in queries:
                score = {doc: truth.get((query, doc), 0) * r / 20 + rng.random() * 2 for doc in documents}
                for rank, doc in enumerate(sorted(documents, key=lambda d: -score[d])[:depth], 1):
                    out.write(f"{query} Q0 {doc} {rank} {depth - rank} r{r}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=37)
    parser.add_argument("--topics", type=int, default=43)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--keep", help="build in (and keep) this folder")
    args = parser.parse_args()
    with kept_or_temporary(args.keep) as folder:
        directory = Path(folder)
        build(directory, args.runs, args.topics, args.depth)
        command = [sys.executable, "-m", "examflow", "compare-judges", "--runs", str(directory / "runs" / "*"),
                   "--official-qrels", str(directory / "official.qrels"), "--labels",
                   f"noisy={directory / 'noisy.qrels'}", f"random={directory / 'random.qrels'}",
                   "--measure", "ndcg_cut_10", "--measure", "Compat(p=0.9)", "--out", str(directory / "out")]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        print(f"compare-judges: {args.runs} runs x {args.topics} topics x {args.depth} documents, three label sets, "
              f"two measures, 1,000 replicates: {time.perf_counter() - start:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
