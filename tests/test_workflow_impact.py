"""An informed loop of bank edits through the real workflow: reword, delete and add a question; the
impact tables list exactly what changed; editing back restores the first numbers with no model call."""

from __future__ import annotations

import hashlib
import re

import pandas as pd
import pytest
import yaml
from conftest import own_collection, snakemake, write
from llm_server import LLMServer

pytestmark = pytest.mark.workflow

PROMPT = re.compile(r"Question: (?P<question>.*)\nContext: (?P<context>.*)", re.DOTALL)


def grade(prompt: str) -> str:
    """A deterministic grader: a digit 0-5 from the prompt's digest."""
    return str(int(hashlib.md5(prompt.encode()).hexdigest(), 16) % 6)


def labels_by_hand(server: LLMServer, questions: list[str], passages: dict[str, str]) -> dict[str, int]:
    """EXAM-Label of every passage: the best grade any of `questions` got, read off the prompts the server answered."""
    graded = {}
    for request in server.requests:
        prompt = request["body"]["messages"][-1]["content"]
        found = PROMPT.search(prompt)
        graded[found["question"], found["context"]] = int(grade(prompt))
    return {p: max(graded[q, text] for q in questions if (q, text) in graded) for p, text in passages.items()}


def test_bank_edits_are_listed_and_undone_without_a_model_call(project):
    with LLMServer(default=grade) as server:
        files = own_collection(project / "mine")
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "qrels": "mine/qrels.txt", "bank": "mine/bank.tsv", "official_leaderboard": "mine/official.json"},
            "grading": {"methods": [{"name": "llm", "kind": "self_rating", "backend": backend}]},
            "evaluation": {"bootstrap": 20, "tau": [1, 3]},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        run = ("results/eval/llm/leaderboard.tsv", "--configfile", "mine.yaml")  # the evaluation: no report
        results = project / "results"
        evaluation = results / "eval/llm"
        snakemake(project, *run)
        assert pd.read_csv(evaluation / "impact_questions.tsv", sep="\t").empty  # nothing to compare with yet
        first = (evaluation / "leaderboard.tsv").read_bytes()
        passages = dict(line.split("\t") for line in files["corpus"].read_text().splitlines())
        q1 = {p: t for p, t in passages.items() if p.startswith("g")}
        old_questions = ["Why do glaciers move?", "What sets a glacier's speed?"]
        before = labels_by_hand(server, old_questions, q1)

        # Reword one question of q1, delete the other, add a new one (first, so that it takes no one's place).
        bank = files["bank"].read_text()
        edited = bank.replace(
            "q1\tWhy do glaciers move?\n", "q1\tWhat is meltwater?\nq1\tWhy do glaciers flow downhill?\n"
        )
        edited = edited.replace("q1\tWhat sets a glacier's speed?\n", "")
        files["bank"].write_text(edited)
        snakemake(project, *run)
        new_questions = ["What is meltwater?", "Why do glaciers flow downhill?"]
        after = labels_by_hand(server, new_questions, q1)

        changes = pd.read_csv(evaluation / "impact_questions.tsv", sep="\t", dtype=str, keep_default_na=False)
        assert sorted(zip(changes["change"], changes["question_text"], changes["old_question_text"])) == [
            ("added", "What is meltwater?", ""),
            ("removed", "", "What sets a glacier's speed?"),
            ("reworded", "Why do glaciers flow downhill?", "Why do glaciers move?"),
        ]
        passages_changed = pd.read_csv(evaluation / "impact_passages.tsv", sep="\t")
        expected = {p: (before[p], after[p]) for p in q1 if before[p] != after[p]}
        assert expected  # the edit does move some labels: the check below is not empty
        assert {
            p: (o, n) for p, o, n in passages_changed[["passage_id", "old_label", "new_label"]].itertuples(index=False)
        } == expected
        systems = pd.read_csv(evaluation / "impact_systems.tsv", sep="\t")
        old_board = pd.read_csv(pd.io.common.BytesIO(first), sep="\t")
        new_board = pd.read_csv(evaluation / "leaderboard.tsv", sep="\t")
        merged = old_board.merge(new_board, on=["measure", "tau", "run_id"], suffixes=("_old", "_new"))
        merged = merged[merged["kind_old"] == "system"]
        moved = merged[(merged["score_old"] - merged["score_new"]).abs() > 1e-12]
        assert set(zip(systems["measure"], systems["tau"].fillna(-1), systems["run_id"])) >= set(
            zip(moved["measure"], moved["tau"].fillna(-1), moved["run_id"])
        )
        assert set(systems["run_id"]) <= {"good", "poor"}

        # Edit back: the first numbers again, and not a single model call.
        calls = server.calls
        files["bank"].write_text(bank)
        snakemake(project, *run)
        assert server.calls == calls
        assert (evaluation / "leaderboard.tsv").read_bytes() == first
        undone = pd.read_csv(evaluation / "impact_passages.tsv", sep="\t")
        assert {p: (o, n) for p, o, n in undone[["passage_id", "old_label", "new_label"]].itertuples(index=False)} == {
            p: (n, o) for p, (o, n) in expected.items()
        }

        # A run edited, the bank not: the earlier bank's evaluation was over other runs, so its systems' and
        # passages' changes would mix the run's in (a stranger saw a reworded question move a run's P@20).
        # The questions changed are still listed; the rest is left out, and said.
        poor = files["run_poor"]
        ranked = poor.read_text()
        poor.write_text("".join(line for line in ranked.splitlines(keepends=True) if " 1 " not in line))
        log = results / "logs/evaluate/llm.log"  # a rerun keeps the earlier logs beside it

        def mixed() -> bool:
            snakemake(project, *run)
            assert len(pd.read_csv(evaluation / "impact_questions.tsv", sep="\t")) == 3
            listed = [len(pd.read_csv(evaluation / t, sep="\t")) for t in ("impact_passages.tsv", "impact_systems.tsv")]
            said = "the earlier bank was evaluated over other runs, passages, settings or grading" in log.read_text()
            assert said == (listed == [0, 0])
            return said

        assert mixed()
        poor.write_text(ranked)  # the runs put back: the same context as the edited bank's evaluation
        assert not mixed()
        config["grading"]["methods"][0]["backend"]["max_tokens"] = 30  # another setting of the grader
        write(project / "mine.yaml", yaml.safe_dump(config))
        assert mixed()


def test_a_bank_edit_reruns_no_job_of_a_method_that_grades_against_the_query(project):
    """UMBRELA grades a passage against its query: a reworded question is no input of its jobs (a stranger's
    trial saw every judge's job of the edited shard rerun, the cache answering them: a job start each, on a
    cluster a queue's wait)."""
    with LLMServer(default=lambda prompt: "##final score: 2" if "Passage:" in prompt else grade(prompt)) as server:
        files = own_collection(project / "mine")
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "qrels": "mine/qrels.txt", "bank": "mine/bank.tsv"},
            "grading": {"methods": [{"name": "llm", "kind": "self_rating", "backend": backend},
                                    {"name": "umb", "kind": "umbrela", "backend": backend}]},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        run = ("results/grades/llm.parquet", "results/grades/umb.parquet", "--configfile", "mine.yaml")
        snakemake(project, *run)
        shards = {path: path.stat().st_mtime_ns for path in (project / "results/grades/umb").glob("*.parquet")}
        assert shards and server.calls > 0
        umbrela_calls = sum("Passage:" in r["body"]["messages"][-1]["content"] for r in server.requests)

        files["bank"].write_text(files["bank"].read_text().replace("Why do glaciers move?", "Why do glaciers flow?"))
        planned = snakemake(project, *run, "-n").stdout
        assert re.search(r"^grade\s+1$", planned, re.MULTILINE), planned  # llm's job of q1's shard alone
        snakemake(project, *run)
        assert {path: path.stat().st_mtime_ns for path in shards} == shards
        assert sum("Passage:" in r["body"]["messages"][-1]["content"] for r in server.requests) == umbrela_calls
