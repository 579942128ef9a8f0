"""`examflow evaluate` at TREC CAR Y3 scale: time and peak memory.

    python benchmarks/evaluation_scale.py [--topics 130] [--passages 85000] [--questions 65] [--runs 30]

Builds a synthetic grades table (130 topics, 85,000 pooled passages, 65 questions per topic:
about 5.5 M self-ratings), the pool tables (30 runs × top 20 per topic, judgments for a tenth
of the pool) and an official leaderboard, then runs `examflow evaluate` for τ 1 3 4 5, the
default trec_eval measures and 1,000 bootstrap replicates in a fresh process, and prints its
wall time and peak RSS. Target on two cores: under 15 s and under 2 GiB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from workdir import kept_or_temporary

MEASURE = (
    "import resource, sys; from examflow.cli import main; code = main(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024); sys.exit(code)"
)


def build(directory: Path, topics: int, passages: int, questions: int, runs: int) -> None:
    rng = np.random.default_rng(7)
    per_topic = np.full(topics, passages // topics) + (np.arange(topics) < passages % topics)
    query = np.repeat([f"t{t:03d}" for t in range(topics)], per_topic)
    passage = np.array([f"t{t:03d}-p{i}" for t, n in enumerate(per_topic) for i in range(n)])
    pool = pd.DataFrame({"query_id": query, "passage_id": passage, "text": "", "origin": "retrieved"})
    # a passage's grades: a latent quality sets how likely each question is answered, and how well
    quality = rng.beta(1, 4, size=len(pool))
    answered = rng.random((len(pool), questions)) < quality[:, None]
    ratings = np.where(answered, rng.integers(3, 6, size=answered.shape), rng.integers(0, 3, size=answered.shape))
    question_ids = np.array([f"q{j}" for j in range(questions)])
    grades = pd.DataFrame(
        {
            "query_id": np.repeat(query, questions),
            "facet_id": None,
            "passage_id": np.repeat(passage, questions),
            "question_id": np.char.add(np.repeat(query, questions), np.tile(np.char.add("/", question_ids), len(pool))),
            "method": "self_rating",
            "rating": ratings.ravel().astype("int64"),
            "correct": pd.array([pd.NA] * ratings.size, dtype="boolean"),
            "error": None,
        }
    )
    grades.to_parquet(directory / "grades.parquet", index=False)
    # runs: better runs rank higher-quality passages first
    skill = np.linspace(0.2, 3.0, runs)
    rows = []
    starts = np.concatenate([[0], np.cumsum(per_topic)[:-1]])
    for r in range(runs):
        for t, (start, n) in enumerate(zip(starts, per_topic)):
            noise = rng.normal(size=n)
            order = np.argsort(-(skill[r] * quality[start : start + n] * 5 + noise))[:20]
            for rank, i in enumerate(order, 1):
                rows.append((f"run{r:02d}", f"t{t:03d}", passage[start + i], rank, float(20 - rank)))
    rankings = pd.DataFrame(rows, columns=["run_id", "query_id", "passage_id", "rank", "score"])
    judged = pool.sample(frac=0.1, random_state=7)
    judgments = pd.DataFrame(
        {
            "query_id": judged["query_id"],
            "facet_id": None,
            "passage_id": judged["passage_id"],
            "relevance": rng.integers(0, 4, size=len(judged)),
        }
    )
    (directory / "pool").mkdir()
    pool.to_parquet(directory / "pool/passages.parquet", index=False)
    rankings.to_parquet(directory / "pool/rankings.parquet", index=False)
    judgments.astype({"facet_id": object}).to_parquet(directory / "pool/judgments.parquet", index=False)
    official = {f"run{r:02d}": runs - r for r in range(runs)}
    (directory / "official.json").write_text(json.dumps(official))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=130)
    parser.add_argument("--passages", type=int, default=85_000)
    parser.add_argument("--questions", type=int, default=65)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (outputs to compare across commits)")
    args = parser.parse_args()
    with kept_or_temporary(args.keep) as name:
        directory = Path(name)
        start = time.perf_counter()
        build(directory, args.topics, args.passages, args.questions, args.runs)
        grades = args.passages * args.questions
        print(
            f"built {grades:,} grades, {args.runs} runs × {args.topics} topics in {time.perf_counter() - start:.0f} s"
        )
        command = [
            sys.executable, "-c", MEASURE, "evaluate", "--grades", "grades.parquet", "--pool", "pool",
            "--official", "official.json", "--tau", "1", "3", "4", "5", "--min-relevant-judgment", "1", "--out", "out",
        ]  # fmt: skip
        start = time.perf_counter()
        result = subprocess.run(command, cwd=directory, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            sys.exit(result.stderr)
        peak = int(result.stdout.split()[-1])
        board = pd.read_csv(directory / "out/leaderboard.tsv", sep="\t")
        correlation = pd.read_csv(directory / "out/correlation.tsv", sep="\t")
        print(f"evaluate: {seconds:.1f} s, peak RSS {peak} MiB ({len(board)} leaderboard rows)")
        print(f"target:   < 15 s, < 2048 MiB -> {'met' if seconds < 15 and peak < 2048 else 'NOT met'}")
        cover = correlation[(correlation["measure"] == "exam_cover") & (correlation["tau"] == 4)].iloc[0]
        print(f"sanity:   EXAM-Cover tau 4 vs the synthetic official order: Spearman {cover['spearman']:.3f}")


if __name__ == "__main__":
    main()
