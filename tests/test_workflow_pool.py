"""The real snakemake on the demo: pool tables, failure handling, config validation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import snakemake

from examflow.grading.merge import read_grades_metadata

pytestmark = pytest.mark.workflow


def hand_computed_pool(demo: Path, depth: int) -> dict[str, set[str]]:
    """judged ∪ rank <= depth of every run file, per page, read without examflow."""
    pool: dict[str, set[str]] = {}
    for line in (demo / "qrels.txt").read_text().splitlines():
        qid, _, doc, _ = line.split()
        pool.setdefault(qid.split("/")[0], set()).add(doc)
    for run in (demo / "runs").glob("*.run"):
        for line in run.read_text().splitlines():
            qid, _, doc, rank, _, _ = line.split()
            if int(rank) <= depth:
                pool[qid].add(doc)
    return pool


def test_demo_pool_matches_hand_computed_pool(demo):
    project = demo
    passages = pd.read_parquet(project / "results/demo/pool/passages.parquet")
    segments = pd.read_parquet(project / "results/demo/segment/responses.parquet")
    expected = hand_computed_pool(project / "resources/demo", depth=20)
    for query_id, docs in expected.items():
        generated = set(segments.loc[(segments["query_id"] == query_id) & (segments["rank"] <= 20), "passage_id"])
        assert set(passages.loc[passages["query_id"] == query_id, "passage_id"]) == docs | generated
    assert passages.groupby("query_id").size().to_dict() == {
        "composting": 65,
        "honeybee": 64,
        "sourdough": 66,
        "tides": 67,
        "vitamin-d": 69,
        "volcano": 69,
    }
    # Each gold article is cut into two passages, pooled (and graded) whole but apart from the runs.
    gold = passages[passages["origin"] == "gold"]
    assert gold.groupby("query_id").size().eq(2).all() and len(gold) == 12
    # The 0-based run contributes 21 passages per query.
    rankings = pd.read_parquet(project / "results/demo/pool/rankings.parquet")
    zero_based = rankings[(rankings["run_id"] == "overlap-0based") & (rankings["rank"] <= 20)]
    assert zero_based.groupby("query_id").size().eq(21).all()
    assert set(rankings["run_id"]) >= {"oracle", "random", "rag-thorough", "rag-brief", "rag-offtopic"}
    judgments = pd.read_parquet(project / "results/demo/pool/judgments.parquet")
    assert judgments.groupby("query_id")["facet_id"].nunique().to_dict()["volcano"] == 3
    assert "Nothing to be done" in snakemake(project, "-n").stdout
    # The whole demo ran: grades by the offline grader, leaderboards and their correlation.
    correlation = pd.read_csv(project / "results/demo/eval/cosine/correlation.tsv", sep="\t")
    row = correlation[(correlation["measure"] == "exam_cover") & (correlation["tau"] == 4)]
    assert row["n_runs"].tolist() == [7] and row["spearman"].iat[0] > 0.9
    assert -1 <= row["spearman_low"].iat[0] < row["spearman_high"].iat[0] <= 1
    board = pd.read_csv(project / "results/demo/eval/cosine/leaderboard.tsv", sep="\t")
    assert {"_gold_", "_overall_"} <= set(board["run_id"]) and "rouge_1_f1" in set(board["measure"])
    qrels = (project / "results/demo/eval/cosine/qrels/cosine.qrels").read_text().splitlines()
    assert len(qrels) == len(passages) - len(gold)  # every pooled passage, no gold article
    metadata = read_grades_metadata(project / "results/demo/grades/cosine.parquet")
    assert metadata["pairs"] == 3345 and metadata["errors"] == 0
    assert metadata["embedding_grades"]["quantiles"] == [0.8, 0.85, 0.9, 0.95, 0.98]
    assert metadata["embedding_grades"]["calibration"] == "pool"
    # NRP on its own demo collection, next to EXAM: the designed order of the three "LLMs".
    nrp = pd.read_csv(project / "results/demo/nrp/per_system.tsv", sep="\t")
    combined = nrp[nrp["dimension"] == "combined"].groupby("llm")["nrp"].mean()
    assert combined["medlm-large"] > combined["chat-small"] > combined["echo-tiny"]
    assert nrp.loc[nrp["llm"] == "echo-tiny", "n_empty"].max() == 1  # one empty, one missing answer
    selection = pd.read_csv(project / "results/demo/nrp/ranker_selection.tsv", sep="\t")
    assert len(selection) == 4 and selection.groupby("dimension")["chosen"].sum().eq(1).all()
    assert (project / "results/demo/nrp/wilcoxon.tsv").exists()
    agreement = pd.read_csv(project / "results/demo/nrp/expert_agreement.tsv", sep="\t")
    assert agreement.loc[agreement["query_id"] == "_mean_", "n_items"].eq(3).all()
    kappa = pd.read_csv(project / "results/demo/eval/cosine/kappa.tsv", sep="\t")
    assert kappa["table"].tolist() == ["lenient", "strict"] and kappa["n_pairs"].eq(101).all()


POOL_TARGET = "results/demo/pool/summary.tsv"


def test_bad_run_file_fails_cleanly_with_nothing_written(project):
    run = project / "resources/demo/runs/bm25.run"
    lines = run.read_text().splitlines()
    lines[6] = lines[6].replace(" 7 ", " seven ")
    run.write_text("\n".join(lines) + "\n")
    result = snakemake(project, POOL_TARGET, check=False)
    assert result.returncode != 0
    log = (project / "results/demo/logs/pool.log").read_text()
    assert "examflow: error: resources/demo/runs/bm25.run:7: field 'rank': not an integer: 'seven'" in log
    assert "Traceback" not in log
    assert not (project / "results/demo/pool").exists() or not any((project / "results/demo/pool").iterdir())


def test_warn_policy_pools_around_missing_passages(project):
    corpus = project / "resources/demo/corpus.tsv"
    corpus.write_text("".join(line for line in corpus.read_text().splitlines(True) if not line.startswith("p001\t")))
    failed = snakemake(project, POOL_TARGET, check=False)
    assert failed.returncode != 0
    assert "pooled passage 'p001' is not in the collection" in (project / "results/demo/logs/pool.log").read_text()
    snakemake(project, POOL_TARGET, "--config", "validation={'missing_passages': 'warn', 'unknown_queries': 'error'}")
    assert (
        "1 × pooled passages missing from the collection, dropped"
        in (project / "results/demo/logs/pool.log").read_text()
    )
    # listed for the summary, a row per query that pooled it: honeybee's qrels judge p001, bm25 ranks it 6th
    dropped = pd.read_csv(project / "results/demo/pool/dropped.tsv", sep="\t", dtype=str).set_index("query_id")
    assert set(dropped["passage_id"]) == {"p001"} and dropped.index.is_unique
    assert dropped.at["honeybee", "origin"] == "judged,retrieved"
    passages = pd.read_parquet(project / "results/demo/pool/passages.parquet")
    assert "p001" not in set(passages["passage_id"])
