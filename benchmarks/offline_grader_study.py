"""How the offline (embedding) grader's similarities should become grades: a study on two collections.

    python benchmarks/offline_grader_study.py [--collections demo study] [--tau 1 2 3 4 5]

For each collection (`resources/demo`, and `resources/study`: 20 topics written for this study,
twelve runs of graded quality, some of which prefer passages that talk about the topic without
answering anything) it runs the real workflow once with the embedding grader, whole passages and
best sentences, then re-grades from the stored similarities under every calibration (`pool`,
`query`, `question`) and quantile ladder, evaluates each variant and prints the Spearman
correlation of its leaderboard with the official one: EXAM-Cover and n-EXAM at every τ, EXAM-Qrels
(nDCG@10, whose gains are the labels) once. No judgment is used to calibrate; judgments only make the official leaderboards.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from examflow.evaluation.evaluate import Inputs, Settings, evaluate
from examflow.grading.calibration import calibrated_grades
from examflow.io.leaderboard import read_leaderboard

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
LADDERS = {
    "0.2-0.9": (0.2, 0.4, 0.6, 0.8, 0.9),
    "0.5-0.9": (0.5, 0.6, 0.7, 0.8, 0.9),
    "0.7-0.98": (0.7, 0.8, 0.9, 0.95, 0.98),
    "0.8-0.98": (0.8, 0.85, 0.9, 0.95, 0.98),
    "0.9-0.99": (0.9, 0.925, 0.95, 0.975, 0.99),
}
MEASURES = {"exam_cover": "EXAM-Cover", "n_exam_cover": "n-EXAM", "ndcg_cut_10": "EXAM-Qrels nDCG@10"}


def collection_config(name: str, results: Path) -> dict:
    """The collection's inputs with one embedding method per unit; no NRP."""
    folder = f"resources/{name}"
    inputs = {"queries": f"{folder}/queries.jsonl", "runs": [f"{folder}/runs/*.run"], "corpus": f"{folder}/corpus.tsv",
              "qrels": f"{folder}/qrels.txt", "official_leaderboard": f"{folder}/official_leaderboard.json",
              "bank": f"{folder}/bank.jsonl"}  # fmt: skip
    methods = [{"name": unit, "kind": "self_rating", "backend": {"kind": "embedding", "unit": unit}}
               for unit in ("passage", "sentence")]  # fmt: skip
    return {"results_dir": str(results), "cache_dir": str(results / "cache"), "inputs": inputs,
            "grading": {"shards": 1, "methods": methods}, "evaluation": {"bootstrap": 0}}  # fmt: skip


def graded(name: str, tmp: Path) -> tuple[Path, Path]:
    """Run the workflow once; return its results folder and the official leaderboard."""
    results = tmp / name
    config = tmp / f"{name}.yaml"
    config.write_text(yaml.safe_dump(collection_config(name, results)))
    subprocess.run([SNAKEMAKE, "--cores", "all", "--quiet", "all", "--configfile", config], cwd=ROOT, check=True,
                   capture_output=True)  # fmt: skip
    return results, ROOT / "resources" / name / "official_leaderboard.json"


def spearman_table(results: Path, official: dict, taus: list[int]) -> pd.DataFrame:
    pool = results / "pool"
    tables = {name: pd.read_parquet(pool / f"{name}.parquet") for name in ("rankings", "passages", "judgments")}
    questions = pd.concat(pd.read_parquet(path) for path in sorted((results / "bank").glob("shard-*.parquet")))
    settings = Settings(taus, 20, ["ndcg_cut_10"], "present", "pool", 1, 0, 0, max(taus))
    rows = []
    for unit in ("passage", "sentence"):
        grades = pd.read_parquet(results / "grades" / f"{unit}.parquet")
        for mode in ("pool", "query", "question"):
            for ladder_name, ladder in LADDERS.items():
                ratings, _ = calibrated_grades(grades, mode, ladder)
                variant = grades.assign(rating=ratings, method=f"{unit}/{mode}/{ladder_name}")
                inputs = Inputs(variant, tables["rankings"], questions, tables["passages"], tables["judgments"])
                correlation = evaluate(inputs, settings, official)["correlation.tsv"]
                for row in correlation[correlation["measure"].isin(MEASURES)].itertuples():
                    tau = "all" if pd.isna(row.tau) else int(row.tau)  # nDCG's gains are the labels: no τ
                    rows.append((unit, mode, ladder_name, row.measure, tau, row.spearman))
    return pd.DataFrame(rows, columns=["unit", "calibration", "ladder", "measure", "tau", "spearman"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", nargs="+", default=["demo", "study"])
    parser.add_argument("--tau", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--out", type=Path, help="also write the whole table here (TSV)")
    args = parser.parse_args()
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.collections:
            results, official_path = graded(name, Path(tmp))
            table = spearman_table(results, read_leaderboard(official_path), args.tau)
            tables.append(table.assign(collection=name))
            for measure, title in MEASURES.items():
                wide = table[table["measure"] == measure].pivot_table(
                    "spearman", ["unit", "calibration", "ladder"], "tau", sort=False
                )
                print(
                    f"\n{name}: {title}, Spearman ρ with the official leaderboard ({len(json.loads(official_path.read_text()))} runs)"
                )
                print(
                    wide.to_string(
                        float_format=lambda x: f"{x:6.3f}",
                        header=[f"τ={t}" if t != "all" else "every τ" for t in wide.columns],
                    )
                )
    if args.out:
        pd.concat(tables).to_csv(args.out, sep="\t", index=False)


if __name__ == "__main__":
    main()
