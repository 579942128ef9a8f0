"""The docs hold together: every link goes somewhere, every section the code cites exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "config/README.md", ROOT / ".test/README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_heading(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} is not there"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page.name}: {target}: no such heading"


def test_the_sections_the_code_cites_exist():
    sections = set(re.findall(r"^## (\d+)\. ", (ROOT / "docs/methods.md").read_text(), flags=re.MULTILINE))
    cited = set()
    for folder in ("src", "workflow", "tests", "benchmarks", "config"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".smk", ".md", ".yaml", ".rst", ""}:
                text = path.read_text(encoding="utf-8", errors="replace")
                assert "SPEC" + " §" not in text, f"{path}: cites a SPEC outside the repository"
                for first, last in re.findall(r"docs/methods\.md §(\d)(?:–§(\d))?", text):
                    cited.update({first, last} - {""})
    assert cited and cited <= sections, cited - sections


def test_the_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_cluster_pages_resources_are_the_registrys():
    """docs/cluster.md's table of what a grading job asks for, row by row against each back end's entry."""
    from examflow.registry import BACKENDS

    rows = {}
    for line in (ROOT / "docs/cluster.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[1].isdigit():
            rows |= {name: tuple(map(int, cells[1:])) for name in re.findall(r"`([a-z0-9_]+)`", cells[0])}
    assert rows == {name: (entry.threads, entry.mem_mb, entry.gpus) for name, entry in BACKENDS.items()}
