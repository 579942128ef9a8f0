"""Pooling over a large collection keeps only pooled passages in memory."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from conftest import write

MEASURE = """
import resource, sys
from examflow.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
sys.exit(code)
"""


def make_collection(directory, passages: int) -> None:
    rng = random.Random(passages)
    vocabulary = [f"w{i}" for i in range(5000)]
    with open(directory / "corpus.tsv", "w") as out:
        for i in range(passages):
            out.write(f"d{i}\t{' '.join(rng.choices(vocabulary, k=60))}\n")
    write(directory / "queries.tsv", "".join(f"q{i}\tquery {i}\n" for i in range(20)))
    picks = rng.sample(range(passages), 20 * 100)
    write(
        directory / "sys.run",
        "".join(f"q{n // 100} Q0 d{doc} {n % 100 + 1} {100 - n % 100} sys\n" for n, doc in enumerate(picks)),
    )


def peak_megabytes(directory) -> int:
    args = ["pool", "--queries", "queries.tsv", "--runs", "sys.run", "--corpus", "corpus.tsv", "--out", "pool"]
    result = subprocess.run([sys.executable, "-c", MEASURE, *args], cwd=directory, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[-1])


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_collection(tmp_path):
    small, large = tmp_path / "small", tmp_path / "large"
    make_collection(small.mkdir() or small, 20_000)
    make_collection(large.mkdir() or large, 200_000)
    size = (large / "corpus.tsv").stat().st_size // 2**20
    peaks = peak_megabytes(small), peak_megabytes(large)
    print(f"peak RSS: {peaks[0]} MiB for 20k passages, {peaks[1]} MiB for 200k passages ({size} MiB file)")
    # The 200k collection file is ~10x the small one; the pool (400 passages) is the same.
    assert size > 60
    assert peaks[1] - peaks[0] < 20
