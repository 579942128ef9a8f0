"""The files each step writes, and when: declared once, read by the Snakefile (the rules' outputs)
and by the commands (what they write).

Whether a file exists depends only on `Facts` that a configuration states before anything runs
(an official leaderboard is given, official qrels are given, ...), never on what the data turn out
to hold: a declared file is always written, and says so inside when there is nothing to put in it
(a κ of no pairs, a worked example of no passage). Rules and commands cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from fnmatch import fnmatchcase
from pathlib import Path


@dataclass(frozen=True)
class Facts:
    """What a configuration says about its inputs, known when the workflow is parsed."""

    official: bool = False  # an official leaderboard is given: correlations
    judgments: bool = False  # official qrels are given: agreement of EXAM-Labels with them
    facets: bool = False  # graded targets carry subtopic (facet) ids: one qrels query per facet
    wilcoxon: bool = False  # NRP: pairs of systems to test
    expert: bool = False  # NRP: an expert's ranking

    def names(self) -> list[str]:
        """The facts that hold, as the commands' `--facts` option takes them."""
        return [fact.name for fact in fields(self) if getattr(self, fact.name)]

    @classmethod
    def of(cls, names: list[str] | None) -> Facts:
        return cls(**dict.fromkeys(names or [], True))


FACT_NAMES = [fact.name for fact in fields(Facts)]


@dataclass(frozen=True)
class File:
    path: str  # under the step's folder; `{method}` is the method's name
    when: str | None = None  # the fact it needs; None: always written

    def wanted(self, facts: Facts) -> bool:
        return self.when is None or getattr(facts, self.when)


@dataclass(frozen=True)
class ReportFile(File):
    caption: str = ""  # workflow/report/{caption}.rst
    section: str = ""  # the report's subcategory


# `examflow pool`, into pool/: the tables the steps read, and two for people to read (TSV).
POOL = {
    "passages": File("passages.parquet"),
    "rankings": File("rankings.parquet"),
    "queries": File("queries.parquet"),
    "judgments": File("judgments.parquet"),
    "summary": File("summary.tsv"),
    "flagged": File("flagged.tsv"),
    "dropped": File("dropped.tsv"),
}

# `examflow evaluate`, into eval/{method}/.
EVALUATION = {
    "leaderboard": File("leaderboard.tsv"),
    "per_query": File("per_query.tsv"),
    "questions": File("questions.tsv"),
    "uncovered": File("uncovered.tsv"),
    "impact_questions": File("impact_questions.tsv"),
    "impact_passages": File("impact_passages.tsv"),
    "impact_systems": File("impact_systems.tsv"),
    "correlation": File("correlation.tsv", "official"),
    "kappa": File("kappa.tsv", "judgments"),
    "agreement": File("agreement.tsv", "judgments"),
    "qrels": File("qrels/{method}.qrels"),
    "facets_qrels": File("qrels/{method}.facets.qrels", "facets"),
}

# `examflow report --method`, into report/{method}/.
REPORT = {
    "leaderboard_png": ReportFile("leaderboard.png", None, "leaderboard", "1 Leaderboard"),
    "leaderboard_html": ReportFile("leaderboard.html", None, "leaderboard_table", "1 Leaderboard"),
    "scatter_png": ReportFile("scatter.png", "official", "scatter", "2 Agreement"),
    "correlation_html": ReportFile("correlation.html", "official", "correlation_table", "2 Agreement"),
    "grades_png": ReportFile("grades.png", None, "grades", "3 Grades"),
    "kappa_png": ReportFile("kappa.png", "judgments", "kappa", "3 Grades"),
    "questions_html": ReportFile("questions.html", None, "questions", "4 Questions"),
    "impact_html": ReportFile("impact.html", None, "impact", "5 Bank edits"),
    "example_html": ReportFile("example.html", None, "example", "6 Worked example"),
}

# `examflow compare-judges`, into judges/ (docs/judges.md).
JUDGES_FOLDER = "judges"  # under results_dir
JUDGES = {
    "leaderboards": File("leaderboards.tsv"),
    "agreement": File("agreement.tsv"),
    "labels": File("labels.tsv"),
    "confusion": File("confusion.tsv"),
    "votes": File("votes.tsv"),
    "autojudge": File("autojudge.eval.txt"),  # the label sets' leaderboards as TREC AutoJudge reads them
}

# `examflow report --judges`, into report/judges/.
JUDGES_REPORT = {
    "judges_png": ReportFile("judges.png", None, "judges", "Judges"),
    "judges_html": ReportFile("judges.html", None, "judges_table", "Judges"),
}

# `examflow nrp`, into nrp/.
NRP = {
    "per_answer": File("per_answer.tsv"),
    "per_system": File("per_system.tsv"),
    "ranker_selection": File("ranker_selection.tsv"),
    "wilcoxon": File("wilcoxon.tsv", "wilcoxon"),
    "expert_agreement": File("expert_agreement.tsv", "expert"),
}

# `examflow report --nrp`, into report/nrp/.
NRP_REPORT = {
    "nrp_png": ReportFile("nrp.png", None, "nrp", "NRP"),
    "nrp_html": ReportFile("nrp.html", None, "nrp_table", "NRP"),
}


# The steps whose files a command's --out folder holds: it writes them, or removes those not wanted.
FOLDERS: dict[str, tuple[Mapping[str, File], ...]] = {
    "pool": (POOL,),
    "evaluate": (EVALUATION,),
    "compare-judges": (JUDGES,),
    "nrp": (NRP,),
    "report": (REPORT, JUDGES_REPORT, NRP_REPORT),
}


def owned(command: str, relative: str) -> bool:
    """Whether `command`'s --out folder writes or removes the file at `relative` under it (any method's)."""
    steps = FOLDERS[command]
    return any(fnmatchcase(relative, file.path.format(method="*")) for step in steps for file in step.values())


def wanted(step: Mapping[str, File], facts: Facts) -> dict[str, File]:
    """The files of a step that these facts ask for, by name."""
    return {name: file for name, file in step.items() if file.wanted(facts)}


def paths(step: Mapping[str, File], facts: Facts, method: str = "{method}") -> dict[str, str]:
    """The wanted files' paths under the step's folder, by name."""
    return {name: file.path.format(method=method) for name, file in wanted(step, facts).items()}


def declared(step: Mapping[str, File], facts: Facts, methods=("",)) -> set[str]:
    """The paths, under the step's folder, of the files these facts ask for, for each method."""
    return {path for method in methods for path in paths(step, facts, method).values()}


def remove_unwanted(step: Mapping[str, File], facts: Facts, folder: str | Path, methods=("",)) -> None:
    """Remove the step's files that these facts do not ask for from its folder: one an earlier run left
    there (with an expert ranking, an official leaderboard) would read as this run's."""
    every = {file.path.format(method=method) for method in methods for file in step.values()}
    for path in every - declared(step, facts, methods):
        (Path(folder) / path).unlink(missing_ok=True)


def check_written(step: Mapping[str, File], facts: Facts, written, methods=("",)) -> None:
    """A command writes exactly the files its step declares for these facts; anything else is a bug."""
    expected = declared(step, facts, methods)
    if set(written) != expected:
        raise AssertionError(f"wrote {sorted(written)}, declared {sorted(expected)} (examflow.outputs)")
