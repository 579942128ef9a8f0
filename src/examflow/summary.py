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
import json
import math
import platform
import re
import textwrap
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata as package_metadata
from typing import cast

import pandas as pd

from examflow.errors import counted
from examflow.injection import RULES
from examflow.prompts import template
from examflow.registry import KINDS
from examflow.report.board import Board, score_text, with_interval
from examflow.results import report_command
from examflow.ties import tie_keys

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
    """md5 of every prompt template a method kind sends (verification and aggregation prompts too)."""
    return {name: hashlib.md5(template(name).encode()).hexdigest() for name in KINDS[kind].templates}


def provenance(graded: dict[str, dict], config_digest: str, bank: str | None = None) -> dict:
    """`graded`: each method's grades metadata (`examflow.grading.merge.read_grades_metadata`); `bank`: the bank
    file they were graded on, if any."""
    methods = {
        name: {"kind": meta["method"]["kind"], "backend": meta["method"]["backend"], "models": meta.get("models", []),
               "prompts": prompt_digests(meta["method"]["kind"]), **_similarity_grades(meta)}
        for name, meta in sorted(graded.items())
    }  # fmt: skip
    record = {"config_sha256": config_digest, "versions": versions(), "methods": methods}
    return record | ({"bank": bank_provenance(bank)} if bank else {})


# What a generated bank's entries say of their generator (`info`), but when: the same bank generated again from
# the cache is the same bank.
_GENERATOR_FIELDS = ("generator", "model", "prompt_template", "format_instruction")


def bank_provenance(path: str) -> dict:
    """The bank's items and a digest of their content (not of the file: a generated bank's time stamps differ
    from one generation to the next), and what generated it, where it was generated (the configuration names
    only the file: the questions a run graded were otherwise in no record of it)."""
    from examflow.questions.bank import read_bank

    entries = read_bank(path)
    rows = sorted(
        json.dumps([item.query_id, item.facet_id, item.item_id, item.text, item.kind, item.gold_answers, item.choices,
                    item.importance], sort_keys=True)
        for entry in entries for item in entry.items
    )  # fmt: skip
    generators = {
        json.dumps({name: entry.info[name] for name in _GENERATOR_FIELDS if name in entry.info}, sort_keys=True)
        for entry in entries
        if isinstance(entry.info, dict) and entry.info.get("generator")
    }
    return {
        "items": len(rows),
        "sha256": hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest(),
        "generated_by": [json.loads(generator) for generator in sorted(generators)],
    }


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
    never by an f-string, so that they too show as written. An HTML block is written to
    reStructuredText alone (the report's first page), a table may be written to Markdown alone.
    """

    blocks: list[tuple] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("heading", level, _plain(str(text)).strip()))

    def paragraph(self, template: str, *values) -> None:
        self.blocks.append(("paragraph", template, [str(value) for value in values]))

    def table(self, columns: list[str], rows: list[tuple], markdown_only: bool = False) -> None:
        cells = [[_plain(str(cell)).strip() for cell in row] for row in rows]
        self.blocks.append(("markdown table" if markdown_only else "table", columns, cells))

    def html(self, markup: str) -> None:
        """HTML of examflow's own making (values escaped by the caller) for the report's first page. Snakemake
        renders that page with Jinja before docutils reads it: the markup must hold no `{{`, `{%` or `{#`,
        and no `</script>` (the page's HTML goes into a script element)."""
        if re.search(r"\{[{%#]|</script", markup, re.IGNORECASE):
            raise ValueError("HTML for the report's first page holds Jinja or script markup")
        self.blocks.append(("html", markup))

    def markdown(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "html":
                continue
            if kind == "heading":
                out.append(f"{'#' * content[0]} {_markdown_text(content[1])}")
            elif kind == "paragraph":
                out.append(_inline(content[0], content[1], _markdown_text, _markdown_code))
            else:
                columns, rows = content
                lines = [[_markdown_text(c) for c in columns], ["---"] * len(columns)]
                lines += [[_markdown_text(c) for c in row] for row in rows]
                out.append("\n".join("| " + " | ".join(line) + " |" for line in lines))
        return "\n\n".join(out) + "\n"

    def rst(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "markdown table":
                continue
            if kind == "html":
                out.append(".. raw:: html\n\n" + textwrap.indent(content[0], "   "))
            elif kind == "heading":
                text = _rst_text(content[1])
                out.append(f"{text}\n{'=-~'[min(content[0], 3) - 1] * _columns(text)}")
            elif kind == "paragraph":
                out.append(_inline(content[0], content[1], _rst_text, _rst_code))
            else:
                columns, rows = content
                cells = "\n".join(
                    "   * " + "\n     ".join(f"- {_rst_text(c) or ' '}" for c in row) for row in [columns, *rows]
                )
                header = 1 if rows else 0  # docutils refuses a table of a header alone
                out.append(f".. list-table::\n   :header-rows: {header}\n\n{cells}")
        return "\n\n".join(out) + "\n"


def _inline(template: str, values: list[str], text: Callable[[str], str], code: Callable[[str], str]) -> str:
    """A paragraph's template with its values filled in, text and `code` spans each written by its function."""
    remaining = iter(values)
    pieces = []
    for piece in re.split(r"(`[^`]+`)", template):
        is_code = len(piece) > 1 and piece[0] == piece[-1] == "`"
        parts = (piece[1:-1] if is_code else piece).split("{}")
        filled = parts[0] + "".join(next(remaining) + part for part in parts[1:])
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


@dataclass(frozen=True)
class OfficialSource:
    """Where the official leaderboard came from: a file the user gave, or (`measure` set) the means of
    that trec_eval measure on the official qrels, computed by `examflow official`."""

    path: str
    measure: str | None = None
    relevance_level: int = 1
    query_mode: str = "present"


NO_OFFICIAL = ("No official leaderboard (`inputs.official_leaderboard`, or `inputs.qrels` with "
               "`evaluation.official_measure`): no correlation.")  # fmt: skip


def run_summary(
    graded: dict[str, dict],
    flagged: pd.DataFrame | None,
    results: str,
    boards: dict[str, Board],
    nrp: pd.DataFrame | None = None,
    configfiles: Sequence[str] = (),
    official: OfficialSource | None = None,
    snakefile: str | None = None,
    judges: pd.DataFrame | None = None,
    page: str | None = None,
    settings: Sequence[str] = (),
    figures: Mapping[str, bytes] | None = None,
    dropped: pd.DataFrame | None = None,
) -> Document:
    """`boards`: each method's leaderboard at the report's τ. The report's first page opens on each
    method's headline leaderboard (the report's own table and figure, embedded: `figures`, the PNG the
    report drew, by method; one not given is drawn again, the same picture)."""
    doc = Document()
    doc.heading("examflow run summary", 1)
    if boards:
        doc.html(LANDING_STYLE)
    doc.paragraph("All outputs are under `{}/`; this page is `{}`. The HTML report: `{}`.", results,
                  page or f"{results}/summary.md", report_command(f"{results}/report.html", configfiles, snakefile, settings))  # fmt: skip
    if boards:
        _official_paragraph(doc, official)
    for method in sorted(boards):
        _headline_section(doc, boards[method], (figures or {}).get(method))
    for method in sorted(boards):
        _leaderboard_section(doc, boards[method])
    if judges is not None:
        _judges_section(doc, judges, official is not None and official.measure is not None)
    if flagged is not None:  # EXAM ran (NRP alone has no pool and no grades)
        _grading_section(doc, graded)
        if dropped is not None and not dropped.empty:
            _dropped_paragraph(doc, dropped)
        _injection_section(doc, flagged)
    if nrp is not None:
        _nrp_section(doc, nrp)
    return doc


def _official_paragraph(doc: Document, official: OfficialSource | None) -> None:
    """Which official leaderboard the correlations and "best" are measured against."""
    if official is None:  # each method's section says so
        return
    if official.measure:
        from examflow.evaluation.exam_qrels import level_free

        queries = (
            "every judged query (one it lacks counts 0)" if official.query_mode == "all" else "the queries it ranks"
        )
        level = "" if level_free(official.measure) else f" at relevance level {official.relevance_level}"
        doc.paragraph("The official leaderboard was computed from the official qrels (no "
                      "`inputs.official_leaderboard` given): each run's mean `{}`{} over {}, by "
                      "`examflow official`, in `{}`.", official.measure, level, queries, official.path)  # fmt: skip
    else:
        doc.paragraph("The official leaderboard is the file given: `{}`.", official.path)


# The report's first page is shown beside the workflow graph in a column a third of the screen wide,
# centred so that its top is cut off when it is long. This page marks itself (`examflow-landing`) and
# takes the width, the graph going below; Snakemake shows no other page in that place.
LANDING_STYLE = """<style>
.prose:has(.examflow-landing){max-width:none}
div.flex:has(> div > .prose .examflow-landing){flex-direction:column;align-items:stretch}
div.h-screen:has(.examflow-landing){align-items:flex-start;justify-content:flex-start}
.examflow-landing iframe{width:100%;border:1px solid #ddd;max-height:85vh}
.examflow-landing img{max-width:100%;height:auto;margin:0}
</style>"""


def _headline_section(doc: Document, board: Board, figure: bytes | None) -> None:
    """The headline measure's leaderboard: its agreement with the official one, the best official run,
    the runs off the official leaderboard, then the interactive table and the small multiples (`figure`,
    the report's; else drawn: a second and a half a method, and matplotlib's import)."""
    from examflow.report import pages

    best, headline = board.best(board.headline), board.headline
    at = "" if headline in board.without_tau() else f" (τ = {board.tau:g})"  # nugget_all, nDCG: no threshold
    doc.heading(f"{board.method}: the leaderboard by {headline}{at}")
    agreement = board.agreement(headline)
    if agreement is not None:
        intervals = "" if pd.isna(agreement["spearman_low"]) else " (95 % bootstrap intervals over the queries)"
        # a value without its interval says why here, not only in the table below (correlation.tsv's note)
        note = agreement.get("note")
        why = f" ({note})" if not intervals and isinstance(note, str) and note else ""
        runs = counted(int(agreement["n_runs"]), "official run", "official runs")
        doc.paragraph("Headline measure `{}`. Agreement with the official leaderboard over {}: "
                      "Spearman's ρ {}, Kendall's τ {}" + intervals + "{}.", headline, runs,
                      with_interval(agreement, "spearman"), with_interval(agreement, "kendall"), why)  # fmt: skip
    else:
        doc.paragraph("Headline measure `{}`. " + NO_OFFICIAL, headline)
    name = "official run" if board.official else "system"
    if best:
        score = cast(pd.Series, board.scores(headline).loc[best[0]])  # cast: a run's one row (`Board.scores`)
        doc.paragraph("Best {}: {} ({}).", name, ", ".join(best), score_text(score["score"], score["stderr"]))
    elif tied := board.all_tied(headline):
        tie = cast(float, board.scores(headline).loc[tied[0], "score"])  # cast: the score column holds numbers
        doc.paragraph("No best {}: all {} tie at {}.", name, f"{len(tied)}", f"{tie:.3f}")
    if extra := board.extra_runs():
        doc.paragraph("Extra runs, evaluated but not on the official leaderboard (never named best): {}.",
                      ", ".join(extra))  # fmt: skip
    doc.table(["run", "group", "official rank", headline],
              [(run, board.group(run), _rank(board, run), _score(board, headline, run)) for run in board.runs()],
              markdown_only=True)  # fmt: skip
    doc.html(
        f"<div class='examflow-landing'>{pages.framed(pages.leaderboard_page(board), len(board.runs()))}"
        f"{pages.picture(figure or _drawn(board), f'{board.method}: the leaderboard, one panel per measure')}</div>"
    )
    order = "official order" if board.official else f"{headline} order"
    doc.paragraph("Above: the report's `1 Leaderboard` table (a click on a column name sorts by it; the box "
                  "searches runs) and figure, one panel per measure, runs in {}.", order)  # fmt: skip


def _drawn(board: Board) -> bytes:
    from examflow.report import figures

    return figures.leaderboard_figure(board)


def _rank(board: Board, run: str) -> str:
    return f"{board.official[run]:g}" if board.official and run in board.official else ""


def _score(board: Board, measure: str, run: str) -> str:
    scores = board.scores(measure)
    return score_text(*scores.loc[run]) if run in scores.index else ""


def _leaderboard_section(doc: Document, board: Board) -> None:
    best_name = "official run" if board.official else "system"
    doc.heading(f"{board.method}: the best {best_name} under each measure (τ = {board.tau:g})")
    rows = []
    for measure in board.measures:
        best, tied = board.best(measure), board.all_tied(measure)
        if not best and not tied:
            continue
        score = cast(float, board.scores(measure).loc[(best or tied)[0], "score"])  # cast: the scores are numbers
        row = [measure, ", ".join(best) or f"none: all {len(tied)} tie", f"{score:.3f}"]
        if board.correlation is not None:
            found = board.agreement(measure)
            row += [with_interval(found, "spearman"), with_interval(found, "kendall"), _note(found)]
        rows.append(tuple(row))
    columns = ["measure", f"best {best_name}", "score"]
    # with `evaluation.bootstrap: 0` there are no intervals to speak of
    intervals = board.correlation is not None and bool(board.correlation["spearman_low"].notna().any())
    interval = " [95 % interval]" if intervals else ""
    if board.correlation is not None:
        columns += [f"Spearman ρ with the official leaderboard{interval}", f"Kendall τ{interval}", "note"]
    doc.table(columns, rows)
    if without_tau := board.without_tau():
        verb = "does" if len(without_tau) == 1 else "do"
        doc.paragraph(", ".join(["`{}`"] * len(without_tau)) + f" {verb} not depend on τ: one value, the same at "
                      "every τ (nDCG takes the EXAM-Label itself as gain; EXAM and ROUGE have no threshold).",
                      *without_tau)  # fmt: skip
    if intervals:
        doc.paragraph("The intervals are percentile bootstrap intervals over the queries (`evaluation.bootstrap`).")


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
        _served_paragraph(doc, name, meta)
        if made := _similarity_grades(meta).get("similarity_grades"):
            ladder = ", ".join(f"{q:g}" for q in made["quantiles"])
            doc.paragraph("Method {} grades similarities by {} quantiles ({}).", name, made["calibration"], ladder)
    doc.paragraph("Failed pairs answer no question (they can only lower EXAM-Cover); in the EXAM-Qrels a passage "
                  "keeps the best grade of its other pairs (a criteria judge's passage with a failed criterion has "
                  "no label: its label aggregates all four), and one left without any is out of the qrels, which can "
                  "move other runs' measures either way. `leaderboard.tsv` counts them per run in `failed_pairs`. "
                  "An answer with no grade to read is a failed pair (unparsable) under `mode: strict`, and for the "
                  "UMBRELA, nugget and criteria kinds in every mode; under `reference` or `paper` an answer is read "
                  "as docs/methods.md §3 says, which can take a digit the model did not mean as a grade (UMBRELA's "
                  "last pattern reads `on a scale 0 to 3` as 3): `strict` refuses such answers.")  # fmt: skip


def _served_paragraph(doc: Document, name: str, meta: dict) -> None:
    """The models an API method's server named for its answers, where one is not the model asked for."""
    asked, served = meta.get("method", {}).get("backend", {}).get("model"), meta.get("served_models")
    if not isinstance(served, dict):
        return
    if others := sorted(set(served) - {asked}):
        total = sum(served.values())
        doc.paragraph("Method {} asked its server for model {}; the server answered " + ", ".join(
            [f"{{}} of {total} as {{}}"] * len(others)) + " (`served_models` in its grades' metadata).", name, asked,
            *(value for other in others for value in (served[other], other)))  # fmt: skip


def _dropped_paragraph(doc: Document, dropped: pd.DataFrame) -> None:
    """Pooled passages left out (`validation.missing_passages: warn`): said where the run is read, not only
    in the pool step's log, since they are in no score."""
    first, count = dropped.iloc[0], dropped["passage_id"].nunique()  # as the pool's warning counts them
    passages = "passages were" if count > 1 else "passage was"
    # a passage several queries pooled is a row of the table for each
    pairs = f" from {len(dropped):,} (query, passage) pairs of the pool" if len(dropped) > count else ""
    doc.paragraph("{} pooled {} left out{}, missing from the corpus or with empty text (`validation."
                  "missing_passages: warn`): no grade, in no score (all in `pool/dropped.tsv`; the first: {} of query {}).",
                  f"{count:,}", passages, pairs, first["passage_id"], first["query_id"])  # fmt: skip


def _injection_section(doc: Document, flagged: pd.DataFrame) -> None:
    doc.heading("Passages that look like prompt injection")
    if flagged.empty:
        doc.paragraph("None of the pooled passages reads like an instruction to the grader.")
        return
    if "rule" not in flagged:  # a pool/flagged.tsv written before flags named their rule
        flagged = flagged.assign(rule="–")
    many = "passages read" if len(flagged) > 1 else "passage reads"
    doc.paragraph(f"{len(flagged)} pooled {many} like instructions to the grader (all in `pool/flagged.tsv`); "
                  "they were graded as usual. The rules that fired, then the passages to look at (the first 50):")  # fmt: skip
    counts = flagged["rule"].value_counts()
    rules = [rule for rule in RULES if rule in counts] + [rule for rule in counts.index if rule not in RULES]
    doc.table(["rule", "passages", "what it looks for"], [(rule, counts[rule], RULES.get(rule, "")) for rule in rules])
    doc.table(
        ["query", "passage", "origin", "rule", "words that fired it"],
        list(flagged.head(50)[["query_id", "passage_id", "origin", "rule", "phrase"]].itertuples(index=False)),
    )


def _judges_section(doc: Document, agreement: pd.DataFrame, computed: bool = False) -> None:
    """Every judge's leaderboards against the official one (judges/agreement.tsv), best Kendall's τ first;
    `computed`: the official leaderboard comes from the qrels, and each replicate recomputes it."""
    doc.heading("Judges against the official leaderboard")
    intervals = agreement["low"].notna().any()
    doc.paragraph("Every method's EXAM-Qrels, each outside label set, ensemble and other judge's leaderboard, "
                  "ranking the runs under each measure, against the official leaderboard: Kendall's τ-b"
                  f"{' with its 95 % bootstrap interval' if intervals else ''}, Spearman's ρ, τ_AP and RBO (all "
                  "statistics, and the labels' agreement, in `judges/`). They rank the run files' runs alone "
                  "(`runs`): a generated response ranks no passage for labels to judge, so its run, which EXAM's "
                  "correlations above may count, is left out here.")  # fmt: skip
    if len(agreement) and agreement["runs"].max() == 1:  # (0: label sets that judge nothing, warned of)
        doc.paragraph("One run: there is no order to compare, so every agreement is empty. The labels' agreement "
                      "with the official qrels (Cohen's κ, Krippendorff's α) is in `judges/labels.tsv`.")  # fmt: skip
    elif intervals and computed:
        doc.paragraph("Each bootstrap replicate recomputes the official leaderboard from the qrels on the queries it "
                      "draws, with the judge's, so these intervals can differ from those of the sections above, "
                      "which hold the official leaderboard fixed.")  # fmt: skip
    elif not intervals and agreement["value"].notna().any():
        doc.paragraph("No intervals: no bootstrap replicates (`evaluation.bootstrap: 0`), or none with an order.")
    found = {(r["label_set"], r["measure"], r["statistic"]): r for r in agreement.to_dict("records")}
    boards = sorted({(label_set, measure) for label_set, measure, _ in found},
                    key=lambda board: (-_or_nan(found[(*board, "kendall")]["value"]), board))  # fmt: skip
    rows = []
    for label_set, measure in boards:
        tau = found[(label_set, measure, "kendall")]
        interval = f" [{tau['low']:.3f}, {tau['high']:.3f}]" if not math.isnan(tau["low"]) else ""
        others = (_number(found[(label_set, measure, s)]["value"]) for s in ("spearman", "tau_ap", "rbo"))
        rows.append((label_set, measure, _number(tau["value"]) + interval, *others, int(tau["runs"])))
    doc.table(["judge", "measure", "Kendall τ [95 %]", "Spearman ρ", "τ_AP", "RBO", "runs"], rows)
    if agreement["runs"].max() != 1:  # one run: said above
        _empty_boards(doc, [found[(*board, "kendall")] for board in boards])


def _empty_boards(doc: Document, taus: list[dict]) -> None:
    """Why a judge's τ, or its interval, is empty (agreement.tsv's `note`), once for the boards that share the
    reason: blank cells, or a bare value among intervals, without a word read as a fault (a stranger's trial,
    every run tied; most replicates without an order)."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for tau in taus:
        note = tau.get("note")  # (none in an agreement.tsv written before the column)
        if not (isinstance(note, str) and note.strip()):
            continue
        # no value, whatever its interval (replicates that do not tie can have one); else no interval
        empty = "No τ, ρ or τ_AP for " if math.isnan(tau["value"]) else "No interval of τ for "
        if math.isnan(tau["value"]) or math.isnan(tau["low"]):
            reasons.setdefault((empty, note), []).append(f"{tau['label_set']} under {tau['measure']}")
    for (empty, note), boards in reasons.items():
        doc.paragraph(empty + ", ".join(["{}"] * len(boards)) + ": {}.", *boards, note)


def _number(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3f}"


def _or_nan(value: float) -> float:
    """NaN sorted last (as -inf) where the best comes first."""
    return -math.inf if math.isnan(value) else value


def _nrp_section(doc: Document, per_system: pd.DataFrame) -> None:
    doc.heading("NRP: the best system in each dimension")
    rows = []
    for (dimension, ranker, denominator), group in per_system.groupby(["dimension", "ranker", "denominator"]):
        keys = tie_keys(group["nrp"])
        best = group[keys == keys.max()].sort_values(["llm", "prompt"])  # every system of the top score
        errors = ["" if math.isnan(e) else f" ± {e:.3f}" for e in best["stderr"]]
        if len(best) == 1:
            systems, score = f"{best['llm'].iat[0]} / {best['prompt'].iat[0]}", f"{best['nrp'].iat[0]:.3f}{errors[0]}"
        else:  # tied at one score, each with its own standard error
            named = zip(best["llm"], best["prompt"], errors)
            systems = ", ".join(f"{llm} / {prompt}" + (f" ({e.strip()})" if e else "") for llm, prompt, e in named)
            score = f"{best['nrp'].iat[0]:.3f}"
        rows.append((dimension, ranker, systems, score, denominator))
    doc.table(["dimension", "ranker", "best system (LLM / prompt)", "NRP", "denominator"], rows)
    doc.paragraph("With n judged documents and r of them scoring at least the answer, NRP = 1 − r/n under "
                  "denominator `docs` (the paper's formula) and 1 − r/(n + 1) under `list` (how the published "
                  "numbers were computed).")  # fmt: skip
