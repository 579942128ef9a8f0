"""The run as a whole: every table is a target, a results folder serves one run at a time, and the
report command a run prints is complete and never builds a report from another configuration."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import copy_project, outputs, own_collection, snakemake, snakemake_env, write
from llm_server import LLMServer

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


def planned(result: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):", result.stdout, re.M))


def test_an_input_put_back_with_its_old_modification_time_reruns_the_steps_that_read_it(project):
    """`cp -p`, `rsync -a` and `tar x` restore a file's older time, which Snakemake's own comparison of
    times cannot see (a stranger's run kept 17 tables of the other content). `touch` reruns nothing, of
    a file over Snakemake's checksum size too (a reviewer's 1.5 MB run file reran the pool)."""
    evaluation = "results/demo/eval/cosine/leaderboard.tsv"  # the target: pool, grades and the evaluation
    snakemake(project, evaluation)
    original = outputs(project / "results/demo")
    run = project / "resources/demo/runs/bm25.run"
    text, times = run.read_text(), run.stat()

    def put(content: str) -> None:  # written, then given back its old times, as `cp -p` leaves a file
        run.write_text(content)
        os.utime(run, ns=(times.st_atime_ns, times.st_mtime_ns))

    put(text.replace("p023 1 ", "p009 1 ", 1).replace("p009 2 ", "p023 2 ", 1))  # bm25's top two swapped
    assert "pool" in planned(snakemake(project, "-n", evaluation))
    snakemake(project, evaluation)
    rankings = pd.read_parquet(project / "results/demo/pool/rankings.parquet")
    top = rankings[(rankings["run_id"] == "bm25") & (rankings["query_id"] == "honeybee") & (rankings["rank"] <= 2)]
    assert top.sort_values("rank")["passage_id"].tolist() == ["p009", "p023"]

    put(text)  # the original back with its own time: the original results, to the byte
    assert "pool" in planned(snakemake(project, "-n", evaluation))
    snakemake(project, evaluation)
    assert outputs(project / "results/demo") == original
    os.utime(run)  # a touch: nothing to do, whatever the file's size (Snakemake checksums small files only)
    assert "Nothing to be done" in snakemake(project, "-n", "--max-checksum-file-size", "1B", evaluation).stdout


def test_a_second_run_on_the_same_results_folder_is_refused(tmp_path):
    """Two working directories, one results folder: the second run stops at once with the first's
    process and directory, and the first finishes undisturbed."""
    results = tmp_path / "shared-results"
    graded = threading.Event()  # the first run's grading waits until the second run was refused

    def grade(prompt: str) -> str:
        graded.wait(timeout=300)
        return "4"

    with LLMServer(default=grade) as server:
        first, second = (copy_project(tmp_path / name) for name in ("first", "second"))
        configs = [own_config(project, results, server.base_url) for project in (first, second)]
        leaderboard = str(results / "eval/api/leaderboard.tsv")  # the first run's target: no report, no judges
        running = subprocess.Popen(
            [sys.executable, "-m", "snakemake", "--cores", "2", leaderboard, "--configfile", str(configs[0])],
            cwd=first, env=snakemake_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while server.calls == 0 and time.monotonic() < deadline:  # the first run is grading
            time.sleep(0.1)
        refused = snakemake(second, "--configfile", str(configs[1]), check=False)
        graded.set()
        output = running.communicate(timeout=300)[0]
    assert running.returncode == 0, output
    assert refused.returncode != 0
    assert f"{results}/ is in use by another examflow run (process {running.pid}, started in {first})" in (
        refused.stdout + refused.stderr
    )
    assert (results / "eval/api/leaderboard.tsv").is_file()
    assert "Nothing to be done" in snakemake(first, leaderboard, "--configfile", str(configs[0]), "-n").stdout


def test_the_printed_report_command_is_complete_and_another_config_is_refused(project):
    with LLMServer(default=lambda prompt: "4") as server:
        config = own_config(project, project / "results/mine", server.base_url)
        run = snakemake(project, "--configfile", str(config))
    printed = f"snakemake --report {project}/results/mine/report.html --configfile mine.yaml"
    assert printed in run.stdout and printed in (project / "results/mine/summary.md").read_text()
    # Without --configfile the demo's configuration is read: its report must not go into this folder.
    wrong = snakemake(project, "--report", "results/mine/report.html", check=False)
    command = "with that run's config: snakemake --report results/mine/report.html --configfile mine.yaml"
    assert wrong.returncode != 0 and command in wrong.stderr
    # Nor from another config file in the same directory: the report shows what the configuration says.
    write(project / "copy.yaml", config.read_text())
    copy = snakemake(project, "--report", "results/mine/report.html", "--configfile", "copy.yaml", check=False)
    assert copy.returncode != 0 and command in copy.stderr
    assert not (project / "results/mine/report.html").exists()
    snakemake(project, "--report", "results/mine/report.html", "--configfile", str(config))
    assert "mine" in (project / "results/mine/report.html").read_text(errors="replace")


def test_a_run_from_another_directory_prints_a_report_command_that_finds_the_workflow(project, tmp_path):
    elsewhere = tmp_path / "my data"
    with LLMServer(default=lambda prompt: "4") as server:
        config = own_config(project, elsewhere / "results/mine", server.base_url)
        write(elsewhere / "mine.yaml", config.read_text())
        write(elsewhere / "more.yaml", "evaluation:\n  bootstrap: 20\n")  # a second file, over the first
        snakefile = os.path.relpath(project / "workflow/Snakefile", elsewhere)
        # the results folder set on the command line, as config/README.md shows
        setting = f"results_dir={elsewhere}/results/try"
        run = snakemake(elsewhere, "--snakefile", snakefile, "--configfile", "mine.yaml", "more.yaml",
                        "--config", setting)  # fmt: skip
    report = f"{elsewhere}/results/try/report.html"
    # Both files after one --configfile: Snakemake keeps only the last of repeated options. The --config
    # setting too: without it the report's configuration wrote another folder (a stranger's trial).
    printed = (
        f"snakemake --report '{report}' --snakefile {snakefile} --configfile mine.yaml more.yaml --config '{setting}'"
    )
    assert printed in run.stdout and printed in (elsewhere / "results/try/summary.md").read_text()
    refused = snakemake(elsewhere, "--report", report, "--snakefile", snakefile, "--configfile", "mine.yaml",
                        "more.yaml", check=False)  # fmt: skip
    assert refused.returncode != 0 and f"build it there with that run's config: {printed}" in refused.stderr
    subprocess.run(printed, shell=True, cwd=elsewhere, check=True, capture_output=True, env=snakemake_env())
    assert Path(report).stat().st_size > 0


CHANGES = [  # (a setting changed in the demo's configuration, the steps that must run again)
    ({"evaluation": {"k": 10}}, {"evaluate", "report_method", "summary"}),
    ({"evaluation": {"bootstrap": 100}}, {"evaluate", "report_method", "summary"}),
    ({"report": {"example_query": "tides"}}, {"report_method"}),
    ({"report": {"tau": 3}}, {"evaluate", "report_method", "summary"}),
    ({"nrp": {"denominator": "list"}}, {"nrp", "report_nrp", "summary"}),
    ({"nrp": {"dimensions": {"relevance": {"weight": 0.8}, "readability": {"weight": 0.2}}}}, {"nrp"}),
    ({"questions": {"llm": {"model": "another"}}}, {"summary"}),  # only the provenance record's digest
    ({"pool": {"depth": 10}}, {"pool", "grade", "evaluate", "summary"}),
]


def merged(base: dict, change: dict) -> dict:
    return {k: merged(base.get(k, {}), v) if isinstance(v, dict) else v for k, v in change.items()} | {
        k: v for k, v in base.items() if k not in change
    }


@pytest.mark.parametrize("change, steps", CHANGES, ids=lambda c: json.dumps(c) if isinstance(c, dict) else "")
def test_a_changed_setting_reruns_the_steps_that_read_it(demo, change, steps):
    config = merged(yaml.safe_load((demo / "config/config.yaml").read_text()), change)
    name = f"changed-{hashlib.md5(json.dumps(change, sort_keys=True).encode()).hexdigest()[:12]}.yaml"  # alike in every process
    write(demo / "config" / name, yaml.safe_dump(config))
    planned = set(
        re.findall(r"^(?:local)?rule (\w+):", snakemake(demo, "-n", "--configfile", f"config/{name}").stdout, re.M)
    )
    assert steps <= planned, planned
    if "grade" not in steps:
        assert "grade" not in planned  # a setting the grades do not depend on costs no model call


def test_a_results_folder_written_by_another_configuration_is_refused(tmp_path):
    """One after the other this time: a run from a second directory neither finds the first one's tables
    up to date ("Nothing to be done") nor builds a report of them under its own configuration."""
    results = tmp_path / "shared-results"
    with LLMServer(default=lambda prompt: "4") as server:
        first, second = (copy_project(tmp_path / name) for name in ("first", "second"))
        configs = [own_config(project, results, server.base_url) for project in (first, second)]
        leaderboard = str(results / "eval/api/leaderboard.tsv")  # the first run's target: no report, no judges
        snakemake(first, leaderboard, "--configfile", str(configs[0]))
        refused = snakemake(second, "--configfile", str(configs[1]), check=False)
        report = snakemake(
            second, "--report", str(results / "report.html"), "--configfile", str(configs[1]), check=False
        )
    message = f"{results}/ holds the results of a run in {first} (config {configs[0]})"
    assert refused.returncode != 0 and message in refused.stdout + refused.stderr
    assert report.returncode != 0 and message in report.stdout + report.stderr
    assert not (results / "report.html").exists()
    assert "Nothing to be done" in snakemake(first, leaderboard, "--configfile", str(configs[0]), "-n").stdout


def test_a_changed_judges_setting_reruns_the_judges(tmp_path):
    """The judges' params come from the configuration alone: Snakemake reruns no job for a param computed
    from its input, so that a new official measure or level, or a renamed label set, left judges/ as it was."""
    project = copy_project(tmp_path)
    base = yaml.safe_load((project / "config/config.yaml").read_text())
    base["inputs"]["official_leaderboard"] = None  # computed from the qrels: evaluation.official_measure
    write(project / "config/base.yaml", yaml.safe_dump(base))
    judges = "results/demo/judges/agreement.tsv"  # the judges and what they read (no NRP, report or summary)
    snakemake(project, judges, "--configfile", "config/base.yaml")
    assert "Nothing to be done" in snakemake(project, judges, "-n", "--configfile", "config/base.yaml").stdout
    renamed = yaml.safe_load(yaml.safe_dump(base))  # a copy
    renamed["inputs"]["labels"] = {"assessor-b": renamed["inputs"]["labels"].pop("second-assessor")}
    for name, config, steps in (
        ("measure", merged(base, {"evaluation": {"official_measure": "map"}}), {"official_leaderboard", "judges"}),
        ("level", merged(base, {"evaluation": {"min_relevant_judgment": 2}}), {"official_leaderboard", "judges"}),
        ("renamed", renamed, {"judges"}),
    ):
        write(project / "config" / f"{name}.yaml", yaml.safe_dump(config))
        planned = snakemake(project, judges, "-n", "--configfile", f"config/{name}.yaml").stdout
        assert steps <= set(re.findall(r"^(?:local)?rule (\w+):", planned, re.M)), (name, planned)
