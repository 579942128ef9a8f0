import glob
import json
import logging
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.enums import RerunTrigger
from snakemake_interface_executor_plugins.settings import DeploymentMethod

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
from examflow.config import check_config, config_digest
from examflow.errors import Failure
from examflow.io.irds import is_irds
from examflow.plan import job_minutes
from examflow.registry import BACKENDS
from examflow.workflow import bank_queries, check_leaderboard, graded_shards, has_facets

# examflow's parse-time warnings (queries without questions, runs off the leaderboard, ...).
_warnings = logging.StreamHandler()
_warnings.setFormatter(logging.Formatter("examflow: %(levelname)s: %(message)s"))
logging.getLogger("examflow").addHandler(_warnings)
logging.getLogger("examflow").propagate = False


def checked(step, *args):
    """`step(*args)`, its expected failures shown as one line naming the config file."""
    try:
        return step(*args)
    except Failure as error:
        files = ", ".join(map(str, workflow.overwrite_configfiles)) or CONFIG_FILE
        raise WorkflowError(f"{error}\n(configuration: {files})") from None


config.update(
    checked(check_config, config, workflow.source_path("../schemas/config.schema.yaml"))
)

INPUTS = config["inputs"]
RESULTS = config["results_dir"].rstrip("/")
# The evaluations' baselines for bank-edit impact: state kept with the cache, one folder per results folder.
BASELINES = f"{config['cache_dir']}/baselines/{re.sub(r'[^A-Za-z0-9_-]', '_', RESULTS)}"
ENV = "../../envs/examflow.yaml"

# Rules run `python -m examflow` from this workflow's own src/, in a rule's conda environment
# or else with the Python that runs Snakemake (`.venv/bin/snakemake` works without activating).
SRC = shlex.quote(str(Path(workflow.basedir) / "src"))
PYTHON = (
    ""
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    else "export PATH=%s:$PATH; " % shlex.quote(str(Path(sys.executable).parent))
)
shell.prefix(
    "set -euo pipefail; %sexport PYTHONPATH=%s${{PYTHONPATH:+:$PYTHONPATH}}; "
    % (PYTHON, SRC)
)


def results(path):
    """A path under this configuration's results folder."""
    return f"{RESULTS}/{path}"


def logs(path):
    return results(f"logs/{path}")


def existing_file(key, path):
    if not Path(path).is_file():
        raise WorkflowError(f"config inputs.{key}: file not found: {path}")
    return path


def expand_runs(patterns):
    """Run files named by the `inputs.runs` paths and glob patterns, sorted, each once."""
    files = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise WorkflowError(f"config inputs.runs: no file matches {pattern!r}")
        files += [
            existing_file("runs", match) for match in matches if match not in files
        ]
    return files


def input_file(key):
    """The file configured for an input; [] when unset or an ir_datasets id."""
    spec = INPUTS[key]
    return [] if spec is None or is_irds(spec) else spec


RUN_FILES = expand_runs(INPUTS["runs"])
for key, spec in INPUTS.items():
    to_generate = key == "bank" and config["questions"]["generate"]
    if key != "runs" and input_file(key) and not to_generate:
        existing_file(key, spec)


def cli_options(**options):
    """`--name value` pairs for the examflow CLI; None leaves an option out."""
    words = []
    for name, value in options.items():
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if value is None or not values:
            continue
        words += [f"--{name.replace('_', '-')}"] + [shlex.quote(str(v)) for v in values]
    return " ".join(words)


BANK = INPUTS["bank"]
# The bank is generated only while its file does not exist: from then on it is the user's.
GENERATE_BANK = (
    bool(BANK) and config["questions"]["generate"] and not Path(BANK).exists()
)
VALIDATION = config["validation"]
SHARD_COUNT = config["grading"]["shards"]
# One shard per query with questions: a query without any gets no jobs at all.
SHARDS = (
    checked(
        graded_shards, INPUTS["queries"], BANK, GENERATE_BANK, VALIDATION, SHARD_COUNT
    )
    if BANK
    else []
)
if INPUTS["official_leaderboard"]:
    checked(check_leaderboard, INPUTS, RUN_FILES, VALIDATION)


# The topic of the worked example: the configured one, or the first query with questions.
EXAMPLE_QUERY = config["report"]["example_query"] or (
    sorted(bank_queries(BANK, os.path.getmtime(BANK), SHARD_COUNT).with_items)[0]
    if BANK and not GENERATE_BANK
    else None
)


def bank_path():
    return checkpoints.questions.get().output[0] if GENERATE_BANK else BANK


def bank_input(wildcards):
    """The bank file; ancient, since edits act through each shard's content digest."""
    if RerunTrigger.PARAMS not in workflow.dag_settings.rerun_triggers:
        raise WorkflowError(
            "--rerun-triggers must include 'params': bank edits reach grading through content digests"
        )
    return ancient(bank_path())


def shard_digest(wildcards):
    # Reads the bank itself (no `input` argument): Snakemake ignores changes of params
    # derived from input, and this digest is how an edit reaches exactly its shard.
    path = bank_path()
    return bank_queries(path, os.path.getmtime(path), SHARD_COUNT).digests.get(
        wildcards.shard, "no questions"
    )


METHODS = {method["name"]: method for method in config["grading"]["methods"]}


# How similarities become grades is read only when the shards are merged: a new calibration
# reruns merge_grades and what follows, never a grading job.
MERGE_ONLY = ("quantiles", "calibration")


# Sorted keys: the order a config file writes them in is no change of the method.
def method_json(wildcards, leave_out=()):
    method = METHODS[wildcards.method]
    return shlex.quote(
        json.dumps(
            {k: v for k, v in method.items() if k not in leave_out}, sort_keys=True
        )
    )


def grading_json(wildcards):
    return method_json(wildcards, MERGE_ONLY)


def method_gpus(wildcards):
    return METHODS[wildcards.method]["gpu"]


def method_resource(name):
    """A grading job's threads or memory, by its method's back end (examflow.registry)."""
    return lambda wildcards: getattr(
        BACKENDS[METHODS[wildcards.method]["backend"]["kind"]], name
    )


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


def evaluation_outputs():
    """Every file `examflow evaluate` writes for a method, as this configuration asks for them."""
    tables = ["leaderboard", "per_query", "questions", "uncovered"]
    tables += ["impact_questions", "impact_passages", "impact_systems"]
    tables += ["correlation"] if INPUTS["official_leaderboard"] else []
    tables += ["kappa", "agreement"] if INPUTS["qrels"] else []
    outputs = {name: results(f"eval/{{method}}/{name}.tsv") for name in tables}
    outputs["qrels"] = results("eval/{method}/qrels/{method}.qrels")
    if checked(has_facets, INPUTS["queries"]):
        outputs["facets_qrels"] = results("eval/{method}/qrels/{method}.facets.qrels")
    return outputs


# What each report file is: (file, caption, subcategory, wanted).
REPORT_FILES = {
    "leaderboard_png": ("leaderboard.png", "leaderboard", "1 Leaderboard", True),
    "leaderboard_html": (
        "leaderboard.html",
        "leaderboard_table",
        "1 Leaderboard",
        True,
    ),
    "scatter_png": (
        "scatter.png",
        "scatter",
        "2 Agreement",
        bool(INPUTS["official_leaderboard"]),
    ),
    "correlation_html": (
        "correlation.html",
        "correlation_table",
        "2 Agreement",
        bool(INPUTS["official_leaderboard"]),
    ),
    "grades_png": ("grades.png", "grades", "3 Grades", True),
    "kappa_png": ("kappa.png", "kappa", "3 Grades", bool(INPUTS["qrels"])),
    "questions_html": ("questions.html", "questions", "4 Questions", True),
    "impact_html": ("impact.html", "impact", "5 Bank edits", True),
    "example_html": ("example.html", "example", "6 Worked example", True),
}


def report_outputs():
    return {
        name: report(
            results(f"report/{{method}}/{file}"),
            caption=f"../report/{caption}.rst",
            category="EXAM: {method}",
            subcategory=subcategory,
            labels={"method": "{method}", "item": file},
        )
        for name, (file, caption, subcategory, wanted) in REPORT_FILES.items()
        if wanted
    }


def report_inputs(wildcards):
    evaluation = {
        name: path.format(method=wildcards.method)
        for name, path in evaluation_outputs().items()
    }
    return evaluation | {
        "grades": rules.merge_grades.output[0].format(method=wildcards.method),
        "passages": rules.pool.output.passages,
        "questions": expand(rules.bank_shard.output, shard=SHARDS),
        "official": INPUTS["official_leaderboard"] or [],
    }


def report_options(wildcards, input):
    return cli_options(
        eval=Path(input.leaderboard).parent,
        official=input.official or None,
        example_query=EXAMPLE_QUERY,
        pool=Path(input.passages).parent,
        questions=input.questions,
    )


def pool_inputs(wildcards):
    inputs = {key: input_file(key) for key in ("queries", "qrels", "corpus")}
    inputs["runs"] = RUN_FILES
    generated = INPUTS["responses"] or INPUTS["gold_articles"]
    inputs["segments"] = rules.segment.output[0] if generated else []
    return inputs


def source(input, key):
    """A rule's input file for `key`, else the config's ir_datasets id (or None)."""
    return input.get(key) or INPUTS.get(key)


def pool_sources(wildcards, input):
    keys = ("queries", "runs", "qrels", "corpus", "segments")
    return cli_options(**{key: source(input, key) for key in keys})


NRP = config["nrp"]


def nrp_tables():
    """The NRP tables the configuration asks for."""
    optional = {"wilcoxon": NRP["wilcoxon"], "expert_agreement": NRP["expert"]}
    tables = ["per_answer", "per_system", "ranker_selection"]
    return tables + [name for name, wanted in optional.items() if wanted]


def nrp_options(wildcards, input):
    dimensions = NRP["dimensions"]
    return cli_options(
        qrels=[f"{name}={path}" for name, path in zip(dimensions, input.qrels)],
        weight=[f"{n}={d['weight']}" for n, d in dimensions.items() if "weight" in d],
        fix_ranker=[f"{n}={d['ranker']}" for n, d in dimensions.items() if d["ranker"]],
        cannot_judge=[
            f"{n}={label}" for n, d in dimensions.items() for label in d["cannot_judge"]
        ],
        ranker=[json.dumps(ranker) for ranker in NRP["rankers"]],
        expert=input.expert or None,
    )
