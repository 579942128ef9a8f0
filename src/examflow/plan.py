"""A plan before spending: per grading method, the pairs to grade, how many the cache already holds,
and what the rest costs — model calls and tokens for API back ends, GPU- or CPU-hours for local
models at the planning rates of `examflow.registry` (measured throughput)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from examflow.registry import KINDS, planned_rate

PLAN_COLUMNS = [
    "method",
    "backend",
    "pairs",
    "cached",
    "to_grade",
    "model_calls",
    "prompt_tokens",
    "hours",
    "on",
    "note",
]


@dataclass
class MethodPlan:
    method: str
    backend: str
    pairs: int
    cached: int
    calls: int  # model calls for what is not cached (QA with LLM verification asks twice)
    prompt_tokens: int  # API back ends: about four characters a token
    hours: float  # at the planning rate
    on: str  # "GPU", "CPU" or "API"
    note: str = ""


def pair_counts(kind: str, passages: pd.DataFrame, questions: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """Per query: pooled passages, targets (questions, nuggets or the query's facets) and their product."""
    target = KINDS[kind].target
    if target == "query":
        targets = queries.groupby("query_id").size()
    else:
        targets = questions[questions["kind"] == target].groupby("query_id").size()
    table = pd.DataFrame({"passages": passages.groupby("query_id").size(), "targets": targets}).fillna(0).astype(int)
    return table.assign(pairs=table["passages"] * table["targets"])


def job_minutes(method: dict, passages, questions, queries) -> int:
    """Runtime to ask for a grading job: its pairs at the back end's planning rate, three times over,
    plus ten minutes. A shard not written yet raises FileNotFoundError naming it, which Snakemake
    takes for "to be determined" (a dry run) and asks again once the shard exists."""

    def read(path, columns: list[str]) -> pd.DataFrame:
        with open(path, "rb") as file:  # Python's error carries the file name; pyarrow's does not
            return pd.read_parquet(file, columns=columns)

    counts = pair_counts(
        method["kind"], read(passages, ["query_id"]), read(questions, ["query_id", "kind"]), read(queries, ["query_id"])
    )
    rate = planned_rate(method["backend"], on_gpu=method["gpu"] > 0)
    return 10 + math.ceil(3 * int(counts["pairs"].sum()) / rate / 60)


def plan_method(method: dict, passages, questions, queries, cache_dir) -> MethodPlan:
    """`method` checked (`examflow.registry.check_method`)."""
    from examflow.grading.backends import backend_signature
    from examflow.grading.cache import GradeCache
    from examflow.grading.methods import request
    from examflow.grading.run import make_pairs

    backend, kind = method["backend"], method["kind"]
    on_gpu = method["gpu"] > 0
    counts = pair_counts(kind, passages, questions, queries)
    cached, note = 0, ""
    try:
        cache = GradeCache(cache_dir, backend_signature(backend, on_gpu))
    except OSError:  # a hub model whose configuration cannot be read from here
        cache, note = None, f"cache not checked: cannot read {backend.get('model')} from here"
    cached_queries = [q for q in counts.index if cache is not None and cache.holds(q)]
    if cached_queries:  # keys only where the cache has something for the query
        known = cache.answers(cached_queries)
        mine = passages[passages["query_id"].isin(cached_queries)]
        cached = sum(cache.key(request(kind, p)) in known for p in make_pairs(kind, mine, questions, queries))
    pairs = int(counts["pairs"].sum())
    to_grade = pairs - cached
    api = backend["kind"] == "openai"
    characters = _prompt_characters(kind, passages, questions, queries, counts) * (to_grade / pairs if pairs else 0)
    if api:
        note = note or f"{backend['concurrency']} calls at a time, about a second each"
    elif not note:
        note = "assuming bfloat16 on a GPU" if on_gpu and backend.get("dtype") == "auto" else ""
    return MethodPlan(
        method["name"], backend["kind"], pairs, cached, to_grade * (2 if kind == "qa_llm_verify" else 1),
        math.ceil(characters / 4) if api else 0, to_grade / planned_rate(backend, on_gpu) / 3600,
        "API" if api else "GPU" if on_gpu else "CPU", note,
    )  # fmt: skip


def _prompt_characters(kind: str, passages, questions, queries, counts: pd.DataFrame) -> float:
    """About how many characters the prompts of every pair hold (passage and target texts, and the template)."""
    from string import Formatter

    from examflow.prompts import template

    per_query_passages = passages.groupby("query_id")["text"].apply(lambda t: t.str.len().sum())
    target = KINDS[kind].target
    if target == "query":
        texts = queries["query_text"].str.len() + queries["facet_text"].fillna("").str.len()
    else:
        texts = questions["question_text"].str.len().where(questions["kind"] == target, 0)
    per_query_targets = texts.groupby((queries if target == "query" else questions)["query_id"]).sum()
    total = 0.0
    for query_id, row in counts.iterrows():
        total += (
            per_query_passages.get(query_id, 0) * row["targets"] + per_query_targets.get(query_id, 0) * row["passages"]
        )
    fixed_text = "".join(literal for literal, *_ in Formatter().parse(template(KINDS[kind].template)))
    return total + len(fixed_text) * counts["pairs"].sum()  # the template without its placeholders


def format_plan(plans: list[MethodPlan]) -> str:
    lines = ["method            back end          pairs      cached    to grade    model calls  prompt tokens  time"]
    for p in plans:
        tokens = f"{p.prompt_tokens:>13,}" if p.on == "API" else f"{'–':>13}"
        time = f"{p.hours:,.2f} {'h' if p.on == 'API' else p.on + '-hours'}" + (f" ({p.note})" if p.note else "")
        lines.append(f"{p.method:<17} {p.backend:<16} {p.pairs:>10,} {p.cached:>10,} {p.pairs - p.cached:>10,} "
                     f"{p.calls:>13,} {tokens}  {time}")  # fmt: skip
    return "\n".join(lines) + "\n"


def plan_table(plans: list[MethodPlan]) -> pd.DataFrame:
    rows = [
        (p.method, p.backend, p.pairs, p.cached, p.pairs - p.cached, p.calls, p.prompt_tokens, p.hours, p.on, p.note)
        for p in plans
    ]
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)
