"""Is the plan right? Planned against measured grading job time, per job and in total.

    python benchmarks/plan_accuracy.py [--collections study dl] [--scale 0.5] [--shards 16]

Runs the real workflow with the offline (embedding) grader and an empty grade cache on each
collection: `resources/study/`, and a synthetic collection of TREC DL 2019's shape (43 queries,
about 200 judged passages each, all pooled, 10 questions each; `--scale` shrinks the number of
queries). First the `plan` target alone, then the grading. Per grading job it prints the time the
plan gives it (`examflow.plan.job_seconds`, the figure the job's runtime request comes from) beside the
time Snakemake recorded for it (start to end, `.snakemake/metadata`), then the totals; the target is
measured / planned within 0.5–2.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from base64 import urlsafe_b64encode
from pathlib import Path

import pandas as pd
import yaml
from workdir import kept_or_temporary

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
METHOD = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}
RUNS = 36  # DL 2019 has 37 official runs


def sentences() -> list[str]:
    """English sentences to build passages from: the demo's and the study's passages, cut at full stops."""
    found = set()
    for corpus in ("demo", "study"):
        for line in (ROOT / "resources" / corpus / "corpus.tsv").read_text().splitlines():
            found.update(s.strip() + "." for s in line.split("\t", 1)[1].split(". ") if len(s) > 20)
    return sorted(found)


def questions_written() -> list[str]:
    found = set()
    for corpus in ("demo", "study"):
        for line in (ROOT / "resources" / corpus / "bank.jsonl").read_text().splitlines():
            found.update(item["question_text"] for item in json.loads(line)["items"])
    return sorted(found)


def dl_shaped(folder: Path, queries: int, passages: int = 200, questions: int = 10, seed: int = 0) -> dict:
    """A collection of TREC DL 2019's shape: `queries` queries, `passages` judged passages each (the pool:
    every run ranks 100 of them), `questions` questions each. Passages are MS MARCO-long (about 340
    characters, 80 to 1,000) and every text is distinct, as each would be encoded once."""
    rng = random.Random(seed)
    pieces, asked = sentences(), questions_written()
    folder.mkdir(parents=True, exist_ok=True)
    corpus, qrels, bank, runs = [], [], ["query_id\tquestion"], {f"run{r:02d}": [] for r in range(RUNS)}
    for q in range(queries):
        query_id = f"q{q:03d}"
        candidates = [f"{query_id}-p{p:03d}" for p in range(passages)]
        for passage_id in candidates:
            length, words = min(1000, max(80, int(rng.gauss(340, 140)))), []
            while len(" ".join(words)) < length:
                words.append(rng.choice(pieces))
            corpus.append(f"{passage_id}\t{' '.join(words)[:length]} ({passage_id})")
            qrels.append(f"{query_id} 0 {passage_id} {rng.choice([0, 0, 1, 2, 3])}")
        bank += [f"{query_id}\t{text[:-1]}, in topic {q}?" for text in rng.sample(asked, questions)]
        for run, lines in runs.items():
            ranked = rng.sample(candidates, 100)
            lines += [f"{query_id} Q0 {pid} {rank} {100 - rank} {run}" for rank, pid in enumerate(ranked, 1)]
    (folder / "runs").mkdir(exist_ok=True)
    for run, lines in runs.items():
        (folder / "runs" / f"{run}.run").write_text("\n".join(lines) + "\n")
    (folder / "corpus.tsv").write_text("\n".join(corpus) + "\n")
    (folder / "qrels.txt").write_text("\n".join(qrels) + "\n")
    (folder / "bank.tsv").write_text("\n".join(bank) + "\n")
    (folder / "queries.tsv").write_text("".join(f"q{q:03d}\tsynthetic query {q}\n" for q in range(queries)))
    return {"queries": str(folder / "queries.tsv"), "runs": [str(folder / "runs/*.run")],
            "corpus": str(folder / "corpus.tsv"), "qrels": str(folder / "qrels.txt"), "bank": str(folder / "bank.tsv")}  # fmt: skip


def study() -> dict:
    folder = ROOT / "resources" / "study"
    return {"queries": str(folder / "queries.jsonl"), "runs": [str(folder / "runs/*.run")],
            "corpus": str(folder / "corpus.tsv"), "qrels": str(folder / "qrels.txt"),
            "official_leaderboard": str(folder / "official_leaderboard.json"), "bank": str(folder / "bank.jsonl")}  # fmt: skip


def snakemake(config: Path, target: str) -> float:
    """Run the workflow up to `target`; its wall time."""
    began = time.perf_counter()
    done = subprocess.run([SNAKEMAKE, target, "--cores", "all", "--quiet", "all", "--configfile", config], cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        sys.exit(f"snakemake {target} failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - began


def recorded_seconds(output: Path) -> float:
    """Start to end of the job that wrote `output`, as Snakemake recorded it (`.snakemake/metadata`,
    one JSON file per output, named by the output's path in URL-safe base64, cut into 254-character
    folder names prefixed with @ where longer than a file name may be)."""
    name = urlsafe_b64encode(str(output).encode()).decode()
    pieces = [name[i : i + 254] for i in range(0, len(name), 254)]
    record = ROOT / ".snakemake" / "metadata" / Path(*["@" + p for p in pieces[:-1]], pieces[-1])
    recorded = json.loads(record.read_text())
    return recorded["endtime"] - recorded["starttime"]


def compare(name: str, inputs: dict, folder: Path, shards: int) -> tuple[float, float]:
    """Plan, then grade, one collection; print planned against measured seconds per job; the totals."""
    from examflow.plan import job_seconds
    from examflow.registry import check_method

    results = folder / "results"
    config = folder / "config.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump({
        "results_dir": str(results), "cache_dir": str(results / "cache"), "inputs": inputs,
        "grading": {"shards": shards, "methods": [METHOD]}, "evaluation": {"bootstrap": 0},
    }))  # fmt: skip
    snakemake(config, str(results / "logs/plan.tsv"))
    plan = pd.read_csv(results / "logs/plan.tsv", sep="\t").iloc[0]
    wall = snakemake(config, str(results / f"grades/{METHOD['name']}.parquet"))
    method = check_method("method", METHOD)
    print(f"\n{name}: {plan['pairs']:,} pairs, {plan['work']:,} distinct {plan['unit']} in {plan['jobs']} jobs"
          f" ({shards} buckets); grading took {wall:.0f} s of wall time on {os.cpu_count()} cores")  # fmt: skip
    print(f"  {'job':<10} {'pairs':>7} {'planned s':>10} {'measured s':>11} {'measured/planned':>17}")
    planned_total = measured_total = 0.0
    for output in sorted((results / "grades" / METHOD["name"]).glob("shard-*.parquet")):
        shard = output.stem
        tables = [pd.read_parquet(path) for path in (results / f"pool/shards/{shard}.passages.parquet",
                  results / f"bank/{shard}.parquet", results / f"pool/shards/{shard}.queries.parquet")]  # fmt: skip
        planned, measured = job_seconds(method, *tables), recorded_seconds(output)
        pairs = len(pd.read_parquet(output, columns=["query_id"]))
        print(f"  {shard:<10} {pairs:>7,} {planned:>10.1f} {measured:>11.1f} {measured / planned:>17.2f}")
        planned_total, measured_total = planned_total + planned, measured_total + measured
    print(f"  {'total':<10} {plan['pairs']:>7,} {planned_total:>10.1f} {measured_total:>11.1f}"
          f" {measured_total / planned_total:>17.2f}")  # fmt: skip
    print(f"  the plan's table (logs/plan.tsv): {plan['hours'] * 3600:.1f} s, {plan['hours']:.3f} {plan['on']}-hours")
    return planned_total, measured_total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", nargs="+", choices=["study", "dl"], default=["study", "dl"])
    parser.add_argument("--scale", type=float, default=0.5, help="share of DL 2019's 43 queries (default 0.5)")
    parser.add_argument("--shards", type=int, default=16, help="buckets of queries, grading.shards (default 16)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (outputs to compare across commits)")
    args = parser.parse_args()
    verdicts = []
    with kept_or_temporary(args.keep) as tmp:
        for name in args.collections:
            folder = Path(tmp) / name
            inputs = study() if name == "study" else dl_shaped(folder / "data", max(1, round(43 * args.scale)))
            planned, measured = compare(name, inputs, folder, args.shards)
            verdicts.append(f"{name} {measured / planned:.2f}")
    print(f"\nmeasured / planned job time (target 0.5–2): {', '.join(verdicts)}")


if __name__ == "__main__":
    main()
