"""Shards: the unit that grading jobs consume, a fixed hash bucket of queries.

A query's bucket depends on its id alone (and the number of buckets), never on position, so
editing one query's questions changes that bucket's content digest only, and Snakemake reruns
only that bucket's downstream jobs; the grade cache (kept per query) answers every pair of the
bucket that did not change. One bucket loads its model once for all its queries.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING

import pandas as pd

from examflow.errors import ConfigError, InputError, listed
from examflow.questions.items import Entry

if TYPE_CHECKING:  # pyarrow is imported where a table is written: the workflow imports this module to parse
    import pyarrow as pa

QUESTION_COLUMNS = ["query_id", "facet_id", "question_id", "question_text", "kind", "gold_answers", "choices",
                    "importance"]  # fmt: skip
# What a reader of a questions table needs: `importance` (nuggets') is read where it is there.
QUESTIONS_READ = QUESTION_COLUMNS[:-1]


def no_questions() -> pd.DataFrame:
    """The questions of a method that grades against the query: none (it reads no bank shard)."""
    return pd.DataFrame(columns=QUESTIONS_READ)


NAME_MAX = 255  # the longest file name most file systems take, in bytes (here ASCII characters)


def query_folder(query_id: str) -> str:
    """A file-name-safe, collision-free name for a query (its grade cache folder).

    An id of letters, digits, `_` and `-` is its own name; another gets `_` for the rest and a
    digest. Where that name would be too long (or empty), the name is the first 64 characters
    and a longer digest after a `.`, which no other name holds: earlier caches keep their names."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", query_id)
    name = safe if safe == query_id else f"{safe}-{hashlib.md5(query_id.encode('utf-8')).hexdigest()[:8]}"
    if 0 < len(name) <= NAME_MAX:
        return name
    return f"{safe[:64]}.{hashlib.sha256(query_id.encode('utf-8')).hexdigest()[:32]}"


def shard_of(query_id: str, shards: int) -> str:
    """The query's bucket: `shard-07` of 16, from a digest of its id."""
    return _shard_name(int(hashlib.md5(query_id.encode("utf-8")).hexdigest(), 16) % shards, shards)


def _shard_name(bucket: int, shards: int) -> str:
    """`shard-` and the bucket's number, zero-padded to the width of the last one (`shard-0` of 1, `shard-07` of 16)."""
    return f"shard-{bucket:0{len(str(shards - 1))}d}"


def check_shard(shard: str, shards: int) -> None:
    """A shard name that is no bucket would select no query and give an empty table, so it is refused."""
    if shards < 1:
        raise ConfigError("--shards", f"{shards}: the number of buckets is at least 1")
    if shard not in {_shard_name(bucket, shards) for bucket in range(shards)}:
        last = _shard_name(shards - 1, shards)
        names = last if shards == 1 else f"{_shard_name(0, shards)} to {last}"
        raise ConfigError("--shard", f"{shard!r} is not a bucket of --shards {shards}: the names are {names}")


def shard_rows(entries: list[Entry], shards: int) -> dict[str, list[tuple]]:
    """Every shard's question rows, in bank order, from one pass over the bank."""
    rows: dict[str, list[tuple]] = {}
    for entry in entries:
        if not entry.items:  # only buckets with questions: they alone get tables and grading jobs (graded_shards)
            continue
        mine = rows.setdefault(shard_of(entry.query_id, shards), [])
        for item in entry.items:
            choices = json.dumps(item.choices, ensure_ascii=False, sort_keys=True) if item.choices is not None else None
            mine.append((item.query_id, item.facet_id, item.item_id, item.text, item.kind, item.gold_answers, choices,
                         item.importance))  # fmt: skip
    return rows


# The schema key under which pool-shard's and bank-shard's tables name their bucket, `[shard, shards]`, and
# the one under which bank-shard's name the buckets that hold questions (the workflow's grading jobs).
BUCKET_KEY = b"examflow.bucket"
BANK_BUCKETS_KEY = b"examflow.bank_buckets"


def bank_shard_table(entries: list[Entry], shard: str, shards: int) -> pa.Table:
    """A bucket's questions, naming the bank's buckets that hold any: the tables given as a whole bank are
    checked for every one of them (`check_every_bucket`)."""
    rows = shard_rows(entries, shards)
    table = bucket_table(pd.DataFrame(rows.get(shard, []), columns=QUESTION_COLUMNS, dtype=object), shard, shards)
    return table.replace_schema_metadata({**table.schema.metadata, BANK_BUCKETS_KEY: json.dumps(sorted(rows))})


def bucket_table(table: pd.DataFrame, shard: str, shards: int) -> pa.Table:
    """`table` as Arrow (as pandas writes it), naming its bucket: a grade job given two buckets' tables
    refuses them, where it found no pair to grade and wrote an empty table."""
    import pyarrow as pa

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    return arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), BUCKET_KEY: json.dumps([shard, shards])})


def _metadata(path: str) -> dict[bytes, bytes]:
    import pyarrow.parquet as pq

    return pq.read_schema(path).metadata or {}


def _bucket(metadata: dict[bytes, bytes]) -> tuple[str, int] | None:
    """The bucket a table names in its schema, (shard, shards); None where it names none (written by hand,
    or before tables named their bucket)."""
    named = metadata.get(BUCKET_KEY)
    if named is None:
        return None
    shard, shards = json.loads(named)
    return shard, shards


def check_one_bucket(tables: dict[str, str], shard: str) -> None:
    """The tables a grade job reads (by option) are of one bucket, `shard`, wherever they name theirs (a
    table written by hand, or before tables named their bucket, does not): two buckets' tables would grade
    the pairs of neither whole, and another shard's would be logged and counted as `shard`'s."""
    first: tuple[str, tuple[str, int]] | None = None
    for option, path in tables.items():
        bucket = _bucket(_metadata(path))
        if bucket is None:
            continue
        if bucket[0] != shard:
            raise InputError(
                path, f"{option} is the table of {bucket[0]} (of {bucket[1]} buckets), not of --shard {shard}"
            )
        if first is not None and bucket != first[1]:
            raise InputError(path, f"{option} is the table of {bucket[0]} of {bucket[1]} buckets, {first[0]} of "
                             f"{first[1][0]} of {first[1][1]}: give one bucket's tables, made with one --shards")  # fmt: skip
        first = first or (option, bucket)


def check_bucket_count(option: str, paths: list[str], shards: int) -> None:
    """The tables are buckets of `shards`, where they name theirs: `plan` of a bank cut in 2 planned 16 jobs
    by its default --shards (a stranger by hand)."""
    for path in paths:
        if (bucket := _bucket(_metadata(path))) is not None and (count := bucket[1]) != shards:
            raise InputError(path, f"{option}: a bucket of --shards {count}, not of --shards {shards}: give the "
                             "--shards the bank's shards were made with")  # fmt: skip


def check_every_bucket(option: str, paths: list[str]) -> None:
    """Tables given together as the whole bank (`evaluate --questions`) are of one --shards, each bucket once,
    and every bucket that holds questions among them, where they name theirs: one left out took its queries
    out of the exam with a warning, and every run was scored over the others, exit 0 (a stranger by hand).
    A bucket without questions has no table in the workflow: it has no grading job."""
    metadata = {path: _metadata(path) for path in paths}
    buckets = [(path, *bucket) for path in paths if (bucket := _bucket(metadata[path]))]  # a path twice: twice
    if not paths or len(buckets) < len(paths):
        return  # a table written by hand, or before tables named their bucket: nothing to go by
    given: dict[str, str] = {}
    first, first_shard, shards = buckets[0]
    for path, shard, count in buckets:
        if count != shards:
            raise InputError(path, f"{option}: {shard} of --shards {count}, where {first} is {first_shard} of "
                             f"--shards {shards}: give the tables of one --shards")  # fmt: skip
        if shard in given:
            raise InputError(path, f"{option} gives {shard} twice (also as {given[shard]})")
        given[shard] = path
    holding = {name for named in metadata.values() for name in json.loads(named.get(BANK_BUCKETS_KEY, b"[]"))}
    if missing := sorted(holding - set(given)):
        one = len(missing) == 1
        raise InputError(option, f"the bank's {listed(missing)} of --shards {shards} {'holds' if one else 'hold'} "
                         f"questions and {'is' if one else 'are'} not given: give every table `examflow bank-shard` "
                         "wrote with that --shards")  # fmt: skip


def shard_digests(entries: list[Entry], shards: int) -> dict[str, str]:
    """Content digest of every shard in the bank: what a grading job's params carry."""
    # A nugget's importance counts when it is rated; a bank without (any question bank) keeps the digests
    # it had before importance was read, so that nothing reruns for it.
    return {
        name: hashlib.md5(json.dumps([row if row[-1] is not None else row[:-1] for row in rows]).encode()).hexdigest()
        for name, rows in sorted(shard_rows(entries, shards).items())
    }


def pool_shard(
    passages: pd.DataFrame, queries: pd.DataFrame, shard: str, shards: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The shard's pooled passages and query (or facet) rows."""
    mine = {q for q in set(queries["query_id"]) if shard_of(q, shards) == shard}
    return (
        passages[passages["query_id"].isin(mine)].reset_index(drop=True),
        queries[queries["query_id"].isin(mine)].reset_index(drop=True),
    )
