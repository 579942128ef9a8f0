"""Rebuild the demo's runs and official leaderboard from corpus.tsv, queries.jsonl and qrels.txt.

The runs are of deliberately different quality; the official leaderboard ranks them by
nDCG@10 against the page-level qrels (a facet's judgment counts for its page, max grade).
Run from this directory: `python make_runs.py`. Deterministic (fixed seed).
"""

import json
import math
import random
import re
from collections import Counter, defaultdict

import pytrec_eval

DEPTH = 30
STOP = set("a an and are as at be by do for from how in is it of on or the to what with".split())


def words(text):
    return [w for w in re.findall(r"\w+", text.lower()) if w not in STOP]


def bm25(query, docs, k1=1.2, b=0.75):
    lengths = {d: len(words(t)) for d, t in docs.items()}
    average = sum(lengths.values()) / len(lengths)
    frequency = Counter(w for t in docs.values() for w in set(words(t)))
    scores = {}
    for d, t in docs.items():
        counts = Counter(words(t))
        scores[d] = sum(
            math.log(1 + (len(docs) - frequency[w] + 0.5) / (frequency[w] + 0.5))
            * counts[w]
            * (k1 + 1)
            / (counts[w] + k1 * (1 - b + b * lengths[d] / average))
            for w in words(query)
            if w in counts
        )
    return scores


def ranked(scores, first_rank=1):
    order = sorted(scores, key=lambda d: (-scores[d], d))[:DEPTH]
    return [(d, first_rank + i, round(scores[d], 4)) for i, d in enumerate(order)]


def main():
    docs = dict(line.rstrip("\n").split("\t") for line in open("corpus.tsv"))
    queries = [json.loads(line) for line in open("queries.jsonl")]
    grades = defaultdict(dict)
    for line in open("qrels.txt"):
        qid, _, doc, grade = line.split()
        page = qid.split("/")[0]
        grades[page][doc] = max(grades[page].get(doc, 0), int(grade))
    rng = random.Random(20261122)
    runs = defaultdict(dict)
    for query in queries:
        qid, rel = query["query_id"], grades[query["query_id"]]
        text = " ".join([query["text"]] + [s["text"] for s in query.get("subtopics", [])])
        keyword = bm25(text, docs)
        overlap = {d: len(set(words(text)) & set(words(t))) + rng.random() * 0.1 for d, t in docs.items()}
        noise = {d: rng.gauss(0, 1) for d in docs}
        runs["oracle"][qid] = ranked({d: rel.get(d, -1) + keyword[d] / 100 for d in docs})
        runs["dense-strong"][qid] = ranked({d: rel.get(d, -1) + 0.8 * noise[d] + keyword[d] / 10 for d in docs})
        runs["bm25"][qid] = ranked(keyword)
        runs["overlap-0based"][qid] = ranked(overlap, first_rank=0)
        runs["noisy"][qid] = ranked({d: rel.get(d, -1) + 2.5 * noise[d] for d in docs})
        runs["adversarial"][qid] = ranked(
            {d: (3 if rel.get(d) == 0 else 0) + keyword[d] / 10 - 2 * (rel.get(d, 0) > 0) for d in docs}
        )
        runs["random"][qid] = ranked({d: rng.random() for d in docs})
    for name, per_query in runs.items():
        with open(f"runs/{name}.run", "w") as out:
            for qid, rows in per_query.items():
                out.writelines(f"{qid} Q0 {d} {rank} {score} {name}\n" for d, rank, score in rows)
    evaluator = pytrec_eval.RelevanceEvaluator(dict(grades), {"ndcg_cut_10"})
    ndcg = {}
    for name, per_query in runs.items():
        run = {q: {d: float(-rank) for d, rank, _ in rows} for q, rows in per_query.items()}
        scores = evaluator.evaluate(run)
        ndcg[name] = sum(s["ndcg_cut_10"] for s in scores.values()) / len(scores)
    order = sorted(ndcg, key=ndcg.get, reverse=True)
    with open("official_leaderboard.json", "w") as out:
        json.dump({name: position + 1 for position, name in enumerate(order)}, out, indent=1)
        out.write("\n")
    for name in order:
        print(f"{name:16s} nDCG@10 {ndcg[name]:.4f}")


if __name__ == "__main__":
    main()
