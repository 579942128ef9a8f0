"""The run's summary for people (`summary.md`) and its provenance record (`provenance.json`).

The summary says, per grading method, how many pairs were graded, how many failed and of which
kind, how many answers were unparsable, and which pooled passages look like prompt injection.
The provenance record holds what a reader needs to reproduce the numbers: package versions,
model ids with their revisions or weight digests, prompt template digests and the config digest.
It holds no time stamp, so two runs of the same configuration write the same file.
"""

from __future__ import annotations

import hashlib
import platform
from importlib import metadata as package_metadata

import pandas as pd

from examflow.prompts import template
from examflow.registry import KINDS

PACKAGES = ("examflow", "snakemake", "torch", "transformers", "sentence-transformers", "pytrec-eval-terrier",
            "openai", "pandas", "numpy", "scipy")  # fmt: skip


def versions() -> dict[str, str | None]:
    def version(name: str) -> str | None:
        try:
            return package_metadata.version(name)
        except package_metadata.PackageNotFoundError:
            return None

    return {"python": platform.python_version()} | {name: version(name) for name in PACKAGES}


def prompt_digests(kind: str) -> dict[str, str]:
    """md5 of every prompt template a method kind sends (the verification prompt too)."""
    names = [KINDS[kind].template] + (["grade-answer-verification"] if kind == "qa_llm_verify" else [])
    return {name: hashlib.md5(template(name).encode()).hexdigest() for name in names}


def provenance(graded: dict[str, dict], config_digest: str) -> dict:
    """`graded`: each method's grades metadata (`examflow.grading.merge.read_grades_metadata`)."""
    methods = {
        name: {"kind": meta["method"]["kind"], "backend": meta["method"]["backend"], "models": meta.get("models", []),
               "prompts": prompt_digests(meta["method"]["kind"])}
        for name, meta in sorted(graded.items())
    }  # fmt: skip
    return {"config_sha256": config_digest, "versions": versions(), "methods": methods}


def run_summary(graded: dict[str, dict], flagged: pd.DataFrame, results: str) -> str:
    lines = ["# examflow run summary", "", f"All outputs are under `{results}/`.", "", "## Grading", ""]
    lines += ["| method | pairs | failed | failed by kind | unparsable answers |", "| --- | --- | --- | --- | --- |"]
    for name, meta in sorted(graded.items()):
        kinds = ", ".join(f"{count} {kind}" for kind, count in meta.get("errors_by_kind", {}).items()) or "–"
        lines.append(f"| {name} | {meta['pairs']} | {meta['errors']} | {kinds} | {meta.get('unparsable', 0)} |")
    lines += [
        "",
        "Failed pairs answer no question (they can only lower a score); `leaderboard.tsv` counts them per run",
        "in `failed_pairs`. Unparsable answers were read as SPEC §3 says (`mode: reference` or `paper`).",
        "",
        "## Passages that look like prompt injection",
        "",
    ]
    if flagged.empty:
        lines.append("None of the pooled passages reads like an instruction to the grader.")
    else:
        many = "passages read" if len(flagged) > 1 else "passage reads"
        lines += [f"{len(flagged)} pooled {many} like instructions to the grader (all in `pool/flagged.tsv`);",
                  "they were graded as usual. Look at them:", "", "| query | passage | origin | phrase |",
                  "| --- | --- | --- | --- |"]  # fmt: skip
        for row in flagged.head(50).itertuples(index=False):
            lines.append(f"| {row.query_id} | {row.passage_id} | {row.origin} | {_cell(row.phrase)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
