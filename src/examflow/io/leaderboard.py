"""Official leaderboards: a JSON object `{run_id: official rank}`, ties as averaged ranks."""

from __future__ import annotations

import math
from pathlib import Path

from examflow.errors import InputError, Problems
from examflow.io.lines import json_entries, line_of


def read_leaderboard(path: str | Path) -> dict[str, float]:
    """Ranks by run; a repeated run, a rank that is not a finite number or a bad run id is an error."""
    ranks = {}
    for number, run, rank in json_entries(path, "{run_id: official rank}", "run_id"):
        if isinstance(rank, bool) or not isinstance(rank, int | float):
            raise InputError(path, f"rank {rank!r} is not a number", number, run)
        if not math.isfinite(rank):
            raise InputError(path, f"rank {rank!r} is not a finite number", number, run)
        ranks[run] = float(rank)
    return ranks


def match_runs(path: str | Path, official: dict[str, float], evaluated: set[str], problems: Problems) -> list[str]:
    """Official runs that are not evaluated go to `problems` (a typo would silently drop them from
    every correlation); evaluated runs that are not official are a note, returned for the log."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    for run in sorted(set(official) - evaluated):
        problems.report(
            "official runs that are not evaluated",
            InputError(path, f"official run {run!r} is not among the evaluated runs", line_of(text, run), "run_id"),
        )
    extra = sorted(evaluated - set(official))
    if not extra:
        return []
    shown = ", ".join(extra[:5]) + (", ..." if len(extra) > 5 else "")
    return [
        f"{len(extra)} evaluated runs are not on the official leaderboard and take no part in correlations: {shown}"
    ]
