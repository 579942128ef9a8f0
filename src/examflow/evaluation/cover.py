"""EXAM-Cover and n-EXAM (SPEC §4).

EXAM-Cover_τ(run, q) = share of q's questions that some passage in the run's top-k for q
answers with a grade ≥ τ; no credit for answering a question twice. n-EXAM (`pool` mode)
divides instead by the questions that any pooled passage answers. A run's score is the mean
over queries: `present` (the reference) skips queries the run has no passage for, `all`
(the original EXAM) counts them as 0. Standard error = sample stdev / √n.
"""

from __future__ import annotations

import math

import pandas as pd

COVER_COLUMNS = ["run_id", "query_id", "covered", "questions", "answerable", "exam_cover", "n_exam_cover"]


def answered(grades: pd.DataFrame, tau: float) -> pd.DataFrame:
    """(query_id, passage_id, question_id) of every pair graded ≥ τ (or answered correctly)."""
    graded = grades[grades["error"].isna()]
    correct = graded["correct"].fillna(False).astype(bool) if "correct" in graded else False
    hit = (graded["rating"].fillna(-1).astype(float) >= tau) | correct
    return graded.loc[hit, ["query_id", "passage_id", "question_id"]].drop_duplicates()


def cover_per_query(
    grades: pd.DataFrame, rankings: pd.DataFrame, questions: pd.DataFrame, tau: float, k: int = 20
) -> pd.DataFrame:
    """One row per (run, query) that the run ranks passages for."""
    hits = answered(grades, tau)
    top = rankings.sort_values(["run_id", "query_id", "rank"], kind="stable").groupby(["run_id", "query_id"]).head(k)
    covered = top.merge(hits, on=["query_id", "passage_id"]).groupby(["run_id", "query_id"])["question_id"].nunique()
    counts = questions.groupby("query_id")["question_id"].nunique()
    answerable = hits.groupby("query_id")["question_id"].nunique()
    table = top[["run_id", "query_id"]].drop_duplicates().reset_index(drop=True)
    table = table[table["query_id"].isin(counts.index)]
    table["covered"] = [int(covered.get((r, q), 0)) for r, q in zip(table["run_id"], table["query_id"])]
    table["questions"] = table["query_id"].map(counts).astype(int)
    table["answerable"] = table["query_id"].map(answerable).fillna(0).astype(int)
    table["exam_cover"] = table["covered"] / table["questions"]
    table["n_exam_cover"] = [c / a if a else 0.0 for c, a in zip(table["covered"], table["answerable"])]
    return table[COVER_COLUMNS]


def system_scores(per_query: pd.DataFrame, measure: str, query_ids: list[str], mode: str = "present") -> pd.DataFrame:
    """Mean, standard error and number of queries per run."""
    if mode not in ("present", "all"):
        raise ValueError(f"query averaging mode must be 'present' or 'all', not {mode!r}")
    rows = []
    for run_id, group in per_query.groupby("run_id", sort=True):
        values = dict(zip(group["query_id"], group[measure]))
        series = [values.get(q, 0.0) for q in query_ids] if mode == "all" else list(values.values())
        n = len(series)
        mean = sum(series) / n if n else 0.0
        stderr = math.sqrt(sum((v - mean) ** 2 for v in series) / (n - 1)) / math.sqrt(n) if n > 1 else 0.0
        rows.append((run_id, mean, stderr, n))
    return pd.DataFrame(rows, columns=["run_id", "score", "stderr", "n_queries"])
