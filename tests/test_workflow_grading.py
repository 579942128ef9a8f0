"""Incremental grading in the real workflow, counted in model calls on a local OpenAI server."""

from __future__ import annotations

import re

import pandas as pd
import pytest
import yaml
from conftest import bucket, snakemake, write
from llm_server import LLMServer

pytestmark = pytest.mark.workflow


def graded_shards(result) -> list[str]:
    """The shards of the grade jobs that a snakemake call ran (or would run)."""
    return sorted(re.findall(r"examflow grade .*?--shard ([\w-]+)", result.stdout + result.stderr))


def test_a_bank_edit_or_a_new_run_regrades_only_what_it_touched(project):
    with LLMServer(default=lambda prompt: "3") as server:
        config = yaml.safe_load((project / "config/config.yaml").read_text())
        config["grading"] = {
            "methods": [
                {
                    "name": "llm",
                    "kind": "self_rating",
                    "backend": {"kind": "openai", "model": "grader", "base_url": server.base_url},
                }
            ]
        }
        write(project / "config/llm.yaml", yaml.safe_dump(config))
        # the merged grades as the target: what the edits regrade (the tables after them are other tests')
        run = ("results/demo/grades/llm.parquet", "--configfile", "config/llm.yaml")

        snakemake(project, *run)
        grades = pd.read_parquet(project / "results/demo/grades/llm.parquet")
        pool = pd.read_parquet(project / "results/demo/pool/passages.parquet")
        assert server.calls == len(grades) == 3345
        assert grades["rating"].eq(3).all()

        # Reword one question of one topic: only that topic is regraded, one call per pooled passage.
        bank = project / "resources/demo/bank.jsonl"
        bank.write_text(
            bank.read_text().replace("What are neap tides?", "What are neap tides, and when do they occur?")
        )
        # tides shares its bucket with volcano: one job reruns, and only tides' new pairs reach the model.
        assert graded_shards(snakemake(project, *run, "-n")) == ["shard-13"]
        before = server.calls
        assert graded_shards(snakemake(project, *run)) == ["shard-13"]
        assert server.calls - before == (pool["query_id"] == "tides").sum() == 67

        # A new run: only its passages that were not pooled before are graded.
        new_docs = ["p051", "p052", "p001", "p026"]  # two new to the honeybee pool, two already there
        write(
            project / "resources/demo/runs/extra.run",
            "".join(f"honeybee Q0 {d} {r} {10 - r} extra\n" for r, d in enumerate(new_docs, 1)),
        )
        unpooled = set(new_docs) - set(pool.loc[pool["query_id"] == "honeybee", "passage_id"])
        before = server.calls
        # Every shard's grading job reruns on the new pool; the cache answers all but the new pairs.
        assert len(graded_shards(snakemake(project, *run))) == 5  # the six queries' buckets
        bank_rows = pd.concat(map(pd.read_parquet, (project / "results/demo/bank").glob("shard-*.parquet")))
        assert len(unpooled) == 2
        assert server.calls - before == len(unpooled) * (bank_rows["query_id"] == "honeybee").sum() == 14

        # Other buckets: every grading job reruns, the cache answers every pair, the grades stay.
        graded = pd.read_parquet(project / "results/demo/grades/llm.parquet")
        write(project / "config/llm.yaml", yaml.safe_dump({**config, "grading": {**config["grading"], "shards": 3}}))
        before = server.calls
        assert graded_shards(snakemake(project, *run)) == sorted({bucket(q, 3) for q in bank_rows["query_id"]})
        assert server.calls == before
        regraded = pd.read_parquet(project / "results/demo/grades/llm.parquet")
        keys = ["query_id", "passage_id", "question_id"]
        pd.testing.assert_frame_equal(
            graded.sort_values(keys).reset_index(drop=True), regraded.sort_values(keys).reset_index(drop=True)
        )
