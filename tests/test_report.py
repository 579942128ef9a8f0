"""The demo's report, rendered by `snakemake --report` and opened in a real headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import snakemake
from PIL import Image

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
    assert {f.name for f in figures} == {"leaderboard.png", "scatter.png", "grades.png", "kappa.png", "nrp.png"}
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


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_report_renders_in_a_headless_browser(demo, tmp_path):
    from playwright.sync_api import sync_playwright

    snakemake(demo, "--report", "results/demo/report.html")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto((demo / "results/demo/report.html").as_uri())
        page.get_by_text("examflow run summary").first.wait_for()
        page.screenshot(path=tmp_path / "first-page.png")
        assert "the best system under each measure" in page.inner_text("body")

        page.get_by_text("EXAM cosine").click()
        page.get_by_text("1 Leaderboard").click()
        page.get_by_text("leaderboard.png").click()
        page.locator("a[iconname=eye]").first.click()
        figure = page.locator("img[src^='data:image/png']")
        figure.wait_for()
        assert figure.evaluate("image => image.naturalWidth") > 300
        page.screenshot(path=tmp_path / "figure.png")

        page.get_by_text("leaderboard.html").click()
        page.locator("a[iconname=eye]").first.click()
        table = page.frame_locator("iframe").locator("table").first
        table.wait_for()
        assert "oracle" in table.inner_text() and "exam_cover" in table.inner_text()
        page.screenshot(path=tmp_path / "table.png")
        browser.close()
    for screenshot in ("first-page.png", "figure.png", "table.png"):
        assert is_a_picture(tmp_path / screenshot), screenshot


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
    assert not any(tmp_path.iterdir())
