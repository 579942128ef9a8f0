"""ROUGE-1 F1 against gold articles (docs/methods.md §4), the original EXAM paper's baseline.

Both texts are reduced to their content words (`examflow.words`). A run's text
for a query is its passages ranked ≤ k, the same budget as EXAM-Cover.
"""

from __future__ import annotations

from collections import Counter
from typing import cast

import pandas as pd

from examflow.evaluation.cover import PER_QUERY_COLUMNS
from examflow.io.runs import GOLD_RUN
from examflow.words import content_words

ROUGE_MEASURE = "rouge_1_f1"


def unigrams(text: str) -> Counter[str]:
    return Counter(content_words(text))


def rouge_1_f1(candidate: Counter[str], reference: Counter[str]) -> float:
    overlap = sum((candidate & reference).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(candidate.values()), overlap / sum(reference.values())
    return 2 * precision * recall / (precision + recall)


def rouge_per_query(rankings: pd.DataFrame, texts: pd.DataFrame, gold: dict[str, str], k: int) -> pd.DataFrame:
    """Per-query rows of `rouge_1_f1` for every run that ranks passages for a query with a gold article."""
    ranked = rankings[(rankings["rank"] <= k) & (rankings["run_id"] != GOLD_RUN) & rankings["query_id"].isin(gold)]
    ranked = ranked.merge(texts[["query_id", "passage_id", "text"]], on=["query_id", "passage_id"])
    references = {query: unigrams(text) for query, text in gold.items()}
    rows = [
        (
            run_id,
            query_id,
            ROUGE_MEASURE,
            pd.NA,
            rouge_1_f1(unigrams(" ".join(group["text"])), references[cast(str, query_id)]),  # cast: an id
            1.0,
        )
        for (run_id, query_id), group in ranked.groupby(["run_id", "query_id"], sort=True)
    ]
    return pd.DataFrame(rows, columns=PER_QUERY_COLUMNS)
