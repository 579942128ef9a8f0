"""A plan before spending: per grading method, the pairs to grade, how many the cache already holds,
and what the rest costs where the time really goes — the distinct texts the embedding grader encodes,
the calls of an API back end, the prompts through a local model — at the planning rates of
`examflow.rates`, with each grading job's start. The grading jobs' runtime requests come from the
same figures (`job_minutes`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from examflow.errors import ConfigError, counted
from examflow.rates import CALLS, CHARACTERS, Rate
from examflow.registry import KINDS, Method

PLAN_COLUMNS = [
    "method",
    "backend",
    "pairs",
    "cached",
    "to_grade",
    "work",
    "unit",
    "prompt_tokens",
    "jobs",
    "hours",
    "on",
    "cpu_hours",
    "rate",
    "note",
]
NO_GPU = "no GPU visible on this machine (the plan runs where snakemake runs; cluster jobs may have one)"


@dataclass
class MethodPlan:
    method: str
    backend: str
    pairs: int
    cached: int
    work: int  # what is left, in `unit`: distinct texts to encode, API calls, or prompts through a model
    unit: str  # texts, calls or prompts (QA with LLM verification asks twice a pair whose question has a key)
    prompt_tokens: int  # API back ends: about four characters a token
    jobs: int  # grading jobs (shards) with pairs left to grade; each pays the back end's start
    hours: float  # at the planning rate, the jobs' starts included
    on: str  # "GPU", "CPU" or "API"
    rate: str  # the planning rate and where it was measured
    cpu_hours: float | None = None  # a GPU back end where no GPU is visible: the same work on CPU cores
    note: str = ""
    warning: str = ""


@dataclass
class Job:
    """One grading job's share: its pairs, those the cache answers, and the work left (`amount` in the
    rate's unit; `work` distinct texts for the embedding grader, else calls or prompts)."""

    pairs: int
    cached: int
    work: int
    amount: float
    verifications: int = 0  # of `work`, the second prompts that check an answer against its key

    def seconds(self, rate: Rate) -> float:
        return rate.seconds(self.amount, self.work) if self.pairs > self.cached else 0.0


def pair_counts(kind: str, passages: pd.DataFrame, questions: pd.DataFrame, queries: pd.DataFrame) -> pd.DataFrame:
    """Per query: pooled passages, targets (questions, nuggets or the query's facets) and their product."""
    target = KINDS[kind].target
    if target == "query":  # a criteria-based kind asks each criterion of the query (and may aggregate them)
        targets = queries.groupby("query_id").size() * KINDS[kind].rows_per_target
    else:
        targets = questions[questions["kind"] == target].groupby("query_id").size()
    table = pd.DataFrame({"passages": passages.groupby("query_id").size(), "targets": targets}).fillna(0).astype(int)
    return table.assign(pairs=table["passages"] * table["targets"])


def job_share(method: Method, passages, questions, queries, cache=None) -> Job:
    """What one grading job over these tables does; `cache` (a GradeCache) answers some pairs."""
    from examflow.grading.grader import make_pairs, samples_of
    from examflow.grading.methods import request

    kind, rate, n = method.kind, method.backend.rate(False), method.samples
    counts = pair_counts(kind, passages, questions, queries)
    entry = KINDS[kind]
    held = [q for q in counts.index if cache is not None and cache.holds(q)]
    left = []  # pairs of the queries the cache holds something for, that it does not answer (every sample)
    unasked = 0  # and their samples it does not answer
    aggregations = 0  # of those queries' targets, the aggregation prompts the cache answers
    if held:  # keys only where the cache has something for the query
        known = cache.answers(held)
        mine = passages[passages["query_id"].isin(held)]
        answered = []
        for pair in make_pairs(kind, mine, questions, queries):
            asked_for = samples_of(request(kind, pair), n)
            missing = sum(cache.key(each) not in known for each in asked_for)
            left += [pair] if missing else []
            unasked += missing
            answered += [(pair, known[cache.key(asked_for[0])])] if entry.aggregation and not missing else []
        aggregations = _aggregations_cached(method, answered, known, cache)
    pairs = int(counts["pairs"].sum())
    held_pairs = int(counts.loc[held, "pairs"].sum())
    # An aggregation prompt's key holds its criterion grades: left unless they are all cached and it is too
    targets = held_pairs // entry.rows_per_target if entry.aggregation else 0
    cached = held_pairs - len(left) - (targets - aggregations)
    if rate.unit == CHARACTERS:  # each distinct text is encoded once a job; a pair's cosine is free
        unit = method.backend.options.get("unit", "passage")  # an encoder may read passages sentence by sentence
        texts = _encoded_texts(kind, unit, passages, questions, queries, held, left)
        return Job(pairs, cached, len(texts), sum(min(len(text), rate.window or len(text)) for text in texts))
    # each sample of a vote once (those of a pair the cache holds in part); then, for a kind that verifies
    # (one sample), each answer to a question with a key (at most: a failed answer is not verified)
    asked = (pairs - cached) * n if n == 1 else (pairs - held_pairs) * n + unasked
    verified = 0
    if entry.verification:
        fresh = passages[~passages["query_id"].isin(held)]
        keyed = pair_counts(kind, fresh, _with_keys(questions), queries)["pairs"].sum()
        verified = int(keyed) + sum(bool(pair.gold_answers) for pair in left)
    return Job(pairs, cached, asked + verified, asked + verified, verified)


def _aggregations_cached(method: Method, answered: list, known: dict, cache) -> int:
    """Of the targets whose criteria the cache answers (`answered`: pairs and their cached answers), those
    whose aggregation prompt, which holds the criteria's grades, it answers too."""
    from examflow.grading.grader import aggregation_requests
    from examflow.grading.methods import interpret

    grades = [interpret(method.kind, answer, pair, method.mode) for pair, answer in answered]
    _, requests = aggregation_requests(method.kind, [pair for pair, _ in answered], grades)
    return sum(cache.key(each) in known for each in requests)


def _with_keys(questions: pd.DataFrame) -> pd.DataFrame:
    """The questions that have an answer key."""
    from examflow.io.tables import optional

    if "gold_answers" not in questions:
        return questions.iloc[:0]
    return questions[[bool(optional(answers) is not None and len(answers)) for answers in questions["gold_answers"]]]


def _encoded_texts(kind: str, unit: str, passages, questions, queries, held, left) -> set[str]:
    """The texts the embedding grader encodes: the targets and passages (or their sentences) of pairs
    the cache does not answer: every pair of a query not `held`, and the pairs `left` of the others."""
    from examflow.grading.grader import pair_targets

    held = set(held)
    targets = [(t[0], t[3]) for t in pair_targets(kind, questions, queries) if t[0] not in held]
    with_passages = set(passages["query_id"])
    texts = {text for query_id, text in targets if query_id in with_passages} | {p.question_text for p in left}
    contexts = set(passages.loc[passages["query_id"].isin({q for q, _ in targets}), "text"])
    contexts |= {p.passage_text for p in left}
    if unit == "sentence":
        from examflow.segment import split_sentences

        return texts | {sentence for text in contexts for sentence in split_sentences(text) or [""]}
    return texts | contexts


def job_seconds(method: Method, passages, questions, queries) -> float:
    """A grading job's time at the planning rate, its start included, with nothing cached."""
    job = job_share(method, passages, questions, queries)
    return job.seconds(method.backend.rate(on_gpu=method.on_gpu))


def job_minutes(method: Method, passages, questions, queries) -> int:
    """Runtime to ask for a grading job: its time at the planning rate (`job_seconds`), three times
    over, plus ten minutes. A shard not written yet raises FileNotFoundError naming it, which
    Snakemake takes for "to be determined" (a dry run) and asks again once the shard exists."""

    def read(path) -> pd.DataFrame:
        with open(path, "rb") as file:  # Python's error carries the file name; pyarrow's does not
            return pd.read_parquet(file)

    from examflow.questions.shards import no_questions

    # a method that grades against the query reads no bank shard (the Snakefile's `reads_bank`)
    bank = read(questions) if questions else no_questions()
    seconds = job_seconds(method, read(passages), bank, read(queries))
    return 10 + math.ceil(3 * seconds / 60)


def shard_tables(passages, questions, queries, shards: int) -> list[tuple]:
    """(passages, questions, queries) of each grading job: the buckets of `examflow.questions.shards`
    that hold a query with questions (the workflow grades only those), or every bucket without questions
    (a bank's absence, or a method that grades against the query)."""
    from examflow.questions.shards import shard_of

    if shards == 1:
        return [(passages, questions, queries)]
    ids = set(queries["query_id"]) | set(passages["query_id"]) | set(questions["query_id"])
    bucket = {query_id: shard_of(query_id, shards) for query_id in ids}
    graded = {bucket[q] for q in questions["query_id"]} if len(questions) else set(bucket.values())
    return [
        tuple(table[table["query_id"].map(bucket) == shard] for table in (passages, questions, queries))
        for shard in sorted(graded)
    ]


def gpu_visible() -> bool:
    """Whether torch sees a CUDA device here. Only asked when a GPU back end is planned: torch's
    import takes seconds, and without torch no job on this machine could use a GPU."""
    from importlib.util import find_spec

    if find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def plan_method(
    method: Method, passages, questions, queries, cache_dir, shards: int = 1, gpu_here: bool = True
) -> MethodPlan:
    """`method` checked (`examflow.registry.check_method`); its pairs graded in `shards` buckets of
    queries; `gpu_here`: whether this machine has a GPU (else a GPU back end gets a CPU estimate)."""
    from examflow.grading.cache import GradeCache
    from examflow.questions.shards import no_questions

    backend, kind = method.backend, method.kind
    on_gpu = method.on_gpu
    note = ""
    try:
        cache = GradeCache(cache_dir, backend.signature(on_gpu))
    except (OSError, ConfigError):  # a model whose configuration cannot be read from here (backends.model_config)
        cache, note = None, f"cache not checked: cannot read {backend.options.get('model')} from here"
    # a method that grades against the query grades every query's bucket, whatever the bank holds
    tables = shard_tables(passages, questions if method.entry.reads_bank else no_questions(), queries, shards)
    jobs = [job_share(method, p, q, r, cache) for p, q, r in tables]  # each bucket's passages, questions, queries
    pairs, cached = sum(job.pairs for job in jobs), sum(job.cached for job in jobs)
    rate = backend.rate(on_gpu)
    api = rate.unit == CALLS
    tokens = 0
    if api and pairs:  # what is sent: the prompts the cache does not answer, each sample of a vote too (a
        # verification prompt, answer and key alone, is short beside them and left out)
        counts = pair_counts(kind, passages, questions, queries)
        asked = sum(job.work - job.verifications for job in jobs)
        tokens = math.ceil(_prompt_characters(kind, passages, questions, queries, counts) / pairs * asked / 4)
    cpu_hours, warning = None, ""
    if on_gpu and not gpu_here:
        cpu_hours, warning = _on_cpu_cores(method, tables, jobs, cache, cache_dir)
    if not note and on_gpu and backend.options.get("dtype") == "auto":
        note = "assuming bfloat16 on a GPU"
    return MethodPlan(
        method.name, backend.kind, pairs, cached, sum(job.work for job in jobs),
        "texts" if rate.unit == CHARACTERS else rate.unit,
        tokens,
        sum(job.pairs > job.cached for job in jobs), sum(job.seconds(rate) for job in jobs) / 3600,
        "API" if api else "GPU" if on_gpu else "CPU", describe(rate), cpu_hours, note, warning,
    )  # fmt: skip


def _on_cpu_cores(method: Method, tables: list[tuple], jobs: list[Job], cache, cache_dir) -> tuple[float, str]:
    """The hours of a GPU method's jobs on CPU cores, where no GPU is visible, and the warning that says so. A
    job on a CPU may grade in another type (`dtype: auto`: float32), into a cache of its own: that one counts."""
    from examflow.grading.cache import GradeCache

    on_cpu, held = method.backend.rate(False), ""
    if cache is not None and (signature := method.backend.signature(False)) != cache.signature:
        here = GradeCache(cache_dir, signature)
        jobs = [job_share(method, p, q, r, here) for p, q, r in tables]
        differs = ", ".join(f"{key} {value}" for key, value in signature.items() if cache.signature.get(key) != value)
        held = f", where the cache answers {counted(sum(job.cached for job in jobs), 'pair', 'pairs')} ({differs})"
    hours = sum(job.seconds(on_cpu) for job in jobs) / 3600
    return hours, f"{NO_GPU}; on CPU cores it would take {_duration(hours, 'CPU')} ({describe(on_cpu)}){held}"


def describe(rate: Rate) -> str:
    """A planning rate in words, with what it was measured on."""
    work = f"{rate.per_second:,.2f} {rate.unit}/s"
    if rate.per_text:
        work = f"{rate.per_text * 1000:.2f} ms a text + {rate.per_second:,.0f} {rate.unit}/s"
    return f"{rate.start:g} s a job, then {work}: {rate.source}"


def _prompt_characters(kind: str, passages, questions, queries, counts: pd.DataFrame) -> float:
    """About how many characters the prompts of every pair hold (passage and target texts, and the template)."""
    from string import Formatter

    from examflow.prompts import template

    per_query_passages = passages.groupby("query_id")["text"].apply(lambda t: t.str.len().sum())
    target = KINDS[kind].target
    if target == "query":
        texts = queries["query_text"].str.len() + queries["facet_text"].fillna("").str.len()
        texts = texts * KINDS[kind].rows_per_target
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
    lines = [
        "method            back end          pairs     cached   to grade            work  jobs  prompt tokens  time"
    ]
    for p in plans:
        tokens = f"{p.prompt_tokens:>13,}" if p.on == "API" else f"{'–':>13}"
        time = _duration(p.hours, p.on) + (f" ({p.note})" if p.note else "")
        lines.append(f"{p.method:<17} {p.backend:<13} {p.pairs:>10,} {p.cached:>10,} {p.pairs - p.cached:>10,} "
                     f"{p.work:>9,} {p.unit:<7}{p.jobs:>4}  {tokens}  {time}")  # fmt: skip
    lines.append("jobs: grading jobs with pairs left to grade (a shard the cache answers whole is still written, by a "
                 "job of seconds that reads the cache and asks nothing)")  # fmt: skip
    lines += [f"rate of {p.method}: {p.rate}" for p in plans]
    lines += [f"warning: {p.method}: {p.warning}" for p in plans if p.warning]
    return "\n".join(lines) + "\n"


def _duration(hours: float, on: str) -> str:
    """`1.25 GPU-hours`, or under an hour `4.8 CPU-minutes` (hours to two decimals would say 0.08)."""
    return f"{hours:,.2f} {on}-hours" if hours >= 1 else f"{hours * 60:.1f} {on}-minutes"


def plan_table(plans: list[MethodPlan]) -> pd.DataFrame:
    rows = [
        (p.method, p.backend, p.pairs, p.cached, p.pairs - p.cached, p.work, p.unit, p.prompt_tokens, p.jobs,
         p.hours, p.on, p.cpu_hours, p.rate, p.note)
        for p in plans
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)
