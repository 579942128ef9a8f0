"""Params that carry the configuration are computed from the configuration alone: Snakemake reruns no job
for a param computed from the job's input (a function of `input`), so a setting read there and then changed
would leave the job's outputs as they were, with exit code 0."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "workflow/rules"
# The workflow's names for the configuration and what is made of it.
CONFIGURED = {"config", "INPUTS", "NRP", "OUTSIDE_LABELS", "METHODS", "RUN_FILES", "BANK", "FACTS"}
PARAMS = re.compile(r"^(\s*)params:\n(.*?)(?=^\1\S|\Z)", re.M | re.S)


def functions_of_input() -> dict[str, set[str]]:
    """common.smk's functions of (wildcards, input), each with the names it reads."""
    tree = ast.parse((RULES / "common.smk").read_text(encoding="utf-8"))
    return {
        node.name: {name.id for name in ast.walk(node) if isinstance(name, ast.Name)}
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and [a.arg for a in node.args.args] == ["wildcards", "input"]
    }


def test_no_param_computed_from_input_reads_the_configuration():
    functions = functions_of_input()
    checked = 0
    for path in sorted(RULES.glob("*.smk")):
        for _, block in PARAMS.findall(path.read_text(encoding="utf-8")):
            for entry in re.split(r"\n(?=\s*\w+=)", block):
                if "lambda wildcards, input" in entry:
                    names = set(re.findall(r"\b[A-Za-z_]\w*\b", entry.split("lambda wildcards, input", 1)[1]))
                else:
                    called = re.fullmatch(r"\s*\w+=(\w+),.*", entry.split("\n", 1)[0])
                    if not called or called.group(1) not in functions:
                        continue
                    names = functions[called.group(1)]
                checked += 1
                assert not names & CONFIGURED, f"{path.name}: a param of input reads {names & CONFIGURED}: {entry!r}"
    assert checked >= 10  # the params of input files (pool folders, report inputs, ...)
