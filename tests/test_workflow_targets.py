"""The run as a whole: every table is a target, a results folder serves one run at a time, and the
report command a run prints is complete and never builds a report from another configuration."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import copy_project, own_collection, snakemake, write
from llm_server import LLMServer, Slow

pytestmark = pytest.mark.workflow


def test_a_failed_nrp_job_is_rebuilt_by_a_plain_rerun(demo):
    """Snakemake deletes a failed (or killed) job's outputs; the NRP tables are targets, so a plain
    rerun rebuilds them instead of saying there is nothing to be done."""
    nrp = demo / "results/demo/nrp"
    before = {path.name: path.read_bytes() for path in nrp.iterdir()}
    answers = demo / "resources/demo-nrp/answers.jsonl"
    original = answers.read_text()
    try:
        answers.write_text(original + "{not json\n")
        assert snakemake(demo, check=False).returncode != 0
        assert not any(nrp.glob("*.tsv"))  # the failed job's tables are gone
    finally:
        answers.write_text(original)
    rerun = snakemake(demo)
    assert "Nothing to be done" not in rerun.stdout + rerun.stderr
    assert {path.name: path.read_bytes() for path in nrp.iterdir()} == before


def own_config(project: Path, results: Path, base_url: str) -> Path:
    files = own_collection(project / "data")
    config = {
        "results_dir": str(results),
        "cache_dir": str(project / "cache"),
        "inputs": {key: str(files[key]) for key in ("queries", "corpus", "qrels", "bank")}
        | {"runs": [str(project / "data/runs/*.run")]},
        "grading": {
            "shards": 1,
            "methods": [
                {
                    "name": "api",
                    "kind": "self_rating",
                    "backend": {"kind": "openai", "model": "m", "base_url": base_url},
                }
            ],
        },
        "validation": {"unknown_queries": "warn"},
    }
    return write(project / "mine.yaml", yaml.safe_dump(config))


def test_a_second_run_on_the_same_results_folder_is_refused(tmp_path):
    """Two working directories, one results folder: the second run stops at once with the first's
    process and directory, and the first finishes undisturbed."""
    results = tmp_path / "shared-results"
    with LLMServer(default=lambda prompt: Slow(0.2, "4")) as server:
        first, second = (copy_project(tmp_path / name) for name in ("first", "second"))
        configs = [own_config(project, results, server.base_url) for project in (first, second)]
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        running = subprocess.Popen(
            [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", str(configs[0])],
            cwd=first, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while server.calls == 0 and time.monotonic() < deadline:  # the first run is grading
            time.sleep(0.1)
        refused = snakemake(second, "--configfile", str(configs[1]), check=False)
        output = running.communicate(timeout=300)[0]
    assert running.returncode == 0, output
    assert refused.returncode != 0
    assert f"{results}/ is in use by another examflow run (process {running.pid}, started in {first})" in (
        refused.stdout + refused.stderr
    )
    assert (results / "eval/api/leaderboard.tsv").is_file()
    assert "Nothing to be done" in snakemake(first, "--configfile", str(configs[0]), "-n").stdout


def test_the_printed_report_command_is_complete_and_another_config_is_refused(project):
    with LLMServer(default=lambda prompt: "4") as server:
        config = own_config(project, project / "results/mine", server.base_url)
        run = snakemake(project, "--configfile", str(config))
    printed = f"snakemake --report {project}/results/mine/report.html --configfile mine.yaml"
    assert printed in run.stdout and printed in (project / "results/mine/summary.md").read_text()
    # Without --configfile the demo's configuration is read: its report must not go into this folder.
    wrong = snakemake(project, "--report", "results/mine/report.html", check=False)
    assert wrong.returncode != 0 and "add the --configfile of that run" in wrong.stderr
    assert not (project / "results/mine/report.html").exists()
    snakemake(project, "--report", "results/mine/report.html", "--configfile", str(config))
    assert "mine" in (project / "results/mine/report.html").read_text(errors="replace")
