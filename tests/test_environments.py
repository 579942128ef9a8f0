"""The rules' conda environment holds what the package needs: the dependencies of pyproject.toml,
version for version (a dependency missing there fails every job under `--sdm conda`)."""

from __future__ import annotations

import re
import tomllib

import yaml
from conftest import ROOT

# Conda-forge names of packages whose PyPI name differs.
CONDA_NAMES = {"torch": "pytorch", "matplotlib": "matplotlib-base", "isal": "python-isal"}
# Snakemake drives the jobs; it runs in no job's environment.
DRIVER = {"snakemake"}


def requirement(text: str) -> tuple[str, str]:
    """(normalised name, version specifier) of `name[extras] >=1,<2` or `name >=1`."""
    name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(.*)", text.strip()).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def test_the_conda_environment_equals_the_package_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    wanted = {CONDA_NAMES.get(name, name): spec for name, spec in map(requirement, project) if name not in DRIVER}
    environment = yaml.safe_load((ROOT / "workflow/envs/examflow.yaml").read_text())["dependencies"]
    listed = [entry for entry in environment if isinstance(entry, str)]
    listed += [entry for inner in environment if isinstance(inner, dict) for entry in inner["pip"]]
    found = dict(map(requirement, listed))
    assert {name: found.get(name) for name in wanted} == wanted
    assert set(found) - set(wanted) == {"python", "pip"}
