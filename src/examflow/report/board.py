"""One method's leaderboard at τ as the report and the summary show it.

Its measures come in the method's order, headline first (`examflow.registry.measure_order`); its runs
are marked as official (on the official leaderboard), extra (evaluated but not on it: generated
responses, runs left off it) or special (`_overall_`, the pool; `_gold_`, the gold articles); "best"
is the best official run, so that a response or the pool never takes the place of a system the
official leaderboard ranks. Without an official leaderboard every evaluated system is a `run`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from examflow.registry import measure_order
from examflow.ties import tie_keys

OFFICIAL, EXTRA, RUN = "official", "extra", "run"  # the groups of systems; special rows keep their kind


@dataclass(frozen=True)
class Board:
    method: str
    rows: pd.DataFrame  # leaderboard.tsv's rows at τ and of the measures without τ, in the file's order
    tau: float
    measures: list[str]  # headline first
    official: dict[str, float] | None = None  # official ranks by run
    correlation: pd.DataFrame | None = None  # correlation.tsv's rows of this method

    @classmethod
    def of(cls, leaderboard: pd.DataFrame, tau: float, kind: str | None, measures, official=None, correlation=None):
        """`leaderboard`: one method's rows of leaderboard.tsv; `kind`: its method kind; `measures`: the
        configured EXAM-Qrels measures."""
        rows = leaderboard[(leaderboard["tau"] == tau) | leaderboard["tau"].isna()].reset_index(drop=True)
        order = measure_order(kind, measures, rows["measure"].unique())
        method = str(leaderboard["method"].iat[0]) if "method" in leaderboard and len(leaderboard) else ""
        return cls(method, rows, tau, order, official or None, correlation)

    @property
    def headline(self) -> str:
        return self.measures[0]

    def runs(self) -> list[str]:
        """Every run in the order of the headline measure in leaderboard.tsv (best first, special rows last)."""
        ordered = self.rows.loc[self.rows["measure"] == self.headline, "run_id"].tolist()
        return ordered + sorted(set(self.rows["run_id"]) - set(ordered))

    def figure_runs(self) -> list[str]:
        """Official runs in official order (ties by id), then the others in the headline order."""
        ranks = self.official  # a local, which stays narrowed to a dict in the key function
        if not ranks:
            return self.runs()
        official = sorted((r for r in self.runs() if r in ranks), key=lambda r: (ranks[r], r))
        return official + [r for r in self.runs() if r not in ranks]

    def group(self, run: str) -> str:
        return self.groups.get(run) or self._group(run, "system")

    @cached_property
    def groups(self) -> dict[str, str]:
        """Every run's group, worked out once: pages ask for it once a cell."""
        return {run: self._group(run, kind) for run, kind in zip(self.rows["run_id"], self.rows["kind"])}

    def _group(self, run: str, kind: str) -> str:
        if kind != "system":
            return kind
        if self.official is None:
            return RUN
        return OFFICIAL if run in self.official else EXTRA

    def extra_runs(self) -> list[str]:
        return [run for run in self.runs() if self.group(run) == EXTRA]

    def official_runs(self) -> list[str]:
        return [run for run in self.runs() if self.group(run) == OFFICIAL]

    def unscored(self) -> list[str]:
        """Official runs with no row: evaluated, yet no measure gives them a score (under `present`, none of
        their queries has questions); `examflow report` drops the official runs that were not evaluated."""
        return sorted(set(self.official or {}) - set(self.rows["run_id"]))

    def scores(self, measure: str) -> pd.DataFrame:
        """score and stderr of every run under `measure`, indexed by run id."""
        return self.rows[self.rows["measure"] == measure].set_index("run_id")[["score", "stderr"]]

    def best(self, measure: str) -> list[str]:
        """The best official runs under `measure` (all of a tie; every system without an official
        leaderboard), in leaderboard order; none where they all tie (`all_tied`)."""
        top, candidates = self._top(measure)
        return [] if len(top) == candidates > 1 else top

    def all_tied(self, measure: str) -> list[str]:
        """The runs `best` would choose from, where every one has the same score: no order, none best."""
        top, candidates = self._top(measure)
        return top if len(top) == candidates > 1 else []

    def _top(self, measure: str) -> tuple[list[str], int]:
        """The official runs (systems) of the top score under `measure`, and how many there are in all."""
        candidates = self.rows[
            (self.rows["measure"] == measure) & self.rows["run_id"].map(self.groups).isin((OFFICIAL, RUN))
        ]
        if candidates.empty:
            return [], 0
        keys = tie_keys(candidates["score"])
        return candidates.loc[keys == keys.max(), "run_id"].tolist(), len(candidates)

    def agreement(self, measure: str) -> pd.Series | None:
        """The measure's row of correlation.tsv at this τ (or without τ), if there is one."""
        if self.correlation is None:
            return None
        has_tau = self.rows.loc[self.rows["measure"] == measure, "tau"].notna().any()
        rows = self.correlation[self.correlation["measure"] == measure]
        rows = rows[rows["tau"] == self.tau] if has_tau else rows[rows["tau"].isna()]
        return rows.iloc[0] if len(rows) else None

    def without_tau(self) -> list[str]:
        """The measures that do not depend on τ, in the method's order: evaluate writes them once, with no
        τ (nDCG and its kin take the EXAM-Label itself as gain; EXAM and ROUGE have no threshold)."""
        return [m for m in self.measures if self.rows.loc[self.rows["measure"] == m, "tau"].isna().all()]

    def label(self, measure: str) -> str:
        """The measure's name in a figure: marked when it does not depend on τ."""
        return f"{measure} (every τ)" if measure in self.without_tau() else measure


def score_text(score: float, stderr: float) -> str:
    """`score ± stderr` rounded for reading; the score alone where there is no standard error."""
    return f"{score:.3f}" if pd.isna(stderr) else f"{score:.3f} ± {stderr:.3f}"


def with_interval(row: pd.Series | None, name: str) -> str:
    """A correlation with its bootstrap interval, `–` where there is none."""
    if row is None or pd.isna(row[name]):
        return "–"
    low, high = row[f"{name}_low"], row[f"{name}_high"]
    return f"{row[name]:.3f}" if pd.isna(low) else f"{row[name]:.3f} [{low:.3f}, {high:.3f}]"


def plain(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
