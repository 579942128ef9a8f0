import glob
import shlex
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

validate(config, "../schemas/config.schema.yaml", set_default=True)

INPUTS = config["inputs"]
POOL = "results/pool"
ENV = "../../envs/examflow.yaml"

# Rules run `python -m examflow` from this workflow's own src/, in the venv and in a
# rule's conda environment alike.
SRC = shlex.quote(str(Path(workflow.basedir) / "src"))
shell.prefix(
    "set -euo pipefail; export PYTHONPATH=%s${{PYTHONPATH:+:$PYTHONPATH}}; " % SRC
)


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


def is_irds(spec):
    return isinstance(spec, str) and spec.startswith("irds:")


def input_file(key):
    """The file configured for an input; [] when unset or an ir_datasets id."""
    spec = INPUTS[key]
    return [] if spec is None or is_irds(spec) else spec


RUN_FILES = expand_runs(INPUTS["runs"])
for key, spec in INPUTS.items():
    if key != "runs" and input_file(key):
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


def pool_inputs(wildcards):
    inputs = {key: input_file(key) for key in ("queries", "qrels", "corpus")}
    inputs["runs"] = RUN_FILES
    inputs["segments"] = rules.segment.output[0] if INPUTS["responses"] else []
    return inputs


def source(input, key):
    """A rule's input file for `key`, else the config's ir_datasets id (or None)."""
    return input.get(key) or INPUTS.get(key)


def pool_sources(wildcards, input):
    keys = ("queries", "runs", "qrels", "corpus", "segments")
    return cli_options(**{key: source(input, key) for key in keys})
