"""The bundled demo, as `make demo` runs it: wall time and each job's import time.

    python benchmarks/demo_workflow.py [--repeat 3]

Runs `snakemake --cores all --forceall` on the demo into a temporary results folder with an
empty grade cache (a fresh clone), `--repeat` times, and prints the wall times. Then runs it once
more with `PYTHONPROFILEIMPORTTIME=1` and prints, per job, the import time Python reports for the
`python -m examflow` process (the sum of its top-level imports), and the time of
`examflow --help`. Targets on two cores: the demo under 20 s, commands that load no model
under 0.5 s of imports.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
# `import time:  self [us] | cumulative | name`: a top-level import has no indentation.
TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")
MODEL_RULES = {"grade", "nrp"}  # jobs that load a model (the demo's embedding model)


def demo(results: Path, env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        [SNAKEMAKE, "--cores", "all", "--forceall", "--quiet", "all",
         "--config", f"results_dir={results}", f"cache_dir={results}/cache"],
        cwd=ROOT, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - start


def import_seconds(text: str) -> float:
    return sum(int(m.group(1)) for line in text.splitlines() if (m := TOP_LEVEL.match(line))) / 1e6


def rule_of(log: Path, logs: Path) -> str:
    """The rule that wrote a log, from its path (logs/grade/cosine/shard-04.log: grade)."""
    parts = log.relative_to(logs).with_suffix("").parts
    names = {"bank": "bank_shard", "pool": "pool_shard", "report": "report"}
    if parts[0] == "grade":
        return "grade" if len(parts) == 3 else "merge_grades"
    return names.get(parts[0], parts[0]) if len(parts) > 1 else parts[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the whole demo (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        walls = [demo(Path(tmp) / f"run{i}") for i in range(args.repeat)]
        print(f"demo workflow, {os.cpu_count()} cores, cold grade cache: " + ", ".join(f"{w:.1f} s" for w in walls))
        print(f"  best {min(walls):.1f} s (target: under 20 s)")

        profiled = Path(tmp) / "profiled"
        demo(profiled, os.environ | {"PYTHONPROFILEIMPORTTIME": "1"})
        per_rule = defaultdict(list)
        for log in sorted((profiled / "logs").rglob("*.log")):
            seconds = import_seconds(log.read_text(encoding="utf-8"))
            if seconds:
                per_rule[rule_of(log, profiled / "logs")].append(seconds)
        help_run = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "examflow", "--help"], capture_output=True, text=True, check=True
        )
        per_rule["examflow --help"].append(import_seconds(help_run.stderr))
    print("\nimport time per job (python -X importtime; target for jobs without a model: under 0.5 s)")
    print(f"  {'job':<16} {'jobs':>4} {'mean s':>7} {'max s':>6}")
    for rule, seconds in sorted(per_rule.items(), key=lambda item: -max(item[1])):
        model = "  (loads a model)" if rule in MODEL_RULES else ""
        print(f"  {rule:<16} {len(seconds):>4} {sum(seconds) / len(seconds):>7.2f} {max(seconds):>6.2f}{model}")


if __name__ == "__main__":
    main()
