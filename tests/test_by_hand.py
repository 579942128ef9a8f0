"""docs/commands.md's chain of commands, run as a reader would run it from the page: the workflow's tables,
and EXAM-Cover as computed here from the raw files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from independent import bank_questions, cover, grades_from_table, read_runs

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- tests/test_by_hand\.py runs this block -->\n```sh\n(.*?)```", re.DOTALL)
SAME = ["leaderboard.tsv", "per_query.tsv", "questions.tsv", "correlation.tsv", "kappa.tsv", "qrels/cosine.qrels"]


def test_the_pages_commands_write_the_workflows_tables(demo, tmp_path):
    blocks = BLOCK.findall((ROOT / "docs/commands.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, "docs/commands.md: the block this test runs is marked once"
    programs = Path(sys.executable).parent  # the environment's `examflow`, as `source .venv/bin/activate` gives
    assert (programs / "examflow").exists(), f"no examflow program beside {sys.executable}"
    (tmp_path / "resources").symlink_to(demo / "resources")  # the page runs from the project's root
    env = {**os.environ, "PATH": f"{programs}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", blocks[0]], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    ours, workflow = tmp_path / "results/by-hand/eval/cosine", demo / "results/demo/eval/cosine"
    for name in SAME:
        assert (ours / name).read_bytes() == (workflow / name).read_bytes(), name

    answers = grades_from_table(pd.read_parquet(tmp_path / "results/by-hand/grades/cosine.parquet"))
    runs = read_runs(sorted((demo / "resources/demo/runs").glob("*.run")))
    questions = bank_questions(demo / "resources/demo/bank.jsonl")
    board = pd.read_csv(ours / "leaderboard.tsv", sep="\t")
    for tau in (1, 3, 4, 5):
        rows = board[(board["measure"] == "exam_cover") & (board["tau"] == tau) & (board["kind"] == "system")]
        got = dict(zip(rows["run_id"], rows["score"]))
        expected = cover(answers, runs, questions, tau)
        assert len(expected) == 7 and len(set(expected.values())) > 1  # the seven run files, told apart
        assert {run: got[run] for run in expected} == pytest.approx(expected, abs=1e-12), tau
