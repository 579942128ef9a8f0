"""Progress a person can see during a real run: a line across the grading jobs at least every period,
the same line from `examflow progress`, and every attempt's log kept by a rerun."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import snakemake, snakemake_env, write
from llm_server import LLMServer, Slow

pytestmark = pytest.mark.workflow

LINE = re.compile(r"^examflow: answered ([\d,]+) of ([\d,]+) prompts.*$", re.MULTILINE)
PERIOD = 1  # seconds between two progress lines in this test ($EXAMFLOW_PROGRESS_SECONDS)
GRADES = "results/demo/grades/llm.parquet"


def counts(text: str) -> list[tuple[int, int]]:
    return [(int(done.replace(",", "")), int(total.replace(",", ""))) for done, total in LINE.findall(text)]


def examflow_progress(project: Path) -> str:
    command = [sys.executable, "-m", "examflow", "progress", "--results", "results/demo"]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, check=True).stdout.strip()


def test_a_long_run_shows_its_grading_progress_and_a_rerun_keeps_the_first_logs(project):
    with LLMServer() as server:
        server.script("", Slow(0.03, "3"))  # every prompt: 30 ms, then a rating of 3
        config = yaml.safe_load((project / "config/config.yaml").read_text())
        config["nrp"] = None
        config["grading"] = {
            "shards": 2,
            "methods": [
                {"name": "llm", "kind": "self_rating", "backend": {"kind": "openai", "model": "grader",
                                                                    "base_url": server.base_url}}
            ],
        }  # fmt: skip
        write(project / "config/llm.yaml", yaml.safe_dump(config))
        environment = snakemake_env(EXAMFLOW_PROGRESS_SECONDS=str(PERIOD))
        # The merged grades are the target: progress and logs are the grading's (no evaluation, no report)
        args = (GRADES, "--configfile", "config/llm.yaml")  # a target after --configfile reads as a config
        command = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
        running = subprocess.Popen(
            command, cwd=project, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # Asked on demand while the jobs grade: part of the pairs, of the same total once both jobs are
        # counted (on a loaded machine the second may still be starting, its pairs not yet counted).
        midway = None
        while running.poll() is None and midway is None:
            time.sleep(0.5)
            if (project / "results/demo/logs/progress").is_dir():
                line = examflow_progress(project)
                done, total = (sum(column) for column in zip(*counts(line))) if counts(line) else (0, 0)
                midway = line if 0 < done < total and "counted so far" not in line else None
        stdout, stderr = running.communicate()
        assert running.returncode == 0, stderr
        console = counts(stdout + stderr)

        graded = pd.read_parquet(project / GRADES)
        assert server.calls == len(graded) == 3345  # nothing cached: every pair went to the model
        # A line at least every period while the jobs graded (~13 s), growing to the planned total.
        assert len(console) >= 3
        assert all(total == 3345 for _, total in console[-1:])
        assert [done for done, _ in console] == sorted(done for done, _ in console)
        assert console[0][0] < 3345 and console[-1] == (3345, 3345)
        assert midway is not None and counts(midway)[0][1] == 3345
        # After the run, `examflow progress` prints the console's last line.
        final = [line for line in (stdout + stderr).splitlines() if LINE.match(line)][-1]
        assert examflow_progress(project) == final
        assert "ETA" not in final and final.endswith("grade jobs: 2 done")

        logs = project / "results/demo/logs"
        first = {path: path.read_text() for path in logs.rglob("*.log")}
        shards = [logs / "grade/llm/shard-0.log", logs / "grade/llm/shard-1.log"]
        jobs = ["segment", "pool", "pool/shard-0", "pool/shard-1", "bank/shard-0", "bank/shard-1", "grade/llm",
                "grade/llm/shard-0", "grade/llm/shard-1"]  # fmt: skip
        assert sorted(str(path.relative_to(logs).with_suffix("")) for path in first) == sorted(jobs)  # each job
        assert "prompts/s, ETA" in first[shards[0]] + first[shards[1]]

        # A dry run prints no progress and moves no log, even of every job.
        dry = snakemake(project, *args, "-n", "--forceall")
        assert "examflow: grad" not in dry.stdout + dry.stderr and "examflow: answered" not in dry.stdout + dry.stderr
        assert not list(logs.rglob("*.log.1"))

        # A rerun of every job: the cache answers every pair, which is no graded work; every rule's
        # first log stays beside the new one.
        result = snakemake(project, *args, "--forceall")
        assert server.calls == 3345
        rerun = [
            line for line in (result.stdout + result.stderr).splitlines() if line.startswith("examflow: no prompts")
        ]
        assert rerun[-1] == "examflow: no prompts to ask, the cache answered all 3,345; grade jobs: 2 done"
        for path, text in first.items():
            assert Path(f"{path}.1").read_text() == text
            assert path.is_file()
        for path in shards:
            assert "3345 of 3345 prompts cached" not in first[path] and "prompts cached; 0 to grade" in path.read_text()


def test_the_demo_s_embedding_grader_counts_pairs(demo):
    """The offline grader is sent pairs, not prompts: its line counts them (whether this session's other
    demo tests have rerun its jobs from the cache or not)."""
    line = examflow_progress(demo)
    found = re.match(
        r"examflow: answered ([\d,]+) of \1 pairs.*grade jobs: \d+ done(?:; ([\d,]+) more pairs answered by the cache)?$",
        line,
    ) or re.match(r"examflow: no pairs to ask, the cache answered all ([\d,]+)(); grade jobs: \d+ done$", line)
    assert found, line
    assert sum(int((count or "0").replace(",", "")) for count in found.groups()) == 3345  # every pair of the demo
