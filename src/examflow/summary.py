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
import unicodedata
from dataclasses import dataclass, field
from importlib import metadata as package_metadata

import pandas as pd

from examflow.evaluation.scores import tie_keys
from examflow.prompts import template
from examflow.registry import KINDS
from examflow.results import report_command

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
    """Headings, paragraphs and tables, written as Markdown or as reStructuredText.

    Headings and table cells are plain text: every character shows as written, whatever markup it
    looks like in either format (a run named `<script>`, `*x*` or `oracle_`). A paragraph is examflow's
    own words, `code` in backticks, with values (ids, names, paths) put in at its `{}` placeholders,
    never by an f-string, so that they too show as written.
    """

    blocks: list[tuple] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("heading", level, _plain(str(text)).strip()))

    def paragraph(self, template: str, *values) -> None:
        self.blocks.append(("paragraph", template, [str(value) for value in values]))

    def table(self, columns: list[str], rows: list[tuple]) -> None:
        self.blocks.append(("table", columns, [[_plain(str(cell)).strip() for cell in row] for row in rows]))

    def markdown(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "heading":
                out.append(f"{'#' * content[0]} {_markdown_text(content[1])}")
            elif kind == "paragraph":
                out.append(_inline(*content, _markdown_text, _markdown_code))
            else:
                columns, rows = content
                lines = [[_markdown_text(c) for c in columns], ["---"] * len(columns)]
                lines += [[_markdown_text(c) for c in row] for row in rows]
                out.append("\n".join("| " + " | ".join(line) + " |" for line in lines))
        return "\n\n".join(out) + "\n"

    def rst(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "heading":
                text = _rst_text(content[1])
                out.append(f"{text}\n{'=-~'[min(content[0], 3) - 1] * _columns(text)}")
            elif kind == "paragraph":
                out.append(_inline(*content, _rst_text, _rst_code))
            else:
                columns, rows = content
                cells = "\n".join(
                    "   * " + "\n     ".join(f"- {_rst_text(c) or ' '}" for c in row) for row in [columns, *rows]
                )
                header = 1 if rows else 0  # docutils refuses a table of a header alone
                out.append(f".. list-table::\n   :header-rows: {header}\n\n{cells}")
        return "\n\n".join(out) + "\n"


def _inline(template: str, values: list[str], text, code) -> str:
    """A paragraph's template with its values filled in, text and `code` spans each written by its function."""
    values = iter(values)
    pieces = []
    for piece in re.split(r"(`[^`]+`)", template):
        is_code = len(piece) > 1 and piece[0] == piece[-1] == "`"
        parts = (piece[1:-1] if is_code else piece).split("{}")
        filled = parts[0] + "".join(next(values) + part for part in parts[1:])
        pieces.append(code(filled) if is_code else text(filled))
    return "".join(pieces)


def _plain(text: str) -> str:
    """Each run of whitespace as one space: a line break would end a table row or a heading."""
    return re.sub(r"\s+", " ", text)


# CommonMark: every ASCII punctuation character may be backslash-escaped, and then shows as itself.
# These start inline markup (emphasis, code, links, raw HTML, entities, table cells, strikethrough,
# heading ends); `_` only at the edge of a word (`run_id` stays readable, `_x_` would be emphasis).
_MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]<>&|~#]|(?<![^\W_])_|_(?![^\W_])")


def _markdown_text(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(0), _plain(text))


def _markdown_code(text: str) -> str:
    """A code span fenced by more backticks than it holds in a row (CommonMark 6.1)."""
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def _rst_text(text: str) -> str:
    """Every ASCII punctuation character backslash-escaped: reStructuredText then shows it as itself and
    reads no markup (`oracle_` would be a reference to a missing target, `|x|` a substitution)."""
    escaped = re.sub(r"[!-/:-@\[-`{-~]", lambda m: "\\" + m.group(0), _plain(text))
    # A line of backslashes alone would read as a transition; an escaped space before it is nothing.
    return f"\\ {escaped}" if escaped and set(escaped) == {"\\"} else escaped


def _rst_code(text: str) -> str:
    # An inline literal cannot hold a backtick next to its ends, nor start or end with a space. The
    # escaped spaces around it (which show as nothing) let it follow and precede any character.
    if "`" in text or text != text.strip() or not text:
        return _rst_text(text)
    return f"\\ ``{text}``\\ "


def _columns(text: str) -> int:
    """Columns the text takes, as docutils counts them for a title's underline (wide characters: 2)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def run_summary(
    graded: dict[str, dict],
    flagged: pd.DataFrame | None,
    results: str,
    boards: dict[str, pd.DataFrame],
    correlations: dict[str, pd.DataFrame],
    tau: float,
    nrp: pd.DataFrame | None = None,
    configfiles: list[str] = (),
) -> Document:
    doc = Document()
    doc.heading("examflow run summary", 1)
    doc.paragraph("All outputs are under `{}/`; this page is `{}/summary.md`. The HTML report: `{}`.",
                  results, results, report_command(f"{results}/report.html", configfiles))  # fmt: skip
    for method in sorted(boards):
        _leaderboard_section(doc, method, boards[method], correlations.get(method), tau)
    if flagged is not None:  # EXAM ran (NRP alone has no pool and no grades)
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
    else:
        doc.paragraph("No official leaderboard was given (`inputs.official_leaderboard`): no correlation.")


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
            doc.paragraph("Method {} grades similarities by {} quantiles ({}).", name, made["calibration"], ladder)
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
    for (dimension, ranker, denominator), group in per_system.groupby(["dimension", "ranker", "denominator"]):
        keys = tie_keys(group["nrp"])
        best = group[keys == keys.max()].sort_values(["llm", "prompt"])  # every system of the top score
        stderr = "" if len(best) > 1 or math.isnan(best["stderr"].iat[0]) else f" ± {best['stderr'].iat[0]:.3f}"
        systems = ", ".join(f"{llm} / {prompt}" for llm, prompt in zip(best["llm"], best["prompt"]))
        rows.append((dimension, ranker, systems, f"{best['nrp'].iat[0]:.3f}{stderr}", denominator))
    doc.table(["dimension", "ranker", "best system (LLM / prompt)", "NRP", "denominator"], rows)
    doc.paragraph("With n judged documents and r of them scoring at least the answer, NRP = 1 − r/n under "
                  "denominator `docs` (the paper's formula) and 1 − r/(n + 1) under `list` (how the published "
                  "numbers were computed).")  # fmt: skip
