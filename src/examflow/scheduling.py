"""What the Snakefile asks before it schedules a job: which shards to grade, and whether the
inputs it can check cheaply (bank query and facet ids, the official leaderboard's runs) agree."""

from __future__ import annotations

import functools
import logging
import os
import re
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from examflow.errors import ConfigError, InputError, Problems, RunSetting, closest, listed, suggestion
from examflow.io import read_queries
from examflow.io.irds import is_irds
from examflow.io.leaderboard import match_runs, read_leaderboard
from examflow.io.lines import json_lines, required_id
from examflow.io.queries import subtopics
from examflow.io.responses import response_run_ids
from examflow.io.runs import run_tag
from examflow.outputs import Facts
from examflow.questions.bank import entry_lines, known_targets, read_bank
from examflow.questions.shards import shard_digests, shard_of
from examflow.registry import KINDS, RANKERS, Method

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("examflow")


@dataclass(frozen=True)
class BankQueries:
    digests: dict[str, str]  # content digest of each shard's questions
    lines: dict[tuple[str, str | None], int]  # every (query id, facet id) in the bank -> line of its entry
    items: dict[tuple[str, str | None], int]  # (query id, facet id) -> its questions or nuggets
    kinds: frozenset[str] = frozenset()  # what its items are: question, nugget
    keyed: int = 0  # questions with an answer key
    most_keyed: int = 0  # the most of them one query holds (its subtopics' together): a QA label's ceiling


@functools.cache
def bank_queries(path: str, modified: float, shards: int = 16) -> BankQueries:
    """The bank read once per version of the file (`modified` keys the cache)."""
    entries = read_bank(path)
    items = {(entry.query_id, entry.facet_id): len(entry.items) for entry in entries}
    kinds = frozenset(item.kind for entry in entries for item in entry.items)
    per_query: Counter[str] = Counter()
    for entry in entries:
        per_query[entry.query_id] += sum(bool(item.gold_answers) for item in entry.items)
    keyed = sum(per_query.values())
    most = max(per_query.values(), default=0)
    return BankQueries(shard_digests(entries, shards), entry_lines(entries), items, kinds, keyed, most)


def check_bank_kinds(bank: str, generated: str | None, grading: dict) -> None:
    """Every method that grades questions or nuggets finds some in the bank (a generated bank holds the
    `generated` kind of items, without answer keys): a nugget method on a question bank would grade nothing,
    and evaluate nothing; a method that checks answers, on questions without keys, would ask the model every
    pair and verify none (no EXAM score, EXAM-Cover 0)."""
    if generated:  # not written yet: items of the kind generated, none with an answer key
        read = BankQueries({}, {}, {}, frozenset({generated}))
    else:
        read = bank_queries(bank, os.path.getmtime(bank), grading["shards"])
    for index, method in enumerate(grading["methods"]):
        kind, where = KINDS[method["kind"]], f"grading.methods[{index}].kind"
        if kind.target in ("question", "nugget") and kind.target not in read.kinds:
            holds = " and ".join(f"{item}s" for item in sorted(read.kinds)) or "nothing"
            raise ConfigError(where, f"{method['kind']!r} grades {kind.target}s; the bank {bank} holds {holds}")
        if kind.checks_answers and not read.keyed:
            whose = "a generated bank's questions have none" if generated else f"no question of {bank} has one"
            raise ConfigError(where, f"{method['kind']!r} checks each answer against the question's answer key "
                                     f"(gold_answers), and {whose}")  # fmt: skip


def warn_about_answer_counts(bank: str, grading: dict, taus: list[int]) -> None:
    """A method that checks answers labels a passage with the number of questions it answers correctly
    (EXAM-Qrels): with at most n keyed questions to a query, no passage reaches a τ above n, and the
    trec_eval measures there are 0 for every run. Said before anything runs, as for a kind's scale."""
    most = bank_queries(bank, os.path.getmtime(bank), grading["shards"]).most_keyed
    above = [t for t in taus if t > most]
    for method in grading["methods"]:
        if KINDS[method["kind"]].checks_answers and above and most:
            log.warning(
                "method %s (%s) labels a passage with the number of questions it answers correctly, at most %d "
                "here (the most answer-keyed questions of a query in %s): at evaluation.tau %s its EXAM-Qrels "
                "measures are 0 for every run (EXAM-Cover and the EXAM score count answers at any τ)",
                method["name"], method["kind"], most, bank, ", ".join(map(str, above)),
            )  # fmt: skip


@functools.cache
def query_table(spec: str):
    """The queries, read once per Snakefile parse."""
    return read_queries(spec)


def has_facets(spec: str) -> bool:
    return bool(query_table(spec)["facet_id"].notna().any())


def configured_facts(config: dict, generate: str | None) -> Facts:
    """The facts that decide which files the steps write (examflow.outputs), from the configuration."""
    inputs, nrp = config["inputs"] or {}, config["nrp"] or {}
    return Facts(
        official=bool(inputs.get("official_leaderboard")) or official_from_qrels(config),
        judgments=bool(inputs.get("qrels")),
        facets=bool(inputs) and graded_facets(inputs, generate, config["grading"]),
        wilcoxon=bool(nrp.get("wilcoxon")),
        expert=bool(nrp.get("expert")),
    )


def official_from_qrels(config: dict) -> bool:
    """Whether the official leaderboard is computed from the official qrels (none given, qrels and runs are)."""
    inputs = config["inputs"] or {}
    return bool(
        not inputs.get("official_leaderboard") and inputs.get("qrels") and inputs.get("runs")
        and config["evaluation"]["official_measure"]
    )  # fmt: skip


def graded_facets(inputs: dict, generate: str | None, grading: dict) -> bool:
    """Whether some method grades targets with subtopic ids: questions or nuggets the bank gives a facet
    id (generated questions: one entry per subtopic; generated nuggets: none), or, in direct grading, the
    queries' own subtopics."""
    if not has_facets(inputs["queries"]):
        return False
    if generate == "question" or any(KINDS[method["kind"]].target == "query" for method in grading["methods"]):
        return True
    bank = inputs["bank"]
    if not bank or generate:
        return False
    found = bank_queries(bank, os.path.getmtime(bank), grading["shards"])
    known = subtopics(query_table(inputs["queries"]))
    return any(facet in known.get(query, ()) and found.items[query, facet] for query, facet in found.items)


def query_shards(queries_spec: str, shards: int) -> list[str]:
    """Every query's shard: those a method that grades passages against the query grades, whatever the bank holds."""
    return sorted({shard_of(query, shards) for query in query_table(queries_spec)["query_id"]})


def graded_shards(
    queries_spec: str,
    bank: str | None,
    generate: str | None,
    validation: dict,
    shards: int = 16,
    methods: Sequence[Method] = (),
) -> list[str]:
    """Shards of the queries that have questions, those the methods that read the bank grade. Bank entries whose
    query is not a query, or whose facet is not one of its query's subtopics, are problems; `examflow bank-shard`
    leaves them out. Without a bank, every query's. Of `methods`, those that grade against the query grade every
    query's shard (`query_shards`); where every one does, a query without questions misses nothing, and is
    not warned of."""
    # every query gets questions (or nuggets), or generation fails naming it; without a bank, every query is graded
    if generate or bank is None:
        return query_shards(queries_spec, shards)
    queries = query_table(queries_spec)
    query_ids = set(queries["query_id"])
    unknown = Problems(validation["unknown_queries"])
    found, with_items = _queries_with_items(bank, os.path.getmtime(bank), queries, shards, unknown)
    unknown.summarise()
    without = sorted(query_ids - with_items)
    direct = [method.name for method in methods if not method.entry.reads_bank]
    if not with_items and len(direct) < len(methods):  # its merge would get no grading job's table
        raise InputError(bank, f"no question is of a query of {queries_spec}: the methods that read the bank "
                         "would grade nothing")  # fmt: skip
    if without and (len(direct) < len(methods) or not methods):
        one = len(without) == 1
        # the methods that grade against the query grade them all the same
        graded = (
            f": only {listed(direct)} grade{'s' if len(direct) == 1 else ''} {'it' if one else 'them'}, against the "
            "query" if direct else f" and get{'s' if one else ''} no grading jobs"
        )  # fmt: skip
        items = "nuggets" if found.kinds == {"nugget"} else "questions"  # a nugget bank holds no questions
        log.warning("%d of %d queries %s no %s in %s%s: %s", len(without), len(query_ids),
                    "has" if one else "have", items, bank, graded, listed(without))  # fmt: skip
    return sorted({shard_of(q, shards) for q in with_items})


@functools.cache
def bank_buckets(queries_spec: str, bank: str, modified: float, shards: int) -> tuple[str, ...]:
    """The buckets that hold items of known queries and subtopics, as `examflow bank-shard`'s tables name the
    bank's: `graded_shards`' answer without its warnings, read where the bank may have been generated since
    the workflow's parse (`modified` keys the cache)."""
    _, with_items = _queries_with_items(bank, modified, query_table(queries_spec), shards, Problems("warn"))
    return tuple(sorted({shard_of(query, shards) for query in with_items}))


def _queries_with_items(
    bank: str, modified: float, queries: pd.DataFrame, shards: int, unknown: Problems
) -> tuple[BankQueries, set[str]]:
    """The bank as read, and the queries of `queries` it holds items of (an entry of another query or subtopic
    is one of the `unknown` problems)."""
    found = bank_queries(bank, modified, shards)
    known = known_targets(bank, found.lines, subtopics(queries), unknown)
    return found, {query for query, facet in known if found.items[query, facet]}


# What the shipped SLURM profiles hold until a user fills them in.
PLACEHOLDER = "CHANGE-ME"


def check_placeholders(resources: list[tuple[str, str]]) -> None:
    """No resource (name, value as written) still holds a profile's placeholder: sbatch refuses every job
    ("Invalid partition name specified"), each is submitted again, and the run ends blaming no cause."""
    left = list(dict.fromkeys(f"{name} {value!r}" for name, value in sorted(resources) if PLACEHOLDER in value))
    if left:
        raise RunSetting(f"{'resources' if len(left) > 1 else 'resource'} {', '.join(left)}: the SLURM profiles' "
                         "placeholders: put your cluster's partitions and account in the profile's config.yaml "
                         "(profiles/README.md)")  # fmt: skip


# The resources of the SLURM executor plugin (2.8) that bear its prefix: another such name is read by nothing.
SLURM_RESOURCES = ("slurm_account", "slurm_cluster", "slurm_extra", "slurm_partition")


# Resources Snakemake or the SLURM executor plugin (2.8) reads under a name without the plugin's prefix, and of
# them those a profile sets that a typo of may miss (`mem_mbb`, `gpus`). Only these: a name near none of them
# may be a resource of the user's own (`api=2`, near `mpi`), which Snakemake's scheduler counts against its
# limit in `--resources`.
READ_RESOURCES = (
    "mem", "mem_mb", "mem_mib", "disk", "disk_mb", "disk_mib", "runtime", "tmpdir", "threads", "gpu", "gpu_model",
    "gres", "constraint", "qos", "cluster", "clusters", "cpus_per_task", "cpus_per_gpu", "mem_mb_per_cpu", "nodes",
    "tasks", "tasks_per_node", "tasks_per_gpu", "mpi", "mpi_tasks",
)  # fmt: skip
MISSPELT_RESOURCES = ("mem_mb", "mem_mib", "disk_mb", "disk_mib", "runtime", "gpu", "gpu_model", "cpus_per_task")
SLURM_PREFIX = "slurm_"


def check_resource_names(resources: list[tuple[str, str]], limited: Collection[str] = ()) -> None:
    """No resource (name, value) is a misspelt one: `slurm_partiton: gpu` was taken without a word and every
    job went to the default partition, `mem_mbb=8000` left each job its memory (strangers' trials). `limited`:
    the names `--resources` limits, the user's own (`gpus=1` there runs one such job at a time)."""
    for name, value in resources:
        if name.startswith(SLURM_PREFIX):
            _check_slurm_resource(name, value)
        elif name not in READ_RESOURCES and name not in limited and (close := closest(name, MISSPELT_RESOURCES)):
            raise RunSetting(f"resource {name} {value!r}: neither Snakemake nor the SLURM executor plugin reads such "
                             f"a resource (did you mean {close!r}?), so no job would get it; a resource of your own "
                             "needs its limit in --resources")  # fmt: skip


def _check_slurm_resource(name: str, value: str) -> None:
    """A name of the plugin's prefix that it does not read: refused where it reads the name without the prefix
    (`slurm_qos`, read as `qos`) or near one of its own, else said (it may be a later plugin's own). Compared
    without the prefix, which each shares: `slurm_reservation` is near none of them."""
    if name in SLURM_RESOURCES:
        return
    bare = name.removeprefix(SLURM_PREFIX)
    if bare in READ_RESOURCES:  # `slurm_qos`: the plugin reads `qos`, without its prefix
        meant = f" (did you mean {bare!r}?)"
    else:
        close = closest(bare, [known.removeprefix(SLURM_PREFIX) for known in SLURM_RESOURCES])
        meant = f" (did you mean {SLURM_PREFIX + close!r}?)" if close else ""
    said = (f"resource {name} {value!r}: the SLURM executor plugin 2.8 reads no such resource{meant}, so no job "
            f"would get it; its own are {', '.join(SLURM_RESOURCES)} (profiles/README.md)")  # fmt: skip
    if meant:
        raise RunSetting(said)
    log.warning("%s", said)


RULE_LINE = re.compile(r"^[ \t]*(?:rule|checkpoint) (\w+):", re.MULTILINE)  # some within an `if`


def workflow_rules(folder: str | Path) -> list[str]:
    """The names of every rule the workflow's files define (a configuration includes some: a profile's
    `nrp` settings are meant for the runs with NRP)."""
    files = [Path(folder) / "Snakefile", *sorted(Path(folder, "rules").glob("*.smk"))]
    return sorted({name for path in files for name in RULE_LINE.findall(path.read_text(encoding="utf-8"))})


def check_rule_names(settings: dict[str, Sequence[str]], rules: Sequence[str]) -> None:
    """Each rule that `--set-resources` or `--set-threads` (or a profile's `set-resources`, `set-threads`)
    names is one of the workflow's (`rules`): `grde:mem_mb=8000` was taken without a word, and changed no job
    (a stranger's trial)."""
    for option, names in settings.items():
        for name in names:
            if name not in rules:
                raise RunSetting(f"{option} {name!r}: the workflow has no such rule{suggestion(name, rules)}, so it "
                                 f"would change no job; its rules: {', '.join(rules)}")  # fmt: skip


def check_gpu_partitions(defaults: dict[str, str], settings: dict[str, dict[str, str]], gpu_rules: list[str]) -> None:
    """On SLURM (a default `slurm_partition`), each rule whose jobs ask for a GPU (unless its settings take it
    back, `gpu: 0`) names its partition: a `--set-resources` on the command line replaces the profile's whole
    `set-resources`, so its GPU partition was gone and the grading jobs went to the CPU partition, asking for
    a GPU there (a stranger's trial). Where the default partition holds the GPUs, naming it says so."""
    partition = defaults.get("slurm_partition")
    if partition is None:
        return
    for rule in gpu_rules:
        own = settings.get(rule, {})
        if "slurm_partition" not in own and own.get("gpu") != "0":
            log.warning("%s jobs ask for a GPU and name no slurm_partition of their own: they go to the default "
                        "partition %r, where they never run if it has no GPUs. Name theirs under the profile's "
                        "set-resources, `%s: {slurm_partition: ...}` (the default's, where it holds the GPUs); a "
                        "--set-resources on the command line replaces the profile's whole set-resources, so name it "
                        "there too, `%s:slurm_partition=...`", rule, partition, rule, rule)  # fmt: skip


# What a path must not hold to reach a SLURM job (tried on a one-node cluster with plugin 2.8): the plugin hands
# each job's command line to sbatch inside double quotes (`--wrap="…"`), where `$` and a backquote expand; and
# a path with both kinds of quote is written into that line in a way the job's shell cannot read. A lone `"` is
# escaped by the plugin, a lone `'`, spaces and backslashes arrive as written.
EXPANDED = ("$", "`")
BOTH_QUOTES = ("'", '"')


def check_submitted_paths(executor: str, paths: list[tuple[str, str]]) -> None:
    """On SLURM, no path a job's command line holds (key, path: its files, the config files, the working
    folder) is one the submission mangles: a `$HOME` became another path, and a path with `'` and `"` made
    each job's script a syntax error (`Unterminated quoted string`); each job failed as though it had never
    started, its retries too. Said before any job is submitted; a local run quotes every path (`shlex.quote`)."""
    if executor != "slurm":
        return
    for key, path in paths:
        expanded = [c for c in EXPANDED if c in path]
        both = all(quote in path for quote in BOTH_QUOTES)
        if expanded or both:
            what = " and ".join([*expanded, *(["both ' and \""] if both else [])])
            noun = "a setting" if key == "--config" else "a path"  # the words of --config reach each job too
            raise RunSetting(f"{key} {path!r}: {noun} with {what} cannot reach a SLURM job (the slurm executor hands "
                             "each job's command line to sbatch inside double quotes, where $ and ` expand, and "
                             "writes a path of both quotes there in a way no shell reads): rename it (spaces, "
                             "backslashes and one kind of quote are fine), or run without the cluster")  # fmt: skip


def submitted_paths(
    config: dict, runs: list[str], config_files: list[str], settings: list[str], folders: dict[str, str]
) -> list[tuple[str, str]]:
    """(key, path) of what a job's command line may hold: the configured folders and input files, the run files
    their patterns list, the config files and --config settings, and `folders` (the working folder, ...)."""
    configured = [("results_dir", config["results_dir"]), ("cache_dir", config["cache_dir"])]
    return [*configured, *_input_files(config), *(("inputs.runs", run) for run in runs),
            *(("--configfile", path) for path in config_files), *(("--config", setting) for setting in settings),
            *folders.items()]  # fmt: skip


def check_relevance_level(qrels: str, level: int, relevance_range: list[int]) -> None:
    """The official qrels read (as the pool step reads them: a malformed line is its one-line error here) and
    their highest judgment held against `evaluation.min_relevant_judgment`. A level above every judgment counts
    no passage relevant: κ, the question diagnostics and an official leaderboard by a measure that takes the
    level would read nothing but 0 — a setting meant for other qrels, said before anything is graded. The
    Snakefile reads them once a run, in its main process (a cluster's jobs parse it again): 1.5 s for 300,000
    lines here, a TREC DL 2019-shaped 9,260 0.02 s."""
    from examflow.io.qrels import qrels_lines

    top = max(grade for *_, grade in qrels_lines(qrels, (relevance_range[0], relevance_range[1])))
    if level > top:
        raise ConfigError("evaluation.min_relevant_judgment", f"{level} is above every judgment of {qrels} (the "
                          f"highest is {top}): no passage would count as relevant; set it to {top} or less")  # fmt: skip


def check_input_files(config: dict) -> None:
    """Every input file the configuration names is there, and a file: a typo is said at the start, not by
    the first job that reads it."""
    for key, path in _input_files(config):
        if Path(path).is_dir():
            raise ConfigError(key, f"{path} is a folder, not a file")
        if not Path(path).is_file():
            raise ConfigError(key, f"file not found: {path}")


def _input_files(config: dict) -> Iterator[tuple[str, str]]:
    """(configuration key, path) of each input file: the inputs in the configuration's order, then another
    judge's leaderboards and NRP's files; not the run files (a pattern each, checked as the runs are listed),
    an ir_datasets id, or a bank still to be generated."""
    for key, spec in (config["inputs"] or {}).items():  # none: NRP alone
        if key == "labels":
            yield from ((f"inputs.labels.{name}", path) for name, path in (spec or {}).items())
        elif key != "runs" and spec and not is_irds(spec) and not (key == "bank" and config["questions"]["generate"]):
            yield f"inputs.{key}", spec
    yield from ((f"judges.leaderboards.{name}", path) for name, path in config["judges"]["leaderboards"].items())
    nrp = config["nrp"] or {}
    yield from ((f"nrp.{key}", nrp[key]) for key in ("queries", "corpus", "answers", "expert")
                if nrp.get(key) and not is_irds(nrp[key]))  # fmt: skip
    for name, dimension in nrp.get("dimensions", {}).items():
        yield f"nrp.dimensions.{name}.qrels", dimension["qrels"]
    for index, ranker in enumerate(nrp.get("rankers", [])):
        if option := RANKERS[ranker["kind"]].input_file:
            yield f"nrp.rankers[{index}].{option}", ranker[option]


def check_example_query(queries_spec: str, query_id: str | None) -> None:
    """The configured topic of the worked example is one of the queries (a typo would show an empty page)."""
    if query_id is None:  # the default: the first topic, chosen at run time; nothing to read
        return
    known = set(query_table(queries_spec)["query_id"])
    if query_id not in known:
        raise ConfigError(
            "report.example_query",
            f"{query_id!r} is none of the queries in {queries_spec}{suggestion(query_id, sorted(known))}",
        )


def check_leaderboard(inputs: dict, run_files: list[str], validation: dict) -> None:
    """The official leaderboard read, and its runs matched with the runs to evaluate (the run files' and
    the generated responses')."""
    path = inputs["official_leaderboard"]
    official = read_leaderboard(path)
    files = {run_tag(file) for file in run_files}
    queries = set(query_table(inputs["queries"])["query_id"]) if inputs["responses"] else set()
    generated = response_run_ids(inputs["responses"], queries) if inputs["responses"] else set()
    problems = Problems(validation["leaderboard_runs"])
    for note in match_runs(path, official, files | generated, problems):
        log.warning("%s", note)
    problems.summarise()


def check_response_runs(responses: str, run_files: list[str]) -> None:
    """A response's run id that is a run file's run tag would make the two one run in every table: refused
    at its line as the run starts, not by the pool step with no line (a stranger's trial)."""
    tags = {run_tag(file): file for file in run_files}
    for number, record in json_lines(responses):
        if (run := required_id(responses, number, record, "run_id")) in tags:
            raise InputError(responses, f"run {run!r} is also the run tag of {tags[run]}: the responses' run ids "
                             "differ from the run files' (docs/inputs.md)", number, "run_id")  # fmt: skip


def check_judge_files(
    labels: dict[str, str],
    leaderboards: dict[str, str],
    layout: str,
    run_files: list[str],
    validation: dict,
    queries: str | None,
    responses: str | None = None,
) -> None:
    """Other judges' label sets and AutoJudge leaderboards, read and put aside: a malformed line, a run that is
    none of the run files' nor the `responses`' (under `validation.leaderboard_runs: error`; the judges leave
    the responses' out, saying so), or a leaderboard none of whose topics
    is a query (`queries`, where a file gives them: another column order than `layout`) stops the run before
    any model is asked, not once the grading the comparison waits for is done; so does a label set's row of
    a query that is not in `queries`, under `validation.unknown_queries: error` (`warn`: the judges' step
    drops and counts it)."""
    from examflow.io.autojudge import check_some_topic, known_runs, read_autojudge
    from examflow.io.qrels import KnownQueries, read_labels

    checked = queries is not None and labels and validation["unknown_queries"] == "error"
    known_queries = KnownQueries(query_table(queries), Problems("error")) if checked else None
    for path in labels.values():
        read_labels(path, known=known_queries)
    runs, unknown = {run_tag(file) for file in run_files}, Problems(validation["leaderboard_runs"])
    known = set(query_table(queries)["query_id"]) if queries is not None and leaderboards else None
    generated = response_run_ids(responses) if responses and leaderboards else set()
    for path in leaderboards.values():
        measures = read_autojudge(path, layout)
        known_runs(path, measures, runs, "inputs.runs" + (" nor inputs.responses" if generated else ""), unknown,
                   generated)  # fmt: skip
        if known is not None:
            check_some_topic(path, measures, known, f"a query of {queries}", f"`{layout}` (judges.leaderboard_layout)")
    unknown.summarise()
