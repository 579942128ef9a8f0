"""Shared helpers: a project checkout copied into a temporary directory, and file writers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference"
DEMO = ROOT / "resources" / "demo"


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The real snakemake, with this interpreter's bin directory first on PATH."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the workflow and the demo collection to run snakemake in."""
    for name in ("workflow", "config", "profiles", "envs"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copytree(DEMO, tmp_path / "resources" / "demo")
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    (tmp_path / "src").symlink_to(ROOT / "src")
    return tmp_path
