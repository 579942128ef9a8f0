"""The `examflow` command: one subcommand per workflow step, usable without Snakemake."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import pandas as pd

from examflow import __version__
from examflow.errors import InputError, Problems
from examflow.io import read_qrels, read_queries, read_responses, read_runs, read_table, write_tables
from examflow.io.qrels import JUDGMENT_COLUMNS
from examflow.io.runs import RUN_COLUMNS
from examflow.pool import build_pool
from examflow.segment import segment_responses

log = logging.getLogger("examflow")
POLICIES = ("error", "warn")


def pool_command(args: argparse.Namespace) -> None:
    queries = read_queries(args.queries)
    unknown = Problems(args.on_unknown_query)
    query_ids = set(queries["query_id"])
    runs = read_runs(args.runs, query_ids, unknown) if args.runs else pd.DataFrame(columns=RUN_COLUMNS)
    judgments = read_qrels(args.qrels, queries, unknown) if args.qrels else pd.DataFrame(columns=JUDGMENT_COLUMNS)
    segments = read_table(args.segments) if args.segments else None
    if runs.empty and segments is None:
        raise InputError("config: inputs", "nothing to evaluate: give run files, generated responses, or both")
    missing = Problems(args.on_missing_passage)
    tables = build_pool(queries, runs, segments, judgments, args.corpus, args.depth, missing)
    unknown.summarise()
    missing.summarise()
    out = Path(args.out)
    write_tables(
        {out / (f"{name}.tsv" if name == "summary" else f"{name}.parquet"): table for name, table in tables.items()}
    )
    lists = tables["rankings"].groupby(["run_id", "query_id"]).ngroups
    log.info(
        "pooled %d passages for %d queries from %d ranked lists", len(tables["passages"]), len(tables["summary"]), lists
    )


def segment_command(args: argparse.Namespace) -> None:
    queries = read_queries(args.queries)
    unknown = Problems(args.on_unknown_query)
    responses = read_responses(args.responses, set(queries["query_id"]), unknown)
    unknown.summarise()
    segments = segment_responses(responses, args.max_tokens)
    write_tables({args.out: segments})
    log.info("cut %d responses into %d passages of at most %d tokens", len(responses), len(segments), args.max_tokens)


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="examflow", description=__doc__)
    main.add_argument("--version", action="version", version=f"examflow {__version__}")
    commands = main.add_subparsers(dest="command", required=True)

    pool = commands.add_parser("pool", help="pool judged and top-k passages of every run (SPEC §1)")
    pool.add_argument("--queries", required=True, help="queries file (.tsv, .json, .jsonl)")
    pool.add_argument("--runs", nargs="*", default=[], help="TREC run files")
    pool.add_argument("--segments", help="segmented responses table from `examflow segment`")
    pool.add_argument("--qrels", help="TREC qrels file")
    pool.add_argument("--corpus", help="passage collection (.tsv, .jsonl, .parquet)")
    pool.add_argument("--depth", type=int, default=20, help="top-k of every run to pool (default 20)")
    pool.add_argument("--on-missing-passage", choices=POLICIES, default="error")
    pool.add_argument("--on-unknown-query", choices=POLICIES, default="error")
    pool.add_argument("--out", required=True, help="directory for the pool tables")
    pool.set_defaults(handler=pool_command)

    segment = commands.add_parser("segment", help="cut generated responses into passages (SPEC §1)")
    segment.add_argument("--responses", required=True, help="responses JSONL (run_id, query_id, text)")
    segment.add_argument("--queries", required=True)
    segment.add_argument("--max-tokens", type=int, default=400)
    segment.add_argument("--on-unknown-query", choices=POLICIES, default="error")
    segment.add_argument("--out", required=True, help="output Parquet table")
    segment.set_defaults(handler=segment_command)
    return main


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    args = parser().parse_args(argv)
    try:
        args.handler(args)
    except InputError as error:
        print(f"examflow: error: {error}", file=sys.stderr)
        return 2
    return 0
