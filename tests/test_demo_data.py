"""The bundled demo collection holds what the README promises."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

import pytrec_eval
from conftest import DEMO
from scipy.stats import rankdata

from examflow.errors import Problems
from examflow.io import read_passages, read_qrels, read_queries, read_responses, read_runs


def test_sizes_and_shapes():
    queries = read_queries(DEMO / "queries.jsonl")
    assert queries["query_id"].nunique() == 6
    assert queries.groupby("query_id")["facet_id"].count().sort_values().tolist() == [0, 0, 0, 0, 2, 3]
    corpus = read_passages(DEMO / "corpus.tsv", {f"p{i:03d}" for i in range(1, 151)}, Problems("error"))
    assert len(corpus) == 150
    runs = read_runs(sorted((DEMO / "runs").glob("*.run")), set(queries["query_id"]), Problems("error"))
    assert runs["run_id"].nunique() == 7
    responses = read_responses(DEMO / "responses.jsonl", set(queries["query_id"]), Problems("error"))
    assert {r.run_id for r in responses} == {"rag-thorough", "rag-brief", "rag-offtopic"}
    qrels = read_qrels(DEMO / "qrels.txt", queries, Problems("error"))
    assert sorted(qrels["relevance"].unique()) == [0, 1, 2, 3]


def test_bank_has_5_to_10_questions_per_topic_or_subtopic_with_spec_ids():
    entries = [json.loads(line) for line in (DEMO / "bank.jsonl").read_text().splitlines()]
    queries = read_queries(DEMO / "queries.jsonl")
    assert {(e["query_id"], e["facet_id"]) for e in entries} == set(zip(queries["query_id"], queries["facet_id"]))
    for entry in entries:
        assert 5 <= len(entry["items"]) <= 10
        for item in entry["items"]:
            digest = hashlib.md5(item["question_text"].strip().encode()).hexdigest()
            prefix = f"{entry['query_id']}/{entry['facet_id']}" if entry["facet_id"] else entry["query_id"]
            assert item["question_id"] == f"{prefix}/{digest}"
    items = [item for entry in entries for item in entry["items"]]
    assert sum("gold_answers" in item for item in items) >= 20
    assert sum("choices" in item for item in items) >= 4


def test_official_leaderboard_is_recoverable_from_the_qrels():
    """nDCG@10 against page-level qrels (max over facets) orders the runs as the leaderboard."""
    grades: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DEMO / "qrels.txt").read_text().splitlines():
        qid, _, doc, grade = line.split()
        page = grades[qid.split("/")[0]]
        page[doc] = max(page.get(doc, 0), int(grade))
    evaluator = pytrec_eval.RelevanceEvaluator(dict(grades), {"ndcg_cut_10"})
    scores = {}
    for path in sorted((DEMO / "runs").glob("*.run")):
        run: dict[str, dict[str, float]] = defaultdict(dict)
        for line in path.read_text().splitlines():
            qid, _, doc, rank, _, tag = line.split()
            run[qid][doc] = -float(rank)
        per_query = evaluator.evaluate(dict(run))
        scores[tag] = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)
    official = json.loads((DEMO / "official_leaderboard.json").read_text())
    names = sorted(official)
    recovered = rankdata([-scores[name] for name in names], method="average")
    assert dict(zip(names, recovered)) == {name: float(official[name]) for name in names}
    assert len(set(scores.values())) == len(scores)  # clearly different quality: no ties
