"""Two clean runs write identical tables and a provenance record; the API key is used and never written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import outputs, own_collection, snakemake, write
from llm_server import LLMServer

from examflow.prompts import template

pytestmark = pytest.mark.workflow

SENTINEL = "sk-SENTINEL-7f3a9c-never-write-me"


def graded_by_hash(prompt: str) -> str:
    """A deterministic grader: a digit 0-5 from the prompt's digest."""
    return str(int(hashlib.md5(prompt.encode()).hexdigest(), 16) % 6)


def every_file(root: Path):
    for folder, _, names in os.walk(root):  # not into the src symlink
        for name in names:
            yield Path(folder) / name


def test_two_clean_runs_are_identical_and_the_key_is_never_written(project, monkeypatch):
    monkeypatch.setenv("EXAMFLOW_TEST_KEY", SENTINEL)
    with LLMServer(default=graded_by_hash) as server:
        own_collection(project / "mine")
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url, "api_key_env": "EXAMFLOW_TEST_KEY"}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "qrels": "mine/qrels.txt", "bank": "mine/bank.tsv", "official_leaderboard": "mine/official.json"},
            "grading": {"methods": [{"name": "llm", "kind": "self_rating", "backend": backend, "mode": "reference"}]},
            "evaluation": {"bootstrap": 100},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        twin = project.parent / "twin"
        shutil.copytree(project, twin, symlinks=True)
        logs = [snakemake(folder, "--configfile", "mine.yaml") for folder in (project, twin)]

    first, second = outputs(project / "results"), outputs(twin / "results")
    assert first == second
    assert {"eval/llm/leaderboard.tsv", "eval/llm/correlation.tsv", "grades/llm.parquet", "summary.md",
            "provenance.json"} <= set(first)  # fmt: skip
    # The key reached the server, and nothing else: no file, no output of either run.
    assert {request["auth"] for request in server.requests} == {f"Bearer {SENTINEL}"}
    for folder in (project, twin):
        for path in every_file(folder):
            assert SENTINEL.encode() not in path.read_bytes(), path
    for log in logs:
        assert SENTINEL not in log.stdout + log.stderr

    record = json.loads(first["provenance.json"])
    assert (
        record["versions"]["examflow"] and record["versions"]["snakemake"] and record["versions"]["pytrec-eval-terrier"]
    )
    method = record["methods"]["llm"]
    assert method["models"] == [{"backend": "openai", "base_url": server.base_url, "model": "grader", "api": "chat",
                                 "temperature": 0.0, "max_tokens": 1024}]  # fmt: skip
    assert method["prompts"] == {"grade-self-rating": hashlib.md5(template("grade-self-rating").encode()).hexdigest()}
    assert len(record["config_sha256"]) == 64
    # the questions graded: the configuration names only the bank's file
    assert record["bank"]["items"] == 4 and len(record["bank"]["sha256"]) == 64 and record["bank"]["generated_by"] == []
