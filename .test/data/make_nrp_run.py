"""Writes nrp-scores.run: an outside ranker's scores of the NRP demo's judged documents and answers
(`resources/demo-nrp`), for `.test/config_nrp_only`. The score is the share of the query's words a
text contains, with its length as a small tie-breaker: simple enough to recompute by hand."""

import csv
import json
import re
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo-nrp"


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def score(query: str, text: str) -> float:
    return round(len(words(query) & words(text)) / len(words(query)) + len(text) / 1e6, 6)


def main() -> None:
    queries = dict(csv.reader(open(DEMO / "queries.tsv", encoding="utf-8"), delimiter="\t"))
    texts = {q: {} for q in queries}
    for doc_id, text in csv.reader(open(DEMO / "documents.tsv", encoding="utf-8"), delimiter="\t"):
        texts[doc_id.split("-")[0]][doc_id] = text
    for line in open(DEMO / "answers.jsonl", encoding="utf-8"):
        answer = json.loads(line)
        texts[answer["query_id"]][f"{answer['llm']}/{answer['prompt']}/{answer['sample']}"] = answer["text"]
    lines = []
    for query_id, items in texts.items():
        ranked = sorted(items, key=lambda item: (-score(queries[query_id], items[item]), item))
        lines += [f"{query_id} Q0 {item} {rank} {score(queries[query_id], items[item])} outside"
                  for rank, item in enumerate(ranked, 1)]
    (Path(__file__).parent / "nrp-scores.run").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
