"""Generated banks in the real workflow: generated once, edited by hand, regraded by shard."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
import yaml
from conftest import snakemake, write
from llm_server import LLMServer

from examflow.questions.shards import shard_of

pytestmark = pytest.mark.workflow


def questions_about(prompt: str) -> str:
    """A deterministic generator: three questions naming the query (and subtopic)."""
    topic = " / ".join(dict.fromkeys(re.findall(r"'([^']+)'", prompt)))
    return json.dumps({"questions": [f"What is {topic}?", f"Why does {topic} matter?", f"How does {topic} work?"]})


def shard_hashes(project) -> dict[str, str]:
    return {
        p.name: hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted((project / "results/demo/bank").glob("*.parquet"))
    }


def test_generate_edit_rerun_changes_only_the_edited_query(project):
    with LLMServer(default=questions_about) as server:
        config = yaml.safe_load((project / "config/config.yaml").read_text())
        config["inputs"]["bank"] = "bank/generated.jsonl"
        config["questions"] = {"generate": True, "llm": {"model": "test-llm", "base_url": server.base_url}}
        config["grading"] = {"methods": []}  # this test is about the bank: no grading, no NRP
        del config["nrp"]
        write(project / "config/generate.yaml", yaml.safe_dump(config))
        run = ("--configfile", "config/generate.yaml")

        snakemake(project, *run)
        bank_file = project / "bank/generated.jsonl"
        entries = [json.loads(line) for line in bank_file.read_text().splitlines()]
        assert len(entries) == 9 and server.calls == 9  # 4 queries + 5 subtopics, one call each
        assert entries[0]["info"]["model"] == "test-llm"
        before = shard_hashes(project)
        queries = ["composting", "honeybee", "sourdough", "tides", "vitamin-d", "volcano"]
        assert sorted(before) == sorted({f"{shard_of(q, 16)}.parquet" for q in queries})
        assert "Nothing to be done" in snakemake(project, *run, "-n").stdout

        # A person rewords one question of one query.
        text = bank_file.read_text()
        edited = text.replace("Why does what causes ocean tides matter?", "Why do tides matter to ships?")
        assert edited != text
        bank_file.write_text(edited)
        dry = snakemake(project, *run, "-n").stdout
        assert set(re.findall(r"shard=([\w-]+)", dry)) == {shard_of("tides", 16)}
        snakemake(project, *run)
        after = shard_hashes(project)
        assert {name for name in before if before[name] != after[name]} == {f"{shard_of('tides', 16)}.parquet"}
        assert bank_file.read_text() == edited  # never regenerated, never overwritten
        assert server.calls == 9

        # Deleting the bank generates it anew, from cached answers alone; no shard changes.
        bank_file.unlink()
        snakemake(project, *run)
        assert server.calls == 9
        regenerated = [json.loads(line) for line in bank_file.read_text().splitlines()]
        assert [e["items"] for e in regenerated] == [e["items"] for e in entries]
        assert shard_hashes(project) == before


def test_a_generated_nugget_bank_without_a_query_s_nuggets_reruns_no_shard_after(project):
    """q3 has no judged passage: it gets no nuggets, and its bucket (shard-01, no other query's) no table. The
    run that generated the bank had named every query's bucket among the bank's, the next one those with
    nuggets: every bank shard and grading job ran again (a reviewer)."""
    from conftest import own_collection
    from test_matrix import nuggetizer

    own_collection(project / "mine")
    write(project / "mine/qrels.txt", "q1 0 g1 3\nq1 0 g3 0\nq2 0 s1 2\nq2 0 s3 1\nq3 0 g2 0\n")
    with LLMServer(default=nuggetizer) as server:
        backend = {"kind": "openai", "model": "assigner", "base_url": server.base_url}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "qrels": "mine/qrels.txt", "bank": "results/nuggets.jsonl"},
            "questions": {"generate": True, "items": "nuggets", "documents": "judged",
                          "llm": {"model": "creator", "base_url": server.base_url}},
            "grading": {"methods": [{"name": "nug", "kind": "nugget_support", "backend": backend}]},
            "evaluation": {"bootstrap": 0},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        run = ("results/eval/nug/leaderboard.tsv", "--configfile", "mine.yaml")
        snakemake(project, *run)
        bank = [json.loads(line) for line in (project / "results/nuggets.jsonl").read_text().splitlines()]
        assert sorted(entry["query_id"] for entry in bank if entry["items"]) == ["q1", "q2"]
        assert shard_of("q3", 16) not in {shard_of("q1", 16), shard_of("q2", 16)}
        planned = snakemake(project, *run, "-n").stdout
    # No bank shard is written again, no grading job reruns. (The merge does, once: the run that generated the
    # bank graded q3's bucket, as every query's, and this one does not.)
    assert "rule bank_shard:" not in planned and "rule grade:" not in planned, planned
    assert "rule merge_grades:" in planned
