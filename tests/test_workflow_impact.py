"""An informed loop of bank edits through the real workflow: reword, delete and add a question; the
impact tables list exactly what changed; editing back restores the first numbers with no model call."""

from __future__ import annotations

import hashlib
import re

import pandas as pd
import pytest
import yaml
from conftest import bucket, own_collection, snakemake, write
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

        def mixed() -> str | None:
            """What the evaluation says differs from the earlier bank's, None where nothing does."""
            snakemake(project, *run)
            assert len(pd.read_csv(evaluation / "impact_questions.tsv", sep="\t")) == 3
            listed = [len(pd.read_csv(evaluation / t, sep="\t")) for t in ("impact_passages.tsv", "impact_systems.tsv")]
            said = re.search(r"the earlier bank was evaluated (with other .*?): impact lists", log.read_text())
            assert bool(said) == (listed == [0, 0])
            return said and said[1]

        assert mixed() == "with other runs' rankings"
        poor.write_text(ranked)  # the runs put back: the same context as the edited bank's evaluation
        assert mixed() is None
        # how the grader's requests travel grades nothing otherwise (a stranger's trial: the impact was left out)
        config["grading"]["methods"][0]["backend"] |= {"concurrency": 2, "timeout": 30, "max_attempts": 3}
        write(project / "mine.yaml", yaml.safe_dump(config))
        assert mixed() is None
        config["grading"]["methods"][0]["backend"]["max_tokens"] = 30  # another setting of the grader
        write(project / "mine.yaml", yaml.safe_dump(config))
        assert mixed() == "with other method settings or prompts"


def test_a_method_that_grades_against_the_query_grades_every_query_and_no_bank_edit_reruns_it(project):
    """UMBRELA grades a passage against its query: it grades a query the bank holds no question for, whatever
    bucket that query falls in (it graded one only where the bucket held another query's questions: with four
    buckets, q3 alone in its own, never), and a reworded question is no input of its jobs, its evaluation or
    its report (two strangers' trials saw them rerun: a job start each, on a cluster a queue's wait)."""
    with LLMServer(default=lambda prompt: "##final score: 2" if "Passage:" in prompt else grade(prompt)) as server:
        files = own_collection(project / "mine")
        with files["run_good"].open("a") as run_file:  # q3, without questions, gets pooled passages
            run_file.write("q3 Q0 g3 1 9 good\nq3 Q0 s3 2 8 good\n")
        assert [bucket(query, 4) for query in ("q1", "q2", "q3")] == ["shard-2", "shard-3", "shard-1"]
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "qrels": "mine/qrels.txt", "bank": "mine/bank.tsv"},
            "grading": {"shards": 4, "methods": [{"name": "llm", "kind": "self_rating", "backend": backend},
                                                 {"name": "umb", "kind": "umbrela", "backend": backend}]},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        first = snakemake(project, "--configfile", "mine.yaml")
        assert "1 of 3 queries has no questions in mine/bank.tsv: only umb grades it, against the query: q3" in (
            first.stderr
        )
        umbrela = pd.read_parquet(project / "results/grades/umb.parquet")
        pooled = pd.read_parquet(project / "results/pool/passages.parquet")
        assert sorted(zip(umbrela["query_id"], umbrela["passage_id"])) == sorted(
            zip(pooled["query_id"], pooled["passage_id"])
        )  # q3's two passages among them
        assert set(umbrela["query_id"]) == {"q1", "q2", "q3"} and umbrela["rating"].eq(2).all()
        # its worked example, without the bank: q1's pooled passages, each with its grade
        example = (project / "results/report/umb/example.html").read_text()
        assert "Worked example of umb: topic q1" in example and example.count("<div class='passage'>") == 3
        plan = pd.read_csv(project / "results/logs/plan.tsv", sep="\t").set_index("method")
        assert (plan.loc["umb", "jobs"], plan.loc["llm", "jobs"]) == (3, 2)  # q3's bucket is umb's alone
        assert plan.loc["umb", "pairs"] == len(pooled)
        umb_tables = [path for folder in ("grades/umb", "eval/umb", "report/umb")
                      for path in (project / "results" / folder).rglob("*") if path.is_file()]  # fmt: skip
        written = {path: path.stat().st_mtime_ns for path in umb_tables}
        umbrela_calls = sum("Passage:" in r["body"]["messages"][-1]["content"] for r in server.requests)

        files["bank"].write_text(files["bank"].read_text().replace("Why do glaciers move?", "Why do glaciers flow?"))
        planned = snakemake(project, "--configfile", "mine.yaml", "-n").stdout
        for step in ("grade", "merge_grades", "evaluate", "report_method"):  # llm's alone, of q1's shard
            assert re.search(rf"^{step}\s+1$", planned, re.MULTILINE), planned
        snakemake(project, "--configfile", "mine.yaml")
        assert {path: path.stat().st_mtime_ns for path in written} == written
        assert sum("Passage:" in r["body"]["messages"][-1]["content"] for r in server.requests) == umbrela_calls

        # q3 no longer ranked: umb grades one query less, which is no bank edit (a reviewer saw q3 listed as a
        # question removed, and the impact's warning repeated at every rerun)
        files["run_good"].write_text("".join(line for line in files["run_good"].read_text().splitlines(True)
                                             if not line.startswith("q3 ")))  # fmt: skip
        snakemake(project, "--configfile", "mine.yaml")
        for table in ("impact_questions.tsv", "impact_passages.tsv", "impact_systems.tsv"):
            assert pd.read_csv(project / "results/eval/umb" / table, sep="\t").empty
        assert "earlier bank" not in (project / "results/logs/evaluate/umb.log").read_text()


def test_a_query_whose_last_question_is_deleted_leaves_its_bucket_and_the_rerun_completes(project):
    """q2 (alone in shard-07) loses every question: its bucket has no table and no grading job then. The other
    buckets' tables, not rewritten, still named shard-07 among the bank's buckets, and every rerun failed
    (`the bank's shard-07 of --shards 16 holds questions and is not given`) until a forced one (a stranger)."""
    with LLMServer(default=grade) as server:
        files = own_collection(project / "mine")
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "bank": "mine/bank.tsv", "official_leaderboard": "mine/official.json"},
            "grading": {"methods": [{"name": "llm", "kind": "self_rating", "backend": backend}]},
            "evaluation": {"bootstrap": 0, "tau": [1]},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        run = ("results/eval/llm/leaderboard.tsv", "--configfile", "mine.yaml")
        board = project / "results/eval/llm/leaderboard.tsv"
        snakemake(project, *run)
        first = board.read_bytes()
        assert (bucket("q1"), bucket("q2")) == ("shard-10", "shard-07")

        bank = files["bank"].read_text()
        files["bank"].write_text("".join(line for line in bank.splitlines(True) if not line.startswith("q2\t")))
        calls = server.calls
        snakemake(project, *run)
        assert server.calls == calls  # q1's pairs are all in the cache
        cover = pd.read_csv(board, sep="\t").query("measure == 'exam_cover' and kind == 'system'")
        assert cover["n_queries"].tolist() == [1, 1]  # q1 alone: q2 has no exam
        # the same numbers as a run from scratch over the edited bank, from the same cache
        write(project / "fresh.yaml", yaml.safe_dump({**config, "results_dir": "fresh"}))
        snakemake(project, "fresh/eval/llm/leaderboard.tsv", "--configfile", "fresh.yaml")
        assert board.read_bytes() == (project / "fresh/eval/llm/leaderboard.tsv").read_bytes()

        files["bank"].write_text(bank)  # q2's questions back: the first numbers, no model call
        snakemake(project, *run)
        assert server.calls == calls and board.read_bytes() == first
