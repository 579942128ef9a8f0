"""The demo on a real one-node SLURM cluster, through `snakemake --executor slurm` and the shipped profile:
the same tables as a local run, and a one-question edit regrades only that question's pairs.

Run with `make test-slurm` (root: it starts munged, slurmctld and slurmd, and installs them when missing)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT, copy_project, outputs, snakemake, snakemake_env, write
from llm_server import LLMServer
from slurm_cluster import SLURM_CONF, Cluster, available

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = available()
    if why:
        pytest.skip(why)
    running = Cluster(tmp_path_factory.mktemp("slurm-state"))
    running.start()
    yield running
    running.stop()


def graded_by_hash(prompt: str) -> str:
    return str(int(hashlib.md5(prompt.encode()).hexdigest(), 16) % 6)


def slurm_test_profile(folder: Path) -> str:
    """profiles/slurm with its placeholders filled in for the test cluster, and quick status checks."""
    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    profile["default-resources"]["slurm_partition"] = "debug"
    del profile["default-resources"]["slurm_account"]
    profile["set-resources"] = {rule: {"slurm_partition": "debug"} for rule in profile["set-resources"]}
    profile |= {"slurm-no-account": True, "slurm-init-seconds-before-status-checks": 1, "latency-wait": 5}
    write(folder / "profiles/slurm-test/config.yaml", yaml.safe_dump(profile))
    return "profiles/slurm-test"


def test_the_demo_on_slurm_equals_a_local_run_and_regrades_only_an_edit(cluster, tmp_path):
    with LLMServer(default=graded_by_hash) as server:
        config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
        # A GPU method, so that grading jobs ask SLURM for the node's (pretend) GPU.
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url, "concurrency": 8}
        config["grading"]["methods"] = [{"name": "llm", "kind": "self_rating", "backend": backend, "gpu": 1,
                                         "mode": "reference"}]  # fmt: skip
        config["evaluation"] = {"bootstrap": 50}
        local, remote = copy_project(tmp_path / "local"), copy_project(tmp_path / "slurm")
        for folder in (local, remote):
            write(folder / "c.yaml", yaml.safe_dump(config))
        snakemake(local, "--configfile", "c.yaml")
        profile = slurm_test_profile(remote)
        run = [sys.executable, "-m", "snakemake", "--workflow-profile", profile, "--configfile", "c.yaml"]
        env = snakemake_env(SLURM_CONF=str(SLURM_CONF))  # the test cluster's
        done = subprocess.run(["timeout", "900", *run], cwd=remote, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "sbatch" in done.stdout + done.stderr or "Job" in done.stderr  # submitted, not run locally
        assert outputs(remote / "results/demo") == outputs(local / "results/demo")
        assert "gpu" in subprocess.run(["scontrol", "show", "node"], capture_output=True, text=True).stdout.lower()

        # One question of one topic reworded: only its pairs reach the model, through SLURM again.
        bank = remote / "resources/demo/bank.jsonl"
        bank.write_text(bank.read_text().replace("What are neap tides?", "When do neap tides occur?"))
        before = server.calls
        again = subprocess.run(["timeout", "600", *run], cwd=remote, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        passages = pd.read_parquet(remote / "results/demo/pool/passages.parquet")
        assert server.calls - before == (passages["query_id"] == "tides").sum() == 67


def test_a_results_dir_the_submission_would_mangle_is_refused_before_any_job(cluster, tmp_path):
    """`'` and `"` in one results_dir made each job's script a syntax error (`Unterminated quoted string`), and the
    run blamed a job that never started (a stranger's trial)."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config["results_dir"] = 'results/bob\'s "quoted" run'
    remote = copy_project(tmp_path / "slurm")
    write(remote / "c.yaml", yaml.safe_dump(config))
    run = [
        sys.executable,
        "-m",
        "snakemake",
        "--workflow-profile",
        slurm_test_profile(remote),
        "--configfile",
        "c.yaml",
    ]
    env = snakemake_env(SLURM_CONF=str(SLURM_CONF))
    done = subprocess.run(["timeout", "300", *run], cwd=remote, env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert (
        """examflow: error: results_dir 'results/bob\\'s "quoted" run': a path with both ' and " cannot reach a SLURM """
        "job" in done.stdout + done.stderr
    ), done.stderr[-2000:]
    assert not (remote / "results").exists()  # refused before any job: nothing written
