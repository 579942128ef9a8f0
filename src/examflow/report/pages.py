"""The report's HTML pages: tables rounded for reading, and the worked example of one topic."""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Iterator
from typing import Protocol, cast

import pandas as pd

from examflow.registry import AGGREGATE, CRITERIA, KINDS, criterion_id
from examflow.report.board import Board, plain, score_text, with_interval

STYLE = """<style>
body{font-family:sans-serif;font-size:14px;margin:1em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f0f0f0}
tr.special td{color:#777;font-style:italic}mark{background:#ffe27a}.passage{margin:1em 0;padding:.5em;border:1px solid #ddd}
.grade{font-weight:bold}p.note{color:#555}</style>"""


def page(title: str, *parts: str) -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>{STYLE}</head>" \
           f"<body><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>\n"  # fmt: skip


def framed(document: str, rows: int) -> str:
    """A page of its own inside another (the report's first page, whose own scripts never run), as a data
    URL: base64 holds no markup, so nothing of the page is read as Jinja, reStructuredText or HTML there.
    Tall enough for `rows` table rows."""
    data = _base64(document.encode())
    return f"<iframe src='data:text/html;charset=utf-8;base64,{data}' style='height:{240 + 27 * rows}px'></iframe>"


def picture(png: bytes, alt: str) -> str:
    text = html.escape(alt, quote=True).replace("{", "&#123;").replace("}", "&#125;")  # no Jinja either
    return f"<img src='data:image/png;base64,{_base64(png)}' alt='{text}'>"


def _base64(data: bytes) -> str:
    """Base64 in lines of 76 characters: docutils refuses a line of more than 10,000, and a URL's line
    breaks are no part of it (WHATWG URL; base64 decoding skips them too)."""
    return base64.encodebytes(data).decode().strip()


def table(frame: pd.DataFrame, digits: int = 3) -> str:
    return frame.to_html(index=False, float_format=lambda v: f"{v:.{digits}f}", na_rep="", border=0)


# The leaderboard table's own sorting and search: a few lines of script in the page, so that the report
# stays one file that renders with no network. A click on a column name sorts by it (measures best first,
# a second click reverses); the search box keeps the rows whose run id holds the text.
BOARD_SCRIPT = """<script>
(() => {
  const table = document.getElementById("board"), body = table.tBodies[0], rows = Array.from(body.rows);
  const search = document.getElementById("search");
  search.addEventListener("input", () => {
    const text = search.value.trim().toLowerCase();
    for (const row of rows) row.hidden = !row.cells[0].textContent.toLowerCase().includes(text);
  });
  const heads = Array.from(table.tHead.rows[0].cells);
  for (const head of heads) head.addEventListener("click", () => {
    const column = head.cellIndex, numeric = head.dataset.type === "number";
    const was = head.getAttribute("aria-sort");
    const descending = was ? was === "ascending" : head.dataset.first === "descending";
    const key = (row) => numeric ? parseFloat(row.cells[column].dataset.value) : row.cells[column].textContent;
    const missing = (value) => numeric ? Number.isNaN(value) : value === "";
    body.append(...rows.slice().sort((a, b) => {
      const x = key(a), y = key(b);
      if (missing(x) || missing(y)) return missing(x) - missing(y);
      const order = numeric ? x - y : x.localeCompare(y);
      return descending ? -order : order;
    }));
    for (const other of heads) other.removeAttribute("aria-sort");
    head.setAttribute("aria-sort", descending ? "descending" : "ascending");
  });
})();
</script>"""
BOARD_STYLE = """<style>
table.board td,table.board th{white-space:nowrap}table.board td.number{text-align:right;font-variant-numeric:tabular-nums}
table.board thead th{position:sticky;top:0;cursor:pointer;z-index:1}table.board th small{font-weight:normal;color:#555}
table.board th[aria-sort=descending]::after{content:" ▼"}table.board th[aria-sort=ascending]::after{content:" ▲"}
table.board td:first-child{position:sticky;left:0;background:#fff}table.board td.best{font-weight:bold;background:#fff4c2}
tr.extra td:nth-child(2){color:#b35900}tr.pool td,tr.gold td{color:#777;font-style:italic}
div.scroll{overflow-x:auto}#search{margin:.3em 0;padding:2px 6px;width:16em}</style>"""


def leaderboard_page(board: Board) -> str:
    """Runs × measures at τ, `score ± stderr` on one line, headline measure first and runs in its order;
    each run's group; the best official run under each measure in bold; sortable and searchable."""
    runs = board.runs()
    heads = ["<th data-type='text' data-first='ascending'>run</th>",
             "<th data-type='text' data-first='ascending'>group</th>"]  # fmt: skip
    if board.official:
        heads.append("<th data-type='number' data-first='ascending'>official rank</th>")
    without_tau = set(board.without_tau())
    for measure in board.measures:
        agreement = board.agreement(measure)
        notes = [] if agreement is None else [f"ρ {plain(agreement['spearman'])}, τ-b {plain(agreement['kendall'])}"]
        notes += [EVERY_TAU] if measure in without_tau else []
        stats = "".join(f"<br><small>{note}</small>" for note in notes)
        sort = " aria-sort='descending'" if measure == board.headline else ""  # the rows' order
        heads.append(f"<th data-type='number' data-first='descending'{sort}>{html.escape(measure)}{stats}</th>")
    scores = {measure: board.scores(measure) for measure in board.measures}
    best = {measure: set(board.best(measure)) for measure in board.measures}
    body = []
    for run in runs:
        group = board.group(run)
        cells = [f"<td>{html.escape(run)}</td>", f"<td>{group}</td>"]
        if board.official:
            rank = board.official.get(run)
            cells.append(_number_cell(rank, "" if rank is None else f"{rank:g}"))
        for measure in board.measures:
            if run in scores[measure].index:
                # cast: one row per run and measure, so `loc` gives a row (a Series), not a frame
                score, stderr = cast(pd.Series, scores[measure].loc[run])
                text = score_text(score, stderr)
            else:
                score, text = None, ""
            cells.append(_number_cell(score, text, "best" if run in best[measure] else ""))
        body.append(f"<tr class='{group}'>{''.join(cells)}</tr>")
    table = f"<table id='board' class='board'><thead><tr>{''.join(heads)}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    search = "<input id='search' type='search' placeholder='search runs' aria-label='search runs'>"
    return page(f"Leaderboard of {board.method} at τ = {board.tau:g}", BOARD_STYLE, _board_note(board), search,
                f"<div class='scroll'>{table}</div>", BOARD_SCRIPT)  # fmt: skip


def _number_cell(value, text: str, css: str = "") -> str:
    data = "" if value is None or pd.isna(value) else repr(float(value))
    return f"<td class='{f'number {css}'.strip()}' data-value='{data}'>{text}</td>"


EVERY_TAU = "every τ"  # the mark of a measure that does not depend on τ


def _taus(values: pd.Series) -> list[str]:
    """τ as a whole number, or `every τ` for a measure without one (read back from a TSV, τ is a float)."""
    return [EVERY_TAU if pd.isna(tau) else f"{tau:g}" for tau in values]


def _without_tau_note(board: Board) -> str:
    """Which measures are the same at every τ, so that a reader does not look for them per τ."""
    measures = board.without_tau()
    if not measures:
        return ""
    names = ", ".join(f"<code>{html.escape(m)}</code>" for m in measures)
    verb = "does" if len(measures) == 1 else "do"
    return f" Marked <i>{EVERY_TAU}</i>: {names} {verb} not depend on τ (one value, computed once)."


_AGREEMENT_NOTE = " Under each measure: Spearman's ρ and Kendall's τ with the official leaderboard."


def _board_note(board: Board) -> str:
    groups = ("<b>official</b> runs are on the official leaderboard, <b>extra</b> runs are evaluated but not on it "
              "(generated responses, runs left off it)" if board.official else "<b>run</b>: every evaluated system "
              "(no official leaderboard)")  # fmt: skip
    return (f"<p class='note'>Mean over queries ± standard error, rounded to 3 decimals (exact values: "
            f"<code>leaderboard.tsv</code>). Runs in the order of the headline measure, "
            f"<code>{html.escape(board.headline)}</code>; {groups}; <b>pool</b> (<code>_overall_</code>) and "
            "<b>gold</b> (<code>_gold_</code>) are special rows, last. Bold: the best "
            f"{'official run' if board.official else 'run'} under each measure."
            f"{_AGREEMENT_NOTE if board.correlation is not None else ''} A click on a column name sorts by it."
            f"{_without_tau_note(board)}{_unscored_note(board)}</p>")  # fmt: skip


def _unscored_note(board: Board) -> str:
    """The official runs the table lacks, so that a reader does not take them for lost."""
    runs = board.unscored()
    if not runs:
        return ""
    names = ", ".join(f"<code>{html.escape(run)}</code>" for run in runs)
    return (f" Not in the table: official runs evaluated without a score ({names}; no query of theirs has a "
            "value to average), left out of the correlations too.")  # fmt: skip


def correlation_page(board: Board) -> str:
    """correlation.tsv of one method, its measures in the method's order, each at every τ."""
    correlation = board.correlation
    assert correlation is not None  # the report makes this page only with an official leaderboard
    position = {measure: i for i, measure in enumerate(board.measures)}
    correlation = correlation.assign(_order=correlation["measure"].map(position)).sort_values(
        ["_order", "measure", "tau"], kind="stable"
    )
    shown = {  # the correlations with their intervals; a measure's τ, or that it has none
        name: [with_interval(row, name) for _, row in correlation.iterrows()] for name in ("spearman", "kendall")
    }
    shown["tau"] = _taus(correlation["tau"])
    columns = ["measure", "tau", "spearman", "kendall", "n_runs", "spearman_random_ties", "kendall_random_ties",
               "tau_ap", "note"]  # fmt: skip
    note = "<p class='note'>Spearman's ρ and Kendall's τ-b with the official leaderboard, 95 % bootstrap " \
           f"intervals over queries in brackets; each measure at every τ.{_without_tau_note(board)}</p>"  # fmt: skip
    return page(f"Agreement of {board.method} with the official leaderboard", note,
                table(correlation.assign(**shown)[columns]))  # fmt: skip


def questions_page(
    questions: pd.DataFrame,
    uncovered: pd.DataFrame,
    tau,
    method: str,
    kind: str | None = None,
    rows: int = 40,
    judged: bool = True,
    top: int | None = None,
) -> str:
    """`judged`: whether there are qrels, without which no passage is judged relevant or not; `top`: the
    method's highest grade where not its kind's (an offline grader's quantile ladder of fewer rungs)."""
    spec = KINDS.get(kind or "")
    target = spec.target if spec else "question"  # a direct kind's one "question" is the query
    plural = {"query": "queries"}.get(target, f"{target}s")
    shown = f"The first {rows} of {len(questions)}" if len(questions) > rows else f"All {len(questions)}"
    note = f"<p class='note'>At τ = {tau:g}. Worst first: bad {plural} (answered more often by judged " \
           "non-relevant than relevant passages), then those whose removal raises Kendall's τ the most " \
           f"(<code>loo_kendall_change</code>). {shown}; all in <code>questions.tsv</code>.</p>"  # fmt: skip
    if not judged:
        note += "<p class='note'>No qrels (<code>inputs.qrels</code>): no passage is judged, so " \
                "<code>answered_relevant</code>, <code>answered_nonrelevant</code> and <code>bad</code> count " \
                "nothing, and there are no uncovered passages to list.</p>"  # fmt: skip
        return page(f"Question diagnostics of {method}", note, table(questions.drop(columns="method").head(rows)))
    judge = html.escape(kind or "")
    top = top if top is not None else spec.top if spec else None
    if top is not None and tau > top:  # the warned case: every judged-relevant passage
        why = f"are below τ: {judge} grades 0–{top}, so at τ = {tau:g} no passage reaches τ"
    elif target == "query":
        why = f"not graded τ or above by {judge}: where it and the assessors disagree"
    else:
        why = f"answer no {target} at τ: what the bank does not ask about"
    uncovered_note = f"<h2>Uncovered passages</h2><p class='note'>{len(uncovered)} judged-relevant passages {why}.</p>"
    return page(
        f"Question diagnostics of {method}", note, table(questions.drop(columns="method").head(rows)),
        uncovered_note, table(uncovered.drop(columns="method").head(rows)),
    )  # fmt: skip


def impact_page(questions: pd.DataFrame, passages: pd.DataFrame, systems: pd.DataFrame, method: str) -> str:
    if questions.empty and passages.empty and systems.empty:
        return page(f"Bank-edit impact on {method}", "<p>No earlier bank to compare with: this is the first "
                    "evaluation with this bank, or it is the bank of the last one.</p>")  # fmt: skip
    labels = {"old_label": "Int64", "new_label": "Int64"}  # empty where a passage has no label: whole numbers still
    passages = passages.astype({column: kind for column, kind in labels.items() if column in passages})
    if "tau" in systems:  # read back as floats (4.0000 at the page's 4 digits), empty for a measure without τ
        systems = systems.assign(tau=_taus(systems["tau"]))
    why = (
        "<p class='note'>No passage's label and no system's score moved; or the earlier bank was evaluated over "
        "other runs, passages, settings or grading, whose changes would be mixed in (the evaluation's log says "
        "which).</p>"
        if passages.empty and systems.empty
        else ""
    )
    return page(
        f"Bank-edit impact on {method}",
        f"<h2>Questions ({len(questions)})</h2>", table(questions.drop(columns="method")), why,
        f"<h2>Systems whose score or rank changed ({len(systems)})</h2>", table(systems.drop(columns="method"), 4),
        f"<h2>Passages whose EXAM-Label changed ({len(passages)})</h2>", table(passages.drop(columns="method")),
    )  # fmt: skip


class _Passage(Protocol):
    """A row of the pooled passages (query_id, passage_id, origin, text) as `itertuples` gives it: a cast,
    since pandas types cells as any scalar; each of these cells is a string."""

    passage_id: str
    origin: str
    text: str


def example_page(
    query_id: str,
    passages: pd.DataFrame,
    grades: pd.DataFrame,
    questions: pd.DataFrame,
    method: str,
    similarities: bool = False,
) -> str:
    """Each pooled passage of one topic with its grade for every question; extracted answers marked in the text.
    `similarities`: the answers are the offline grader's cosines, which mark nothing."""
    texts = dict(zip(questions["question_id"], questions["question_text"]))
    mine = grades[grades["query_id"] == query_id]
    best = mine.groupby("passage_id")["rating"].max()
    answered = (
        "beside a grade, the cosine similarity of question and passage that the grade is cut from (the offline "
        "grader's; it extracts no answer to mark)"
        if similarities
        else "a grade cell shows the model's answer where there is one, and that answer is marked in the passage"
    )
    parts = [f"<p class='note'>{len(passages)} pooled passages, best grade first; {answered}.</p>"]
    if mine.empty:  # report.example_query may name a topic the exam has no question for (the check warns)
        parts.append(f"<p class='note'>{html.escape(method)} graded nothing for topic {html.escape(query_id)}: the exam holds no "
                     "question for it, so its passages are shown without grades.</p>")  # fmt: skip
    for passage in cast(
        Iterator[_Passage],
        passages.assign(best=passages["passage_id"].map(best))
        .sort_values(["best", "passage_id"], ascending=[False, True])
        .itertuples(),
    ):
        graded = mine[mine["passage_id"] == passage.passage_id]
        answers = (
            []
            if similarities
            else [a for a in graded["answer"].dropna() if len(a) > 2 and not a.replace(".", "").isdigit()]
        )
        rows = "".join(
            f"<tr><td>{html.escape(_asked(texts, str(g.question_id)))}</td><td class='grade'>{_grade(g)}</td>"
            f"<td>{html.escape(str(g.answer or ''))}</td></tr>"
            for g in graded.itertuples()
        )
        parts.append(
            f"<div class='passage'><b>{html.escape(passage.passage_id)}</b> ({html.escape(passage.origin)})"
            f"<p>{_marked(passage.text, answers)}</p><table><tr><th>question</th><th>grade</th>"
            f"<th>{'cosine' if similarities else 'answer'}</th></tr>{rows}</table></div>"
        )
    return page(f"Worked example of {method}: topic {query_id}", *parts)


def _asked(texts: dict[str, str], target_id: str) -> str:
    """What a grade answers: the question's (or nugget's) text; for criteria-based judgments the criterion
    (`query[/facet]/criterion`), or the aggregation prompt's label; else the target's id."""
    if target_id in texts:
        return texts[target_id]
    last = target_id.rsplit("/", 1)[-1]
    if last == AGGREGATE:
        return "relevance: the aggregation of the four criteria (the label)"
    named = {criterion_id(name): name for name, _ in CRITERIA}
    return f"criterion {named[last]}" if last in named else target_id


def _grade(row) -> str:
    if isinstance(row.error, str):
        return f"failed ({html.escape(row.error.split(':')[0])})"
    if not pd.isna(row.correct):
        return "correct" if row.correct else "wrong"
    return "" if pd.isna(row.rating) else str(int(row.rating))


def _marked(text: str, answers: list[str]) -> str:
    """The passage, escaped, with every occurrence of an extracted answer marked, in one pass over the
    text: where two answers start at one place the longer wins (of two as long, the first alphabetically).
    One answer after another, a later one matched inside an earlier one's tags (`mark`) or an escaped
    character (`amp`), and answers of one length went in the set's order, which differs by process."""
    if not answers:
        return html.escape(text)
    ordered = sorted(set(answers), key=lambda answer: (-len(answer), answer))
    pattern = re.compile("|".join(map(re.escape, ordered)), flags=re.IGNORECASE)
    parts, end = [], 0
    for match in pattern.finditer(text):
        parts += [html.escape(text[end : match.start()]), f"<mark>{html.escape(match.group(0))}</mark>"]
        end = match.end()
    return "".join([*parts, html.escape(text[end:])])


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


def judges_page(agreement: pd.DataFrame, labels: pd.DataFrame) -> str:
    """Judge × measure × statistic (value and interval), and the labels' agreement with the official ones."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    names = zip(*(agreement[c].astype(str).tolist() for c in ("label_set", "measure", "statistic")))
    numbers = zip(*(agreement[c].astype(float).tolist() for c in ("value", "low", "high")))
    for (judge, measure, statistic), (value, low, high) in zip(names, numbers):
        shown = "" if math.isnan(value) else f"{value:.3f}"
        interval = "" if math.isnan(low) else f" [{low:.3f}, {high:.3f}]"
        cells.setdefault((judge, measure), {})[statistic] = shown + interval
    # why a value is empty (agreement.tsv's `note`; none in one written before the column), each reason once
    notes = agreement["note"].fillna("").astype(str) if "note" in agreement else pd.Series("", index=agreement.index)
    keys = [agreement[c].astype(str) for c in ("label_set", "measure")]
    why = notes.groupby(keys, sort=False).agg(lambda board: "; ".join(dict.fromkeys(filter(None, board))))
    wide = pd.DataFrame([{"label set": judge, "measure": measure, **by, "why empty": why[(judge, measure)]}
                         for (judge, measure), by in cells.items()])  # fmt: skip
    parts = [
        "<h2>Leaderboards against the official leaderboard</h2>",
        "<p class='note'>Each value with its 95 % bootstrap interval over queries; an empty one is not defined, "
        "and <em>why empty</em> says why.</p>",
        table(wide),
        "<h2>Labels against the official labels</h2>",
        table(labels),
    ]
    return page("Judges", *parts)
