"""Merging shard grades into one table per method; embedding similarities become grades here
(`examflow.grading.calibration`: they are relative to the pool, so every shard must be in)."""

from __future__ import annotations

import json
import os
from collections import Counter

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from examflow.errors import InputError
from examflow.grading.calibration import calibrated_grades
from examflow.grading.grades import empty_grades, failure_counts
from examflow.io.tables import NOT_PARQUET, among, existing, write_tables
from examflow.registry import Method


def merge_grades(
    tables: list[pd.DataFrame], method: Method, gold: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, dict]:
    """The method's grades table and the metadata recorded with it (`method.record()`); `gold`: the
    (query_id, passage_id) of gold articles, graded but no pooled passages, so not on the quantile ladder."""
    grades = pd.concat(tables, ignore_index=True) if tables else empty_grades()
    grades = grades.sort_values(["query_id", "passage_id", "question_id"], kind="stable").reset_index(drop=True)
    failed = failure_counts(grades) if len(grades) else {}
    metadata = {
        "method": method.record(),
        "pairs": len(grades),
        "errors": sum(failed.values()),
        "errors_by_kind": failed,
        "unparsable": int(grades["unparsable"].sum()) if len(grades) else 0,
    }
    if method.calibration is not None and method.quantiles is not None and len(grades):
        pooled = ~among(grades, gold) if gold is not None and len(gold) else None  # None: every pair
        grades["rating"], metadata["embedding_grades"] = calibrated_grades(
            grades, method.calibration, method.quantiles, pooled
        )
    return grades, metadata


PAIR = ["query_id", "passage_id", "question_id"]


def check_graded_by(paths: list[str], tables: list[pd.DataFrame], method: Method) -> None:
    """Each shard graded by `method` (its name and kind): another method's shards would be written under
    this one's name, its qrels and leaderboard rows holding the other's grades (a stranger by hand)."""
    for path, table in zip(paths, tables):
        for column, wanted in (("method", method.name), ("kind", method.kind)):
            found = sorted(set(table[column].dropna()) - {wanted}) if column in table else []
            if found:
                raise InputError(path, f"graded by {column} {found[0]!r}, not --method's {wanted!r}: merge a "
                                 "method's own shards, with the method they were graded with", field=column)  # fmt: skip


def check_graded_with(paths: list[str], shards: list[dict], method: Method) -> None:
    """Each shard graded by `method`'s back end and model (their metadata's signature): the merged table
    records the method's settings, so shards of another model would be said to be this one's grades."""
    backend = method.backend
    wanted = {"backend": backend.kind, "model": backend.options.get("model")}
    for path, shard in zip(paths, shards):
        signature = shard.get("model") or {}  # a shard's back end signature (none in a table of long ago)
        for key, value in wanted.items():
            if key in signature and not _same(signature[key], value):
                raise InputError(path, f"graded with {key} {signature[key]!r}, not --method's {value!r}: merge a "
                                 "method's own shards, with the method they were graded with", field=key)  # fmt: skip


def _same(recorded: object, given: object) -> bool:
    """One back end or model: a local model's folder may be written another way (`./m` and `m`)."""
    if recorded == given:
        return True
    folders = [value for value in (recorded, given) if isinstance(value, str) and os.path.isdir(value)]
    return len(folders) == 2 and os.path.samefile(*folders)


def check_disjoint(paths: list[str], tables: list[pd.DataFrame]) -> None:
    """Each pair graded in one shard, once: a shard given twice, or shards of two runs mixed, would count a
    pair twice in every measure."""
    if not tables:
        return
    frame = pd.concat([table[PAIR].assign(shard=at) for at, table in enumerate(tables)], ignore_index=True)
    twice = frame[frame.duplicated(PAIR, keep=False)]
    if len(twice):
        (query, passage, question), shards = next(iter(twice.groupby(PAIR, dropna=False, sort=False)["shard"]))
        first, second = shards.iloc[0], shards.iloc[1]
        where = "twice in it" if first == second else f"again in {paths[second]}"
        where += " (the shard given twice)" if first != second and paths[first] == paths[second] else ""
        raise InputError(paths[first], f"query {query!r}, passage {passage!r}, question {question!r} is graded "
                         f"{where}: each pair is in one shard, once")  # fmt: skip


def served_counts(path: str, metadata: dict) -> Counter[str]:
    """A shard's `served_models` (model name -> answers), checked: the merge adds them up."""
    served = metadata.get("served_models", {})
    if not isinstance(served, dict) or not all(
        isinstance(name, str) and type(count) is int and count >= 0 for name, count in served.items()
    ):
        raise InputError(path, f"metadata served_models: expected {{model name: answers}}, found {served!r:.80}")
    return Counter(served)


def write_grades(grades: pd.DataFrame, metadata: dict, path: str) -> None:
    """Parquet with the metadata under the schema key `examflow`, written atomically."""
    table = pa.Table.from_pandas(grades, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"examflow": json.dumps(metadata).encode()})
    write_tables({path: table})


def job_shard(metadata: dict) -> str | None:
    """The shard of a grading job's table (by its metadata), None for a merged one. A job's table of before
    shards were named holds its model's signature alone, a merged one its count of pairs."""
    if "shard" in metadata:
        return str(metadata["shard"])
    return "a shard" if "model" in metadata and "pairs" not in metadata else None


def read_grades_metadata(path: str) -> dict:
    """What examflow recorded with a grades table ({} for a table written without any)."""
    try:
        metadata = pq.read_schema(existing(path)).metadata or {}
    except pa.ArrowInvalid:
        raise InputError(path, NOT_PARQUET) from None
    return json.loads(metadata[b"examflow"]) if b"examflow" in metadata else {}
