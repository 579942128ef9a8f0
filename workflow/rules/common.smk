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


RUN_FILES = expand_runs(INPUTS["runs"])
for key, path in INPUTS.items():
    if key != "runs" and path is not None:
        existing_file(key, path)


def cli_options(**options):
    """`--name value` pairs for the examflow CLI; None leaves an option out."""
    words = []
    for name, value in options.items():
        if value is None or value == []:
            continue
        values = value if isinstance(value, list) else [value]
        words += [f"--{name.replace('_', '-')}"] + [str(v) for v in values]
    return " ".join(words)


def pool_inputs(wildcards):
    inputs = {"queries": INPUTS["queries"], "runs": RUN_FILES}
    inputs |= {key: INPUTS[key] for key in ("qrels", "corpus") if INPUTS[key]}
    if INPUTS["responses"]:
        inputs["segments"] = rules.segment.output[0]
    return inputs
