"""Rebuild labels-second-assessor.qrels: the demo's outside label set, a second assessor who judges the
same passages as qrels.txt and disagrees now and then by one grade (a third of the judgments; never
below 0 or above 3), for the judges comparison (docs/judges.md). Run from this directory:
`python make_second_assessor.py`. Deterministic (fixed seed)."""

import random

rng = random.Random(7)
lines = []
for line in open("qrels.txt", encoding="utf-8"):
    query_id, iteration, doc_id, grade = line.split()
    shift = rng.choice([-1, 0, 0, 0, 0, 1])
    lines.append(f"{query_id} {iteration} {doc_id} {min(3, max(0, int(grade) + shift))}\n")
with open("labels-second-assessor.qrels", "w", encoding="utf-8") as out:
    out.writelines(lines)
