"""The `examflow` command: one subcommand per workflow step, usable without Snakemake."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import sys
from pathlib import Path

import pandas as pd

from examflow import __version__
from examflow.errors import Failure, InputError, Problems
from examflow.evaluation.qrels import DEFAULT_MEASURES
from examflow.io import read_qrels, read_queries, read_responses, read_runs, read_table, write_tables
from examflow.io.qrels import JUDGMENT_COLUMNS
from examflow.io.responses import gold_responses, read_gold_articles
from examflow.io.runs import RUN_COLUMNS
from examflow.llm import LLMClient, LLMSettings
from examflow.pool import build_pool
from examflow.questions.bank import read_bank, write_bank
from examflow.questions.diff import diff_banks, format_diff
from examflow.questions.generate import FORMATS, generate_bank
from examflow.questions.shards import pool_shard, shard_table
from examflow.registry import QUESTION_LLM_OPTIONS, REQUIRED, check_method, check_options
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
    query_ids = set(queries["query_id"])
    responses = read_responses(args.responses, query_ids, unknown) if args.responses else []
    if args.gold_articles:
        responses += gold_responses(read_gold_articles(args.gold_articles, query_ids, unknown))
    unknown.summarise()
    segments = segment_responses(responses, args.max_tokens)
    write_tables({args.out: segments})
    log.info("cut %d responses into %d passages of at most %d tokens", len(responses), len(segments), args.max_tokens)


def questions_command(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if out.exists():
        # The bank is the user's to edit from the moment it is written.
        raise InputError(out, "exists: the bank is generated once and never overwritten (delete it to generate anew)")
    settings = LLMSettings(
        **check_options("--llm", {n: getattr(args, n) for n in QUESTION_LLM_OPTIONS}, QUESTION_LLM_OPTIONS)
    )
    llm = LLMClient(settings, args.cache_dir)
    bank = generate_bank(read_queries(args.queries), llm, args.format, args.attempts)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bank(bank, out)
    log.info(
        "wrote %d questions for %d queries to %s (%d API calls)",
        sum(len(e.items) for e in bank),
        len(bank),
        out,
        llm.calls,
    )


def bank_shard_command(args: argparse.Namespace) -> None:
    write_tables({args.out: shard_table(read_bank(args.bank), args.shard)})


def pool_shard_command(args: argparse.Namespace) -> None:
    passages, queries = pool_shard(read_table(args.passages), read_table(args.queries), args.shard)
    write_tables({args.out_passages: passages, args.out_queries: queries})


def bank_diff_command(args: argparse.Namespace) -> None:
    sys.stdout.write(format_diff(diff_banks(read_bank(args.old), read_bank(args.new))))


def grade_command(args: argparse.Namespace) -> None:
    from examflow.grading.grades import empty_grades, failure_counts
    from examflow.grading.run import ShardGrader, make_pairs

    method = check_method("--method", json_argument(args.method, "--method"))
    queries, passages = read_table(args.queries), read_table(args.passages)
    questions = read_table(args.questions)
    pairs = make_pairs(method["kind"], passages, questions, queries)
    log.info("method %s, shard %s: %d passages, %d pairs", method["name"], args.shard, len(passages), len(pairs))
    if not pairs:  # no model is loaded for nothing
        log.warning("shard %s: nothing to grade (no pooled passages or no questions)", args.shard)
        write_tables({args.out: empty_grades()})
        return
    grader = ShardGrader(method, args.cache_dir, args.shard, args.flush_every)
    grades = grader.grade(pairs)
    failed, unparsable = failure_counts(grades), int(grades["unparsable"].sum())
    n_failed = sum(failed.values())
    kinds = ", ".join(f"{count} {kind}" for kind, count in failed.items())
    log.info("sent %d prompts to the model; %d failed pairs%s; %d unparsable answers (mode %s)",
             grader.sent, n_failed, f" ({kinds})" if kinds else "", unparsable, method["mode"])  # fmt: skip
    if n_failed > args.max_error_rate * len(pairs):
        raise Failure(
            f"method {method['name']}, shard {args.shard}: {n_failed} of {len(pairs)} pairs failed ({kinds}), more "
            f"than grading.max_error_rate = {args.max_error_rate:g} allows; the answers that came are cached, and "
            "a rerun asks only for the failed pairs"
        )
    write_tables({args.out: grades})


def merge_grades_command(args: argparse.Namespace) -> None:
    from examflow.grading.merge import merge_grades, write_grades

    grades, metadata = merge_grades([read_table(path) for path in args.shards], json.loads(args.method))
    write_grades(grades, metadata, args.out)
    log.info("merged %d grades (%d errors) into %s", metadata["pairs"], metadata["errors"], args.out)


def evaluate_command(args: argparse.Namespace) -> None:
    from examflow.evaluation.leaderboard import Settings, evaluate
    from examflow.io.leaderboard import read_leaderboard

    inputs = _evaluation_inputs(args)
    settings = Settings(
        args.tau, args.k, args.measures, args.query_mode, args.n_exam, args.relevant_judgment, args.bootstrap, args.seed
    )
    official = read_leaderboard(args.official) if args.official else None
    outputs = evaluate(inputs, settings, official)
    write_tables({Path(args.out) / name: table for name, table in outputs.items()})
    leaderboard = outputs["leaderboard.tsv"]
    log.info(
        "%d methods, %d runs, %d measures, tau %s -> %s",
        leaderboard["method"].nunique(),
        leaderboard["run_id"].nunique(),
        leaderboard["measure"].nunique(),
        args.tau,
        args.out,
    )


def _evaluation_inputs(args: argparse.Namespace):
    from examflow.evaluation.leaderboard import Inputs
    from examflow.io.workbench import read_workbench_graded

    gold = read_gold_articles(args.gold_articles) if args.gold_articles else None
    if args.workbench_graded:
        tables = read_workbench_graded(args.workbench_graded)
        return Inputs(tables["grades"], tables["rankings"], None, tables["passages"], tables["judgments"], gold)
    if not (args.grades and args.pool):
        raise InputError("examflow evaluate", "give --grades and --pool, or --workbench-graded")
    pool = Path(args.pool)
    grades = pd.concat([read_table(path) for path in args.grades], ignore_index=True)
    questions = pd.concat([read_table(path) for path in args.questions]) if args.questions else None
    return Inputs(
        grades,
        read_table(pool / "rankings.parquet"),
        questions,
        read_table(pool / "passages.parquet"),
        read_table(pool / "judgments.parquet"),
        gold,
    )


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
    segment.add_argument("--responses", help="responses JSONL (run_id, query_id, text)")
    segment.add_argument("--gold-articles", help="gold articles JSONL (query_id, text), segmented as run _gold_")
    segment.add_argument("--queries", required=True)
    segment.add_argument("--max-tokens", type=int, default=400)
    segment.add_argument("--on-unknown-query", choices=POLICIES, default="error")
    segment.add_argument("--out", required=True, help="output Parquet table")
    segment.set_defaults(handler=segment_command)

    questions = commands.add_parser("questions", help="generate a question bank with an LLM (SPEC §2)")
    questions.add_argument("--queries", required=True)
    questions.add_argument("--out", required=True, help="bank file to write (JSONL); never overwritten")
    questions.add_argument("--format", choices=FORMATS, default="json", help="output-format instruction")
    questions.add_argument("--attempts", type=int, default=3, help="tries per query on unparsable answers")
    questions.add_argument("--cache-dir", required=True, help="directory of cached raw LLM responses")
    add_llm_options(questions)
    questions.set_defaults(handler=questions_command)

    shard = commands.add_parser("bank-shard", help="one query's questions as a table for grading")
    shard.add_argument("--bank", required=True)
    shard.add_argument("--shard", required=True, help="shard name (see examflow.questions.shards)")
    shard.add_argument("--out", required=True)
    shard.set_defaults(handler=bank_shard_command)

    grade = commands.add_parser("grade", help="grade one shard's (passage, question) pairs with one method (SPEC §3)")
    grade.add_argument("--method", required=True, help="the method as JSON: {name, kind, backend: {kind, ...}, ...}")
    grade.add_argument("--passages", required=True, help="the shard's pool passages table")
    grade.add_argument("--queries", required=True, help="the shard's pool queries table")
    grade.add_argument("--questions", required=True, help="the shard's bank table")
    grade.add_argument("--shard", required=True)
    grade.add_argument("--cache-dir", required=True)
    grade.add_argument("--flush-every", type=int, default=64, help="pairs per cache flush")
    grade.add_argument(
        "--max-error-rate",
        type=float,
        default=0.0,
        help="share of pairs that may fail (0-1, default 0) before the job fails, writing no table",
    )
    grade.add_argument("--out", required=True)
    grade.set_defaults(handler=grade_command)

    merge = commands.add_parser("merge-grades", help="one grades table per method from its shards")
    merge.add_argument("--method", required=True, help="the method as JSON")
    merge.add_argument("--out", required=True)
    merge.add_argument("shards", nargs="*")
    merge.set_defaults(handler=merge_grades_command)

    pool_shard = commands.add_parser("pool-shard", help="one query's pooled passages, for grading")
    pool_shard.add_argument("--passages", required=True, help="pool passages table")
    pool_shard.add_argument("--queries", required=True, help="pool queries table")
    pool_shard.add_argument("--shard", required=True)
    pool_shard.add_argument("--out-passages", required=True)
    pool_shard.add_argument("--out-queries", required=True)
    pool_shard.set_defaults(handler=pool_shard_command)

    evaluate = commands.add_parser("evaluate", help="EXAM-Cover, EXAM-Qrels measures and leaderboard correlation")
    evaluate.add_argument("--grades", nargs="+", help="grades tables (one or more methods)")
    evaluate.add_argument("--pool", help="directory of the pool tables")
    evaluate.add_argument("--workbench-graded", help="the reference implementation's graded *.jsonl.gz instead")
    evaluate.add_argument(
        "--questions", nargs="*", default=[], help="bank shard tables (default: the graded questions)"
    )
    evaluate.add_argument("--gold-articles", help="gold articles JSONL (query_id, text) for ROUGE-1")
    evaluate.add_argument("--official", help="official leaderboard JSON {run_id: rank}")
    evaluate.add_argument("--tau", type=int, nargs="+", default=[1, 3, 4, 5], help="grade thresholds")
    evaluate.add_argument("--k", type=int, default=20, help="passage budget (rank <= k, as written)")
    evaluate.add_argument("--measures", nargs="*", default=list(DEFAULT_MEASURES), help="trec_eval measure names")
    evaluate.add_argument(
        "--query-mode",
        choices=["present", "all"],
        default="present",
        help="mean over the queries a run has (default) or all, missing ones as 0 (trec_eval -c)",
    )
    evaluate.add_argument("--n-exam", choices=["pool", "gold"], default="pool", help="n-EXAM normaliser")
    evaluate.add_argument(
        "--min-relevant-judgment",
        dest="relevant_judgment",
        type=int,
        default=1,
        help="official judgment that counts as relevant for kappa (1 for CAR, 2 for TREC DL)",
    )
    evaluate.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates over queries (0: none)")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    evaluate.add_argument("--out", required=True)
    evaluate.set_defaults(handler=evaluate_command)

    diff = commands.add_parser("bank-diff", help="questions added, removed and reworded between two banks")
    diff.add_argument("old")
    diff.add_argument("new")
    diff.set_defaults(handler=bank_diff_command)
    return main


def add_llm_options(command: argparse.ArgumentParser) -> None:
    """One option per `examflow.registry.LLM_OPTIONS` entry, with its default and help."""
    kinds = {"string": str, "integer": int, "number": float}
    for name, option in QUESTION_LLM_OPTIONS.items():
        default = None if option.default is REQUIRED else option.default
        command.add_argument(
            f"--{name.replace('_', '-')}",
            type=kinds[option.type],
            default=default,
            choices=option.choices or None,
            help=f"{option.help} (default: {default})",
        )


def json_argument(text: str, name: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise Failure(f"{name}: not valid JSON ({error.msg}, column {error.colno})") from None


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for chatty in ("httpx", "httpx2"):  # one INFO line per HTTP request
        logging.getLogger(chatty).setLevel(logging.WARNING)
    args = parser().parse_args(argv)
    try:
        args.handler(args)
    except Failure as error:
        print(f"examflow: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        if error.errno not in _DISK_ERRORS:
            raise
        print(f"examflow: error: {error.filename or 'output'}: cannot write: {error.strerror}", file=sys.stderr)
        return 2
    return 0


# Writing failed for a reason outside examflow: a full disk, a read-only or forbidden folder.
_DISK_ERRORS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EPERM}
