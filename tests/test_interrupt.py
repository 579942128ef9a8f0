"""Ctrl-C in a terminal reaches every job Snakemake runs: a grading job stops with one line in its log,
exit 130, no output written, and the grade cache keeps what was flushed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.workflow


def test_an_interrupted_grading_job_says_so_in_one_line(demo, tmp_path):
    pool, bank = demo / "results/demo/pool", sorted((demo / "results/demo/bank").glob("*.parquet"))
    method = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}
    out = tmp_path / "grades.parquet"
    job = subprocess.Popen(
        [sys.executable, "-m", "examflow", "grade", "--method", json.dumps(method), "--passages",
         str(pool / "passages.parquet"), "--queries", str(pool / "queries.parquet"), "--questions", str(bank[0]),
         "--shard", "shard-0", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)],
        stderr=subprocess.PIPE, text=True,
        # As from a terminal: a shell's background job (as CI runs this) starts with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert job.stderr is not None
    lines = []
    for line in job.stderr:  # the pairs are made; the model loads next (seconds): interrupt it there
        lines.append(line)
        if " pairs" in line and "shard shard-0" in line:
            job.send_signal(signal.SIGINT)
            break
    rest = job.stderr.read()
    assert job.wait(timeout=60) == 130, "".join(lines) + rest
    assert rest.strip().splitlines()[-1] == "examflow: interrupted (outputs are written only when a step completes)"
    assert "Traceback" not in rest and not out.exists()
