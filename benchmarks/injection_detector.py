"""How far the prompt-injection detector can be trusted: false alarms on ordinary passages, recall on injections.

    python benchmarks/injection_detector.py [--ordinary 2400]

The passages are `tests/injection_texts.py`: ordinary web and QA passages generated from
hand-written facts and everyday sentences (facts, FAQs, forum answers, numbered steps, reviews,
quizzes, spec sheets, generated answers, HTML, definitions; the issue's four false alarms among
them), and hand-written injections labelled by kind. Prints the share of ordinary passages left
alone, the recall per kind and overall, the precision on both sets together, every false positive
and every false negative, and the detector's speed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from injection_texts import INJECTIONS, ordinary_passages  # noqa: E402

from examflow.injection import injection  # noqa: E402


def report(ordinary: list[dict], injections: list[dict]) -> None:
    alarms = [(row, hit) for row in ordinary if (hit := injection(row["text"], row["query"]))]
    caught = {row["id"]: injection(row["text"], row["query"]) for row in injections}
    share = len(alarms) / len(ordinary)
    print(f"ordinary passages: {len(ordinary)}, flagged {len(alarms)}: false-positive rate {share:.2%}")
    genres = Counter(row["genre"] for row in ordinary)
    flagged_genres = Counter(row["genre"] for row, _ in alarms)
    print("  by genre: " + ", ".join(f"{g} {flagged_genres[g]}/{n}" for g, n in sorted(genres.items())))
    kinds = Counter(row["kind"] for row in injections)
    hits = Counter(row["kind"] for row in injections if caught[row["id"]])
    total = sum(hits.values())
    print(f"injections: {len(injections)}, caught {total}: recall {total / len(injections):.2%}")
    for kind, n in kinds.items():
        print(f"  {kind:<17} {hits[kind]:>2}/{n:<2} recall {hits[kind] / n:.0%}")
    if total + len(alarms):
        print(f"precision (flags that are injections, both sets together): {total}/{total + len(alarms)} "
              f"= {total / (total + len(alarms)):.2%}")  # fmt: skip
    print("false positives (ordinary passages flagged):")
    for row, (rule, phrase) in alarms:
        print(f"  {row['id']} [{row['genre']}] {rule}: {phrase!r}\n      {row['text']!r}")
    print("false negatives (injections missed):")
    for row in injections:
        if not caught[row["id"]]:
            print(f"  {row['id']} [{row['kind']}] {row['text']!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ordinary", type=int, default=2400, help="how many ordinary passages to generate")
    parser.add_argument("--caught", action="store_true", help="also list the rule and phrase of every injection caught")
    args = parser.parse_args()
    ordinary = ordinary_passages(args.ordinary)
    for batch, title in (("first", "first batch: the sets the rules were written against"),
                         ("second", "second batch: written after the rules; the rules were changed after reading it"),
                         ("third", "third batch: written after those changes")):  # fmt: skip
        print(f"== {title}")
        report([row for row in ordinary if row["batch"] == batch], [row for row in INJECTIONS if row["batch"] == batch])
        print()
    print("== both batches")
    report(ordinary, INJECTIONS)
    started = time.perf_counter()
    for row in ordinary:
        injection(row["text"], row["query"])
    print(f"\nspeed: {len(ordinary) / (time.perf_counter() - started):,.0f} passages/s (one core)")
    if args.caught:
        print("\ninjections caught (rule: phrase):")
        for row in INJECTIONS:
            if hit := injection(row["text"], row["query"]):
                print(f"  {row['id']} [{row['kind']}] {hit[0]}: {hit[1]!r}")


if __name__ == "__main__":
    main()
