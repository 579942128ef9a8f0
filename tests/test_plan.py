"""`examflow plan`: the pairs each method grades, what the cache holds, and what the rest costs."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from examflow.grading.methods import request
from examflow.grading.run import make_pairs
from examflow.plan import job_minutes, plan_method
from examflow.prompts import template
from examflow.registry import check_method


def method(name: str, grading_kind: str, **backend) -> dict:
    return check_method(name, {"name": name, "kind": grading_kind, "backend": backend})


@pytest.mark.workflow
def test_the_plan_of_the_demo(demo, tmp_path):
    pool, bank = demo / "results/demo/pool", sorted((demo / "results/demo/bank").glob("*.parquet"))
    passages, queries = pd.read_parquet(pool / "passages.parquet"), pd.read_parquet(pool / "queries.parquet")
    questions = pd.concat(map(pd.read_parquet, bank))
    cosine = method("cosine", "self_rating", kind="embedding")
    api = method("api", "qa_llm_verify", kind="openai", model="gpt", concurrency=8)
    cache = demo / "results/cache"
    graded = plan_method(cosine, passages, questions, queries, cache)
    assert graded.pairs == graded.cached == 3345 and graded.calls == 0  # the demo graded them all
    fresh = plan_method(api, passages, questions, queries, cache)
    # Pairs by hand: every pooled passage with each question of its query.
    by_hand = sum((passages["query_id"] == q).sum() * n for q, n in questions.groupby("query_id").size().items())
    assert fresh.pairs == by_hand == 3345 and fresh.cached == 0 and fresh.calls == 2 * 3345  # answer, then verify
    texts = dict(zip(questions["question_id"], questions["question_text"]))
    characters = sum(
        len(template("grade-qa").format(question=texts[qid], context=text))
        for q, text in zip(passages["query_id"], passages["text"])
        for qid in questions.loc[questions["query_id"] == q, "question_id"]
    )
    assert fresh.prompt_tokens == pytest.approx(characters / 4, rel=0.01)
    assert fresh.hours == pytest.approx(3345 / 8 / 3600)
    # A direct method pairs each passage with each facet of its query: the prompts the grading would send.
    helm = plan_method(method("helm", "helm", kind="openai", model="gpt"), passages, questions, queries, cache)
    sent = [request("helm", pair) for pair in make_pairs("helm", passages, questions, queries)]
    facets = queries.groupby("query_id").size()
    assert helm.pairs == len(sent) == sum(facets[q] for q in passages["query_id"]) and helm.calls == len(sent)
    sent_characters = sum(len(template(r.template).format(**r.fields)) for r in sent)
    assert helm.prompt_tokens == pytest.approx(sent_characters / 4, rel=0.01)
    command = [sys.executable, "-m", "examflow", "plan", "--pool", str(pool), "--questions", *map(str, bank),
               "--method", json.dumps(cosine), json.dumps(api), "--cache-dir", str(cache), "--out", str(tmp_path / "p.tsv")]  # fmt: skip
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "cosine            embedding             3,345      3,345          0" in printed
    assert pd.read_csv(tmp_path / "p.tsv", sep="\t")["to_grade"].tolist() == [0, 3345]


@pytest.mark.workflow
def test_a_grading_job_asks_for_its_shards_pairs_at_the_planning_rate(demo):
    shards = demo / "results/demo/pool/shards"
    bank = demo / "results/demo/bank/shard-0.parquet"  # the demo grades in one shard: all six queries
    questions, passages = pd.read_parquet(bank), pd.read_parquet(shards / "shard-0.passages.parquet")
    queries = set(questions["query_id"])
    assert len(queries) == 6
    # Each query's passages meet only that query's questions (not passages × questions of the shard).
    pairs = sum((passages["query_id"] == q).sum() * (questions["query_id"] == q).sum() for q in queries)
    assert pairs == 3345 < len(passages) * len(questions)
    backend = {"kind": "hf_seq2seq", "model": "google/flan-t5-large", "decoding": "beam"}
    on_cpu = check_method("flan", {"name": "flan", "kind": "self_rating", "backend": backend, "gpu": 0})
    minutes = job_minutes(on_cpu, shards / "shard-0.passages.parquet", bank, shards / "shard-0.queries.parquet")
    assert minutes == 10 + math.ceil(3 * pairs / 1.5 / 60)  # 1.5 pairs/s on a CPU, three times over, plus ten
    # A shard not written yet (a dry run): Snakemake reads the error as "to be determined" by its file name.
    with pytest.raises(FileNotFoundError) as missing:
        job_minutes(on_cpu, str(shards / "shard-9.passages.parquet"), bank, shards / "shard-0.queries.parquet")
    assert missing.value.filename == str(shards / "shard-9.passages.parquet")


def test_the_plan_of_a_car_sized_pool():
    # TREC CAR Y3's shape: 130 pages, 654 pooled passages and 65 questions each (≈ 5.5 M pairs).
    rng = np.random.default_rng(0)
    query_ids = [f"page-{i}" for i in range(130)]
    passages = pd.DataFrame({
        "query_id": np.repeat(query_ids, 654), "passage_id": [f"p{i}" for i in range(130 * 654)],
        "text": "x" * 300, "origin": "retrieved",
    })  # fmt: skip
    questions = pd.DataFrame({
        "query_id": np.repeat(query_ids, 65), "question_id": [f"q{i}" for i in range(130 * 65)],
        "question_text": rng.choice(["What is it?", "Why so?"], 130 * 65), "kind": "question",
    })  # fmt: skip
    queries = pd.DataFrame({"query_id": query_ids, "facet_id": None, "query_text": "a page", "facet_text": None})
    for decoding, rate in (("beam", 90), ("fast", 440)):
        flan = method("flan", "self_rating", kind="hf_seq2seq", model="/nonexistent/flan-t5-large", decoding=decoding)
        plan = plan_method(flan, passages, questions, queries, "/nonexistent/cache")
        assert plan.pairs == 130 * 654 * 65 == 5_526_300 and plan.cached == 0 and plan.on == "GPU"
        assert plan.hours == pytest.approx(5_526_300 / rate / 3600)  # beam ≈ 17.1, fast ≈ 3.5 GPU-hours
        assert plan.note == "cache not checked: cannot read /nonexistent/flan-t5-large from here"
