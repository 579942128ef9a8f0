"""Inputs named by ir_datasets ids, such as `irds:msmarco-passage/trec-dl-2019/judged`.

Optional: needs the `ir_datasets` package (`pip install 'examflow[irds]'`), which
downloads and caches the data itself the first time an id is used.
"""

from __future__ import annotations

import pandas as pd

from examflow.errors import InputError, Problems

PREFIX = "irds:"


def is_irds(spec) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def _dataset(spec: str, part: str):
    try:
        import ir_datasets
    except ImportError:
        raise InputError(spec, "ir_datasets ids need the ir_datasets package: pip install 'examflow[irds]'") from None
    try:
        dataset = ir_datasets.load(spec[len(PREFIX) :])
    except KeyError:
        raise InputError(spec, "unknown ir_datasets id") from None
    if not getattr(dataset, f"has_{part}")():
        raise InputError(spec, f"this ir_datasets dataset has no {part}")
    return dataset


def _provided(spec: str, part: str, items):
    """Materialise an ir_datasets iterator; its download and parse errors name the id."""
    try:
        return list(items)
    except Exception as error:  # ir_datasets raises many kinds (IOError, HTTP, parse)
        raise InputError(spec, f"ir_datasets could not provide the {part}: {error}") from None


def irds_queries(spec: str) -> pd.DataFrame:
    queries = _provided(spec, "queries", _dataset(spec, "queries").queries_iter())
    rows = [(q.query_id, None, q.default_text(), None) for q in queries]
    return pd.DataFrame(rows, columns=["query_id", "facet_id", "query_text", "facet_text"], dtype=object)


def irds_qrels(spec: str, query_ids: set[str], unknown_queries: Problems) -> list[tuple[str, str, int]]:
    rows = []
    for qrel in _provided(spec, "qrels", _dataset(spec, "qrels").qrels_iter()):
        if qrel.query_id not in query_ids:
            unknown_queries.report(
                "qrels rows with an unknown query id",
                InputError(spec, f"unknown query id {qrel.query_id!r}", None, "query_id"),
            )
            continue
        rows.append((qrel.query_id, qrel.doc_id, int(qrel.relevance)))
    return rows


def irds_passages(spec: str, wanted: set[str]) -> dict[str, str]:
    """Texts of the wanted documents, looked up in the dataset's document store."""
    dataset = _dataset(spec, "docs")
    try:
        found = dataset.docs_store().get_many(wanted)
    except Exception as error:  # as above: downloads and index builds fail in many ways
        raise InputError(spec, f"ir_datasets could not provide the docs: {error}") from None
    return {doc_id: doc.default_text() for doc_id, doc in found.items()}
