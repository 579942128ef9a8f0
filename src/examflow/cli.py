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
from examflow.io import read_passages, read_qrels, read_queries, read_responses, read_runs, read_table, write_tables
from examflow.io.qrels import JUDGMENT_COLUMNS
from examflow.io.responses import gold_responses, read_gold_articles
from examflow.io.runs import RESERVED_RUNS, RUN_COLUMNS
from examflow.pool import build_pool
from examflow.questions.bank import read_bank, write_bank
from examflow.questions.diff import diff_banks, format_diff
from examflow.questions.generate import FORMATS, generate_bank
from examflow.questions.shards import pool_shard, shard_table
from examflow.registry import QUESTION_LLM_OPTIONS, REQUIRED, check_method, check_options, check_ranker
from examflow.segment import segment_responses

log = logging.getLogger("examflow")
POLICIES = ("error", "warn")
TSV_TABLES = ("summary", "flagged")  # written for people to read


def pool_command(args: argparse.Namespace) -> None:
    queries = read_queries(args.queries)
    unknown = Problems(args.on_unknown_query)
    query_ids = set(queries["query_id"])
    runs = read_runs(args.runs, query_ids, unknown) if args.runs else pd.DataFrame(columns=RUN_COLUMNS)
    judgments = (
        read_qrels(args.qrels, queries, unknown, tuple(args.relevance_range))
        if args.qrels
        else pd.DataFrame(columns=JUDGMENT_COLUMNS)
    )
    segments = read_table(args.segments) if args.segments else None
    if runs.empty and segments is None:
        raise InputError("config: inputs", "nothing to evaluate: give run files, generated responses, or both")
    missing = Problems(args.on_missing_passage)
    tables = build_pool(queries, runs, segments, judgments, args.corpus, args.depth, missing)
    unknown.summarise()
    missing.summarise()
    out = Path(args.out)
    write_tables(
        {out / (f"{name}.tsv" if name in TSV_TABLES else f"{name}.parquet"): table for name, table in tables.items()}
    )
    flagged = tables["flagged"]
    if len(flagged):
        first = flagged.iloc[0]
        log.warning(
            "%d pooled passage(s) look like prompt injection, listed in %s (first: %s in %s: %r); graded as usual",
            len(flagged), out / "flagged.tsv", first["passage_id"], first["query_id"], first["phrase"],
        )  # fmt: skip
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
    from examflow.llm import LLMClient, LLMSettings

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
    write_tables({args.out: shard_table(read_bank(args.bank), args.shard, args.shards)})


def pool_shard_command(args: argparse.Namespace) -> None:
    passages, queries = pool_shard(read_table(args.passages), read_table(args.queries), args.shard, args.shards)
    write_tables({args.out_passages: passages, args.out_queries: queries})


def bank_diff_command(args: argparse.Namespace) -> None:
    sys.stdout.write(format_diff(diff_banks(read_bank(args.old), read_bank(args.new))))


def grade_command(args: argparse.Namespace) -> None:
    from examflow.grading.grades import check_failures, empty_grades
    from examflow.grading.merge import write_grades
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
    grader = ShardGrader(method, args.cache_dir, args.flush_every)
    grades = grader.grade(pairs)
    log.info("sent %d prompts to the model", grader.sent)
    check_failures(grades, method, args.shard, args.max_error_rate)
    write_grades(grades, {"model": grader.backend.signature}, args.out)


def merge_grades_command(args: argparse.Namespace) -> None:
    from examflow.grading.merge import merge_grades, read_grades_metadata, write_grades

    grades, metadata = merge_grades([read_table(path) for path in args.shards], json.loads(args.method))
    # The back ends' signatures (model, revision or weights digest, decoding), once each.
    models = {json.dumps(m, sort_keys=True) for path in args.shards if (m := read_grades_metadata(path).get("model"))}
    metadata["models"] = [json.loads(m) for m in sorted(models)]
    write_grades(grades, metadata, args.out)
    log.info("merged %d grades (%d errors) into %s", metadata["pairs"], metadata["errors"], args.out)


def evaluate_command(args: argparse.Namespace) -> None:
    from examflow.evaluation.impact import BaselineStore, bank_digest
    from examflow.evaluation.leaderboard import Settings, evaluate
    from examflow.evaluation.qrels import unknown_measures as check_measures
    from examflow.io.leaderboard import match_runs, read_leaderboard

    inputs = _evaluation_inputs(args)
    settings = Settings(
        args.tau, args.k, args.measures, args.query_mode, args.n_exam, args.relevant_judgment, args.bootstrap, args.seed,
        args.diagnostics_tau if args.diagnostics_tau is not None else (4 if 4 in args.tau else max(args.tau)),
    )  # fmt: skip
    unknown = check_measures(args.measures)
    if unknown:
        name, why = next(iter(unknown.items()))
        raise Failure(f"--measures: {name!r}: {why}")
    official = read_leaderboard(args.official) if args.official else None
    if official:
        unknown_runs = Problems(args.on_unknown_run)
        evaluated = set(inputs.rankings["run_id"]) - set(RESERVED_RUNS)
        for note in match_runs(args.official, official, evaluated, unknown_runs):
            log.warning("%s", note)
        unknown_runs.summarise()
    outputs = evaluate(inputs, settings, official)
    baselines = outputs.pop("baselines")
    stores = {method: BaselineStore(Path(args.baselines) / method) for method in baselines} if args.baselines else {}
    if stores:
        outputs |= edit_impact(baselines, stores)
    write_tables({Path(args.out) / name: table for name, table in outputs.items()})
    for method, store in stores.items():  # only once the outputs are written
        store.save(bank_digest(baselines[method].questions), baselines[method])
    leaderboard = outputs["leaderboard.tsv"]
    log.info(
        "%d methods, %d runs, %d measures, tau %s -> %s",
        leaderboard["method"].nunique(),
        leaderboard["run_id"].nunique(),
        leaderboard["measure"].nunique(),
        args.tau,
        args.out,
    )


def nrp_command(args: argparse.Namespace) -> None:
    from examflow.nrp.evaluate import NRPInputs, NRPSettings, nrp_tables
    from examflow.nrp.inputs import answer_name, read_answers, read_expert, read_judgments

    qrels = assignments(args.qrels, "--qrels", str)
    rankers = [check_ranker(f"--ranker[{i}]", ranker_spec(text, args.run)) for i, text in enumerate(args.ranker)]
    names = [r["name"] for r in rankers]
    if len(set(names)) < len(names):
        raise Failure(f"--ranker: two rankers are named alike ({', '.join(names)}); give them names")
    weights = assignments(args.weight, "--weight", float) or {d: 1 / len(qrels) for d in qrels}
    fixed = assignments(args.fix_ranker, "--fix-ranker", str)
    for option, mapping in (("--weight", weights), ("--fix-ranker", fixed)):
        if set(mapping) - set(qrels):
            raise Failure(f"{option}: {sorted(set(mapping) - set(qrels))[0]!r} is no dimension of --qrels")
    if set(fixed.values()) - set(names):
        raise Failure(f"--fix-ranker: {sorted(set(fixed.values()) - set(names))[0]!r} is none of the --ranker names")
    cannot_judge: dict[str, set[int]] = {}
    for dimension, label in assignments(args.cannot_judge, "--cannot-judge", int, many=True):
        cannot_judge.setdefault(dimension, set()).add(label)

    queries = read_queries(args.queries)
    unknown = Problems(args.on_unknown_query)
    judgments = read_judgments(qrels, queries, unknown, cannot_judge)
    wanted = set().union(*(set(j["passage_id"]) for j in judgments.values()))
    documents = read_passages(args.corpus, wanted, Problems(args.on_missing_passage))
    judgments = {d: j[j["passage_id"].isin(documents)] for d, j in judgments.items()}
    for dimension, judged in judgments.items():
        if judged.empty:
            raise InputError(qrels[dimension], f"no judged document with a text is left for dimension {dimension!r}")
    answers = read_answers(args.answers, set(queries["query_id"]), unknown)
    unknown.summarise()
    unjudged = sorted(set(answers["query_id"]) - set(pd.concat(judgments.values())["query_id"]))
    if unjudged:
        log.warning(
            "%d queries have answers but no judged document, and no NRP: %s", len(unjudged), ", ".join(unjudged[:5])
        )
    known = {q: set(j) for q, j in pd.concat(judgments.values()).groupby("query_id")["passage_id"]}
    for a in answers.itertuples(index=False):
        known.setdefault(a.query_id, set()).add(answer_name(a.llm, a.prompt, a.sample))
    expert = read_expert(args.expert, known) if args.expert else None
    texts = dict(zip(queries["query_id"], queries["query_text"]))
    inputs = NRPInputs(texts, documents, judgments, answers, expert)
    settings = NRPSettings(rankers, weights, fixed, args.denominator, [tuple(w) for w in args.wilcoxon], args.cache_dir)
    tables = nrp_tables(inputs, settings)
    write_tables({Path(args.out) / name: table for name, table in tables.items()})
    empty = tables["per_answer.tsv"].drop_duplicates(["llm", "prompt", "sample", "query_id"])["answer"].value_counts()
    log.info("NRP of %d answers (%d empty, %d missing) to %d queries -> %s", len(answers), empty.get("empty", 0),
             empty.get("missing", 0), len(known), args.out)  # fmt: skip


def ranker_spec(text: str, run: str | None) -> dict:
    """`--ranker bm25`, or a JSON object `{"kind": "monot5", "model": ...}`; the run ranker reads --run."""
    spec = json_argument(text, "--ranker") if text.lstrip().startswith("{") else {"kind": text}
    if spec.get("kind") == "run" and "path" not in spec:
        if not run:
            raise Failure("--ranker run needs --run RUNFILE")
        spec["path"] = run
    return spec


def assignments(values: list[str] | None, option: str, kind, many: bool = False):
    """`NAME=VALUE` options as a dict (or, with `many`, as a list of pairs)."""
    pairs = []
    for text in values or []:
        name, equals, value = text.partition("=")
        try:
            converted = kind(value) if name and equals else None
        except ValueError:
            converted = None
        if converted is None:
            raise Failure(f"{option} {text!r}: expected NAME=VALUE with a {kind.__name__} value")
        pairs.append((name, converted))
    return pairs if many else dict(pairs)


def plan_command(args: argparse.Namespace) -> None:
    from examflow.plan import format_plan, plan_method, plan_table

    pool = Path(args.pool)
    passages, queries = read_table(pool / "passages.parquet"), read_table(pool / "queries.parquet")
    questions = (
        pd.concat([read_table(path) for path in args.questions])
        if args.questions
        else pd.DataFrame(columns=["query_id", "kind"])
    )
    methods = [check_method(f"--method[{i}]", json_argument(text, "--method")) for i, text in enumerate(args.method)]
    plans = [plan_method(method, passages, questions, queries, args.cache_dir) for method in methods]
    sys.stdout.write(format_plan(plans))
    if args.out:
        write_tables({args.out: plan_table(plans)})


def report_command(args: argparse.Namespace) -> None:
    """The figures and pages of one method's evaluation, or of NRP (`--nrp`)."""
    from examflow.report import figures, pages

    out = Path(args.out)
    if args.nrp:
        nrp = Path(args.nrp)
        per_system, selection = (_tsv(nrp / f"{name}.tsv") for name in ("per_system", "ranker_selection"))
        agreement = _tsv(nrp / "expert_agreement.tsv") if (nrp / "expert_agreement.tsv").exists() else None
        write_tables(
            {
                out / "nrp.png": figures.nrp_figure(per_system),
                out / "nrp.html": pages.nrp_page(per_system, selection, agreement),
            }
        )
        return
    if not (args.eval and args.grades and args.method):
        raise Failure("examflow report: give --method, --eval and --grades, or --nrp")
    from examflow.io.leaderboard import read_leaderboard

    folder, method, tau = Path(args.eval), args.method, args.tau
    board = _tsv(folder / "leaderboard.tsv", tau=float)
    official = read_leaderboard(args.official) if args.official else None
    grades = read_table(args.grades)
    files = {
        out / "leaderboard.png": figures.leaderboard_figure(board, official, tau),
        out / "leaderboard.html": pages.leaderboard_page(board, official, tau, method),
        out / "grades.png": figures.grade_distribution(grades),
        out / "questions.html": pages.questions_page(
            _tsv(folder / "questions.tsv"), _tsv(folder / "uncovered.tsv"), tau, method
        ),
        out / "impact.html": pages.impact_page(
            *(_tsv(folder / f"impact_{n}.tsv") for n in ("questions", "passages", "systems")), method
        ),
    }
    if official:
        correlation = _tsv(folder / "correlation.tsv", tau=float)
        files[out / "scatter.png"] = figures.scatter_figure(board, correlation, official, tau)
        files[out / "correlation.html"] = pages.correlation_page(correlation, method)
    if (folder / "agreement.tsv").exists():
        files[out / "kappa.png"] = figures.kappa_heatmap(_tsv(folder / "agreement.tsv"), _tsv(folder / "kappa.tsv"))
    if args.example_query:
        passages = read_table(Path(args.pool) / "passages.parquet")
        questions = pd.concat([read_table(path) for path in args.questions])
        mine = passages[(passages["query_id"] == args.example_query) & (passages["origin"] != "gold")]
        files[out / "example.html"] = pages.example_page(args.example_query, mine, grades, questions, method)
    write_tables(files)


def _tsv(path: Path, **types) -> pd.DataFrame:
    """A table examflow wrote (ids stay strings)."""
    if not path.is_file():
        raise InputError(path, "table not found (was the step that writes it run?)")
    return pd.read_csv(
        path, sep="\t", dtype={"run_id": str, "query_id": str, "passage_id": str, "question_id": str, **types}
    )


def summary_command(args: argparse.Namespace) -> None:
    from examflow.grading.merge import read_grades_metadata
    from examflow.summary import provenance, run_summary

    graded = {meta["method"]["name"]: meta for meta in map(read_grades_metadata, args.grades)}
    flagged = pd.read_csv(args.flagged, sep="\t", dtype=str, keep_default_na=False) if args.flagged else pd.DataFrame()
    boards, correlations = {}, {}
    for folder in map(Path, args.eval):
        board = _tsv(folder / "leaderboard.tsv", tau=float)
        for method in board["method"].unique():
            boards[method] = board[board["method"] == method]
        if (folder / "correlation.tsv").exists():
            correlation = _tsv(folder / "correlation.tsv", tau=float)
            correlations |= {method: group for method, group in correlation.groupby("method")}
    nrp = _tsv(Path(args.nrp)) if args.nrp else None
    document = run_summary(graded, flagged, args.results, boards, correlations, args.tau, nrp)
    record = json.dumps(provenance(graded, args.config_digest), indent=2, sort_keys=True) + "\n"
    files = {args.out_summary: document.markdown(), args.out_provenance: record}
    if args.out_rst:
        files[args.out_rst] = document.rst()
    write_tables(files)


def edit_impact(baselines: dict, stores: dict) -> dict[str, pd.DataFrame]:
    """impact_*.tsv: each method against its latest baseline of another bank (empty on a first run)."""
    from examflow.evaluation.impact import IMPACT_FILES, bank_digest, impact_tables

    parts: dict[str, list] = {name: [] for name in IMPACT_FILES}
    for method, baseline in baselines.items():
        previous = stores[method].previous(bank_digest(baseline.questions))
        if previous:
            log.info(
                "method %s: bank %s compared with the earlier bank %s",
                method,
                bank_digest(baseline.questions),
                previous[0],
            )
        for name, table in impact_tables(previous[1] if previous else None, baseline).items():
            parts[name].append(table.assign(method=method))
    return {IMPACT_FILES[name]: pd.concat(tables, ignore_index=True) for name, tables in parts.items()}


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


QUERIES_HELP = "queries: TSV query_id<TAB>text, JSON {query_id: text}, JSONL with subtopics, or irds:ID"
TABLE = "a Parquet table written by examflow"


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="examflow", description=__doc__)
    main.add_argument("--version", action="version", version=f"examflow {__version__}")
    commands = main.add_subparsers(dest="command", required=True)
    _pool_parser(commands)
    _segment_parser(commands)
    _questions_parser(commands)
    _grading_parsers(commands)
    _evaluate_parser(commands)
    _nrp_parser(commands)
    plan = commands.add_parser("plan", help="before grading: pairs per method, how many are cached, and the cost")
    plan.add_argument("--pool", required=True, help="directory of the pool tables (`examflow pool --out`)")
    plan.add_argument("--questions", nargs="*", default=[], help=f"bank shards, {TABLE} each")
    plan.add_argument(
        "--method", nargs="+", required=True, help="grading methods, each as JSON (as for `examflow grade`)"
    )
    plan.add_argument("--cache-dir", default="results/cache", help="directory of the grade cache")
    plan.add_argument("--out", help="TSV file to write the plan to (it is printed in any case)")
    plan.set_defaults(handler=plan_command)
    report = commands.add_parser("report", help="the figures and HTML pages of an evaluation, or of NRP")
    report.add_argument("--method", help="the method's name")
    report.add_argument("--eval", help="the method's evaluation folder (`examflow evaluate --out`)")
    report.add_argument("--grades", help=f"the method's grades, {TABLE}")
    report.add_argument("--tau", type=float, default=4, help="the threshold the figures show (default 4)")
    report.add_argument("--official", help="official leaderboard: JSON object {run_id: rank}")
    report.add_argument("--example-query", help="the topic of the worked example page (needs --pool and --questions)")
    report.add_argument("--pool", help="directory of the pool tables")
    report.add_argument("--questions", nargs="*", default=[], help=f"bank shards, {TABLE} each")
    report.add_argument("--nrp", help="instead: the NRP tables' folder (`examflow nrp --out`)")
    report.add_argument("--out", required=True, help="directory for the figures (PNG) and pages (HTML)")
    report.set_defaults(handler=report_command)
    summary = commands.add_parser("summary", help="the run's summary (summary.md) and provenance record (JSON)")
    summary.add_argument("--grades", nargs="*", default=[], help=f"every method's grades, {TABLE}")
    summary.add_argument("--flagged", help="the pool's flagged.tsv (passages that look like prompt injection)")
    summary.add_argument("--config-digest", required=True, help="sha256 of the checked configuration")
    summary.add_argument("--results", required=True, help="the results folder, named in the summary")
    summary.add_argument(
        "--eval", nargs="*", default=[], help="the methods' evaluation folders (`examflow evaluate --out`)"
    )
    summary.add_argument("--nrp", help="NRP's per_system.tsv")
    summary.add_argument("--tau", type=float, default=4, help="the threshold the summary reports (default 4)")
    summary.add_argument("--out-summary", required=True, help="Markdown file to write")
    summary.add_argument("--out-rst", help="the same summary as reStructuredText (the report's first page)")
    summary.add_argument("--out-provenance", required=True, help="JSON file to write")
    summary.set_defaults(handler=summary_command)
    diff = commands.add_parser("bank-diff", help="questions added, removed and reworded between two banks")
    diff.add_argument("old", help="the bank before the edit (JSONL, optionally .gz, or TSV)")
    diff.add_argument("new", help="the bank after the edit (same formats)")
    diff.set_defaults(handler=bank_diff_command)
    return main


def _policy(command, name: str, what: str) -> None:
    command.add_argument(
        name, choices=POLICIES, default="error", help=f"{what}: error (default) stops, warn drops and counts them"
    )


def _pool_parser(commands) -> None:
    pool = commands.add_parser("pool", help="pool judged and top-k passages of every run (SPEC §1)")
    pool.add_argument("--queries", required=True, help=QUERIES_HELP)
    pool.add_argument("--runs", nargs="*", default=[], help="TREC run files: query_id Q0 doc_id rank score run_tag")
    pool.add_argument("--segments", help="segmented responses, the Parquet table of `examflow segment`")
    pool.add_argument("--qrels", help="TREC qrels: query_id 0 doc_id relevance (query_id/facet_id for a subtopic)")
    pool.add_argument("--corpus", help="passages: TSV doc_id<TAB>text, JSONL (optionally .gz), Parquet, or irds:ID")
    pool.add_argument("--depth", type=int, default=20, help="top-k of every run to pool, rank as written (default 20)")
    pool.add_argument(
        "--relevance-range", type=int, nargs=2, default=[-2, 4], metavar=("LOW", "HIGH"),
        help="lowest and highest relevance a qrels line may hold (default -2 4)",
    )  # fmt: skip
    _policy(pool, "--on-missing-passage", "pooled passages missing from the corpus or empty")
    _policy(pool, "--on-unknown-query", "run and qrels rows whose query is not in --queries")
    pool.add_argument("--out", required=True, help="directory for the pool tables (Parquet, and TSV summaries)")
    pool.set_defaults(handler=pool_command)

    shard = commands.add_parser("pool-shard", help="one query's pooled passages, for grading")
    shard.add_argument("--passages", required=True, help=f"pool passages, {TABLE}")
    shard.add_argument("--queries", required=True, help=f"pool queries, {TABLE}")
    shard.add_argument("--shard", required=True, help="shard name: shard-NN, a hash bucket of query ids")
    shard.add_argument("--shards", type=int, default=16, help="the number of hash buckets (default 16)")
    shard.add_argument("--out-passages", required=True, help="Parquet table to write")
    shard.add_argument("--out-queries", required=True, help="Parquet table to write")
    shard.set_defaults(handler=pool_shard_command)


def _segment_parser(commands) -> None:
    segment = commands.add_parser("segment", help="cut generated responses into passages (SPEC §1)")
    segment.add_argument(
        "--responses", help='responses JSONL {"run_id", "query_id", "text"} (text or list of paragraphs)'
    )
    segment.add_argument(
        "--gold-articles", help='gold articles JSONL {"query_id", "text"}, segmented as the run _gold_'
    )
    segment.add_argument("--queries", required=True, help=QUERIES_HELP)
    segment.add_argument("--max-tokens", type=int, default=400, help="most words in a passage (default 400)")
    _policy(segment, "--on-unknown-query", "responses whose query is not in --queries")
    segment.add_argument("--out", required=True, help="Parquet table to write")
    segment.set_defaults(handler=segment_command)


def _questions_parser(commands) -> None:
    questions = commands.add_parser("questions", help="generate a question bank with an LLM (SPEC §2)")
    questions.add_argument("--queries", required=True, help=QUERIES_HELP)
    questions.add_argument("--out", required=True, help="bank file to write (JSONL, .gz for gzip); never overwritten")
    questions.add_argument("--format", choices=FORMATS, default="json", help="output-format instruction (default json)")
    questions.add_argument("--attempts", type=int, default=3, help="tries per query on unparsable answers (default 3)")
    questions.add_argument("--cache-dir", required=True, help="directory of cached raw LLM answers")
    add_llm_options(questions)
    questions.set_defaults(handler=questions_command)

    shard = commands.add_parser("bank-shard", help="one query's questions as a table for grading")
    shard.add_argument("--bank", required=True, help="question bank: JSONL (optionally .gz) or TSV")
    shard.add_argument("--shard", required=True, help="shard name: shard-NN, a hash bucket of query ids")
    shard.add_argument("--shards", type=int, default=16, help="the number of hash buckets (default 16)")
    shard.add_argument("--out", required=True, help="Parquet table to write")
    shard.set_defaults(handler=bank_shard_command)


def _grading_parsers(commands) -> None:
    grade = commands.add_parser("grade", help="grade one shard's (passage, question) pairs with one method (SPEC §3)")
    grade.add_argument(
        "--method", required=True, help='the method as JSON: {"name", "kind", "backend": {"kind", ...options}, "mode"?}'
    )
    grade.add_argument("--passages", required=True, help=f"the shard's pooled passages, {TABLE}")
    grade.add_argument("--queries", required=True, help=f"the shard's query rows, {TABLE}")
    grade.add_argument("--questions", required=True, help=f"the shard's questions, {TABLE}")
    grade.add_argument("--shard", required=True, help="shard name, for the log")
    grade.add_argument("--cache-dir", required=True, help="directory of the grade and LLM caches")
    grade.add_argument("--flush-every", type=int, default=64, help="pairs per cache flush (default 64)")
    grade.add_argument(
        "--max-error-rate", type=float, default=0.0,
        help="share of pairs (0-1) that may fail before the job fails, writing no table (default 0)",
    )  # fmt: skip
    grade.add_argument("--out", required=True, help="Parquet table to write")
    grade.set_defaults(handler=grade_command)

    merge = commands.add_parser("merge-grades", help="one grades table per method from its shards")
    merge.add_argument("--method", required=True, help="the method as JSON, as for `examflow grade`")
    merge.add_argument("--out", required=True, help="Parquet table to write")
    merge.add_argument("shards", nargs="*", help="the shards' grades tables (Parquet)")
    merge.set_defaults(handler=merge_grades_command)


def _nrp_parser(commands) -> None:
    nrp = commands.add_parser("nrp", help="NRP: rank generated answers among expert-judged documents (SPEC §6)")
    nrp.add_argument("--queries", required=True, help=QUERIES_HELP)
    nrp.add_argument("--corpus", required=True, help="judged documents: TSV doc_id<TAB>text, JSONL or Parquet")
    nrp.add_argument(
        "--qrels", required=True, nargs="+", metavar="DIMENSION=QRELS",
        help="one TREC qrels file per quality dimension: relevance=rel.qrels readability=read.qrels",
    )  # fmt: skip
    nrp.add_argument("--answers", required=True, help='answers JSONL {"llm", "prompt", "sample", "query_id", "text"}')
    nrp.add_argument(
        "--ranker", required=True, action="extend", nargs="+", metavar="KIND|JSON",
        help='monot5, embedding, bm25 or run, or a JSON object with options: {"kind": "monot5", "model": "..."}',
    )  # fmt: skip
    nrp.add_argument("--run", help="TREC run over the judged documents and answers (docid llm/prompt/sample)")
    nrp.add_argument(
        "--denominator", choices=["docs", "list"], default="docs",
        help="NRP = 1 - r/|D_q| (docs, the paper, default) or 1 - r/(|D_q|+1) (list, the published numbers)",
    )  # fmt: skip
    nrp.add_argument("--weight", nargs="*", metavar="DIMENSION=W", help="weights of the combined NRP (default equal)")
    nrp.add_argument("--fix-ranker", nargs="*", metavar="DIMENSION=RANKER", help="use this ranker, skip selection")
    nrp.add_argument(
        "--cannot-judge", nargs="*", metavar="DIMENSION=LABEL", help="a qrels label meaning 'cannot judge': left out"
    )
    nrp.add_argument("--expert", help="an expert's ranking: JSON {query_id: [item, ...]} or TSV query_id, item, rank")
    nrp.add_argument(
        "--wilcoxon", nargs=4, action="append", default=[], metavar=("LLM_A", "PROMPT_A", "LLM_B", "PROMPT_B"),
        help="a Wilcoxon signed-rank test between two systems on paired per-answer NRP (repeatable)",
    )  # fmt: skip
    nrp.add_argument("--cache-dir", default="results/cache", help="directory of the ranker score cache")
    _policy(nrp, "--on-unknown-query", "qrels and answers whose query is not in --queries")
    _policy(nrp, "--on-missing-passage", "judged documents missing from --corpus")
    nrp.add_argument("--out", required=True, help="directory for the NRP tables (TSV)")
    nrp.set_defaults(handler=nrp_command)


def _evaluate_parser(commands) -> None:
    evaluate = commands.add_parser("evaluate", help="EXAM-Cover, EXAM-Qrels measures and leaderboard correlation")
    evaluate.add_argument("--grades", nargs="+", help=f"grades tables of one or more methods, {TABLE}")
    evaluate.add_argument("--pool", help="directory of the pool tables (`examflow pool --out`)")
    evaluate.add_argument("--workbench-graded", help="instead: the reference implementation's graded *.jsonl.gz")
    evaluate.add_argument(
        "--questions", nargs="*", default=[], help=f"bank shards, {TABLE} each (default: the graded questions)"
    )
    evaluate.add_argument("--gold-articles", help='gold articles JSONL {"query_id", "text"}, for ROUGE-1')
    evaluate.add_argument("--official", help="official leaderboard: JSON object {run_id: rank}, ties averaged")
    _policy(evaluate, "--on-unknown-run", "official runs that are not evaluated")
    evaluate.add_argument("--tau", type=int, nargs="+", default=[1, 3, 4, 5], help="grade thresholds (default 1 3 4 5)")
    evaluate.add_argument("--k", type=int, default=20, help="passage budget: rank <= k, as written (default 20)")
    evaluate.add_argument(
        "--measures",
        nargs="*",
        default=list(DEFAULT_MEASURES),
        help="trec_eval measures, pytrec_eval names (P_20, map)",
    )
    evaluate.add_argument(
        "--query-mode", choices=["present", "all"], default="present",
        help="mean over the queries a run has (present, default) or all, missing ones as 0 (trec_eval -c)",
    )  # fmt: skip
    evaluate.add_argument(
        "--n-exam", choices=["pool", "gold"], default="pool", help="n-EXAM normaliser: pool (default) or gold articles"
    )
    evaluate.add_argument(
        "--min-relevant-judgment", dest="relevant_judgment", type=int, default=1,
        help="official judgment that counts as relevant for kappa (default 1, as for CAR; 2 for TREC DL)",
    )  # fmt: skip
    evaluate.add_argument(
        "--bootstrap", type=int, default=1000, help="bootstrap replicates over queries (default 1000; 0: none)"
    )
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    evaluate.add_argument(
        "--diagnostics-tau", type=float, help="threshold of the question diagnostics (default 4, or the highest --tau)"
    )
    evaluate.add_argument(
        "--baselines",
        help="folder of the earlier evaluations' baselines: writes impact_*.tsv against the last other bank",
    )
    evaluate.add_argument("--out", required=True, help="directory for the evaluation tables (TSV) and qrels")
    evaluate.set_defaults(handler=evaluate_command)


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
