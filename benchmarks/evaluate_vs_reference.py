"""`examflow evaluate` against the reference implementation's `exam_evaluation`, same input.

    python benchmarks/evaluate_vs_reference.py [--graded FILE] [--repeat 3] [--reference-venv DIR]

Builds a graded file in the reference implementation's format with TREC DL 2019's shape (43
topics, 9,260 judged passages, 37 runs that rank all of a topic's judged passages in their top
1,000, 10 questions per topic,
FLAN-T5 self-ratings), or takes one by path. Installs `exam-pp` from PyPI into a virtual
environment of its own (CPU torch first) unless it is there, then times, each as a whole process:

- `autograder-evaluate` (exam_pp.exam_evaluation) for the EXAM-Cover leaderboard at rating >= 4;
- `examflow evaluate --workbench-graded` for the same leaderboard (`--tau 4`, no trec_eval
  measures, no bootstrap);
- `examflow evaluate --workbench-graded` with its defaults: four thresholds, the trec_eval
  measures, n-EXAM, kappa, question diagnostics, correlations with an official leaderboard and
  1,000 bootstrap replicates.

It checks that both leaderboards agree to the three decimals the reference prints (score and
standard error of every run) and prints the times and ratios. Target: examflow at least 10x
faster for the same leaderboard, and still faster with everything.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PROMPT_CLASS = "QuestionSelfRatedUnanswerablePromptWithChoices"
LLM = "google/flan-t5-large"
TAU = 4


def build(path: Path, topics: int, passages: int, runs: int, questions: int, depth: int, seed: int = 19) -> dict:
    """A graded file of the reference's format; returns an official leaderboard of its runs."""
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{i}" for i in range(5000)])
    per_topic = np.full(topics, passages // topics) + (np.arange(topics) < passages % topics)
    skill = np.linspace(0.3, 3.0, runs)  # better runs put better passages first
    info = {"prompt_class": PROMPT_CLASS, "prompt_style": "Can the question be answered based on the available "
            "context? choose one:", "context_first": False, "check_unanswerable": True,
            "check_answer_key": False, "is_self_rated": True}  # fmt: skip
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for t, n in enumerate(per_topic):
            query_id = str(1000 + t)
            ids = [f"{query_id}/{j:02d}" for j in range(questions)]
            quality = rng.beta(0.5, 4, size=n)  # most passages answer one question or none
            answerable = rng.random((n, questions)) < quality[:, None]
            ratings = np.where(answerable, rng.integers(3, 6, answerable.shape), rng.integers(0, 3, answerable.shape))
            order = [np.argsort(-(quality * s + rng.normal(0, 1, n)))[:depth] for s in skill]
            ranks = [dict(zip(o.tolist(), range(1, depth + 1))) for o in order]
            paragraphs = []
            for i in range(n):
                pid = f"p{t}-{i}"
                rankings = [{"method": f"run{r:02d}", "paragraphId": pid, "queryId": query_id, "rank": ranks[r][i],
                             "score": float(depth - ranks[r][i])} for r in range(runs) if i in ranks[r]]  # fmt: skip
                rated = ratings[i].tolist()
                grade = {
                    "correctAnswered": [q for q, x in zip(ids, rated) if x >= TAU],
                    "wrongAnswered": [q for q, x in zip(ids, rated) if x < TAU],
                    "answers": [[q, str(x)] for q, x in zip(ids, rated)],
                    "llm": LLM, "llm_options": {}, "exam_ratio": sum(x >= TAU for x in rated) / questions,
                    "prompt_info": info, "self_ratings": [{"question_id": q, "self_rating": x} for q, x in zip(ids, rated)],
                    "prompt_type": "question",
                }  # fmt: skip
                judgment = {"paragraphId": pid, "query": query_id, "relevance": int(min(3, quality[i] * 5)),
                            "titleQuery": query_id}  # fmt: skip
                text = " ".join(rng.choice(vocabulary, 60))  # an MS MARCO passage is about 60 words
                paragraphs.append({"paragraph_id": pid, "text": text, "paragraph": {},
                                   "paragraph_data": {"judgments": [judgment], "rankings": rankings},
                                   "exam_grades": [grade], "grades": None})  # fmt: skip
            out.write(json.dumps([query_id, paragraphs]) + "\n")
    return {f"run{r:02d}": runs - r for r in range(runs)}


def reference_venv(directory: Path) -> Path:
    """The exam-pp installation, made when missing (pip, from PyPI; the CPU torch wheel first)."""
    program = directory / "bin" / "autograder-evaluate"
    if not program.exists():
        print(f"installing exam-pp into {directory} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", directory], check=True)
        pip = [directory / "bin" / "python", "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "torch==2.13.0"], check=True)
        subprocess.run([*pip, "exam-pp==0.1.2"], check=True)
    return program


def timed(command: list, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
        if result.returncode:
            sys.exit(f"failed: {' '.join(map(str, command))}\n{result.stderr[-3000:]}")
    return best


def disagreements(reference: Path, leaderboard: Path) -> list[str]:
    ref = pd.read_csv(reference, sep="\t", dtype={"method": str}).set_index("method")
    ours = pd.read_csv(leaderboard, sep="\t", dtype={"run_id": str})
    ours = ours[(ours["measure"] == "exam_cover") & (ours["tau"] == TAU)].set_index("run_id")
    problems = [f"{run}: only in one leaderboard" for run in set(ref.index) ^ set(ours.index)]
    for run in sorted(set(ref.index) & set(ours.index)):
        for theirs, mine in ((ref.at[run, "ExamCover"], ours.at[run, "score"]),
                             (ref.at[run, "std-err"], ours.at[run, "stderr"])):  # fmt: skip
            if f"{theirs:.3f}" != f"{mine:.3f}":
                problems.append(f"{run}: reference {theirs:.3f}, examflow {mine:.3f}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graded", type=Path, help="a graded *.jsonl.gz to use instead of the synthetic one")
    parser.add_argument("--official", type=Path, help="its official leaderboard, JSON {run: rank}")
    parser.add_argument("--topics", type=int, default=43)
    parser.add_argument("--passages", type=int, default=9260)
    parser.add_argument("--runs", type=int, default=37)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--depth", type=int, default=1000, help="passages each run ranks per topic (default 1000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command; the best time counts")
    parser.add_argument("--reference-venv", type=Path, default=HERE / ".venv-exam-pp")
    args = parser.parse_args()
    reference = reference_venv(args.reference_venv)
    # exam-pp's bytecode was compiled when pip installed it; examflow's (an editable install) is compiled on
    # first import, or on every import where PYTHONDONTWRITEBYTECODE is set: compile it once here too.
    subprocess.run([sys.executable, "-m", "compileall", "-q", HERE.parent / "src" / "examflow"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        graded, official = args.graded, args.official
        if graded is None:
            graded, official = tmp / "graded.jsonl.gz", tmp / "official.json"
            official.write_text(json.dumps(build(graded, args.topics, args.passages, args.runs, args.questions,
                                                 args.depth)))  # fmt: skip
        size = graded.stat().st_size / 2**20
        print(f"graded file: {graded.name}, {size:.1f} MiB; best of {args.repeat} runs each")
        ref_board = tmp / "reference.tsv"
        ref_seconds = timed([reference, graded, "--leaderboard-out", ref_board, "--prompt-class", PROMPT_CLASS,
                             "--model", LLM, "--min-self-rating", str(TAU)], args.repeat)  # fmt: skip
        examflow = [sys.executable, "-m", "examflow", "evaluate", "--workbench-graded", graded]
        same = timed(
            [*examflow, "--tau", str(TAU), "--measures", "--bootstrap", "0", "--out", tmp / "same"], args.repeat
        )
        full_options = ["--official", official, "--on-unknown-run", "warn"] if official else []
        full = timed([*examflow, *full_options, "--out", tmp / "full"], args.repeat)
        problems = disagreements(ref_board, tmp / "same" / "leaderboard.tsv")
        problems += disagreements(ref_board, tmp / "full" / "leaderboard.tsv")
    print(f"  reference exam_evaluation, EXAM-Cover at rating >= {TAU}:   {ref_seconds:6.2f} s")
    print(f"  examflow evaluate, the same leaderboard:              {same:6.2f} s  ({ref_seconds / same:.1f}x faster)")
    print(f"  examflow evaluate, everything (4 thresholds, trec_eval measures, correlations, 1,000 bootstrap "
          f"replicates): {full:.2f} s  ({ref_seconds / full:.1f}x faster)")  # fmt: skip
    if problems:
        sys.exit("leaderboards disagree:\n  " + "\n  ".join(problems[:20]))
    print("  the leaderboards agree to three decimals (score and standard error of every run)")


if __name__ == "__main__":
    main()
