"""A grading job killed mid-shard resumes from its flushed batches."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from tiny_models import build_tiny_t5

WORDS = "bees honey nectar water moon tides ocean sun volcano magma lava compost soil".split()


def shard_inputs(directory):
    passages = pd.DataFrame(
        [
            ("q1", f"p{i}", " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12 + i % 7)), "retrieved")
            for i in range(40)
        ],
        columns=["query_id", "passage_id", "text", "origin"],
    )
    questions = pd.DataFrame(
        [("q1", None, f"q1/{j}", f"what {WORDS[j]} do {WORDS[j + 1]} make", "question", None, None) for j in range(5)],
        columns=["query_id", "facet_id", "question_id", "question_text", "kind", "gold_answers", "choices"],
    )
    queries = pd.DataFrame([("q1", None, "bees", None)], columns=["query_id", "facet_id", "query_text", "facet_text"])
    for name, table in (("passages", passages), ("questions", questions), ("queries", queries)):
        table.to_parquet(directory / f"{name}.parquet")


def grade_command(directory, model, cache, out):
    method = {
        "name": "t5",
        "kind": "self_rating",
        "backend": {"kind": "hf_seq2seq", "model": model, "decoding": "beam", "max_new_tokens": 4, "batch_size": 4},
    }
    return [
        sys.executable, "-m", "examflow", "grade", "--method", json.dumps(method), "--shard", "q1",
        "--passages", str(directory / "passages.parquet"), "--queries", str(directory / "queries.parquet"),
        "--questions", str(directory / "questions.parquet"), "--cache-dir", str(cache), "--flush-every", "4", "--out", str(out),
    ]  # fmt: skip


def cached_lines(cache) -> int:
    return sum(len(p.read_text().splitlines()) for p in cache.glob("grades/*/q1/*.jsonl"))


@pytest.mark.slow
def test_sigkill_mid_shard_then_resume_equals_an_uninterrupted_run(tmp_path):
    model = str(build_tiny_t5(tmp_path / "model", seed=5, digit_boost=2.0))
    shard_inputs(tmp_path)
    cache = tmp_path / "cache"
    job = subprocess.Popen(grade_command(tmp_path, model, cache, tmp_path / "killed.parquet"), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while cached_lines(cache) < 24 and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.01)
    job.send_signal(signal.SIGKILL)
    job.wait()
    graded_before_kill = cached_lines(cache)
    assert 0 < graded_before_kill < 200, "the kill must land mid-shard"
    assert not (tmp_path / "killed.parquet").exists()

    resumed = subprocess.run(
        grade_command(tmp_path, model, cache, tmp_path / "resumed.parquet"), capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    cached, total, todo = map(int, re.search(r"(\d+) of (\d+) prompts cached; (\d+) to grade", resumed.stderr).groups())
    assert (cached, total, todo) == (graded_before_kill, 200, 200 - graded_before_kill)
    assert f"sent {200 - graded_before_kill} prompts to the model" in resumed.stderr

    fresh = subprocess.run(
        grade_command(tmp_path, model, tmp_path / "fresh-cache", tmp_path / "fresh.parquet"),
        capture_output=True,
        text=True,
    )
    assert fresh.returncode == 0, fresh.stderr
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "resumed.parquet"), pd.read_parquet(tmp_path / "fresh.parquet")
    )


def test_a_model_the_hub_cannot_give_names_its_method(tmp_path):
    """A back end's error reads `backend.model`; of a config's several methods, the grading job names which
    (a stranger's `google/flan-t5-small`, offline). HF_HUB_OFFLINE=1: the hub client fails at once."""
    shard_inputs(tmp_path)
    missing = str(tmp_path / "no such model")
    command = grade_command(tmp_path, missing, tmp_path / "cache", tmp_path / "out.parquet")
    failed = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert failed.returncode != 0 and not (tmp_path / "out.parquet").exists()
    assert f"examflow: error: config method 't5': backend.model: {missing!r}: not a model folder" in failed.stderr
    assert "Traceback" not in failed.stderr
    # the embedding back end too: its grade cache's key asks the hub for the model's commit first
    method = json.loads(command[command.index("--method") + 1])
    method["backend"] = {"kind": "embedding", "model": "nosuchorg/nosuchmodel"}
    command[command.index("--method") + 1] = json.dumps(method)
    failed = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert failed.returncode != 0 and "Traceback" not in failed.stderr, failed.stderr[-2000:]
    assert "examflow: error: config method 't5': backend.model: 'nosuchorg/nosuchmodel': not a model folder" in (
        failed.stderr
    )
