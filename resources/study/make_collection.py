"""Build the offline-grader study collection from `topics.py` (run from anywhere; rewrites this folder).

Per topic: five passages that each state one fact (judged 2), two that state three facts (judged 3),
six that talk about the topic in its own words without answering anything (judged 0: they fool a
similarity grader), and the other topics' passages (judged 0 where a run retrieves them). Each of
twelve runs ranks 20 of a topic's candidates by skill × gain + lure × "talks about the topic" +
noise, so runs differ in quality and some prefer the empty on-topic passages. The official
leaderboard is nDCG@10 on the qrels (pytrec_eval). The bank asks the five questions of each topic.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

import pytrec_eval

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from topics import TOPICS  # noqa: E402

# (skill, lure): how much a run prefers judged-relevant passages, and empty on-topic ones
RUNS = {
    "expert": (3.0, 0.0), "strong": (2.2, 0.3), "good": (1.6, 0.5), "fair": (1.1, 0.8), "mixed": (0.8, 1.0),
    "weak": (0.5, 0.6), "noisy": (0.3, 0.0), "random": (0.0, 0.0), "keyword": (0.4, 2.5),
    "keyword-lite": (0.9, 1.8), "off-topic": (-0.5, -1.0), "lucky": (1.3, 0.0),
}  # fmt: skip


def passages(rng: random.Random) -> dict[str, dict[str, tuple[str, int, bool]]]:
    """Per topic: passage id -> (text, judgment, talks about the topic without answering)."""
    built = {}
    for topic, (query, facts, fillers) in TOPICS.items():
        own = {}
        for i, (fact, _) in enumerate(facts):
            own[f"{topic}-f{i}"] = (f"{fact} {fillers[i % 2]}", 2, False)
        for i, picks in enumerate(((0, 2, 4), (1, 3, 4))):
            own[f"{topic}-r{i}"] = (" ".join(facts[j][0] for j in picks), 3, False)
        for i in range(6):
            first, second = fillers[i % 2], fillers[(i + 1) % 2]
            words = f"{query.capitalize()}?" if i % 3 == 0 else f"People ask: {query}?"
            own[f"{topic}-e{i}"] = (f"{words} {first} {second if i >= 3 else ''}".strip(), 0, True)
        built[topic] = own
    return built


def main() -> None:
    rng = random.Random(2026)
    texts = passages(rng)
    corpus = {pid: text for own in texts.values() for pid, (text, _, _) in own.items()}
    runs: dict[str, list[str]] = {name: [] for name in RUNS}
    qrels: dict[str, dict[str, int]] = {}
    for topic, own in texts.items():
        others = sorted(pid for pid in corpus if not pid.startswith(f"{topic}-"))
        candidates = {**{pid: (judged, empty) for pid, (_, judged, empty) in own.items()},
                      **{pid: (0, False) for pid in rng.sample(others, 30)}}  # fmt: skip
        qrels[topic] = {pid: judged for pid, (judged, _) in candidates.items()}
        for name, (skill, lure) in RUNS.items():
            score = {
                pid: skill * judged + lure * empty + rng.gauss(0, 1) for pid, (judged, empty) in candidates.items()
            }
            ranked = sorted(score, key=lambda pid: -score[pid])[:20]
            runs[name] += [f"{topic} Q0 {pid} {rank} {score[pid]:.4f} {name}" for rank, pid in enumerate(ranked, 1)]
    (HERE / "runs").mkdir(exist_ok=True)
    for name, lines in runs.items():
        (HERE / "runs" / f"{name}.run").write_text("\n".join(lines) + "\n")
    (HERE / "corpus.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in sorted(corpus.items())))
    (HERE / "qrels.txt").write_text(
        "".join(
            f"{q} 0 {pid} {judged}\n" for q, judged_by in qrels.items() for pid, judged in sorted(judged_by.items())
        )
    )
    (HERE / "queries.jsonl").write_text(
        "".join(json.dumps({"query_id": t, "text": q}) + "\n" for t, (q, _, _) in TOPICS.items())
    )
    bank = []
    for topic, (query, facts, _) in TOPICS.items():
        items = [{"query_id": topic, "facet_id": None, "question_id": f"{topic}/{hashlib.md5(question.encode()).hexdigest()}",
                  "question_text": question} for _, question in facts]  # fmt: skip
        bank.append({"query_id": topic, "facet_id": None, "query_text": query, "test_collection": "examflow-study",
                     "info": {"source": "written by hand for the examflow offline-grader study"}, "items": items})  # fmt: skip
    (HERE / "bank.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in bank))
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"})
    ndcg = {}
    for name, lines in runs.items():
        run: dict[str, dict[str, float]] = {}
        for line in lines:
            q, _, pid, _, score, _ = line.split()
            run.setdefault(q, {})[pid] = float(score)
        per_query = evaluator.evaluate(run)
        ndcg[name] = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)
    order = sorted(ndcg, key=lambda name: -ndcg[name])
    (HERE / "official_leaderboard.json").write_text(
        json.dumps({name: i for i, name in enumerate(order, 1)}, indent=1) + "\n"
    )
    print("official leaderboard (nDCG@10):", ", ".join(f"{name} {ndcg[name]:.3f}" for name in order))


if __name__ == "__main__":
    main()
