"""Readers for the evaluation's inputs, each validating as it reads.

Every reader raises `examflow.errors.InputError` naming the file, line and field of
the first problem it cannot recover from; recoverable problems go through `Problems`.
"""

from examflow.io.collection import read_passages
from examflow.io.qrels import read_qrels
from examflow.io.queries import read_queries
from examflow.io.responses import read_responses
from examflow.io.runs import read_runs
from examflow.io.tables import read_table, write_tables

__all__ = [
    "read_passages",
    "read_qrels",
    "read_queries",
    "read_responses",
    "read_runs",
    "read_table",
    "write_tables",
]
