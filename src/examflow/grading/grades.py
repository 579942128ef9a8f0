"""The grades table: one row per (passage, question) pair and method, failures included."""

from __future__ import annotations

import pandas as pd

GRADE_COLUMNS = [
    "query_id", "facet_id", "passage_id", "question_id", "method", "kind", "model", "prompt", "prompt_hash",
    "raw", "answer", "rating", "correct", "expected", "score", "unparsable", "error",
]  # fmt: skip

GRADE_DTYPES = {"rating": "Int64", "correct": "boolean", "expected": "Float64", "score": "Float64", "unparsable": bool}


def empty_grades() -> pd.DataFrame:
    return pd.DataFrame(columns=GRADE_COLUMNS, dtype=object).astype(GRADE_DTYPES)


def failure_counts(grades: pd.DataFrame) -> dict[str, int]:
    """Failed pairs by kind (`timeout`, `http-500`, `malformed`, `unparsable`, ...), most frequent first."""
    kinds = grades["error"].dropna().str.split(":", n=1).str[0].value_counts()
    return {kind: int(count) for kind, count in sorted(kinds.items(), key=lambda item: (-item[1], item[0]))}
