"""`examflow evaluate`: leaderboards for every τ and measure, and their correlation with an
official leaderboard."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from examflow.evaluation.correlation import leaderboard_correlation, tau_ap
from examflow.evaluation.cover import cover_per_query, system_scores
from examflow.evaluation.qrels import exam_labels, trec_scores, write_qrels

LEADERBOARD_COLUMNS = ["method", "measure", "tau", "run_id", "score", "stderr", "n_queries"]
CORRELATION_COLUMNS = ["method", "measure", "tau", "spearman", "kendall", "tau_ap", "n_runs"]


def leaderboards(
    grades: pd.DataFrame,
    rankings: pd.DataFrame,
    questions: pd.DataFrame,
    taus: list[int],
    k: int,
    measures: list[str],
    query_mode: str = "present",
    qrels_dir: Path | None = None,
) -> pd.DataFrame:
    method = str(grades["method"].iat[0]) if len(grades) else ""
    query_ids = sorted(set(questions["query_id"]))
    parts = []
    labels = exam_labels(grades)
    if qrels_dir is not None:
        qrels_dir.mkdir(parents=True, exist_ok=True)
        write_qrels(labels, qrels_dir / f"{method}.qrels")
    for tau in taus:
        per_query = cover_per_query(grades, rankings, questions, tau, k)
        for measure in ("exam_cover", "n_exam_cover"):
            parts.append(system_scores(per_query, measure, query_ids, query_mode).assign(measure=measure, tau=tau))
        if measures:
            values = trec_scores(labels, rankings, tau, measures)
            for measure, group in values.groupby("measure", sort=True):
                per = group.rename(columns={"value": measure})
                parts.append(system_scores(per, measure, query_ids, "present").assign(measure=measure, tau=tau))
    table = pd.concat(parts, ignore_index=True).assign(method=method)
    return table[LEADERBOARD_COLUMNS]


def correlations(table: pd.DataFrame, official: dict[str, float]) -> pd.DataFrame:
    rows = []
    for (method, measure, tau), group in table.groupby(["method", "measure", "tau"], sort=True):
        scores = dict(zip(group["run_id"], group["score"]))
        result = leaderboard_correlation(scores, official)
        rows.append((method, measure, tau, result.spearman, result.kendall, tau_ap(scores, official), result.n_runs))
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


def agreement(
    grades: pd.DataFrame, judgments: pd.DataFrame, relevant_judgment: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """kappa.tsv (method, table, kappa, n_pairs) and the contingency counts in long form."""
    from examflow.evaluation.agreement import agreement_tables, kappas, paired

    method = str(grades["method"].iat[0]) if len(grades) else ""
    facets = judgments["facet_id"].notna().any()
    pairs = paired(exam_labels(grades, per_facet=bool(facets)), judgments)
    tables = agreement_tables(pairs, relevant_judgment)
    summary = pd.DataFrame(
        [(method, name, value, len(pairs)) for name, value in kappas(tables).items()],
        columns=["method", "table", "kappa", "n_pairs"],
    )
    counts = pd.concat(
        [
            t.stack().rename("count").reset_index().set_axis(["label", "judgment", "count"], axis=1).assign(table=name)
            for name, t in tables.items()
        ]
    )
    return summary, counts.assign(method=method)[["method", "table", "label", "judgment", "count"]]
