"""The run's summary for people (`summary.md`, and `summary.rst`: the report's first page) and its
provenance record (`provenance.json`).

The summary says in words which system is best under each measure, how well each method agrees with
the official leaderboard (with the bootstrap interval), how many pairs failed or were unparsable, which
pooled passages look like prompt injection, and NRP's best systems. The provenance record holds what
a reader needs to reproduce the numbers: package versions, model ids with their revisions or weight
digests, prompt template digests and the config digest. Neither holds a time stamp, so two runs of the
same configuration write the same files.
"""

from __future__ import annotations

import hashlib
import math
import platform
import re
from dataclasses import dataclass, field
from importlib import metadata as package_metadata

import pandas as pd

from examflow.evaluation.scores import tie_keys
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
               "prompts": prompt_digests(meta["method"]["kind"]), **_similarity_grades(meta)}
        for name, meta in sorted(graded.items())
    }  # fmt: skip
    return {"config_sha256": config_digest, "versions": versions(), "methods": methods}


def _similarity_grades(meta: dict) -> dict:
    """How an embedding method's similarities became grades: its calibration and quantile ladder."""
    made = meta.get("embedding_grades")
    return {"similarity_grades": {key: made[key] for key in ("calibration", "quantiles")}} if made else {}


@dataclass
class Document:
    """Headings, paragraphs and tables, written as Markdown or as reStructuredText."""

    blocks: list[tuple] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("heading", level, text))

    def paragraph(self, text: str) -> None:
        self.blocks.append(("paragraph", text))

    def table(self, columns: list[str], rows: list[tuple]) -> None:
        self.blocks.append(("table", columns, [[str(cell) for cell in row] for row in rows]))

    def markdown(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "heading":
                out.append(f"{'#' * content[0]} {content[1]}")
            elif kind == "paragraph":
                out.append(content[0])
            else:
                columns, rows = content
                lines = [columns, ["---"] * len(columns), *rows]
                out.append("\n".join("| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in lines))
        return "\n\n".join(out) + "\n"

    def rst(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "heading":
                text = _literal(content[1])
                out.append(f"{text}\n{'=-~'[min(content[0], 3) - 1] * len(text)}")
            elif kind == "paragraph":
                out.append(_literal(content[0]))
            else:
                columns, rows = content
                cells = "\n".join(
                    "   * " + "\n     ".join(f"- {_literal(c) or ' '}" for c in row) for row in [columns, *rows]
                )
                out.append(f".. list-table::\n   :header-rows: 1\n\n{cells}")
        return "\n\n".join(out) + "\n"


def _literal(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"``\1``", text)


def run_summary(
    graded: dict[str, dict],
    flagged: pd.DataFrame,
    results: str,
    boards: dict[str, pd.DataFrame],
    correlations: dict[str, pd.DataFrame],
    tau: float,
    nrp: pd.DataFrame | None = None,
) -> Document:
    doc = Document()
    doc.heading("examflow run summary", 1)
    doc.paragraph(f"All outputs are under `{results}/`; this page is `{results}/summary.md`. The HTML report: "
                  f"`snakemake --report {results}/report.html`.")  # fmt: skip
    for method in sorted(boards):
        _leaderboard_section(doc, method, boards[method], correlations.get(method), tau)
    _grading_section(doc, graded)
    _injection_section(doc, flagged)
    if nrp is not None:
        _nrp_section(doc, nrp)
    return doc


def _leaderboard_section(
    doc: Document, method: str, board: pd.DataFrame, correlation: pd.DataFrame | None, tau
) -> None:
    doc.heading(f"{method}: the best system under each measure (τ = {tau:g})")
    systems = board[(board["kind"] == "system") & ((board["tau"] == tau) | board["tau"].isna())]
    stats = correlation.set_index(["measure", correlation["tau"].fillna(-1)]) if correlation is not None else None
    rows = []
    for measure, group in systems.groupby("measure", sort=True):
        keys = tie_keys(group["score"])
        top = group[keys == keys.max()]
        row = [measure, ", ".join(top["run_id"]), f"{top['score'].iat[0]:.3f}"]
        if stats is not None:
            key = (measure, tau if group["tau"].notna().any() else -1)
            found = stats.loc[key] if key in stats.index else None
            row += [_with_interval(found, "spearman"), _with_interval(found, "kendall"), _note(found)]
        rows.append(tuple(row))
    columns = ["measure", "best system", "score"]
    if stats is not None:
        columns += ["Spearman ρ with the official leaderboard [95 % interval]", "Kendall τ [95 % interval]", "note"]
    doc.table(columns, rows)
    if stats is not None:
        doc.paragraph("The intervals are percentile bootstrap intervals over the queries (`evaluation.bootstrap`).")


def _with_interval(row, name: str) -> str:
    if row is None or pd.isna(row[name]):
        return "–"
    low, high = row[f"{name}_low"], row[f"{name}_high"]
    return f"{row[name]:.3f}" if pd.isna(low) else f"{row[name]:.3f} [{low:.3f}, {high:.3f}]"


def _note(row) -> str:
    return "" if row is None or not isinstance(row.get("note"), str) else row["note"]


def _grading_section(doc: Document, graded: dict[str, dict]) -> None:
    doc.heading("Grading")
    rows = []
    for name, meta in sorted(graded.items()):
        kinds = ", ".join(f"{count} {kind}" for kind, count in meta.get("errors_by_kind", {}).items()) or "–"
        rows.append((name, meta["pairs"], meta["errors"], kinds, meta.get("unparsable", 0)))
    doc.table(["method", "pairs", "failed", "failed by kind", "unparsable answers"], rows)
    for name, meta in sorted(graded.items()):
        if made := _similarity_grades(meta).get("similarity_grades"):
            ladder = ", ".join(f"{q:g}" for q in made["quantiles"])
            doc.paragraph(f"Method {name} grades similarities by {made['calibration']} quantiles ({ladder}).")
    doc.paragraph("Failed pairs answer no question (they can only lower a score); `leaderboard.tsv` counts them "
                  "per run in `failed_pairs`. Unparsable answers are failed pairs under `mode: strict`, and were read "
                  "as SPEC §3 says under `reference` or `paper`.")  # fmt: skip


def _injection_section(doc: Document, flagged: pd.DataFrame) -> None:
    doc.heading("Passages that look like prompt injection")
    if flagged.empty:
        doc.paragraph("None of the pooled passages reads like an instruction to the grader.")
        return
    many = "passages read" if len(flagged) > 1 else "passage reads"
    doc.paragraph(f"{len(flagged)} pooled {many} like instructions to the grader (all in `pool/flagged.tsv`); "
                  "they were graded as usual. Look at them:")  # fmt: skip
    doc.table(
        ["query", "passage", "origin", "phrase"],
        list(flagged.head(50)[["query_id", "passage_id", "origin", "phrase"]].itertuples(index=False)),
    )


def _nrp_section(doc: Document, per_system: pd.DataFrame) -> None:
    doc.heading("NRP: the best system in each dimension")
    rows = []
    for (dimension, ranker), group in per_system.groupby(["dimension", "ranker"], sort=True):
        best = group.sort_values(["nrp", "llm", "prompt"], ascending=[False, True, True]).iloc[0]
        stderr = "" if math.isnan(best["stderr"]) else f" ± {best['stderr']:.3f}"
        rows.append((dimension, ranker, f"{best['llm']} / {best['prompt']}", f"{best['nrp']:.3f}{stderr}"))
    doc.table(["dimension", "ranker", "best system (LLM / prompt)", "NRP"], rows)
