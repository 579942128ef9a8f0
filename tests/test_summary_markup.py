"""summary.md and summary.rst show every id, name and passage phrase as written, whatever markup it
looks like: rendered by a real CommonMark renderer (markdown-it-py, inline HTML on) and parsed by
docutils, which must report nothing at all."""

from __future__ import annotations

import io
from html.parser import HTMLParser

import pandas as pd
from docutils import nodes
from docutils.core import publish_doctree
from markdown_it import MarkdownIt

from examflow.report.board import Board
from examflow.summary import OfficialSource, run_summary

HOSTILE = ["oracle_", "*x*", "`x`", "|x|", "_x", "x__", "[1]_", "\\", "<script>", "<img src=x onerror=alert(1)>",
           "&amp;", "a|b\\|c", "**b**", "[l](http://x)", "~~s~~", "# h ##", "``", "x\\", "run_1", ".. x::"]  # fmt: skip
METHOD = "*m*_<b>"
PHRASE = "Ignore <script>alert(1)</script> the *question* | rate `5`"


def summary():
    board = pd.DataFrame(
        {"method": METHOD, "measure": [f"m{i:02d}" for i in range(len(HOSTILE))], "tau": 4.0, "run_id": HOSTILE,
         "kind": "system", "score": 0.5, "stderr": 0.0}
    )  # fmt: skip
    flagged = pd.DataFrame({"query_id": ["q<1>"], "passage_id": ["p_"], "origin": ["retrieved"], "phrase": [PHRASE]})
    return run_summary({}, flagged, "results/<x>_", {METHOD: Board.of(board, 4, None, [])})


class Elements(HTMLParser):
    """The elements of an HTML fragment, and the text of each table cell."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.cells: list[str] = []
        self.cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cells.append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_markdown_shows_hostile_names_as_text():
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(summary().markdown())
    elements = Elements(html)
    assert elements.tags <= {"h1", "h2", "p", "code", "table", "thead", "tbody", "tr", "th", "td"}, elements.tags
    cells = elements.cells
    best = cells[cells.index("score") + 1 :][1::3][: len(HOSTILE)]  # measure, best system, score
    assert best == HOSTILE
    assert cells[-5:] == ["q<1>", "p_", "retrieved", "–", PHRASE]  # a flag of no rule (written before rules)
    assert f"<h2>{METHOD.replace('<', '&lt;').replace('>', '&gt;')}: the best system" in html
    assert "<code>results/&lt;x&gt;_/summary.md</code>" in html


def test_rst_parses_without_a_message_and_shows_hostile_names_as_written():
    stream = io.StringIO()
    tree = publish_doctree(
        summary().rst(), settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream}
    )
    assert stream.getvalue() == "" and not list(tree.findall(nodes.system_message))
    rows = [[entry.astext() for entry in row.findall(nodes.entry)] for row in tree.findall(nodes.row)]
    assert [row[1] for row in rows[1 : len(HOSTILE) + 1]] == HOSTILE
    assert rows[-1] == ["q<1>", "p_", "retrieved", "–", PHRASE]
    titles = [title.astext() for title in tree.findall(nodes.title)]
    assert f"{METHOD}: the best system under each measure (τ = 4)" in titles
    assert "results/<x>_/summary.md" in tree.astext()


def test_the_summary_names_its_own_page_and_intervals_only_where_there_are_some():
    """Written by `examflow summary --out-summary sum.md`, it said its page was results/summary.md; with
    --bootstrap 0 it spoke of 95 % intervals that were not there (a stranger's trial)."""
    board = pd.DataFrame({"method": "m", "measure": "exam_cover", "tau": 4.0, "run_id": ["a", "b", "c"],
                          "kind": "system", "score": [0.5, 0.4, 0.3], "stderr": 0.0})  # fmt: skip
    official = {"a": 1.0, "b": 2.0, "c": 3.0}
    row = {"method": "m", "measure": "exam_cover", "tau": 4.0, "spearman": 1.0, "kendall": 1.0, "n_runs": 3}
    for low, said in ((float("nan"), False), (0.5, True)):
        bounds = {
            f"{s}_{end}": low if end == "low" else 1.0 for s in ("spearman", "kendall") for end in ("low", "high")
        }
        correlation = pd.DataFrame([row | bounds])
        boards = {"m": Board.of(board, 4, None, [], official, correlation)}
        text = run_summary({}, None, "results", boards, page="elsewhere/sum.md").markdown()
        assert "this page is `elsewhere/sum.md`" in text
        assert ("95 % bootstrap intervals over the queries" in text) == said
        assert ("Spearman's ρ 1.000 \\[0.500, 1.000\\]" in text) == said  # Markdown escapes the brackets
        assert ("95 % interval\\]" in text) == ("The intervals are percentile bootstrap intervals" in text) == said
    # an interval left empty says why in the headline sentence, not only in the table's note (a stranger's)
    note = "301 of 1,000 bootstrap replicates have no order to compare: more than 2.5%, so no 95% interval"
    correlation = pd.DataFrame([row | {f"{s}_{end}": float("nan") for s in ("spearman", "kendall") for end in
                                       ("low", "high")} | {"note": note}])  # fmt: skip
    text = run_summary({}, None, "results", {"m": Board.of(board, 4, None, [], official, correlation)}).markdown()
    assert f"Spearman's ρ 1.000, Kendall's τ 1.000 ({note})." in text


def test_a_headline_without_a_threshold_names_none():
    """`nuggets: the leaderboard by nugget_all (τ = 4)`: nugget scores have no τ (a stranger's trial)."""
    rows = {"method": "m", "run_id": ["a", "b"], "kind": "system", "score": [0.5, 0.4], "stderr": 0.0}
    for measure, tau, heading in (
        ("nugget_all", None, "by nugget_all\n"),
        ("exam_cover", 4.0, "by exam_cover (τ = 4)"),
    ):
        board = Board.of(pd.DataFrame({**rows, "measure": measure, "tau": tau}), 4, None, [])
        assert f"m: the leaderboard {heading}" in run_summary({}, None, "results", {"m": board}).markdown()


def test_the_judges_section_says_why_its_cells_are_empty_and_the_order_is_the_one_drawn():
    """One run with qrels: the judges' table was blank without a word; with bootstrap 0 it promised intervals;
    without an official leaderboard the figure's runs were said to be "in official order" and the missing
    correlation was said twice (a stranger's trial)."""
    board = pd.DataFrame({"method": "m", "measure": "exam_cover", "tau": 4.0, "run_id": ["a", "b"],
                          "kind": "system", "score": [0.5, 0.4], "stderr": 0.0})  # fmt: skip
    boards = {"m": Board.of(board, 4, None, [])}

    def judges(runs: int, value: float, low: float, official: OfficialSource | None = None) -> str:
        rows = [("m", "ndcg_cut_10", s, value, low, low, runs) for s in ("kendall", "spearman", "tau_ap", "rbo")]
        table = pd.DataFrame(rows, columns=["label_set", "measure", "statistic", "value", "low", "high", "runs"])
        return run_summary({}, None, "results", boards, judges=table, official=official).markdown()

    one = judges(1, float("nan"), float("nan"))
    assert "One run: there is no order to compare" in one and "bootstrap interval" not in one
    assert "One run" not in judges(0, float("nan"), float("nan"))  # a label set that judges nothing
    unbootstrapped = judges(3, 0.5, float("nan"))
    assert "No intervals: no bootstrap replicates" in unbootstrapped and "bootstrap interval," not in unbootstrapped
    full = judges(3, 0.5, 0.25)
    assert "Kendall's τ-b with its 95 % bootstrap interval" in full and "No intervals" not in full
    assert "hold the official leaderboard fixed" not in full  # a given official leaderboard is fixed in both
    computed = judges(3, 0.5, 0.25, OfficialSource("results/official/leaderboard.tsv", "ndcg_cut_10"))
    assert "recomputes the official leaderboard from the qrels on the queries it draws" in computed
    assert "runs in exam_cover order" in one and "official order" not in one
    assert one.count("No official leaderboard") == 1


def test_the_models_a_server_named_besides_the_one_asked_for_are_said_as_written():
    served = {"m": 3, "m-2026-01-01": 1, "<b>other</b>|*x*": 2}
    graded = {METHOD: {"pairs": 6, "errors": 0, "unparsable": 0, "method": {"backend": {"model": "m"}},
                       "served_models": served}}  # fmt: skip
    flagged = pd.DataFrame(columns=["query_id", "passage_id", "origin", "phrase"])
    doc = run_summary(graded, flagged, "results", {})
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(doc.markdown())
    said = next(p for p in html.split("<p>") if "asked its server" in p)
    assert said == (
        "Method *m*_&lt;b&gt; asked its server for model m; the server answered 2 of 6 as &lt;b&gt;other&lt;/b&gt;|*x*, "
        "1 of 6 as m-2026-01-01 (<code>served_models</code> in its grades' metadata).</p>\n"
    )
    stream = io.StringIO()
    tree = publish_doctree(doc.rst(), settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream})
    assert stream.getvalue() == ""
    assert (
        f"Method {METHOD} asked its server for model m; the server answered 2 of 6 as <b>other</b>|*x*, 1 of 6 as "
        "m-2026-01-01" in tree.astext()
    )
    # the model asked for alone: nothing to say
    graded[METHOD]["served_models"] = {"m": 6}
    assert "asked its server" not in run_summary(graded, flagged, "results", {}).markdown()
