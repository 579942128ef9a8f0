"""The report, rendered by `snakemake --report` and opened in a real headless Chromium at 1280 pixels: on
the demo and on a collection of 40 runs of graded quality made here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, snakemake, write
from PIL import Image

from examflow.io.tables import read_tsv

pytestmark = pytest.mark.workflow

CHROMIUM = shutil.which("chromium")
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip


def is_a_picture(path: Path, smallest: int = 300) -> bool:
    """A PNG of reasonable size whose pixels are not all alike."""
    with Image.open(path) as image:
        width, height = image.size
        extrema = image.convert("L").getextrema()
    return width >= smallest and height >= smallest and extrema[1] - extrema[0] > 100


def test_every_figure_is_a_real_picture(demo):
    figures = sorted((demo / "results/demo/report").rglob("*.png"))
    assert {f.name for f in figures} == {
        "leaderboard.png",
        "scatter.png",
        "grades.png",
        "kappa.png",
        "nrp.png",
        "judges.png",
    }
    for figure in figures:
        assert figure.stat().st_size > 10_000 and is_a_picture(figure), figure


def test_the_summary_says_what_happened_in_words(demo):
    summary = (demo / "results/demo/summary.md").read_text()
    board = pd.read_csv(demo / "results/demo/eval/cosine/leaderboard.tsv", sep="\t")
    best_map = board[(board["measure"] == "map") & (board["tau"] == 4)].iloc[0]  # sorted best first
    assert best_map["kind"] == "system"
    correlation = pd.read_csv(demo / "results/demo/eval/cosine/correlation.tsv", sep="\t")
    row = correlation[(correlation["measure"] == "map") & (correlation["tau"] == 4)].iloc[0]
    line = (
        f"| map | {best_map['run_id']} | {best_map['score']:.3f} | {row['spearman']:.3f} \\[{row['spearman_low']:.3f}, "
    )
    assert line in summary
    assert "| cosine | 3345 | 0 | – | 0 |" in summary
    assert "Method cosine grades similarities by pool quantiles (0.8, 0.85, 0.9, 0.95, 0.98)." in summary
    record = json.loads((demo / "results/demo/provenance.json").read_text())
    assert record["methods"]["cosine"]["similarity_grades"] == {
        "calibration": "pool",
        "quantiles": [0.8, 0.85, 0.9, 0.95, 0.98],
    }
    assert "| combined | embedding+bm25 | medlm-large / expert |" in summary
    from docutils.core import publish_parts

    html = publish_parts((demo / "results/demo/summary.rst").read_text(), writer="html",
                         settings_overrides={"report_level": 2, "halt_level": 2})["html_body"]  # fmt: skip
    assert "<table" in html and "examflow run summary" in html


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")

# What a person sees of the landing page's table, read in the browser: the visible runs in order, the
# measures, the runs in bold under each measure, and every score cell whose text takes more than one line.
READ_TABLE = """table => {
  const heads = Array.from(table.tHead.rows[0].cells).map(cell => cell.firstChild.textContent.trim());
  const rows = Array.from(table.tBodies[0].rows).filter(row => !row.hidden);
  const best = Object.fromEntries(heads.map((head, i) =>
    [head, rows.filter(row => row.cells[i].classList.contains("best")).map(row => row.cells[0].textContent)]));
  const wrapped = Array.from(table.querySelectorAll("td.number")).filter(cell => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    return range.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(cell).fontSize);
  }).map(cell => cell.textContent);
  return {heads, runs: rows.map(row => row.cells[0].textContent), best, wrapped,
          cells: table.querySelectorAll("td.number").length, width: table.getBoundingClientRect().width};
}"""


def leaderboard_rows(results: Path, method: str, measure: str, tau: float) -> pd.DataFrame:
    """leaderboard.tsv's rows of one measure at τ, in the file's order (best first, special rows last)."""
    board = read_tsv(results / "eval" / method / "leaderboard.tsv", tau=float)
    return board[(board["measure"] == measure) & (board["tau"] == tau)]


def best_official(rows: pd.DataFrame, official: dict) -> list[str]:
    mine = rows[rows["run_id"].isin(official)]
    return mine.loc[mine["score"] == mine["score"].max(), "run_id"].tolist()


def open_report(playwright, report: Path):
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.get_by_text("examflow run summary").first.wait_for()
    return browser, page


def check_landing(page, results: Path, method: str, official: dict, tau: float, screenshot: Path) -> dict:
    """The first page opens on the headline leaderboard: the order and the best official run of
    leaderboard.tsv, no score on two lines, the figure beside it; returns what the table showed."""
    rows = leaderboard_rows(results, method, "exam_cover", tau)
    table = page.frame_locator("div.examflow-landing iframe").first.locator("table#board")
    shown = table.evaluate(READ_TABLE)
    assert shown["heads"][:5] == ["run", "group", "official rank", "exam_cover", "n_exam_cover"]
    assert shown["runs"] == rows["run_id"].tolist()
    assert shown["best"]["exam_cover"] == best_official(rows, official)
    assert shown["cells"] > 100 and shown["wrapped"] == []
    figure = page.locator("div.examflow-landing img")
    assert figure.evaluate("image => image.naturalWidth") > 600 and figure.is_visible()
    page.screenshot(path=screenshot)
    assert is_a_picture(screenshot)
    return shown


def check_report_command(result: subprocess.CompletedProcess, report: Path) -> None:
    """`snakemake --report` said nothing of docutils or Snakemake warnings, and wrote a report of sane size."""
    for word in ("(WARNING/", "(ERROR/", "(SEVERE/", "System Message", "line-length"):
        assert word not in result.stderr and word not in report.read_text(errors="replace"), word
    assert report.stat().st_size < 8 * 2**20


@needs_chromium
def test_the_report_opens_on_the_headline_leaderboard(demo, tmp_path):
    from playwright.sync_api import sync_playwright

    results = demo / "results/demo"
    check_report_command(snakemake(demo, "--report", "results/demo/report.html"), results / "report.html")
    official = json.loads((demo / "resources/demo/official_leaderboard.json").read_text())
    rows = leaderboard_rows(results, "cosine", "exam_cover", 4)
    correlation = read_tsv(results / "eval/cosine/correlation.tsv", tau=float)
    agreement = correlation[(correlation["measure"] == "exam_cover") & (correlation["tau"] == 4)].iloc[0]
    with sync_playwright() as playwright:
        browser, page = open_report(playwright, results / "report.html")
        text = page.inner_text("div.examflow-landing >> xpath=ancestor::div[contains(@class, 'prose')]")
        assert f"Spearman's ρ {agreement['spearman']:.3f} [{agreement['spearman_low']:.3f}" in text
        best = rows[rows["run_id"].isin(best_official(rows, official))].iloc[0]
        assert f"Best official run: dense-strong, oracle ({best['score']:.3f} ± {best['stderr']:.3f})" in text
        assert "not on the official leaderboard (never named best): rag-thorough, rag-brief, rag-offtopic" in text
        shown = check_landing(page, results, "cosine", official, 4, tmp_path / "landing.png")
        assert shown["heads"][5:8] == ["map", "ndcg_cut_10", "ndcg_cut_20"]  # evaluation.measures' order

        # A click on a column name sorts by it, best first; the search box keeps the matching runs.
        frame = page.frame_locator("div.examflow-landing iframe").first
        frame.locator("th", has_text="map").first.click()
        scores = leaderboard_rows(results, "cosine", "map", 4).set_index("run_id")["score"]
        expected = sorted(shown["runs"], key=lambda run: (run not in scores, -scores.get(run, 0)))
        assert frame.locator("table#board").evaluate(READ_TABLE)["runs"] == expected
        frame.locator("#search").fill("RAG")
        assert frame.locator("table#board").evaluate(READ_TABLE)["runs"] == [
            "rag-thorough",
            "rag-brief",
            "rag-offtopic",
        ]

        # The same table and figure in the report's own pages.
        menu = page.locator("nav")
        menu.get_by_text("EXAM cosine").click()
        menu.get_by_text("1 Leaderboard").click()
        menu.get_by_text("leaderboard.png").click()
        page.locator("a[iconname=eye]").first.click()
        figure = page.locator("img[src^='data:image/png']")
        figure.wait_for()
        assert figure.evaluate("image => image.naturalWidth") > 600
        page.screenshot(path=tmp_path / "figure.png")
        menu.get_by_text("leaderboard.html").click()
        page.locator("a[iconname=eye]").first.click()
        table = page.frame_locator("iframe").locator("table#board")
        table.wait_for()
        shown = table.evaluate(READ_TABLE)
        assert shown["runs"] == rows["run_id"].tolist() and shown["wrapped"] == []
        page.screenshot(path=tmp_path / "table.png")

        # The judges' section: each judge's agreement with the official leaderboard, as judges/ holds it.
        judges = read_tsv(results / "judges/agreement.tsv").set_index(["label_set", "measure", "statistic"])
        tau = judges.loc[("second-assessor", "ndcg_cut_10", "kendall")]
        page.goto((results / "report.html").as_uri())  # back to the first page and its menu of sections
        page.get_by_text("examflow run summary").first.wait_for()
        menu.get_by_text("Judges", exact=True).click()
        menu.get_by_text("judges.html").click()
        page.locator("a[iconname=eye]").first.click()
        cells = page.frame_locator("iframe").locator("table").first
        cells.wait_for()
        assert f"{float(tau['value']):.3f} [{float(tau['low']):.3f}, {float(tau['high']):.3f}]" in cells.inner_text()
        browser.close()
    for screenshot in ("landing.png", "figure.png", "table.png"):
        assert is_a_picture(tmp_path / screenshot), screenshot


def forty_runs(project: Path) -> dict:
    """A collection of 40 runs of graded quality over the demo's small corpus (its queries, qrels, bank,
    responses and gold articles): run i ranks each query's judged passages and ten others by
    judgment × (1 − i/40) plus noise, so that quality falls with i; the official leaderboard ranks them
    so. Graded by the offline embedding grader. Returns the config."""
    import random

    demo = project / "resources/demo"
    judged: dict[str, dict[str, int]] = {}
    for line in (demo / "qrels.txt").read_text().splitlines():
        query, _, doc, grade = line.split()
        page = judged.setdefault(query.split("/")[0], {})
        page[doc] = max(page.get(doc, 0), int(grade))
    corpus = [line.split("\t")[0] for line in (demo / "corpus.tsv").read_text().splitlines()]
    names = [
        f"team{i % 6}-{('bm25-rm3', 'dense-ance', 'splade-pp', 'monot5-rerank')[i % 4]}-{i:02d}" for i in range(40)
    ]
    for i, name in enumerate(names):
        rng, lines = random.Random(i), []
        for query, grades in sorted(judged.items()):
            others = rng.sample([doc for doc in corpus if doc not in grades], 10)
            scored = {doc: grades.get(doc, 0) * (1 - i / 40) + rng.random() for doc in [*grades, *others]}
            ranked = sorted(scored, key=lambda doc: (-scored[doc], doc))
            lines += [f"{query} Q0 {doc} {rank} {scored[doc]:.4f} {name}\n" for rank, doc in enumerate(ranked, 1)]
        write(project / "forty/runs" / f"{name}.run", "".join(lines))
    write(project / "forty/official.json", json.dumps({name: rank for rank, name in enumerate(names, 1)}))
    config = {
        "results_dir": "results/forty",
        "inputs": {"queries": "resources/demo/queries.jsonl", "runs": ["forty/runs/*.run"],
                   "corpus": "resources/demo/corpus.tsv", "qrels": "resources/demo/qrels.txt",
                   "responses": "resources/demo/responses.jsonl", "gold_articles": "resources/demo/gold_articles.jsonl",
                   "bank": "resources/demo/bank.jsonl", "official_leaderboard": "forty/official.json"},
        "grading": {"shards": 1, "methods": [{"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}]},
        "evaluation": {"bootstrap": 200},
    }  # fmt: skip
    write(project / "forty.yaml", json.dumps(config))
    return config


@needs_chromium
def test_forty_runs_stay_readable(project, tmp_path):
    from playwright.sync_api import sync_playwright

    config = forty_runs(project)
    snakemake(project, "--configfile", "forty.yaml")
    results = project / "results/forty"
    report = snakemake(project, "--report", "results/forty/report.html", "--configfile", "forty.yaml")
    check_report_command(report, results / "report.html")
    official = json.loads((project / "forty/official.json").read_text())
    with sync_playwright() as playwright:
        browser, page = open_report(playwright, results / "report.html")
        shown = check_landing(page, results, "cosine", official, 4, tmp_path / "landing.png")
        assert len(shown["runs"]) == 40 + 3 + 2  # the runs, the responses, the pool and gold rows
        assert {run for run in shown["runs"] if not run.startswith("team")} == {
            "rag-thorough", "rag-brief", "rag-offtopic", "_overall_", "_gold_"
        }  # fmt: skip
        page.evaluate("document.querySelector('div.examflow-landing img').scrollIntoView()")
        page.screenshot(path=tmp_path / "figure.png")
        browser.close()
    assert is_a_picture(tmp_path / "figure.png")
    # Small multiples: one panel per measure (9 in 2 rows of 5), a row of at least 14 pixels per run.
    with Image.open(results / "report/cosine/leaderboard.png") as figure:
        width, height = figure.size
    assert width <= 1280 and height >= 2 * 45 * 14, (width, height)
    assert config["evaluation"]["bootstrap"] == 200


def test_a_threshold_the_evaluation_does_not_hold_is_refused(demo, tmp_path):
    """`examflow report` and `summary` by hand at a τ the evaluation did not compute would draw empty
    figures and tables: one line and exit 2 instead."""
    results = demo / "results/demo"
    common = ["--results", str(results), "--config-digest", "x", "--out-summary", str(tmp_path / "s.md")]
    commands = {
        "report": ["report", "--method", "cosine", "--eval", str(results / "eval/cosine"), "--grades",
                   str(results / "grades/cosine.parquet"), "--tau", "2", "--out", str(tmp_path / "r")],
        "summary": ["summary", "--eval", str(results / "eval/cosine"), "--tau", "2", *common,
                    "--out-provenance", str(tmp_path / "p.json")],
    }  # fmt: skip
    for name, words in commands.items():
        done = subprocess.run([sys.executable, "-m", "examflow", *words], capture_output=True, text=True)
        assert done.returncode == 2 and "--tau 2:" in done.stderr and "Traceback" not in done.stderr, name

    # A method's own τ, as the workflow gives each: a τ the evaluation holds for it, of a method it evaluated
    def summary(tau: str, *words: str) -> subprocess.CompletedProcess:
        command = ["summary", "--eval", str(results / "eval/cosine"), "--tau", tau, *common, "--out-provenance",
                   str(tmp_path / "p.json"), *words]  # fmt: skip
        return subprocess.run([sys.executable, "-m", "examflow", *command], capture_output=True, text=True)

    for given, error in (("cosine=2", "--method-tau cosine=2: "), ("other=4", "--method-tau: 'other': no such method"),
                         ("cosine=x", "--method-tau 'cosine=x': expected NAME=VALUE")):  # fmt: skip
        done = summary("4", "--method-tau", given)
        assert done.returncode == 2 and error in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not any(tmp_path.iterdir())
    own = summary("2", "--method-tau", "cosine=3")  # --tau 2 alone is refused above
    assert own.returncode == 0, own.stderr
    written = (tmp_path / "s.md").read_text()
    assert "cosine: the best" in written and "under each measure (τ = 3)" in written, written


def test_the_summary_embeds_the_report_s_figure_and_draws_the_same_without_it(demo, tmp_path):
    """The run's summary takes each method's leaderboard figure from its report (drawing it again took a
    second and a half a method); by hand, without `--figures`, it draws the same picture, to the byte."""
    import base64

    from examflow.registry import DEFAULT_MEASURES

    def pictures(page: Path) -> list[bytes]:
        return [
            base64.b64decode(data) for data in re.findall(r"image/png;base64,([A-Za-z0-9+/=\s]+)'", page.read_text())
        ]

    results = demo / "results/demo"
    figure = (results / "report/cosine/leaderboard.png").read_bytes()
    assert pictures(results / "summary.rst") == [figure]
    command = [sys.executable, "-m", "examflow", "summary", "--eval", str(results / "eval/cosine"), "--results",
               str(results), "--config-digest", "x", "--out-provenance", str(tmp_path / "p.json"), "--official",
               str(demo / "resources/demo/official_leaderboard.json"), "--tau", "4", "--measures",
               *DEFAULT_MEASURES]  # fmt: skip
    outputs = ["--out-summary", str(tmp_path / "s.md"), "--out-rst", str(tmp_path / "s.rst")]
    drawn = subprocess.run([*command, *outputs], capture_output=True, text=True)
    assert drawn.returncode == 0, drawn.stderr
    assert pictures(tmp_path / "s.rst") == [figure]
    for given, error in ((results / "eval/cosine/leaderboard.tsv", "not a PNG image"),
                         (tmp_path / "cosine/leaderboard.png", "cannot read the figure: No such file")):  # fmt: skip
        refused = subprocess.run([*command, "--out-summary", str(tmp_path / "t.md"), "--figures", str(given)],
                                 capture_output=True, text=True)  # fmt: skip
        assert refused.returncode == 2 and f"examflow: error: {given}: {error}" in refused.stderr, refused.stderr
    copy = tmp_path / "again/cosine/leaderboard.png"  # another report folder, the same method
    write(copy, figure)
    figures = ["--figures", str(results / "report/cosine/leaderboard.png"), str(copy)]
    twice = subprocess.run(
        [*command, "--out-summary", str(tmp_path / "t.md"), *figures], capture_output=True, text=True
    )
    assert twice.returncode == 2 and "--figures: two figures of method 'cosine'" in twice.stderr, twice.stderr
    assert not (tmp_path / "t.md").exists()


@pytest.mark.parametrize("facts", [[], ["official", "judgments", "expert"]])
def test_the_captions_say_only_what_the_configuration_gives(facts):
    """Without an official leaderboard the captions spoke of official order, official runs and correlations,
    the NRP one of an expert none was given, and docutils made `nDCG@10` a mailto link (a stranger's trial).
    Rendered as Snakemake renders them: Jinja with the job's `snakemake`, then docutils."""
    from types import SimpleNamespace

    from docutils.core import publish_parts
    from jinja2 import Template

    job = SimpleNamespace(params=SimpleNamespace(facts=facts), wildcards=SimpleNamespace(method="m"),
                          config={"report": {"tau": None, "method_tau": {"m": 3, "n": 4}}})  # fmt: skip
    captions = {
        name: publish_parts(Template((ROOT / f"workflow/report/{name}.rst").read_text()).render(snakemake=job),
                            writer="html", settings_overrides={"report_level": 2, "halt_level": 2})["body"]
        for name in ("leaderboard", "leaderboard_table", "nrp_table")
    }  # fmt: skip
    text = " ".join(captions.values())
    assert "mailto" not in text and "nDCG&#64;10</tt>" in captions["nrp_table"]  # literal text, no e-mail link
    assert "at τ = 3 " in captions["leaderboard"] and "at τ = 3, " in captions["leaderboard_table"]  # m's own
    official = bool(facts)
    assert ("official order" in captions["leaderboard"]) == official
    assert ("Spearman" in captions["leaderboard"]) == official
    assert ("the best official run under each measure in bold" in captions["leaderboard_table"]) == official
    assert ("headline measure's order" in captions["leaderboard"]) == (not official)
    assert ("agreement with the expert" in captions["nrp_table"]) == official


def test_the_demo_s_worked_example_shows_the_offline_grader_s_cosines(demo):
    """The demo grades offline: its example page's third column is the cosine, which marks nothing."""
    example = (demo / "results/demo/report/cosine/example.html").read_text()
    assert "<th>cosine</th>" in example and "<mark>" not in example
