"""The `examflow` command: one subcommand per workflow step, usable without Snakemake."""

from __future__ import annotations

import argparse
import errno
import gc
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator
from functools import partial
from typing import TypedDict

from examflow import __version__, commands
from examflow.defaults import choices, default, number
from examflow.errors import (
    DONE,
    INTERRUPTED_LINE,
    PRINTED,
    TERMINATED_LINE,
    ConfigError,
    Failure,
    Terminated,
    a,
    file_in_the_way,
)
from examflow.options import REQUIRED, Option
from examflow.outputs import FACT_NAMES, FOLDERS, owned
from examflow.registry import (
    DEFAULT_MEASURES,
    DEFAULT_TAU,
    LEADERBOARD_LAYOUTS,
    QUESTION_FORMATS,
    QUESTION_LLM_OPTIONS,
    RANKERS,
    TOP_GRADE,
)

QUERIES_HELP = "queries: TSV query_id<TAB>text, JSON {query_id: text}, JSONL with subtopics, or irds:ID"


# Where a parse notes the options it meets (dest: value), until it ends: then `given`, their dests.
_GIVEN = "_options_given"


class Gathered(argparse._ExtendAction):
    """An option of several values that gathers them from every time it is given: argparse's own keeps the
    last (`--tau 1 --tau 4` evaluated τ 4 alone, `--qrels a=… --qrels b=…` dimension b alone, exit 0).
    Given, it replaces its default; argparse's `extend` would add to it."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is self.default:  # the first time given
            setattr(namespace, self.dest, [])
        namespace.__dict__.setdefault(_GIVEN, {}).setdefault(self.dest, values)
        super().__call__(parser, namespace, values, option_string)


TABLE = "a Parquet table written by examflow"


def _written(command, name: str, folder: bool = False, **argument) -> None:
    """An option naming a file (or `folder`) the command writes, refused before any work where it cannot be
    one: `out/` names a folder, and pathlib drops the slash (the table would be written as a file `out`)."""
    command.add_argument(name, type=partial(_written_folder if folder else _written_file, name), **argument)


def _written_file(name: str, text: str) -> str:
    if text.endswith(("/", os.sep)) or os.path.isdir(text):
        what = "ends with '/', which names" if text.endswith(("/", os.sep)) else "is"
        raise ConfigError(name, f"{text!r} {what} a folder: name the file to write")
    return _under_a_folder(name, text)


def _written_folder(name: str, text: str) -> str:
    if os.path.exists(text) and not os.path.isdir(text):
        raise ConfigError(name, f"{text!r} is a file: name the folder to write into")
    return _under_a_folder(name, text, folder=True)


def _under_a_folder(name: str, text: str, folder: bool = False) -> str:
    """`text`, whose nearest existing parent is a folder: `a file/x` could not be made, after the work."""
    if (blocker := file_in_the_way(text, folder)) is not None:
        raise ConfigError(name, f"{text!r}: {blocker}")
    return text


class _Once(argparse._StoreAction):
    """A single-valued option given twice is refused: argparse keeps the last in silence (`nrp --run A --run B`
    ranked by B alone, a stranger's trial)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault(_GIVEN, {})
        if self.dest in given:
            raise ConfigError(
                option_string or self.dest, f"given twice ({given[self.dest]}, then {values}): give it once"
            )
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    """A parser that takes options as written only: argparse's abbreviations read `--qrel` as `--qrels` and
    `--dep 1` as `--depth 1` in silence (a stranger by hand), and a later option would change what they mean;
    a single-valued option given twice is refused (`_Once`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})
        self.register("action", None, _Once)

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        # the options given, default or not: a command refuses one it would not use (`report --judges --tau 3`)
        parsed.given = frozenset(parsed.__dict__.pop(_GIVEN, {})) | getattr(parsed, "given", frozenset())
        return parsed, rest


def parser() -> argparse.ArgumentParser:
    main = _Parser(prog="examflow", description=__doc__)
    main.add_argument("--version", action="version", version=f"examflow {__version__}")
    subparsers = main.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _pool_parser(subparsers)
    _segment_parser(subparsers)
    _questions_parser(subparsers)
    _grading_parsers(subparsers)
    _evaluate_parser(subparsers)
    _official_parser(subparsers)
    _compare_judges_parser(subparsers)
    _nrp_parser(subparsers)
    _plan_parser(subparsers)
    _report_parser(subparsers)
    _summary_parser(subparsers)
    _bank_parsers(subparsers)
    return main


def _plan_parser(subparsers) -> None:
    plan = subparsers.add_parser("plan", help="before grading: pairs per method, how many are cached, and the cost")
    plan.add_argument("--pool", required=True, help="directory of the pool tables (`examflow pool --out`)")
    plan.add_argument("--questions", nargs="*", action=Gathered, default=[], help=f"bank shards, {TABLE} each")
    plan.add_argument(
        "--method",
        nargs="+",
        action=Gathered,
        required=True,
        help="grading methods, each as JSON (as for `examflow grade`)",
    )
    plan.add_argument(
        "--cache-dir",
        default=default("cache_dir"),
        help=f"directory of the grade cache (default {default('cache_dir')})",
    )
    _setting(
        plan, "--shards", "grading.shards",
        help=f"buckets of queries, one grading job each, as `bank-shard` made them (default {default('grading.shards')})",
    )  # fmt: skip
    _written(plan, "--out", help="TSV file to write the plan to (it is printed in any case)")
    plan.set_defaults(handler=commands.plan_command)


def _report_parser(subparsers) -> None:
    report = subparsers.add_parser("report", help="the figures and HTML pages of an evaluation, or of NRP")
    report.add_argument("--method", help="the method's name")
    report.add_argument("--eval", help="the method's evaluation folder (`examflow evaluate --out`)")
    report.add_argument("--grades", help=f"the method's grades, {TABLE}")
    report.add_argument(
        "--workbench-graded", help="instead: the reference implementation's graded *.jsonl.gz the evaluation read"
    )
    _number(
        report,
        "--tau",
        **THRESHOLD,
        default=DEFAULT_TAU,
        help=f"the threshold the figures show (default {DEFAULT_TAU})",
    )
    report.add_argument(
        "--official", help="official leaderboard: JSON {run_id: rank}, or a TSV of run_id and rank or score"
    )
    _policy(report, "--on-unknown-run", "official runs that are not evaluated (as evaluate's)")
    _measure_order(report)
    report.add_argument(
        "--example-query",
        help="the topic of the worked example page (needs --pool and --questions; default: the first topic, "
        "sorted by id, with grades and pooled passages)",
    )
    report.add_argument("--pool", help="directory of the pool tables")
    report.add_argument("--questions", nargs="*", action=Gathered, default=[], help=f"bank shards, {TABLE} each")
    report.add_argument("--nrp", help="instead: the NRP tables' folder (`examflow nrp --out`)")
    report.add_argument("--judges", help="instead: the judges' tables folder (`examflow compare-judges --out`)")
    _facts(
        report, "scatter.png and correlation.html (official), kappa.png (judgments), NRP's expert agreement (expert)"
    )
    _written(report, "--out", folder=True, required=True, help="directory for the figures (PNG) and pages (HTML)")
    report.set_defaults(handler=commands.report_command)


def _summary_parser(subparsers) -> None:
    summary = subparsers.add_parser("summary", help="the run's summary (summary.md) and provenance record (JSON)")
    summary.add_argument("--grades", nargs="*", action=Gathered, default=[], help=f"every method's grades, {TABLE}")
    summary.add_argument("--flagged", help="the pool's flagged.tsv (passages that look like prompt injection)")
    summary.add_argument("--dropped", help="the pool's dropped.tsv (pooled passages missing from the corpus or empty)")
    summary.add_argument("--config-digest", required=True, help="sha256 of the checked configuration")
    summary.add_argument("--results", required=True, help="the results folder, named in the summary")
    summary.add_argument(
        "--configfile",
        nargs="*",
        action=Gathered,
        default=[],
        help="the run's config files, for the report command it prints",
    )
    summary.add_argument(
        "--config-setting", nargs="*", action=Gathered, default=[], metavar="KEY=VALUE",
        help="the run's --config settings, for the report command it prints",
    )  # fmt: skip
    summary.add_argument("--snakefile", help="the run's Snakefile, where snakemake would not find it by itself")
    summary.add_argument(
        "--eval",
        nargs="*",
        action=Gathered,
        default=[],
        help="the methods' evaluation folders (`examflow evaluate --out`)",
    )
    summary.add_argument(
        "--figures", nargs="*", action=Gathered, default=[], metavar="PNG",
        help="the methods' leaderboard figures as `examflow report` drew them (METHOD/leaderboard.png in its --out "
        "folder), embedded as they are; a method without one has its figure drawn again",
    )  # fmt: skip
    summary.add_argument("--official", help="official leaderboard: its runs are the ones named best")
    summary.add_argument(
        "--official-measure",
        help="the trec_eval measure `examflow official` computed --official by from the qrels (none: a given file)",
    )
    _setting(
        summary, "--official-relevance-level", "evaluation.min_relevant_judgment",
        help="the relevance level `examflow official` computed --official-measure at "
        f"(default {default('evaluation.min_relevant_judgment')})",
    )  # fmt: skip
    summary.add_argument(
        "--official-query-mode", choices=choices("evaluation.query_mode"), default=default("evaluation.query_mode"),
        help="the queries `examflow official` averaged over: those a run ranks (present, default) or all judged",
    )  # fmt: skip
    _measure_order(summary)
    summary.add_argument(
        "--bank", help="the question bank the methods graded: its items' digest, and a generated bank's generator, "
        "go into --out-provenance",
    )  # fmt: skip
    summary.add_argument("--nrp", help="NRP's per_system.tsv")
    summary.add_argument("--judges", help="the judges' agreement.tsv (`examflow compare-judges --out`)")
    _number(
        summary,
        "--tau",
        **THRESHOLD,
        default=DEFAULT_TAU,
        help=f"the threshold the summary reports (default {DEFAULT_TAU})",
    )
    summary.add_argument(
        "--method-tau", nargs="+", action=Gathered, default=[], metavar="METHOD=TAU",
        help="a method's own threshold instead of --tau (UMBRELA's 0-3 at 3, a binary judge at 1)",
    )  # fmt: skip
    _written(summary, "--out-summary", required=True, help="Markdown file to write")
    _written(summary, "--out-rst", help="the same summary as reStructuredText (the report's first page)")
    _written(summary, "--out-provenance", required=True, help="JSON file to write")
    summary.set_defaults(handler=commands.summary_command)


def _bank_parsers(subparsers) -> None:
    """`bank-diff` and `bank-export`: a bank compared with another, or written in another format."""
    diff = subparsers.add_parser("bank-diff", help="questions added, removed and reworded between two banks")
    diff.add_argument("old", help="the bank before the edit (JSONL, optionally .gz, or TSV)")
    diff.add_argument("new", help="the bank after the edit (same formats)")
    diff.set_defaults(handler=commands.bank_diff_command)
    export = subparsers.add_parser(
        "bank-export", help="a bank written in another format (TREC AutoJudge's, examflow's)"
    )
    export.add_argument("bank", help="the bank (any format examflow reads)")
    export.add_argument(
        "--format", choices=("autojudge", "examflow"), required=True,
        help="autojudge: questions as NuggetBanks v3, nuggets as nuggetizer's lines; examflow: its JSONL",
    )  # fmt: skip
    _written(export, "--out", required=True, help="the file to write (JSONL, .gz for gzip)")
    export.add_argument(
        "--queries", help="the queries (as inputs.queries): their texts where the bank has none (nuggetizer's "
        "lines need them)",
    )  # fmt: skip
    export.set_defaults(handler=commands.bank_export_command)


def _measure_order(command) -> None:
    command.add_argument(
        "--measures", nargs="*", action=Gathered, default=list(DEFAULT_MEASURES),
        help="the EXAM-Qrels measures in the order they are shown, after EXAM-Cover (evaluation.measures)",
    )  # fmt: skip


def _policy(command, name: str, what: str, default: str | None = "error") -> None:
    """A policy option; `default` None where it acts only with another option, which it then requires."""
    command.add_argument(
        name,
        choices=choices("validation.missing_passages"),
        default=default,
        help=f"{what}: error (default) stops, warn drops and counts them",
    )


def _pool_parser(subparsers) -> None:
    pool = subparsers.add_parser("pool", help="pool judged and top-k passages of every run (docs/methods.md §1)")
    pool.add_argument("--queries", required=True, help=QUERIES_HELP)
    pool.add_argument(
        "--runs",
        nargs="*",
        action=Gathered,
        default=[],
        help="TREC run files (query_id Q0 doc_id rank score run_tag), or quoted patterns such as 'runs/*'",
    )
    pool.add_argument("--segments", help="segmented responses, the Parquet table of `examflow segment`")
    pool.add_argument("--qrels", help="TREC qrels: query_id 0 doc_id relevance (query_id/facet_id for a subtopic)")
    pool.add_argument("--corpus", help="passages: TSV doc_id<TAB>text, JSONL (optionally .gz), Parquet, or irds:ID")
    _setting(
        pool, "--depth", "pool.depth",
        help=f"top-k of every run to pool, rank as written (default {default('pool.depth')})",
    )  # fmt: skip
    _number(
        pool, "--relevance-range", nargs=2, default=default("validation.relevance_range"), metavar=("LOW", "HIGH"),
        help=f"lowest and highest relevance a qrels line may hold (default {_words('validation.relevance_range')})",
    )  # fmt: skip
    _policy(pool, "--on-missing-passage", "pooled passages missing from the corpus or empty")
    _policy(pool, "--on-unknown-query", "run and qrels rows whose query is not in --queries")
    _written(
        pool, "--out", folder=True, required=True, help="directory for the pool tables (Parquet, and TSV summaries)"
    )
    pool.set_defaults(handler=commands.pool_command)

    shard = subparsers.add_parser(
        "pool-shard", help="one bucket of queries' pooled passages and query rows, for grading"
    )
    shard.add_argument("--passages", required=True, help=f"pool passages, {TABLE}")
    shard.add_argument("--queries", required=True, help=f"pool queries, {TABLE}")
    _shard_options(shard)
    _written(shard, "--out-passages", required=True, help="Parquet table to write")
    _written(shard, "--out-queries", required=True, help="Parquet table to write")
    shard.set_defaults(handler=commands.pool_shard_command)


def _shard_options(command) -> None:
    command.add_argument(
        "--shard", required=True,
        help="the bucket of query ids: shard-<b>, b from 0 to --shards - 1, zero-padded to the width of the "
        "last (shard-0 of 1, shard-0 to shard-9 of 10, shard-00 to shard-15 of 16)",
    )  # fmt: skip
    _setting(
        command, "--shards", "grading.shards",
        help=f"the number of hash buckets (default {default('grading.shards')})",
    )  # fmt: skip


def _segment_parser(subparsers) -> None:
    segment = subparsers.add_parser("segment", help="cut generated responses into passages (docs/methods.md §1)")
    segment.add_argument(
        "--responses", help='responses JSONL {"run_id", "query_id", "text"} (text or list of paragraphs)'
    )
    segment.add_argument(
        "--gold-articles", help='gold articles JSONL {"query_id", "text"}, segmented as the run _gold_'
    )
    segment.add_argument("--queries", required=True, help=QUERIES_HELP)
    _setting(
        segment, "--max-tokens", "segment.max_tokens",
        help=f"most tokens in a passage (words; a Chinese or Japanese character is one) (default {default('segment.max_tokens')})",
    )  # fmt: skip
    _policy(segment, "--on-unknown-query", "responses whose query is not in --queries")
    _written(segment, "--out", required=True, help="Parquet table to write")
    segment.set_defaults(handler=commands.segment_command)


def _questions_parser(subparsers) -> None:
    questions = subparsers.add_parser("questions", help="generate a question bank with an LLM (docs/methods.md §2)")
    questions.add_argument("--queries", required=True, help=QUERIES_HELP)
    _written(questions, "--out", required=True, help="bank file to write (JSONL, .gz for gzip); never overwritten")
    questions.add_argument(
        "--format",
        choices=QUESTION_FORMATS,
        default=default("questions.format"),
        help=f"output-format instruction (default {default('questions.format')})",
    )
    _setting(
        questions, "--attempts", "questions.attempts",
        help=f"tries per query on unparsable answers (default {default('questions.attempts')})",
    )  # fmt: skip
    questions.add_argument("--cache-dir", required=True, help="directory of cached raw LLM answers")
    add_llm_options(questions)
    questions.set_defaults(handler=commands.questions_command)
    _nuggets_parser(subparsers)

    shard = subparsers.add_parser("bank-shard", help="one bucket of queries' questions as a table for grading")
    shard.add_argument(
        "--bank",
        help="question bank: JSONL (optionally .gz) or TSV (none: an empty shard, for "
        "methods that pair passages with the query)",
    )
    shard.add_argument("--queries", required=True, help=QUERIES_HELP)
    _policy(
        shard, "--on-unknown-query", "bank entries whose query is not in --queries, or whose facet is no subtopic of it"
    )
    _shard_options(shard)
    _written(shard, "--out", required=True, help="Parquet table to write")
    shard.set_defaults(handler=commands.bank_shard_command)


def _nuggets_parser(subparsers) -> None:
    nuggets = subparsers.add_parser(
        "nuggets", help="create a nugget bank with an LLM from the pool, as AutoNuggetizer does (docs/banks.md)"
    )
    nuggets.add_argument("--pool", required=True, help="directory of the pool tables (`examflow pool --out`)")
    nuggets.add_argument(
        "--documents", choices=choices("questions.documents"), default=default("questions.documents"),
        help="the documents: pooled passages judged relevant, best first (judged), or every pooled passage "
        f"(pool) (default {default('questions.documents')})",
    )  # fmt: skip
    _written(nuggets, "--out", required=True, help="bank file to write (JSONL, .gz for gzip); never overwritten")
    _setting(
        nuggets, "--attempts", "questions.attempts",
        help=f"tries per call on unparsable answers (default {default('questions.attempts')})",
    )  # fmt: skip
    _number(
        nuggets, "--max-nuggets", minimum=1, default=30, help="most nuggets a query keeps (default 30, nuggetizer's)"
    )
    nuggets.add_argument("--cache-dir", required=True, help="directory of cached raw LLM answers")
    add_llm_options(nuggets)
    nuggets.set_defaults(handler=commands.nuggets_command)


def _grading_parsers(subparsers) -> None:
    grade = subparsers.add_parser(
        "grade", help="grade one shard's (passage, question) pairs with one method (docs/methods.md §3)"
    )
    grade.add_argument(
        "--method", required=True, help='the method as JSON: {"name", "kind", "backend": {"kind", ...options}, "mode"?}'
    )
    grade.add_argument("--passages", required=True, help=f"the shard's pooled passages, {TABLE}")
    grade.add_argument("--queries", required=True, help=f"the shard's query rows, {TABLE}")
    grade.add_argument(
        "--questions", help=f"the shard's questions, {TABLE} (none for a method that grades against the query)"
    )
    grade.add_argument("--shard", required=True, help="shard name, for the log")
    grade.add_argument("--cache-dir", required=True, help="directory of the grade and LLM caches")
    _setting(
        grade, "--flush-every", "grading.flush_every",
        help=f"pairs per cache flush (default {default('grading.flush_every')})",
    )  # fmt: skip
    _setting(
        grade, "--max-error-rate", "grading.max_error_rate",
        help="share of pairs (0-1) that may fail before the job fails, writing no table "
        f"(default {default('grading.max_error_rate')})",
    )  # fmt: skip
    _written(grade, "--out", required=True, help="Parquet table to write")
    _written(
        grade,
        "--progress",
        help="JSON file of the job's counts, rewritten as it grades; `examflow progress --results DIR` reads "
        "DIR/logs/progress/METHOD/SHARD.json (with DIR/logs/progress/run.json naming the jobs, as a run writes it)",
    )
    grade.set_defaults(handler=commands.grade_command)

    progress = subparsers.add_parser(
        "progress", help="one line on the grading jobs of the run that writes (or wrote) a results folder"
    )
    progress.add_argument("--results", required=True, help="the results folder (config results_dir)")
    # a status, not a step: `examflow: done` after it read as if the run it follows had ended
    progress.set_defaults(handler=commands.progress_command, says_done=False)

    merge = subparsers.add_parser("merge-grades", help="one grades table per method from its shards")
    merge.add_argument("--method", required=True, help="the method as JSON, as for `examflow grade`")
    _written(merge, "--out", required=True, help="Parquet table to write")
    merge.add_argument(
        "--passages",
        help="the pool's passages.parquet: its gold articles take no part in an embedding method's quantiles "
        "(required for such a method)",
    )
    merge.add_argument(
        "shards", nargs="*", help="the shards' grades tables (Parquet), each pair graded in one of them, once"
    )
    merge.set_defaults(handler=commands.merge_grades_command)


def _nrp_parser(subparsers) -> None:
    nrp = subparsers.add_parser(
        "nrp", help="NRP: rank generated answers among expert-judged documents (docs/methods.md §6)"
    )
    nrp.add_argument("--queries", required=True, help=QUERIES_HELP)
    nrp.add_argument(
        "--corpus", help="judged documents: TSV doc_id<TAB>text, JSONL or Parquet (not needed with `--ranker run` only)"
    )
    nrp.add_argument(
        "--qrels", required=True, nargs="+", action=Gathered, metavar="DIMENSION=QRELS",
        help="one TREC qrels file per quality dimension: relevance=rel.qrels readability=read.qrels",
    )  # fmt: skip
    nrp.add_argument("--answers", required=True, help='answers JSONL {"llm", "prompt", "sample", "query_id", "text"}')
    nrp.add_argument(
        "--ranker", required=True, action=Gathered, nargs="+", metavar="KIND|JSON",
        help=f'{", ".join(RANKERS)}, or a JSON object with options: {{"kind": "monot5", "model": "..."}}',
    )  # fmt: skip
    nrp.add_argument("--run", help="TREC run over the judged documents and answers (docid llm/prompt/sample)")
    nrp.add_argument(
        "--denominator", choices=choices("nrp.denominator"), default=default("nrp.denominator"),
        help="NRP = 1 - r/|D_q| (docs, the paper, default) or 1 - r/(|D_q|+1) (list, the published numbers)",
    )  # fmt: skip
    nrp.add_argument(
        "--weight",
        nargs="*",
        action=Gathered,
        metavar="DIMENSION=W",
        help="weights of the combined NRP, a weighted sum of the dimensions' NRP taken as given "
        "(default: equal weights that sum to 1)",
    )
    nrp.add_argument(
        "--fix-ranker", nargs="*", action=Gathered, metavar="DIMENSION=RANKER", help="use this ranker, skip selection"
    )
    nrp.add_argument(
        "--cannot-judge",
        nargs="*",
        action=Gathered,
        metavar="DIMENSION=LABEL",
        help="a qrels label meaning 'cannot judge': left out",
    )
    nrp.add_argument("--expert", help="an expert's ranking: JSON {query_id: [item, ...]} or TSV query_id, item, rank")
    nrp.add_argument(
        "--wilcoxon", nargs=4, action="append", default=[], metavar=("LLM_A", "PROMPT_A", "LLM_B", "PROMPT_B"),
        help="a Wilcoxon signed-rank test between two systems on paired per-answer NRP (repeatable)",
    )  # fmt: skip
    nrp.add_argument(
        "--cache-dir",
        default=default("cache_dir"),
        help=f"the ranker score cache's folder (default {default('cache_dir')})",
    )
    _number(
        nrp, "--relevance-range", nargs=2, default=default("validation.relevance_range"), metavar=("LOW", "HIGH"),
        help=f"lowest and highest label a dimension's qrels line may hold (default {_words('validation.relevance_range')})",
    )  # fmt: skip
    _policy(nrp, "--on-unknown-query", "qrels and answers whose query is not in --queries")
    _policy(nrp, "--on-missing-passage", "judged documents missing from --corpus")
    _written(nrp, "--out", folder=True, required=True, help="directory for the NRP tables (TSV)")
    nrp.set_defaults(handler=commands.nrp_command)


def _official_parser(subparsers) -> None:
    official = subparsers.add_parser(
        "official", help="the official leaderboard from the official qrels, when none is given: one measure's means"
    )
    official.add_argument("--pool", required=True, help="directory of the pool tables (rankings and judgments)")
    official.add_argument(
        "--runs",
        nargs="+",
        action=Gathered,
        required=True,
        help="the run files (TREC format) or quoted patterns to rank, already pooled (`examflow pool`)",
    )
    official.add_argument(
        "--measure",
        default=default("evaluation.official_measure"),
        help=f"a trec_eval measure, pytrec_eval's name (default {default('evaluation.official_measure')})",
    )
    _setting(
        official, "--relevance-level", "evaluation.min_relevant_judgment",
        help="the lowest judgment counted relevant by the measure, trec_eval -l "
        f"(default {default('evaluation.min_relevant_judgment')}; TREC DL: 2)",
    )  # fmt: skip
    official.add_argument(
        "--query-mode", choices=choices("evaluation.query_mode"), default=default("evaluation.query_mode"),
        help="a run's mean over the judged queries it ranks (present, default, trec_eval's) or over all, missing "
        "ones as 0 (trec_eval -c), as `examflow evaluate --query-mode`",
    )  # fmt: skip
    _written(official, "--out", required=True, help="TSV file to write: run_id, score, rank")
    official.set_defaults(handler=commands.official_command)


def _compare_judges_parser(subparsers) -> None:
    compare = subparsers.add_parser(
        "compare-judges", help="label sets (judges) compared by their leaderboards and labels (docs/judges.md)"
    )
    compare.add_argument(
        "--runs", nargs="+", action=Gathered, required=True,
        help="run files (TREC format), or quoted patterns such as 'runs/*'",
    )  # fmt: skip
    compare.add_argument("--official-qrels", required=True, help="the official judgments (TREC qrels)")
    compare.add_argument(
        "--official-measure", default=default("evaluation.official_measure"),
        help=f"the measure of the official leaderboard (default {default('evaluation.official_measure')})",
    )  # fmt: skip
    _number(
        compare, "--official-relevance-level", minimum=1,
        help="the lowest official judgment the official measure counts relevant, trec_eval -l, as `examflow "
        "official --relevance-level` (default 1; TREC DL: 2); the leaderboard is then named as ir-measures "
        "writes it (map: AP(rel=2))",
    )  # fmt: skip
    compare.add_argument(
        "--official", help="instead: the official leaderboard, JSON {run_id: rank} or a TSV of run_id and rank or score"
    )
    compare.add_argument(
        "--labels", nargs="+", action=Gathered, default=[], metavar="NAME=QRELS",
        help="the label sets to compare, each a qrels file",
    )  # fmt: skip
    compare.add_argument(
        "--leaderboard", nargs="+", action=Gathered, default=[], metavar="NAME=FILE",
        help="another judge's leaderboard, a TREC AutoJudge file (run, measure, topic, value; docs/judges.md): "
        "each of its measures compared as it is",
    )  # fmt: skip
    compare.add_argument(
        "--leaderboard-layout", choices=list(LEADERBOARD_LAYOUTS), default=default("judges.leaderboard_layout"),
        help="the layout of --leaderboard files: tot (run measure topic value, the track's upload file; "
        "default), ir_measures (run topic measure value) or jsonl (run_id, topic_id, measure, value a line)",
    )  # fmt: skip
    compare.add_argument(
        "--ensemble", nargs="+", action=Gathered, default=[], metavar="NAME=A,B,...",
        help="a label set by majority vote of label sets of --labels (UMBRELA's ensemble; ties to the lowest label)",
    )  # fmt: skip
    compare.add_argument(
        "--measure", nargs="+", action=Gathered, dest="measures",
        help="measures, trec_eval's names (ndcg_cut_10, map) or ir-measures' (nDCG@10, Compat(p=0.9)); "
        "may be repeated (default: the official measure)",
    )  # fmt: skip
    compare.add_argument(
        "--query-mode", choices=choices("evaluation.query_mode"), default=default("evaluation.query_mode"),
        help="a run's mean over the judged queries it ranks (present, default, as trec_eval and the official "
        "leaderboard) or over all judged queries, missing ones as 0 (trec_eval -c)",
    )  # fmt: skip
    compare.add_argument(
        "--per-page", action="store_true",
        help="qrels ids `query/facet` judge the page `query`: a document's highest label on the page counts",
    )  # fmt: skip
    _setting(
        compare,
        "--top-k",
        "judges.top_k",
        help=f"tau_at_k: the official top k runs (default {default('judges.top_k')})",
    )
    compare.add_argument(
        "--queries", help=f"{QUERIES_HELP}: with it, a qrels row (official or a label set's) of another query is "
        "refused or dropped (--on-unknown-query), as `examflow pool` reads the qrels",
    )  # fmt: skip
    _policy(compare, "--on-unknown-query", "qrels rows whose query is not in --queries", default=None)
    _policy(compare, "--on-unknown-run", "runs a given --official or a --leaderboard file ranks that --runs lacks")
    compare.add_argument(
        "--responses", help="generated responses (JSONL, as `examflow segment` reads them): their runs, which a given "
        "--official may rank as EXAM does, have no ranked passages for the qrels to judge; left out with a warning",
    )  # fmt: skip
    _setting(compare, "--rbo-p", "judges.rbo_p", help=f"rbo: persistence p (default {default('judges.rbo_p')})")
    _setting(compare, "--bootstrap", "evaluation.bootstrap",
             help=f"bootstrap replicates over queries (default {default('evaluation.bootstrap')}; 0: none)")  # fmt: skip
    _setting(compare, "--seed", "evaluation.seed", help=f"seed of the bootstrap (default {default('evaluation.seed')})")
    _written(
        compare, "--out", folder=True, required=True,
        help="directory for leaderboards.tsv, agreement.tsv, labels.tsv, confusion.tsv, votes.tsv, autojudge.eval.txt",
    )  # fmt: skip
    compare.set_defaults(handler=commands.compare_judges_command)


def _evaluate_parser(subparsers) -> None:
    evaluate = subparsers.add_parser("evaluate", help="EXAM-Cover, EXAM-Qrels measures and leaderboard correlation")
    evaluate.add_argument("--grades", nargs="+", action=Gathered, help=f"grades tables of one or more methods, {TABLE}")
    evaluate.add_argument("--pool", help="directory of the pool tables (`examflow pool --out`)")
    evaluate.add_argument("--workbench-graded", help="instead: the reference implementation's graded *.jsonl.gz")
    evaluate.add_argument(
        "--questions",
        nargs="*",
        action=Gathered,
        default=[],
        help=f"bank shards, {TABLE} each (default: the graded questions)",
    )
    evaluate.add_argument("--gold-articles", help='gold articles JSONL {"query_id", "text"}, for ROUGE-1')
    evaluate.add_argument(
        "--official", help="official leaderboard: JSON {run_id: rank}, or a TSV of run_id and rank or score"
    )
    _policy(evaluate, "--on-unknown-run", "official runs that are not evaluated")
    # each checked by examflow.config.check_taus: once, and a grade a passage can reach
    _number(
        evaluate, "--tau", nargs="+", action=Gathered, default=default("evaluation.tau"),
        help=f"grade thresholds (default {_words('evaluation.tau')})",
    )  # fmt: skip
    _setting(
        evaluate, "--k", "evaluation.k",
        help=f"passage budget: rank <= k, as written (default {default('evaluation.k')})",
    )  # fmt: skip
    evaluate.add_argument(
        "--measures",
        nargs="*",
        action=Gathered,
        default=list(DEFAULT_MEASURES),
        help="trec_eval measures, pytrec_eval names (P_20, map)",
    )
    evaluate.add_argument(
        "--query-mode", choices=choices("evaluation.query_mode"), default=default("evaluation.query_mode"),
        help="mean over the queries a run has (present, default) or all, missing ones as 0 (trec_eval -c)",
    )  # fmt: skip
    evaluate.add_argument(
        "--n-exam",
        choices=choices("evaluation.n_exam"),
        default=default("evaluation.n_exam"),
        help="n-EXAM normaliser: pool (default) or gold articles",
    )
    _setting(
        evaluate, "--min-relevant-judgment", "evaluation.min_relevant_judgment", dest="relevant_judgment",
        help="official judgment that counts as relevant for kappa (default 1, as for CAR; 2 for TREC DL)",
    )  # fmt: skip
    _setting(
        evaluate, "--bootstrap", "evaluation.bootstrap",
        help=f"bootstrap replicates over queries (default {default('evaluation.bootstrap')}; 0: none)",
    )  # fmt: skip
    _setting(
        evaluate,
        "--seed",
        "evaluation.seed",  # numpy's generators take no negative seed
        help=f"seed of the bootstrap (default {default('evaluation.seed')})",
    )
    _number(
        evaluate, "--diagnostics-tau", **THRESHOLD,
        help=f"threshold of the question diagnostics, one of --tau (default {DEFAULT_TAU}, or the highest --tau)",
    )  # fmt: skip
    evaluate.add_argument(
        "--baselines",
        help="folder of the earlier evaluations' baselines: writes impact_*.tsv against the last other bank",
    )
    evaluate.add_argument(
        "--grading-settings",
        default="",
        help="what the grades depend on besides the bank and the model named in them (the workflow gives a digest "
        "of the method's settings): impact lists passages' and systems' changes only against a baseline of the same",
    )
    _facts(evaluate, "correlation.tsv (official), kappa.tsv and agreement.tsv (judgments), the facets qrels (facets)")
    _written(evaluate, "--out", folder=True, required=True, help="directory for the evaluation tables (TSV) and qrels")
    evaluate.set_defaults(handler=commands.evaluate_command)


class _Bounds(TypedDict):
    """Bounds for `_number`, typed so that `**THRESHOLD` is known to fill only these two keywords."""

    minimum: int
    maximum: int


# The bounds of a grade threshold (`examflow.config.check_taus`): grades run 0 to TOP_GRADE.
THRESHOLD: _Bounds = {"minimum": 1, "maximum": TOP_GRADE}


def _words(key: str) -> str:
    """A list default as the command line takes it: `1 3 4 5`."""
    return " ".join(map(str, default(key)))


def _number(command, name: str, kind: str = "integer", minimum=None, maximum=None, **argument) -> None:
    """An integer (or `number`) option within these bounds."""
    option = Option(kind, minimum=minimum, maximum=maximum)
    command.add_argument(name, type=partial(_number_value, name, option), **argument)


def _setting(command, name: str, key: str, **argument) -> None:
    """The option of a config key: its type, bounds and (unless given) default are the schema's."""
    option = Option(**number(key))
    value = default(key)
    argument.setdefault("default", float(value) if option.type == "number" else value)
    command.add_argument(name, type=partial(_number_value, name, option), **argument)


def _number_value(name: str, option: Option, text: str) -> int | float:
    """The option's value from its text, or a Failure naming the option in one line (argparse's own
    error would print the whole usage first)."""
    try:
        value = int(text) if option.type == "integer" else float(text)
    except ValueError:
        raise ConfigError(name, f"expected {a(option.type)}, found {text!r}") from None
    if not math.isfinite(value):  # nan passes any bound; no key of the config takes nan or inf
        raise ConfigError(name, f"expected a finite number, found {text!r}")
    return option.check(name, value)


def _facts(command, files: str) -> None:
    command.add_argument(
        "--facts", nargs="*", action=Gathered, choices=FACT_NAMES, metavar="FACT",
        help=f"what the configuration gives ({', '.join(FACT_NAMES)}), which decides the files written: {files}; "
        "each is written even when the data leave it empty. Default: what the inputs hold",
    )  # fmt: skip


def add_llm_options(command: argparse.ArgumentParser) -> None:
    """One option per `examflow.registry.LLM_OPTIONS` entry, with its default and help."""
    for name, option in QUESTION_LLM_OPTIONS.items():
        default = None if option.default is REQUIRED else option.default
        flag = f"--{name.replace('_', '-')}"
        command.add_argument(
            flag,
            type=str if option.type == "string" else partial(_number_value, flag, option),
            default=default,
            choices=option.choices or None,
            help=f"{option.help} (default: {default})",
        )


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    # The openai client's HTTP library (httpx; httpx2 from openai 3 on) logs an INFO line per request.
    for chatty in ("httpx", "httpx2"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    # SIGTERM raised as Ctrl-C is, while a command runs: a process that calls main keeps its own handler after,
    # one that ignores SIGTERM ignores it still (as Python leaves an ignored SIGINT), and only the main thread
    # may set one
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_IGN, None) or threading.current_thread() is not threading.main_thread():
        return _run(argv)
    signal.signal(signal.SIGTERM, _terminated)
    try:
        return _run(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(argv: list[str] | None) -> int:
    """A command, its expected failures one line each, with its exit status."""
    try:
        args = parser().parse_args(argv)  # a bad number raises a Failure from there
        _refuse_shared_or_empty_outputs(args)
        args.handler(args)
        if getattr(args, "says_done", True):
            print(DONE, file=sys.stderr)  # not logged: a library's logging settings could drop it
    except Failure as error:
        print(f"{PRINTED}{error}", file=sys.stderr)
        return 2
    except OSError as error:
        if error.errno not in _DISK_ERRORS:
            raise
        print(f"{PRINTED}{error.filename or 'output'}: cannot write: {error.strerror}", file=sys.stderr)
        return 2
    except Terminated:
        print(TERMINATED_LINE, file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:  # Ctrl-C reaches Snakemake's jobs too: one line in their logs, not a traceback
        print(INTERRUPTED_LINE, file=sys.stderr)
        return 130
    return 0


def _terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the first wins: a second must not break the stop it began
    raise Terminated


# The options that name a file or folder a command writes, besides --out and --out-*, each read by it too: the
# cache it adds to, its progress file, the evaluations it compares with.
_WRITTEN = ("cache_dir", "progress", "baselines")
# Options whose values are words (names, measures, JSON, settings), never a path a command reads: a method
# named `umbrela` is no input because a folder of that name is there (a rerun's own --out, say).
_WORDS = frozenset({
    "command", "api_key_env", "base_url", "cannot_judge", "config_digest", "config_setting", "ensemble",
    "example_query", "fix_ranker", "grading_settings", "measure", "measures", "method", "method_tau",
    "official_measure", "query_mode", "ranker", "shard", "weight", "wilcoxon",
})  # fmt: skip
_POSITIONALS = {("merge-grades", "shards"): "the shards", ("bank-export", "bank"): "the bank"}  # no option names them


def _output(name: str) -> bool:
    """Whether an option names what its command writes alone (--out, --out-*)."""
    return name == "out" or name.startswith("out_")


def _refuse_shared_or_empty_outputs(args: argparse.Namespace) -> None:
    """An empty path names the current folder: a step would write its tables among the user's files. Two
    outputs of one path: the second would replace the first. An output that is an input too: `grade --out`
    on its `--questions` replaced the bank shard by its grades, exit 0 (a stranger by hand); so did an input
    in an output folder under the name of a file the command writes there (`_owned_in`)."""
    seen: dict[str, str] = {}
    for name, value in vars(args).items():
        if not ((_output(name) or name in _WRITTEN) and isinstance(value, str)):
            continue
        option = f"--{name.replace('_', '-')}"
        if not value.strip():
            raise Failure(f"{option}: an empty path")
        if (same := os.path.abspath(value)) in seen:
            raise Failure(f"{option} {value}: also {seen[same]}'s path: each output needs its own")
        seen[same] = option
    # by their real paths: a link to the input is the input
    outputs = {os.path.realpath(value): name for name, value in vars(args).items() if _output(name) and value}
    for option, text in _read_paths(args):
        if (output := outputs.get(os.path.realpath(text))) is not None:
            written = f"--{output.replace('_', '-')} {getattr(args, output)}"
            raise Failure(f"{written}: also the path of {option}, which it reads: write elsewhere")
        if args.command in FOLDERS and (relative := _owned_in(args.command, args.out, text)):
            raise Failure(f"--out {args.out}: {args.command} writes its {relative} there, and {option} reads "
                          f"{text}: write elsewhere")  # fmt: skip


def _owned_in(command: str, folder: str, text: str) -> str | None:
    """Where, under the command's output `folder`, it would write or remove the input `text`: the file a
    link leads to, or the link itself, which writing a table replaces (a rerun would read the table)."""
    link = os.path.join(os.path.realpath(os.path.dirname(text) or "."), os.path.basename(text))
    for place in (os.path.realpath(text), link):
        if owned(command, relative := os.path.relpath(place, os.path.realpath(folder))):
            return relative
    return None


def _read_paths(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """Every value of the other options that names a file or folder there is (a text, or texts, or the path
    of a NAME=PATH), so one a command may read, with its option (`the shards`: merge-grades' list). The
    options of words (`_WORDS`) name none, whatever lies there: `--method umbrela --out umbrela` is not
    refused for it."""
    for name, value in vars(args).items():
        if _output(name) or name in _WRITTEN or name in _WORDS or not isinstance(value, str | list):
            continue
        option = _POSITIONALS.get((args.command, name), f"--{name.replace('_', '-')}")
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str) or not text.strip():
                continue
            if os.path.exists(text):
                yield option, text
            elif os.path.exists(named := text.partition("=")[2]):  # NAME=PATH: `--labels umbrela=x.qrels`
                yield option, named


def program() -> int:
    """The `examflow` program: `main` in a process of its own, which ends when it returns."""
    code = main()
    # At exit the interpreter's last garbage collection walks every object that torch,
    # transformers and sklearn made (1.5 s of a grading job on two cores). Everything examflow
    # writes is closed by now, so they are left to the end of the process.
    gc.freeze()
    return code


# Writing failed for a reason outside examflow: a full disk, a read-only or forbidden folder.
_DISK_ERRORS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EPERM}
