"""Shared helpers: a project checkout copied into a temporary directory, and file writers."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The EXAM papers' published data (not part of the repository): ../shared/reference beside this
# checkout, or wherever $EXAMFLOW_REFERENCE says.
REFERENCE = Path(os.environ.get("EXAMFLOW_REFERENCE") or ROOT.parent / "shared" / "reference")
DEMO = ROOT / "resources" / "demo"


def needs_reference(what: str, present: bool | None = None):
    """Skip a check against the published data when it is not beside this checkout, saying what the
    check is and how to run it (the data are not part of the repository)."""
    return pytest.mark.skipif(
        not (REFERENCE.exists() if present is None else present),
        reason=f"{what}: needs the EXAM papers' published data (banks, graded files, result tables) in "
        f"{REFERENCE} (../shared/reference beside this checkout, or $EXAMFLOW_REFERENCE); put them there to run "
        "this check (docs/development.md)",
    )


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def bucket(query_id: str, shards: int = 16) -> str:
    """The grading shard a query falls into: md5 of its id modulo the shard count, zero-padded."""
    return f"shard-{int(hashlib.md5(query_id.encode()).hexdigest(), 16) % shards:0{len(str(shards - 1))}d}"


def snakemake_env(**extra: str) -> dict[str, str]:
    """The environment a snakemake runs in: this interpreter's bin directory first on PATH, and no SLURM
    cluster unless `extra` names one (`SLURM_CONF`). Once the SLURM executor plugin is installed (make
    test-slurm), every snakemake start imports it, and it asks `scontrol show config`: against a
    configuration whose controller is down, scontrol retries for 9 s. A local run needs no cluster;
    scontrol, pointed at no configuration, fails at once."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "SLURM_CONF": os.devnull, **extra}


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The real snakemake, run locally (`snakemake_env`)."""
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir,
        env=snakemake_env(),
        capture_output=True,
        text=True,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def outputs(results: Path) -> dict[str, bytes]:
    """Every output file of a run but the logs, the caches and the run's lock (it names the process)."""
    from examflow.results import LOCK

    return {
        str(path.relative_to(results)): path.read_bytes()
        for path in sorted(results.rglob("*"))
        if path.is_file() and path.relative_to(results).parts[0] not in ("logs", "cache", LOCK)
    }


def copy_project(folder: Path) -> Path:
    """A copy of the workflow and the demo collections to run snakemake in."""
    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, folder / name, symlinks=True)
    shutil.copytree(DEMO, folder / "resources" / "demo")
    shutil.copytree(ROOT / "resources" / "demo-nrp", folder / "resources" / "demo-nrp")
    (folder / "src").symlink_to(ROOT / "src")
    return folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path)


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Path:
    """The whole demo, run once per test session (tests only read its outputs): once in all, since its tests
    share one worker (`pytest_collection_modifyitems`)."""
    folder = copy_project(tmp_path_factory.mktemp("demo"))
    snakemake(folder)
    if worker := os.environ.get("PYTEST_XDIST_WORKER"):  # a grouping that stopped working, said aloud
        session = tmp_path_factory.getbasetemp().parent  # the workers' folders are in the session's
        (session / f"demo-run-by-{worker}").touch()
        if len(ran := sorted(path.name for path in session.glob("demo-run-by-*"))) > 1:
            warnings.warn(f"the demo ran in more than one worker ({', '.join(ran)}): xdist's loadgroup did "
                          "not group its tests (docs/development.md)", stacklevel=1)  # fmt: skip
    return folder


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of the demo's run go to one worker (xdist's `loadgroup`, pyproject.toml): each worker would
    run the demo for itself (some 60 s of CPU), and copying one worker's demo folder for another is refused
    (a results folder belongs to the directory that ran it: examflow.results)."""
    for item in items:
        if "demo" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("demo"))


def own_collection(root: Path) -> dict[str, Path]:
    """A tiny collection of a user's own, written the way the README describes: three queries (the
    third without questions), six passages, two runs, qrels, a TSV bank and an official leaderboard."""
    texts = {
        "g1": "Glaciers move because ice deforms under its own weight and slides on meltwater.",
        "g2": "Glacier speed depends on slope, ice thickness and the water at the bed.",
        "g3": "Bread rises because yeast makes carbon dioxide.",
        "s1": "The sky is blue because air scatters short blue wavelengths more than red ones.",
        "s2": "Rayleigh scattering grows with the inverse fourth power of the wavelength.",
        "s3": "Sunsets are red because light crosses more air near the horizon.",
    }
    files = {
        "queries": write(
            root / "queries.tsv", "q1\thow do glaciers move\nq2\twhy is the sky blue\nq3\tunasked query\n"
        ),
        "corpus": write(root / "corpus.tsv", "".join(f"{d}\t{t}\n" for d, t in texts.items())),
        "qrels": write(root / "qrels.txt", "q1 0 g1 3\nq1 0 g3 0\nq2 0 s1 2\nq2 0 s3 1\n"),
        "bank": write(
            root / "bank.tsv",
            "query_id\tquestion\nq1\tWhy do glaciers move?\nq1\tWhat sets a glacier's speed?\n"
            "q2\tWhy is the sky blue?\nq2\tWhat is Rayleigh scattering?\n",
        ),
        "leaderboard": write(root / "official.json", '{"good": 1, "poor": 2}'),
    }
    ranked = {"good": {"q1": ["g1", "g2", "g3"], "q2": ["s1", "s2", "s3"]}, "poor": {"q1": ["g3", "g2"], "q2": ["s3"]}}
    for run, lists in ranked.items():
        lines = [f"{q} Q0 {d} {r} {10 - r} {run}\n" for q, docs in lists.items() for r, d in enumerate(docs, 1)]
        files[f"run_{run}"] = write(root / "runs" / f"{run}.run", "".join(lines))
    return files
