import functools
import hashlib
import json
import logging
import os
import shlex
import sys
import time
from pathlib import Path

from snakemake.settings.enums import RerunTrigger
from snakemake_interface_executor_plugins.settings import DeploymentMethod

sys.path.insert(0, str(Path(workflow.basedir).parent / "src"))
from examflow.config import (
    check_config,
    check_config_file,
    check_judges_query_ids,
    check_model_folders,
    check_official_for_judges,
    config_digest,
    config_sources,
    methods,
)
from examflow.contents import contents_digest
from examflow.errors import DONE, Failure
from examflow.io.irds import is_irds
from examflow.io.runs import run_files
from examflow.outputs import (
    EVALUATION,
    JUDGES as JUDGES_FILES,
    JUDGES_FOLDER,
    JUDGES_REPORT,
    NRP as NRP_FILES,
    NRP_REPORT,
    POOL,
    REPORT,
    paths,
    wanted,
)
from examflow.joblogs import ParseWarnings
from examflow.plan import job_minutes
from examflow.prompts import read_digest
from examflow.registry import KINDS, MERGE_ONLY, ranker_files, ranker_gpus
from examflow.results import (
    baselines_folder,
    check_report_target,
    check_results,
    check_made_with,
    check_snakemake_paths,
    check_up_to_date,
    lock_results,
    named_config_files,
    record_outcome,
    report_command,
    report_target,
    warn_if_stopped,
)
from examflow.scheduling import (
    bank_buckets,
    bank_queries,
    check_bank_kinds,
    check_example_query,
    check_input_files,
    check_judge_files,
    check_leaderboard,
    check_response_runs,
    check_placeholders,
    check_gpu_partitions,
    check_resource_names,
    check_rule_names,
    check_relevance_level,
    check_submitted_paths,
    configured_facts,
    graded_shards,
    query_shards,
    official_from_qrels,
    submitted_paths,
    warn_about_answer_counts,
    workflow_rules,
)

# examflow's parse-time warnings (queries without questions, runs off the leaderboard, ...).
_warnings = logging.StreamHandler()
_warnings.setFormatter(logging.Formatter("examflow: %(levelname)s: %(message)s"))
logging.getLogger("examflow").addHandler(_warnings)
# ... and named again as the run ends (`onsuccess`)
PARSE_WARNINGS = ParseWarnings()
logging.getLogger("examflow").addHandler(PARSE_WARNINGS)
logging.getLogger("examflow").propagate = False

# The config files read: the user's (--configfile), else the demo's.
USER_CONFIG_FILES = [str(f) for f in workflow.overwrite_configfiles]
CONFIG_FILES = USER_CONFIG_FILES or [CONFIG_FILE]
# ... as a report command names them (`results.named_config_files`).
NAMED_CONFIG_FILES = named_config_files(USER_CONFIG_FILES, CONFIG_FILE)
# The --config settings as typed (a job is given the same words): a report needs them as much as the files.
CONFIG_SETTINGS = list(workflow.config_settings.config_args or [])
# The Snakefile, for the report command a run prints, where snakemake would not find it from here.
FOUND_HERE = (
    Path("workflow/Snakefile").resolve() == Path(workflow.main_snakefile).resolve()
)
SNAKEFILE = None if FOUND_HERE else os.path.relpath(workflow.main_snakefile)


def checked(step, *args):
    """`step(*args)`; an expected failure stops the run with one line naming the config file (a
    WorkflowError would print Snakemake's frames around it, which read like a bug)."""
    try:
        return step(*args)
    except Failure as error:
        overrides = workflow.config_settings.config  # --config's keys alone
        sources = config_sources(error, CONFIG_FILES, overrides)
        print(
            f"examflow: error: {error}" + (f" [{sources}]" if sources else ""),
            file=sys.stderr,
        )
        sys.exit(1)


for config_file in CONFIG_FILES:
    checked(check_config_file, config_file)
config.update(
    checked(check_config, config, workflow.source_path("../schemas/config.schema.yaml"))
)


def literal(path):
    """A file name as Snakemake must read it in a pattern: braces are not wildcards."""
    return str(path).replace("{", "{{").replace("}", "}}")


def given(path):
    """A file the configuration names, as a rule's input: `ancient`, for what it holds reruns the rule (its
    `contents` param), not its time; a touched file of any size reruns nothing (Snakemake's own checksum
    spares only files under --max-checksum-file-size)."""
    return ancient(literal(path))


INPUTS = config["inputs"] or {}
EXAM = bool(INPUTS)  # a collection to evaluate with EXAM; without one, NRP alone
RESULTS = os.path.normpath(config["results_dir"])
# The evaluations' baselines for bank-edit impact: state kept with the cache, one folder per results folder.
BASELINES = str(baselines_folder(config["cache_dir"], RESULTS))
ENV = "../envs/examflow.yaml"

# Rules run `python -m examflow` from this workflow's own src/, in a rule's conda environment
# or else with the Python that runs Snakemake (`.venv/bin/snakemake` works without activating).
SRC = shlex.quote(str(Path(workflow.basedir).parent / "src"))
PYTHON = (
    ""
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    else "export PATH=%s:$PATH; " % shlex.quote(str(Path(sys.executable).parent))
)
shell.prefix(
    "set -euo pipefail; %sexport PYTHONPATH=%s${{PYTHONPATH:+:$PYTHONPATH}}; "
    % (literal(PYTHON), literal(SRC))
)

# `snakemake --report FILE` builds the report of this configuration's results, never another's;
# any other command refuses a results folder that another configuration wrote or another run writes.
# (`--report-after-run` is a run first: its report follows only a run that completed.)
REPORT_TARGET = report_target(sys.argv) if workflow.is_main_process else None
REPORT_AFTER_RUN = "--report-after-run" in sys.argv
if REPORT_TARGET:
    checked(
        check_report_target,
        REPORT_TARGET,
        RESULTS,
        CONFIG_FILES,
        CONFIG_SETTINGS,
        SNAKEFILE,
        REPORT_AFTER_RUN,
    )
    Path(REPORT_TARGET).parent.mkdir(parents=True, exist_ok=True)
if workflow.is_main_process and (REPORT_AFTER_RUN or not REPORT_TARGET):
    checked(check_results, RESULTS)
    if "--unlock" not in sys.argv:  # the command its warning advises
        warn_if_stopped(RESULTS)


def results(path):
    """A path (pattern) under this configuration's results folder."""
    return f"{literal(RESULTS)}/{path}"


def logs(path):
    return results(f"logs/{path}")


def check_rerun_triggers():
    if RerunTrigger.PARAMS not in workflow.dag_settings.rerun_triggers:
        raise Failure(
            "--rerun-triggers must include 'params': bank edits reach grading through content digests"
        )


def input_file(key):
    """The file configured for an input, as a pattern; [] when unset or an ir_datasets id."""
    spec = INPUTS.get(key)
    return [] if spec is None or is_irds(spec) else given(spec)


def configured(*keys):
    """The files configured for these inputs (not the ones unset or named by an ir_datasets id)."""
    return [INPUTS[key] for key in keys if INPUTS.get(key) and not is_irds(INPUTS[key])]


def contents(*groups):
    """A step's `contents` param: one digest of the input files it reads (`examflow.contents`), so that an
    edit Snakemake's modification times miss (a file put back with `cp -p`) still reruns the step.
    """
    return contents_digest(path for group in groups for path in group)


RUN_FILES = checked(run_files, INPUTS.get("runs", []), "inputs.runs")
checked(check_input_files, config)


def as_written(group):
    """A profile's or the command line's resources, name: value as written (`raw`: a value Snakemake
    evaluates only for a rule's job)."""
    return {
        name: str(getattr(value, "raw", value))
        for name, value in dict((group or {}).items()).items()
    }


if workflow.is_main_process:  # once a run, not again in each job
    # What a profile or the command line sets, as written: the default resources, each rule's, and the
    # rules that --set-threads names.
    SETTINGS = workflow.resource_settings
    DEFAULT_RESOURCES = as_written(SETTINGS.default_resources)
    RULE_RESOURCES = {
        name: as_written(group)  # not `rule`, a keyword at a line's start
        for name, group in SETTINGS.overwrite_resources.items()
    }
    RULE_THREADS = list(SETTINGS.overwrite_threads or {})
    RESOURCES = [
        *DEFAULT_RESOURCES.items(),
        *(item for group in RULE_RESOURCES.values() for item in group.items()),
    ]
    checked(check_placeholders, RESOURCES)
    checked(check_resource_names, RESOURCES, list(SETTINGS.resources or {}))
    checked(
        check_rule_names,
        {"--set-resources": list(RULE_RESOURCES), "--set-threads": RULE_THREADS},
        workflow_rules(workflow.basedir),
    )
    checked(check_model_folders, config)
    checked(
        check_judge_files,
        INPUTS.get("labels") or {},
        config["judges"]["leaderboards"],
        config["judges"]["leaderboard_layout"],
        RUN_FILES,
        config["validation"],
        next(iter(configured("queries")), None),  # a file's, not an ir_datasets id's
        INPUTS.get("responses"),
    )
    if INPUTS.get("responses") and RUN_FILES:
        checked(check_response_runs, INPUTS["responses"], RUN_FILES)
    # (an ir_datasets source is read by the pool step alone)
    if INPUTS.get("qrels") and not is_irds(INPUTS["qrels"]):
        checked(
            check_relevance_level,
            INPUTS["qrels"],
            config["evaluation"]["min_relevant_judgment"],
            config["validation"]["relevance_range"],
        )


def cli_options(**options):
    """`--name value` words for the examflow CLI, a list that the shell line quotes word by word
    (`{params.x:q}`); None or an empty list leaves an option out."""
    words = []
    for name, value in options.items():
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if value is None or not values:
            continue
        words += [f"--{name.replace('_', '-')}"] + [str(v) for v in values]
    return words


BANK = INPUTS.get("bank")
# The bank is generated only while its file does not exist: from then on it is the user's.
GENERATE_BANK = (
    bool(BANK) and config["questions"]["generate"] and not Path(BANK).exists()
)
# what a generated bank holds: questions, or nuggets (examflow.questions.nuggetize)
GENERATED = config["questions"]["items"].removesuffix("s") if GENERATE_BANK else None
VALIDATION = config["validation"]
SHARD_COUNT = config["grading"]["shards"]
METHODS = {method.name: method for method in methods(config["grading"]["methods"])}
# The shards of the queries with questions, which the bank's shards and the methods that read them take: a
# shard whose queries have none gets no job of theirs.
SHARDS = (
    checked(
        graded_shards,
        INPUTS["queries"],
        BANK,
        GENERATED,
        VALIDATION,
        SHARD_COUNT,
        list(METHODS.values()),
    )
    if BANK or config["grading"]["methods"]
    else []
)
# The methods that grade passages against the query (no bank) grade every query's shard.
QUERY_SHARDS = (
    checked(query_shards, INPUTS["queries"], SHARD_COUNT)
    if not all(method.entry.reads_bank for method in METHODS.values())
    else []
)
if BANK and config["grading"]["methods"]:
    checked(check_bank_kinds, BANK, GENERATED, config["grading"])
    if not GENERATED:
        checked(
            warn_about_answer_counts,
            BANK,
            config["grading"],
            config["evaluation"]["tau"],
        )
if EXAM:
    checked(check_example_query, INPUTS["queries"], config["report"]["example_query"])

# What the configuration gives decides which files each step writes (examflow.outputs).
FACTS = checked(configured_facts, config, GENERATED)
# Without an official leaderboard file, one is computed from the official qrels (rule official_leaderboard).
OFFICIAL_FROM_QRELS = official_from_qrels(config)
# The responses' runs, which a leaderboard given may rank and the judges leave out (they rank passages)
JUDGES_RESPONSES = (
    configured("responses")
    if not OFFICIAL_FROM_QRELS or config["judges"]["leaderboards"]
    else []
)


def official_computation(prefix=""):
    """How the official leaderboard is computed from the qrels, as `--{prefix}measure`, `--{prefix}relevance-
    level` and `--{prefix}query-mode` settings (none where a file is given): the official, judges and summary
    steps take them from here."""
    evaluation = config["evaluation"]
    settings = {
        "measure": evaluation["official_measure"],
        "relevance_level": evaluation["min_relevant_judgment"],
        "query_mode": evaluation["query_mode"],
    }
    return (
        {prefix + key: value for key, value in settings.items()}
        if OFFICIAL_FROM_QRELS
        else {}
    )


def official_input(wildcards):
    """The official leaderboard: the file given, the one computed from the qrels, or none."""
    if OFFICIAL_FROM_QRELS:
        return rules.official_leaderboard.output[0]
    return input_file("official_leaderboard")


def bank_path():
    return checkpoints.questions.get().output[0] if GENERATE_BANK else BANK


def bank_input(wildcards):
    """The bank file, if any; ancient, since edits act through each shard's content digest."""
    checked(
        check_rerun_triggers
    )  # the DAG's settings are known from here on, not at parse time
    return ancient(literal(bank_path())) if BANK else []


def shard_digest(wildcards):
    # Reads the bank itself (no `input` argument): Snakemake ignores changes of params
    # derived from input, and this digest is how an edit reaches exactly its shard.
    path = bank_path()
    if not path:  # no bank: methods that pair passages with the query
        return "no questions"
    return bank_queries(path, os.path.getmtime(path), SHARD_COUNT).digests.get(
        wildcards.shard, "no questions"
    )


def holding_buckets(wildcards):
    # Read from the bank itself, as shard_digest: a bank generated in this run holds only the buckets of the
    # queries that got items, where the parse counted every query's (the next run would rerun every shard).
    path = bank_path()
    if not path:
        return []
    return list(
        checked(
            bank_buckets, INPUTS["queries"], path, os.path.getmtime(path), SHARD_COUNT
        )
    )


# Keys sorted at every level (examflow.registry.Method.record); a grading job is not given what only
# the merge reads (MERGE_ONLY): a new calibration reruns the merge and what follows, never a grading job.
def method_json(wildcards, leave_out=()):
    return json.dumps(METHODS[wildcards.method].record(leave_out))


def grading_json(wildcards):
    return method_json(wildcards, MERGE_ONLY)


def grading_settings(wildcards):
    """A digest of what a method's grades depend on besides the bank: its settings (not how its
    requests travel) and the prompts its back end reads (bank-edit impact compares with an earlier
    bank only under the same)."""
    settings = [
        METHODS[wildcards.method].grading_record(),
        prompts_read(wildcards),
        model_weights(wildcards),
    ]
    return hashlib.sha256(json.dumps(settings).encode()).hexdigest()[:16]


def model_weights(wildcards):
    """A local model folder's version: new weights in the same folder rerun grading."""
    return _weights_of(wildcards.method)


def prompts_read(wildcards):
    """What the method's model reads of its prompts: a new text reruns its grading (the cache answers the rest)."""
    return _prompts_of(wildcards.method)


@functools.cache  # once a method: every grading job's params and the plan's read it
def _prompts_of(method):
    settings = METHODS[method]
    return read_digest(KINDS[settings.kind].templates, settings.backend.entry.roles)


def cache_keys(wildcards):
    """What each method's cache keys follow besides its settings: new weights in a model's folder or a new
    prompt text make a new plan, whose counts of cached pairs they change."""
    return {method: [_weights_of(method), _prompts_of(method)] for method in METHODS}


@functools.cache  # once a method, not once a grading job (its shards share the model)
def _weights_of(method):
    return METHODS[method].backend.local_weights()


def reads_bank(wildcards):
    """Whether a grading job reads its bank shard: a method that grades against the query does not, so that
    a bank edit reruns no job of it."""
    return METHODS[wildcards.method].entry.reads_bank


def shards_of(method):
    """The shards a method grades: those with questions, or for one that grades against the
    query every query's (one the bank holds no question for is graded by it all the same).
    """
    return SHARDS if METHODS[method].entry.reads_bank else QUERY_SHARDS


def method_grades(wildcards):
    """The grades tables of a method's shards."""
    return expand(
        rules.grade.output[0],
        method=wildcards.method,
        shard=shards_of(wildcards.method),
    )


def method_pools(wildcards):
    """The pool shards a method's grading jobs read."""
    return expand(rules.pool_shard.output, shard=shards_of(wildcards.method))


def bank_shards(wildcards):
    """The bank's shards, for a method that reads them (its evaluation, its report); none for one that grades
    against the query, so that a bank edit reruns nothing of it."""
    return (
        expand(rules.bank_shard.output, shard=SHARDS) if reads_bank(wildcards) else []
    )


def bank_option(wildcards, input):
    return ["--questions", input.questions] if input.questions else []


def method_gpus(wildcards):
    return METHODS[wildcards.method].gpu


def gpu_visibility(wildcards):
    """A grading job that holds no GPU sees none: `device: auto` then runs on its CPU cores, as planned.
    The words `env` takes before the command: the emptied variable, or none."""
    return ["CUDA_VISIBLE_DEVICES="] if method_gpus(wildcards) == 0 else []


def method_resource(name):
    """A grading job's threads or memory, by its method's back end (examflow.registry)."""
    return lambda wildcards: getattr(METHODS[wildcards.method].backend.entry, name)


def grade_runtime(wildcards, input):
    """Minutes for a grading job, from its shard's pairs (examflow.plan)."""
    return job_minutes(
        METHODS[wildcards.method], input.passages, input.questions, input.queries
    )


def size_mb(wildcards, files):
    return (
        sum(
            os.path.getsize(path)
            for path in ([files] if isinstance(files, str) else files)
        )
        / 2**20
    )


def pool_outputs():
    """Every table `examflow pool` writes (examflow.outputs.POOL)."""
    return {name: results(f"pool/{path}") for name, path in paths(POOL, FACTS).items()}


def evaluation_outputs():
    """Every file `examflow evaluate` writes for a method (examflow.outputs.EVALUATION)."""
    return {
        name: results(f"eval/{{method}}/{path}")
        for name, path in paths(EVALUATION, FACTS).items()
    }


def report_outputs():
    """Every file `examflow report` writes for a method (examflow.outputs.REPORT)."""
    return {
        name: report(
            results(f"report/{{method}}/{file.path}"),
            caption=f"../report/{file.caption}.rst",
            category="EXAM {method}",
            subcategory=file.section,
            labels={"method": "{method}", "item": file.path},
        )
        for name, file in wanted(REPORT, FACTS).items()
    }


def report_inputs(wildcards):
    evaluation = {
        name: path.format(method=wildcards.method)
        for name, path in evaluation_outputs().items()
    }
    return evaluation | {
        "grades": rules.merge_grades.output[0].format(method=wildcards.method),
        "passages": rules.pool.output.passages,
        "rankings": rules.pool.output.rankings,  # the evaluated runs, for the official leaderboard's check
        "questions": bank_shards(wildcards),
        "official": official_input(wildcards),
    }


def report_inputs_options(wildcards, input):
    return cli_options(
        eval=Path(input.leaderboard).parent,
        official=input.official or None,
        pool=Path(input.passages).parent,
        questions=input.questions,
    )


# Params made of the configuration take no `input`: Snakemake does not rerun a job when a param
# computed from its input changes, so a changed setting there would be lost.
def report_settings(wildcards):
    return cli_options(
        tau=config["report"]["method_tau"][wildcards.method],
        example_query=config["report"]["example_query"],
        measures=config["evaluation"]["measures"],
        on_unknown_run=config["validation"]["leaderboard_runs"],
    )


def pool_inputs(wildcards):
    inputs = {key: input_file(key) for key in ("queries", "qrels", "corpus")}
    inputs["runs"] = [given(run) for run in RUN_FILES]
    inputs["segments"] = segments()
    return inputs


def segments():
    """The generated responses and gold articles cut into passages, where the configuration has any."""
    return (
        rules.segment.output[0]
        if INPUTS["responses"] or INPUTS["gold_articles"]
        else []
    )


def input_files(input, *keys):
    """`--key file` for each of `keys` that the rule's input holds (ir_datasets ids: `irds_sources`)."""
    return cli_options(**{key: input.get(key) or None for key in keys})


def irds_sources(*keys):
    """`--key id` for each of `keys` configured as an ir_datasets id, from the configuration: a param
    computed from `input` does not rerun a job when it changes, and another id must."""
    return cli_options(
        **{key: INPUTS.get(key) for key in keys if is_irds(INPUTS.get(key))}
    )


POOL_SOURCES = ("queries", "runs", "qrels", "corpus", "segments")


NRP = config["nrp"]


# Judges compared (docs/judges.md): every method's EXAM-Qrels and each outside label set against the
# official qrels, by the leaderboards they give and by their labels, page by page (runs rank pages).
OUTSIDE_LABELS = INPUTS.get("labels") or {}
JUDGES = bool(
    EXAM
    and input_file("qrels")  # a file: ir_datasets qrels are not compared (yet)
    and RUN_FILES
    and FACTS.official
    and (METHODS or OUTSIDE_LABELS or config["judges"]["leaderboards"])
)
if INPUTS.get("official_leaderboard"):
    checked(check_leaderboard, INPUTS, RUN_FILES, VALIDATION)
elif JUDGES:
    checked(check_official_for_judges, config)
if JUDGES and workflow.is_main_process:  # the queries read once a run
    checked(check_judges_query_ids, config, next(iter(configured("queries")), None))


def gpu_rules():
    """The rules whose jobs ask for a GPU in this configuration."""
    grade = EXAM and any(method.gpu for method in METHODS.values())
    nrp = NRP and ranker_gpus(NRP["rankers"])
    return [rule for rule, wanted in (("grade", grade), ("nrp", nrp)) if wanted]


if workflow.is_main_process:  # the resource settings, read above
    checked(check_gpu_partitions, DEFAULT_RESOURCES, RULE_RESOURCES, gpu_rules())


def judges_outputs():
    """Every table `examflow compare-judges` writes (examflow.outputs.JUDGES)."""
    return {
        name: results(f"{JUDGES_FOLDER}/{path}")
        for name, path in paths(JUDGES_FILES, FACTS).items()
    }


def report_files(step, folder):
    """The figures and pages of a step reported once (examflow.outputs.JUDGES_REPORT, NRP_REPORT)."""
    return {
        name: report(
            results(f"report/{folder}/{file.path}"),
            caption=f"../report/{file.caption}.rst",
            category=file.section,
            labels={"item": file.path},
        )
        for name, file in wanted(step, FACTS).items()
    }


def method_qrels(method):
    """A method's EXAM-Qrels (the evaluate rule's output), a path: `literal` makes it a pattern again."""
    return evaluation_outputs()["qrels"].format(method=method)


# The judges' params are made of the configuration alone, the files' paths included (the same paths as
# the rule's input): a param computed from `input` does not rerun the job when, say, a label set is renamed.
def judges_labels(wildcards):
    """`NAME=QRELS` of each method's EXAM-Qrels, then of each outside label set; `NAME=FILE` of each
    other judge's AutoJudge leaderboard."""
    named = [(method, method_qrels(method)) for method in METHODS] + list(
        OUTSIDE_LABELS.items()
    )
    boards = config["judges"]["leaderboards"].items()
    return cli_options(
        labels=[f"{name}={path}" for name, path in named],
        leaderboard=[f"{name}={path}" for name, path in boards],
        leaderboard_layout=(
            config["judges"]["leaderboard_layout"]
            if config["judges"]["leaderboards"]
            else None
        ),
    )


def judges_official(wildcards):
    """The official leaderboard: computed from the qrels as `examflow official` computes it, but query by
    query, so that the bootstrap resamples it with every judge's (and the official qrels are not compared
    with themselves); or the file given."""
    if OFFICIAL_FROM_QRELS:  # its query mode is every label set's (judges_settings)
        computed = official_computation("official_")
        del computed["official_query_mode"]
        return cli_options(**computed)
    return cli_options(official=INPUTS["official_leaderboard"])


def judges_settings(wildcards):
    judges, evaluation = config["judges"], config["evaluation"]
    options = cli_options(
        measure=judges["measures"],
        top_k=judges["top_k"],
        rbo_p=judges["rbo_p"],
        bootstrap=evaluation["bootstrap"],
        seed=evaluation["seed"],
        # as the EXAM-Qrels measures of `examflow evaluate`
        query_mode=evaluation["query_mode"],
        # runs an official leaderboard or another judge's ranks that no run file holds
        on_unknown_run=config["validation"]["leaderboard_runs"],
        # label sets' rows of a query that is not in inputs.queries (checked with --queries)
        on_unknown_query=config["validation"]["unknown_queries"],
        ensemble=[
            f"{name}={','.join(members)}"
            for name, members in judges["ensembles"].items()
        ],
    )
    return [
        "--per-page",
        *options,
    ]  # runs rank pages: subtopic judgments count for their page


def nrp_outputs():
    """Every table `examflow nrp` writes (examflow.outputs.NRP)."""
    return {
        name: results(f"nrp/{path}") for name, path in paths(NRP_FILES, FACTS).items()
    }


def nrp_files():
    """Every file the NRP step reads, for its `contents` param."""
    optional = [NRP[key] for key in ("corpus", "expert") if NRP[key]]
    qrels = [d["qrels"] for d in NRP["dimensions"].values()]
    return [
        NRP["queries"],
        NRP["answers"],
        *optional,
        *qrels,
        *ranker_files(NRP["rankers"]),
    ]


def configured_paths():
    """(configuration key, path) of every folder and file the configuration gives the rules as files (the
    cache folder reaches them only as a param, which Snakemake does not read)."""
    yield "results_dir", RESULTS
    for key, spec in INPUTS.items():
        if key == "labels":
            yield from (
                (f"inputs.labels.{name}", path) for name, path in (spec or {}).items()
            )
        elif key != "runs" and isinstance(spec, str) and not is_irds(spec):
            yield f"inputs.{key}", spec
    yield from (("inputs.runs", path) for path in RUN_FILES)
    yield from (
        (f"judges.leaderboards.{n}", p)
        for n, p in config["judges"]["leaderboards"].items()
    )
    yield from (("nrp", path) for path in (nrp_files() if NRP else []))


checked(check_snakemake_paths, configured_paths())


def nrp_inputs(wildcards):
    """From the configuration, as the rule's input (a param computed from `input` would not rerun the job
    when a dimension is renamed)."""
    return cli_options(
        corpus=NRP["corpus"] or None,
        qrels=[f"{name}={d['qrels']}" for name, d in NRP["dimensions"].items()],
        expert=NRP["expert"] or None,
    )


def nrp_settings(wildcards):
    dimensions = NRP["dimensions"]
    wilcoxon = [word for pair in NRP["wilcoxon"] for word in ("--wilcoxon", *pair)]
    options = cli_options(
        weight=[f"{n}={d['weight']}" for n, d in dimensions.items() if "weight" in d],
        fix_ranker=[f"{n}={d['ranker']}" for n, d in dimensions.items() if d["ranker"]],
        cannot_judge=[
            f"{n}={label}" for n, d in dimensions.items() for label in d["cannot_judge"]
        ],
        ranker=[json.dumps(ranker) for ranker in NRP["rankers"]],
        denominator=NRP["denominator"],
        cache_dir=config["cache_dir"],
        on_unknown_query=config["validation"]["unknown_queries"],
        on_missing_passage=config["validation"]["missing_passages"],
        relevance_range=config["validation"]["relevance_range"],
    )
    return [*wilcoxon, *options]


from snakemake.logging import logger as snakemake_logger
from snakemake_interface_logger_plugins.common import LogEvent

from examflow.joblogs import KeepEarlierLogs, name_failures, name_retries, name_warnings
from examflow.progress import Reporter, job_path, progress_period


# Grading progress (examflow.progress): each grading job keeps its counts in a small file under
# logs/progress/, and the main process prints one line across them at least every
# $EXAMFLOW_PROGRESS_SECONDS (default 30) while grading runs, locally or on a cluster.
def progress_file(wildcards):
    return str(job_path(RESULTS, wildcards.method, wildcards.shard))


def grade_jobs():
    """This run's grading jobs as method/shard; Snakemake's job set grows after a checkpoint."""
    jobs = list(workflow.dag.needrun_jobs(exclude_finished=False))
    return [
        f"{job.wildcards.method}/{job.wildcards.shard}"
        for job in jobs
        if job.rule.name == "grade"
    ]


# Started by `onstart`, which only the main process of a real run calls (never a job, never -n).
PROGRESS = Reporter(
    RESULTS, grade_jobs, checked(progress_period, os.environ), snakemake_logger.info
)


JOB_LOGS = (
    {}
)  # jobid: the job's logs, filled as jobs are announced (a checkpoint adds some)


def job_logs(jobid):
    """The logs of the job Snakemake numbered `jobid`; the DAG is read again only for a job not yet seen."""
    if jobid not in JOB_LOGS:
        dag = workflow.dag
        JOB_LOGS.update({dag.jobid(job): list(job.log) for job in dag.jobs})
    return JOB_LOGS.get(jobid, [])


# Before any job of this run writes its log: `onerror` names the failures logged since.
PARSED = time.time()


def keep_earlier_logs():
    """From here on (`onstart`: the main process of a real run), each job's log moves aside,
    NAME.log to NAME.log.1 (.2, ...), when Snakemake announces the job: it then removes the job's
    log, so a rerun would lose the earlier attempt's."""
    snakemake_logger.addFilter(
        KeepEarlierLogs(LogEvent.JOB_INFO, job_logs, snakemake_logger.warning)
    )
