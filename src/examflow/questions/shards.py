"""Per-query bank shards: the unit that grading jobs consume.

A shard is named after its query, so editing one query's questions changes that shard's
content digest only, and Snakemake reruns only that query's downstream jobs.
"""

from __future__ import annotations

import hashlib
import json
import re

import pandas as pd

from examflow.questions.bank import Entry

QUESTION_COLUMNS = ["query_id", "facet_id", "question_id", "question_text", "kind", "gold_answers", "choices"]


def shard_name(query_id: str) -> str:
    """A file-name-safe, collision-free name for the query's shard."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", query_id)
    if safe == query_id:
        return safe
    return f"{safe}-{hashlib.md5(query_id.encode('utf-8')).hexdigest()[:8]}"


def shard_rows(entries: list[Entry]) -> dict[str, list[tuple]]:
    """Every shard's question rows, in bank order, from one pass over the bank."""
    rows: dict[str, list[tuple]] = {}
    for entry in entries:
        mine = rows.setdefault(shard_name(entry.query_id), [])
        for item in entry.items:
            choices = json.dumps(item.choices, ensure_ascii=False, sort_keys=True) if item.choices is not None else None
            mine.append((item.query_id, item.facet_id, item.item_id, item.text, item.kind, item.gold_answers, choices))
    return rows


def shard_table(entries: list[Entry], shard: str) -> pd.DataFrame:
    return pd.DataFrame(shard_rows(entries).get(shard, []), columns=QUESTION_COLUMNS, dtype=object)


def shard_digests(entries: list[Entry]) -> dict[str, str]:
    """Content digest of every shard in the bank: what a grading job's params carry."""
    return {
        name: hashlib.md5(json.dumps(rows).encode()).hexdigest() for name, rows in sorted(shard_rows(entries).items())
    }


def queries_of(shard: str, query_ids) -> list[str]:
    return sorted(q for q in set(query_ids) if shard_name(q) == shard)


def pool_shard(passages: pd.DataFrame, queries: pd.DataFrame, shard: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shard's pooled passages and query (or facet) rows."""
    mine = set(queries_of(shard, queries["query_id"]))
    return (
        passages[passages["query_id"].isin(mine)].reset_index(drop=True),
        queries[queries["query_id"].isin(mine)].reset_index(drop=True),
    )
