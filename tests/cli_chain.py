"""The examflow commands chained by hand, as a user without Snakemake runs them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from llm_server import LLMServer

from examflow.cli import main


def examflow(*args) -> None:
    assert main([str(arg) for arg in args]) == 0, args


def graded(root: Path, pool: Path, shard: Path, reply: Callable[[str], str]) -> tuple[Path, int]:
    """One bank shard's pooled pairs graded by `examflow grade` against a real local server answering
    `reply(prompt)`, then merged: (the method `llm`'s grades table, the model calls made)."""
    grades = root / "grades"
    with LLMServer(reply) as server:
        backend = {"kind": "openai", "model": "m", "base_url": server.base_url, "max_attempts": 2, "timeout": 5}
        method = json.dumps({"name": "llm", "kind": "self_rating", "backend": backend})
        examflow("grade", "--method", method, "--passages", pool / "passages.parquet", "--queries",
                 pool / "queries.parquet", "--questions", shard, "--shard", "shard-0", "--cache-dir",
                 root / "cache", "--out", grades / "shard-0.parquet")  # fmt: skip
    examflow("merge-grades", "--method", method, "--out", grades / "llm.parquet", grades / "shard-0.parquet")
    return grades / "llm.parquet", server.calls
