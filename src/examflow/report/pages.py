"""The report's HTML pages: tables rounded for reading, and the worked example of one topic."""

from __future__ import annotations

import html
import re

import pandas as pd

from examflow.report.figures import system_order, systems_at

STYLE = """<style>
body{font-family:sans-serif;font-size:14px;margin:1em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f0f0f0}
tr.special td{color:#777;font-style:italic}mark{background:#ffe27a}.passage{margin:1em 0;padding:.5em;border:1px solid #ddd}
.grade{font-weight:bold}p.note{color:#555}</style>"""


def page(title: str, *parts: str) -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>{STYLE}</head>" \
           f"<body><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>\n"  # fmt: skip


def table(frame: pd.DataFrame, digits: int = 3) -> str:
    return frame.to_html(index=False, float_format=lambda v: f"{v:.{digits}f}", na_rep="", border=0)


def leaderboard_page(board: pd.DataFrame, official: dict[str, float] | None, tau, method: str) -> str:
    """Systems × measures at τ, `score ± stderr`, best runs first by the official order; special rows last."""
    rows = systems_at(board, tau)
    order = system_order(rows, official) + sorted(
        set(rows["run_id"]) - set(official or {}) - set(system_order(rows, official))
    )
    cells = rows.assign(cell=[_score(s, e) for s, e in zip(rows["score"], rows["stderr"])])
    wide = _wide(cells).reindex(order)
    if official:
        wide.insert(0, "official rank", [f"{official[run]:g}" if run in official else "" for run in wide.index])
    special = board[(board["kind"] != "system") & ((board["tau"] == tau) | board["tau"].isna())]
    extra = _wide(special.assign(cell=[_score(s, e) for s, e in zip(special["score"], special["stderr"])]))
    body = wide.reset_index().to_html(index=False, na_rep="", border=0)
    note = "<p class='note'>Scores are means over queries ± standard error, rounded to 3 decimals; " \
           "the exact values are in <code>leaderboard.tsv</code>.</p>"  # fmt: skip
    specials = (
        f"<h2>Special rows</h2>{extra.reset_index().to_html(index=False, na_rep='', border=0)}" if len(extra) else ""
    )
    return page(f"Leaderboard of {method} at τ = {tau:g}", note, body, specials)


def _wide(cells: pd.DataFrame) -> pd.DataFrame:
    """Runs × measures of the `cell` column, the run id as a column named `system`."""
    wide = cells.pivot_table("cell", "run_id", "measure", aggfunc="first")
    wide.columns.name, wide.index.name = None, "system"
    return wide


def _score(score: float, stderr: float) -> str:
    return f"{score:.3f}" if pd.isna(stderr) else f"{score:.3f} ± {stderr:.3f}"


def correlation_page(correlation: pd.DataFrame, method: str) -> str:
    shown = correlation.assign(
        spearman=[
            _interval(v, lo, hi)
            for v, lo, hi in correlation[["spearman", "spearman_low", "spearman_high"]].itertuples(index=False)
        ],
        kendall=[
            _interval(v, lo, hi)
            for v, lo, hi in correlation[["kendall", "kendall_low", "kendall_high"]].itertuples(index=False)
        ],
    )[
        [
            "measure",
            "tau",
            "spearman",
            "kendall",
            "n_runs",
            "spearman_random_ties",
            "kendall_random_ties",
            "tau_ap",
            "note",
        ]
    ]
    note = "<p class='note'>Spearman's ρ and Kendall's τ-b with the official leaderboard, 95 % bootstrap " \
           "intervals over queries in brackets.</p>"  # fmt: skip
    return page(f"Agreement of {method} with the official leaderboard", note, table(shown))


def _interval(value, low, high) -> str:
    if pd.isna(value):
        return ""
    return f"{value:.3f}" if pd.isna(low) else f"{value:.3f} [{low:.3f}, {high:.3f}]"


def questions_page(questions: pd.DataFrame, uncovered: pd.DataFrame, tau, method: str, rows: int = 40) -> str:
    note = f"<p class='note'>At τ = {tau:g}. Worst first: bad questions (answered more often by judged " \
           "non-relevant than relevant passages), then those whose removal raises Kendall's τ the most " \
           f"(<code>loo_kendall_change</code>). The first {rows} of {len(questions)}; all in " \
           "<code>questions.tsv</code>.</p>"  # fmt: skip
    uncovered_note = f"<h2>Uncovered passages</h2><p class='note'>{len(uncovered)} judged-relevant passages " \
                     "answer no question: what the bank does not ask about.</p>"  # fmt: skip
    return page(
        f"Question diagnostics of {method}", note, table(questions.drop(columns="method").head(rows)),
        uncovered_note, table(uncovered.drop(columns="method").head(rows)),
    )  # fmt: skip


def impact_page(questions: pd.DataFrame, passages: pd.DataFrame, systems: pd.DataFrame, method: str) -> str:
    if questions.empty and passages.empty and systems.empty:
        return page(f"Bank-edit impact on {method}", "<p>No earlier bank to compare with: this is the first "
                    "evaluation with this bank, or it is the bank of the last one.</p>")  # fmt: skip
    return page(
        f"Bank-edit impact on {method}",
        f"<h2>Questions ({len(questions)})</h2>", table(questions.drop(columns="method")),
        f"<h2>Systems whose score or rank changed ({len(systems)})</h2>", table(systems.drop(columns="method"), 4),
        f"<h2>Passages whose EXAM-Label changed ({len(passages)})</h2>", table(passages.drop(columns="method")),
    )  # fmt: skip


def example_page(
    query_id: str, passages: pd.DataFrame, grades: pd.DataFrame, questions: pd.DataFrame, method: str
) -> str:
    """Each pooled passage of one topic with its grade for every question; extracted answers marked in the text."""
    texts = dict(zip(questions["question_id"], questions["question_text"]))
    mine = grades[grades["query_id"] == query_id]
    best = mine.groupby("passage_id")["rating"].max()
    parts = [f"<p class='note'>{len(passages)} pooled passages, best grade first; a grade cell shows the "
             "model's answer where there is one, and that answer is marked in the passage.</p>"]  # fmt: skip
    for passage in (
        passages.assign(best=passages["passage_id"].map(best))
        .sort_values(["best", "passage_id"], ascending=[False, True])
        .itertuples()
    ):
        graded = mine[mine["passage_id"] == passage.passage_id]
        answers = [a for a in graded["answer"].dropna() if len(a) > 2 and not a.replace(".", "").isdigit()]
        rows = "".join(
            f"<tr><td>{html.escape(texts.get(g.question_id, g.question_id))}</td><td class='grade'>{_grade(g)}</td>"
            f"<td>{html.escape(str(g.answer or ''))}</td></tr>"
            for g in graded.itertuples()
        )
        parts.append(
            f"<div class='passage'><b>{html.escape(passage.passage_id)}</b> ({html.escape(passage.origin)})"
            f"<p>{_marked(passage.text, answers)}</p><table><tr><th>question</th><th>grade</th><th>answer</th></tr>{rows}</table></div>"
        )
    return page(f"Worked example of {method}: topic {query_id}", *parts)


def _grade(row) -> str:
    if isinstance(row.error, str):
        return f"failed ({html.escape(row.error.split(':')[0])})"
    if not pd.isna(row.correct):
        return "correct" if row.correct else "wrong"
    return "" if pd.isna(row.rating) else str(int(row.rating))


def _marked(text: str, answers: list[str]) -> str:
    """The passage, escaped, with every occurrence of an extracted answer marked."""
    escaped = html.escape(text)
    for answer in sorted(set(answers), key=len, reverse=True):
        escaped = re.sub(
            re.escape(html.escape(answer)), lambda m: f"<mark>{m.group(0)}</mark>", escaped, flags=re.IGNORECASE
        )
    return escaped


def nrp_page(
    per_system: pd.DataFrame, selection: pd.DataFrame, agreement: pd.DataFrame | None, denominator: str
) -> str:
    from examflow.nrp.evaluate import DENOMINATORS

    formula = f"<p class='note'>Denominator {denominator}: NRP = {html.escape(DENOMINATORS[denominator])}.</p>"
    parts = ["<h2>Systems</h2>", formula, table(per_system.sort_values(["dimension", "nrp"], ascending=[True, False])),
             "<h2>Ranker selection (nDCG@10 over the judged documents)</h2>", table(selection)]  # fmt: skip
    if agreement is not None:
        parts += ["<h2>Agreement with the expert (Kendall's τ-b, t-based 95 % interval)</h2>",
                  table(agreement[agreement["query_id"] == "_mean_"])]  # fmt: skip
    return page("NRP", *parts)
