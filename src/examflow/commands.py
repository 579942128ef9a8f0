"""What each `examflow` subcommand does. Every command imports what it needs when it runs, so
that a job pays only for its own libraries (pandas, pytrec_eval, the OpenAI client, torch)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from examflow.errors import ConfigError, Failure, InputError, Problems, a, counted, listed, repeated
from examflow.options import check_options
from examflow.outputs import POOL
from examflow.registry import KINDS, QUESTION_LLM_OPTIONS, RANKERS, check_ranker

if TYPE_CHECKING:
    import pandas as pd

    from examflow.evaluation.impact import Baseline, BaselineStore
    from examflow.grading.grader import ShardGrader
    from examflow.nrp.evaluate import NRPInputs, NRPSettings
    from examflow.outputs import Facts
    from examflow.progress import JobProgress
    from examflow.registry import Method
    from examflow.report.board import Board

log = logging.getLogger("examflow")


def pooled(pool: str | Path, name: str) -> Path:
    """A table of the pool's folder (examflow.outputs.POOL)."""
    if Path(pool).is_file():  # `--pool pool/passages.parquet` read `pool/passages.parquet/rankings.parquet: not found`
        raise InputError(pool, "a file, where the pool's folder goes (`examflow pool --out`): give the folder")
    return Path(pool) / POOL[name].path


def read_pooled(pool: str | Path, name: str) -> pd.DataFrame:
    """The table `name` of the pool's folder, with its columns."""
    return pool_table(pooled(pool, name), name)


def pool_table(path: str | Path, name: str) -> pd.DataFrame:
    """A pool table (the pool's, or a pool shard's) with the columns of its kind (examflow.pool.POOL_COLUMNS)."""
    from examflow.io.tables import read_table
    from examflow.pool import POOL_COLUMNS

    return read_table(path, POOL_COLUMNS[name])


def read_questions(paths: list[str], whole: bool = True) -> pd.DataFrame:
    """The question tables of the bank's shards (none: an empty table, for a method that grades against the
    query): every shard of the bank, where `whole`, else one grading job's."""
    import pandas as pd

    from examflow.io.tables import read_table
    from examflow.questions.shards import QUESTIONS_READ, check_every_bucket, no_questions

    if not paths:
        return no_questions()
    wanted = "--questions takes the bank's shards, which `examflow bank-shard --out` writes, not the bank itself"
    tables = [read_table(path, QUESTIONS_READ, wanted) for path in paths]
    if whole:
        check_every_bucket("--questions", paths)
    return pd.concat(tables)


def pool_command(args: argparse.Namespace) -> None:
    import pandas as pd

    from examflow.config import check_relevance_range
    from examflow.io import read_qrels, read_queries, read_runs, read_table, write_tables
    from examflow.io.qrels import JUDGMENT_COLUMNS
    from examflow.io.runs import RUN_COLUMNS, run_files, runs_by_tag
    from examflow.pool import Sources, build_pool
    from examflow.segment import SEGMENT_COLUMNS

    relevance_range = check_relevance_range("--relevance-range", *args.relevance_range)
    if not args.runs and not args.segments:  # the configuration's check (inputs.runs, inputs.responses), by hand
        raise Failure("--runs, --segments: nothing to evaluate: give run files, segmented responses, or both")
    queries = read_queries(args.queries)
    unknown = Problems(args.on_unknown_query)
    query_ids = set(queries["query_id"])
    # each file once however it is named, as compare-judges and the workflow take them (a repeat is no second run)
    paths = runs_by_tag(run_files(args.runs, "--runs")) if args.runs else {}
    runs = read_runs(paths.values(), query_ids, unknown) if args.runs else pd.DataFrame(columns=RUN_COLUMNS)
    judgments = (
        read_qrels(args.qrels, queries, unknown, relevance_range)
        if args.qrels
        else pd.DataFrame(columns=JUDGMENT_COLUMNS)
    )
    segments = read_table(args.segments, SEGMENT_COLUMNS) if args.segments else None
    missing = Problems(args.on_missing_passage)
    tables = build_pool(
        queries, runs, segments, judgments, args.corpus, args.depth, missing, Sources(paths, args.qrels)
    )
    unknown.summarise()
    missing.summarise()
    out = Path(args.out)
    write_tables({pooled(out, name): table for name, table in tables.items()})
    flagged = tables["flagged"]
    if len(flagged):
        first = flagged.iloc[0]
        log.warning(
            "%d pooled passage(s) look like prompt injection, listed in %s (first: %s in %s, rule %s: %r); graded as usual",
            len(flagged), pooled(out, "flagged"), first["passage_id"], first["query_id"], first["rule"], first["phrase"],
        )  # fmt: skip
    lists = tables["rankings"].groupby(["run_id", "query_id"]).ngroups
    log.info(
        "pooled %d passages for %d queries from %d ranked lists", len(tables["passages"]), len(tables["summary"]), lists
    )


def segment_command(args: argparse.Namespace) -> None:
    from examflow.io import read_queries, read_responses, write_tables
    from examflow.io.responses import gold_responses, read_gold_articles
    from examflow.segment import segment_responses

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
    from examflow.io import read_queries
    from examflow.llm import LLMClient, LLMSettings, log_served
    from examflow.questions.bank import write_bank
    from examflow.questions.generate import generate_bank

    settings = LLMSettings(
        **check_options("--llm", {n: getattr(args, n) for n in QUESTION_LLM_OPTIONS}, QUESTION_LLM_OPTIONS)
    )
    llm = LLMClient(settings, args.cache_dir)
    bank = generate_bank(read_queries(args.queries), llm, args.format, args.attempts)
    log_served(settings.model, llm.served)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bank(bank, out)
    log.info(
        "wrote %d questions for %d queries to %s (%d API calls)",
        sum(len(e.items) for e in bank),
        len(bank),
        out,
        llm.calls,
    )


def nuggets_command(args: argparse.Namespace) -> None:
    """A nugget bank created from the pool by AutoNuggetizer's creator and scorer prompts."""
    out = Path(args.out)
    if out.exists():
        raise InputError(out, "exists: the bank is generated once and never overwritten (delete it to generate anew)")
    from examflow.llm import LLMClient, LLMSettings, log_served
    from examflow.questions.bank import write_bank
    from examflow.questions.nuggetize import create_nugget_banks, pool_documents

    settings = LLMSettings(
        **check_options("--llm", {n: getattr(args, n) for n in QUESTION_LLM_OPTIONS}, QUESTION_LLM_OPTIONS)
    )
    pool = Path(args.pool)
    queries = read_pooled(pool, "queries")
    passages, judgments = read_pooled(pool, "passages"), read_pooled(pool, "judgments")
    if args.documents == "judged" and judgments.empty:
        raise InputError(pooled(pool, "judgments"), "no judgment: give qrels, or create from --documents pool")
    documents = pool_documents(passages, judgments, args.documents)
    texts = queries.drop_duplicates("query_id").sort_values("query_id")
    asked = [(q, text, documents[q]) for q, text in zip(texts["query_id"], texts["query_text"]) if q in documents]
    left = sorted(set(texts["query_id"]) - set(documents))
    if not asked:
        raise InputError(pooled(pool, "passages"), f"no query has {args.documents} documents to create nuggets from")
    if left:  # no document, no nugget: such a query is not graded by nuggets, and said so
        log.warning("%s no %s documents and get%s no nuggets: %s", counted(len(left), "query has", "queries have"),
                    args.documents, "s" if len(left) == 1 else "", listed(left))  # fmt: skip
    llm = LLMClient(settings, args.cache_dir)
    bank = create_nugget_banks(asked, llm, args.attempts, args.max_nuggets)
    log_served(settings.model, llm.served)
    write_bank(bank, out)
    log.info("wrote %d nuggets for %d queries to %s (%d API calls)", sum(len(e.items) for e in bank), len(bank), out,
             llm.calls)  # fmt: skip


def bank_shard_command(args: argparse.Namespace) -> None:
    from examflow.io import read_queries
    from examflow.io.queries import subtopics
    from examflow.io.tables import write_tables
    from examflow.questions.bank import entry_lines, known_targets, read_bank
    from examflow.questions.shards import bank_shard_table, check_shard

    check_shard(args.shard, args.shards)
    entries = read_bank(args.bank) if args.bank is not None else []
    if entries:
        # Questions for no query, or for no subtopic of theirs, are not graded: they would count in |Q|.
        unknown = Problems(args.on_unknown_query)
        known = known_targets(args.bank, entry_lines(entries), subtopics(read_queries(args.queries)), unknown)
        unknown.summarise()
        entries = [entry for entry in entries if (entry.query_id, entry.facet_id) in known]
    write_tables({args.out: bank_shard_table(entries, args.shard, args.shards)})


def pool_shard_command(args: argparse.Namespace) -> None:
    from examflow.io.tables import write_tables
    from examflow.questions.shards import bucket_table, check_shard, pool_shard

    check_shard(args.shard, args.shards)
    passages, queries = pool_table(args.passages, "passages"), pool_table(args.queries, "queries")
    shard = (args.shard, args.shards)
    passages, queries = pool_shard(passages, queries, *shard)
    write_tables({args.out_passages: bucket_table(passages, *shard), args.out_queries: bucket_table(queries, *shard)})


def bank_diff_command(args: argparse.Namespace) -> None:
    from examflow.questions.bank import read_bank
    from examflow.questions.diff import diff_banks, format_diff

    sys.stdout.write(format_diff(diff_banks(read_bank(args.old), read_bank(args.new))))


def bank_export_command(args: argparse.Namespace) -> None:
    from examflow.questions.autojudge import write_autojudge
    from examflow.questions.bank import read_bank, write_bank

    entries = read_bank(args.bank)
    if args.queries:
        entries = _with_query_texts(entries, args.queries, args.bank)
    if Path(args.out).resolve() == Path(args.bank).resolve():
        raise Failure(f"--out {args.out}: the bank itself; write the export to another file")
    if args.format == "autojudge":
        write_autojudge(entries, args.bank, args.out)
    else:
        write_bank(entries, args.out)
    log.info("wrote %d items of %d entries to %s (%s)", sum(len(e.items) for e in entries), len(entries), args.out,
             args.format)  # fmt: skip


def _with_query_texts(entries: list, queries_path: str, bank: str) -> list:
    """The entries, each without a query text given its query's from the queries file; a query the file
    does not hold is an error (its text would be written empty)."""
    import dataclasses

    from examflow.io.queries import read_queries

    queries = read_queries(queries_path)
    texts = dict(zip(queries["query_id"], queries["query_text"]))
    for entry in entries:
        if entry.query_id not in texts:
            raise InputError(
                bank, f"query {entry.query_id!r} is not in --queries {queries_path}", entry.line, "query_id"
            )
    return [e if e.query_text else dataclasses.replace(e, query_text=texts[e.query_id]) for e in entries]


def grade_command(args: argparse.Namespace) -> None:
    from examflow.grading.grader import ShardGrader, make_pairs, work_unit
    from examflow.grading.grades import GaveUp, check_failures, empty_grades
    from examflow.grading.merge import write_grades
    from examflow.progress import job_progress
    from examflow.questions.shards import check_one_bucket

    method = method_option(args.method)
    with job_progress(args.progress, f"{method.name}/{args.shard}", work_unit(method)) as progress:
        queries, passages = pool_table(args.queries, "queries"), pool_table(args.passages, "passages")
        tables = {"--queries": args.queries, "--passages": args.passages}
        # a method that grades against the query reads no bank: a bank edit reruns no job of it
        if method.entry.reads_bank:
            if args.questions is None:
                raise Failure(
                    f"--questions: method {method.name!r} grades {method.entry.target}s: give the shard's bank table "
                    "(`examflow bank-shard --out`)"
                )
            tables["--questions"] = args.questions
        check_one_bucket(tables, args.shard)
        questions = read_questions([args.questions] if method.entry.reads_bank else [], whole=False)
        pairs = make_pairs(method.kind, passages, questions, queries)
        log.info("method %s, shard %s: %d passages, %d pairs", method.name, args.shard, len(passages), len(pairs))
        if not pairs:  # no model is loaded for nothing
            log.warning("shard %s: nothing to grade (no pooled passages or no questions)", args.shard)
            write_grades(empty_grades(), {"shard": args.shard}, args.out)
            return
        with _method_named(method.name):
            grader = ShardGrader(method, args.cache_dir, args.flush_every, progress, args.max_error_rate)
            try:
                grades = grader.grade(pairs)
            except GaveUp as stop:  # more answers failed than the job may: it stopped asking
                _wrap_up(grader, progress, len(stop.failures))  # the pairs not asked did not fail
                raise stop.failure(method, args.shard, args.max_error_rate, args.cache_dir) from None
        _wrap_up(grader, progress, int(grades["error"].notna().sum()))
        check_failures(grades, method, args.shard, args.max_error_rate, args.cache_dir, args.out)
        served = {"served_models": dict(grader.served)} if grader.served else {}
        # `shard` marks a job's table, which evaluate refuses: an embedding method's are not grades until merged
        write_grades(grades, {"shard": args.shard, "model": grader.cache.signature} | served, args.out)


def _wrap_up(grader: ShardGrader, progress: JobProgress | None, without_grade: int) -> None:
    """What a grading job says before its table or its failure: the prompts it sent, the pairs it could not
    grade (its progress file), and the models that served its answers (another model may be why they fail)."""
    from examflow.grading.grader import work_unit

    replayed, refused = grader.replayed, grader.too_long
    log.info("sent %d %s to the model%s%s", grader.sent - replayed - refused, work_unit(grader.method),
             f"; {replayed} more answered by its reply cache" if replayed else "",
             f"; {refused} more too long to ask (too-long failures)" if refused else "")  # fmt: skip
    if progress:
        progress.failures(without_grade)
    if grader.served:
        from examflow.llm import log_served  # the OpenAI client's module (a second to import): where it served

        log_served(grader.method.backend.options["model"], grader.served)


@contextmanager
def _method_named(name: str) -> Iterator[None]:
    """A back end's setting found wrong only as it loads (a model the hub cannot give) names its method: a
    back end's error reads `backend.model`, which of a config's several methods it was, it cannot know."""
    try:
        yield
    except ConfigError as error:
        if not error.key.startswith("backend."):
            raise
        raise ConfigError(f"method {name!r}: {error.key}", error.message) from None


def progress_command(args: argparse.Namespace) -> None:
    import time

    from examflow.progress import FOLDER, progress_line, read_progress

    if not Path(args.results).is_dir():
        raise Failure(f"{args.results}: folder not found (--results: a run's results_dir)")
    if not (Path(args.results) / FOLDER).is_dir():
        raise Failure(f"{args.results}: no grading progress here (no {FOLDER}/): no run has graded into it yet")
    print(progress_line(read_progress(args.results), time.time()))


def merge_grades_command(args: argparse.Namespace) -> None:
    from collections import Counter

    from examflow.grading.grades import GRADES_READ
    from examflow.grading.merge import (
        check_disjoint,
        check_graded_by,
        check_graded_with,
        merge_grades,
        read_grades_metadata,
        served_counts,
        write_grades,
    )
    from examflow.io.tables import read_table

    method = method_option(args.method)
    if not args.shards:  # an empty table would read, in evaluate, as a pool without passages
        raise Failure("merge-grades: no shards given: name every grading job's table (`grade --out`)")
    calibrated = method.calibration is not None and method.quantiles is not None
    if calibrated and not args.passages:
        raise Failure("--passages: the pool's passages.parquet, needed to leave its gold articles out of the quantiles")
    gold = None
    if args.passages:
        passages = pool_table(args.passages, "passages")
        gold = passages.loc[passages["origin"] == "gold", ["query_id", "passage_id"]]
    tables = [read_table(path, GRADES_READ) for path in args.shards]  # a shard of before `votes` merges too
    check_graded_by(args.shards, tables, method)
    shards = [read_grades_metadata(path) for path in args.shards]
    check_graded_with(args.shards, shards, method)
    check_disjoint(args.shards, tables)
    grades, metadata = merge_grades(tables, method, gold)
    # The back ends' signatures (model, revision or weights digest, decoding), once each.
    models = {json.dumps(m, sort_keys=True) for shard in shards if (m := shard.get("model"))}
    metadata["models"] = [json.loads(m) for m in sorted(models)]
    served = sum((served_counts(path, shard) for path, shard in zip(args.shards, shards)), Counter())
    metadata |= {"served_models": dict(sorted(served.items()))} if served else {}
    write_grades(grades, metadata, args.out)
    log.info("merged %d grades (%d errors) into %s", metadata["pairs"], metadata["errors"], args.out)


def evaluate_command(args: argparse.Namespace) -> None:
    from examflow.config import check_taus, shown_tau
    from examflow.evaluation.evaluate import Settings, evaluate, facts_of, grades_target
    from examflow.evaluation.exam_qrels import measure_problems
    from examflow.evaluation.impact import BaselineStore, bank_digest
    from examflow.io.leaderboard import match_runs, read_leaderboard
    from examflow.io.runs import RESERVED_RUNS
    from examflow.io.tables import write_tables
    from examflow.outputs import EVALUATION, Facts, check_written, remove_unwanted

    check_taus("--tau", args.tau)
    diagnostics_tau = shown_tau(("--diagnostics-tau", args.diagnostics_tau), ("--tau", args.tau))
    problems = measure_problems(args.measures)
    if problems:
        name, why = next(iter(problems.items()))
        raise Failure(f"--measures: {name!r}: {why}")
    inputs = _evaluation_inputs(args)
    settings = Settings(
        args.tau, args.k, args.measures, args.query_mode, args.n_exam, args.relevant_judgment, args.bootstrap, args.seed,
        diagnostics_tau,
    )  # fmt: skip
    official = read_leaderboard(args.official) if args.official else None
    if official:
        unknown_runs = Problems(args.on_unknown_run)
        evaluated = set(inputs.rankings["run_id"]) - set(RESERVED_RUNS)
        for note in match_runs(args.official, official, evaluated, unknown_runs):
            log.warning("%s", note)
        unknown_runs.summarise()
        # dropped under `warn` (counted above), not read as evaluated runs "without a score" in the correlations'
        # notes; where none is evaluated, the notes list them all
        official = {run: rank for run, rank in official.items() if run in evaluated} or official
    facts = Facts.of(args.facts) if args.facts is not None else facts_of(inputs, official)
    if facts.official and not official:
        raise Failure("--facts official: give the official leaderboard (--official)")
    if official and not facts.official:  # it would be read, and no correlation written
        raise Failure("--official: --facts leaves out official: add it, or leave --official out")
    outputs = evaluate(inputs, settings, official, facts)
    # cast: `baselines` is no file but each method's Baseline, which evaluate puts beside the tables
    baselines = cast("dict[str, Baseline]", outputs.pop("baselines"))
    # a method that grades against the query has no bank to edit: no baseline, its impact tables their headers
    direct = {m for m, graded in inputs.grades.groupby("method") if grades_target(graded) == "query"}
    stores = (
        {m: BaselineStore(Path(args.baselines) / m) for m in baselines if m not in direct} if args.baselines else {}
    )
    if stores:
        baselines = with_contexts(baselines, inputs, settings, args.grading_settings)
    outputs |= edit_impact(baselines, stores)
    check_written(EVALUATION, facts, outputs, methods=baselines)
    write_tables({Path(args.out) / name: table for name, table in outputs.items()})
    remove_unwanted(EVALUATION, facts, args.out, methods=baselines)
    for method, store in stores.items():  # only once the outputs are written
        store.save(bank_digest(baselines[method].questions), baselines[method])
    leaderboard = cast("pd.DataFrame", outputs["leaderboard.tsv"])  # cast: evaluate's leaderboard table
    systems = leaderboard.loc[leaderboard["kind"] == "system", "run_id"]  # not the pool's or the gold's row
    log.info(
        "methods %d, runs %d, measures %d, tau %s -> %s",
        leaderboard["method"].nunique(),
        systems.nunique(),
        leaderboard["measure"].nunique(),
        args.tau,
        args.out,
    )


def official_command(args: argparse.Namespace) -> None:
    from examflow.evaluation.exam_qrels import level_free, measure_problems
    from examflow.evaluation.official import check_level_reached, official_leaderboard
    from examflow.io.runs import run_files, runs_by_tag
    from examflow.io.tables import write_tables

    for name, why in measure_problems([args.measure]).items():
        raise Failure(f"--measure: {name!r}: {why}")
    pool = Path(args.pool)
    judgments = read_pooled(pool, "judgments")
    if judgments.empty:
        raise InputError(pooled(pool, "judgments"), "no official judgment: an official leaderboard needs qrels")
    if not level_free(args.measure):
        check_level_reached(
            pooled(pool, "judgments"), judgments["relevance"], args.relevance_level, "--relevance-level"
        )
    rankings = read_pooled(pool, "rankings")
    runs = runs_by_tag(run_files(args.runs, "--runs"))
    ranked = set(rankings["run_id"])
    for tag, path in runs.items():  # a leaderboard that silently leaves a run out is a wrong number
        if tag not in ranked:
            raise InputError(path, f"run {tag!r} is not in {pooled(pool, 'rankings')}: pool its run file first")
    board = official_leaderboard(
        rankings, judgments, args.measure, args.relevance_level, set(runs), args.query_mode == "all"
    )
    unjudged = sorted(set(runs) - set(board["run_id"]))
    if unjudged:
        one = len(unjudged) == 1
        log.warning("%d %s no judged query and %s not on the official leaderboard: %s", len(unjudged),
                    "run ranks" if one else "runs rank", "is" if one else "are", ", ".join(unjudged))  # fmt: skip
    write_tables({args.out: board})
    runs_ranked = counted(len(board), "run", "runs")
    log.info("official leaderboard of %s by %s on the official qrels -> %s", runs_ranked, args.measure, args.out)


def compare_judges_command(args: argparse.Namespace) -> None:
    from examflow.evaluation.judges import Settings, compare_judges
    from examflow.io.tables import write_tables
    from examflow.outputs import JUDGES, Facts, check_written

    out = Path(args.out)
    judges = judges_inputs(args)
    settings = Settings(args.top_k, args.rbo_p, args.bootstrap, args.seed, complete=args.query_mode == "all")
    tables = compare_judges(judges, settings)
    check_written(JUDGES, Facts(), tables)
    out.mkdir(parents=True, exist_ok=True)
    write_tables({out / name: table for name, table in tables.items()})
    log.info("label sets %s; measures %s; %d runs -> %s", ", ".join(["official", *judges.label_sets, *judges.leaderboards]),
             ", ".join(judges.measures), judges.runs["run_id"].nunique(), args.out)  # fmt: skip


def judges_inputs(args: argparse.Namespace):
    """What `compare-judges` compares, read and checked: a problem is one line, before any work."""
    from examflow.evaluation.judges import Judges
    from examflow.io.leaderboard import read_leaderboard, read_leaderboard_scores

    measures, official_measure = _judges_measures(args)
    official_labels, label_sets, votes = _judges_labels(args, official_measure)
    judged = set(official_labels["query_id"]).union(*(set(labels["query_id"]) for labels in label_sets.values()))
    runs = _judges_runs(args, judged)
    run_ids, official_given = set(runs["run_id"]), None
    generated = _generated(args, run_ids)
    if args.official:
        scores = read_leaderboard_scores(args.official)
        official = scores if scores is not None else read_leaderboard(args.official)
        official_given = (_without(args.official, official, generated), scores is not None)
        meant = generated - set(official)  # a typo of a response's run, or of a run file's
        _check_official_runs(args.official, official_given[0], run_ids, Problems(args.on_unknown_run), meant,
                             _responses_hint(args))  # fmt: skip
    elif runs["run_id"].nunique() < 2:
        log.warning(ONE_RUN, "--runs: one run")
    leaderboards = outside_leaderboards(args, set(label_sets), run_ids, judged, generated)
    for name, labels in label_sets.items():
        if not set(labels["query_id"]) & set(runs["query_id"]):
            log.warning("--labels %s: judges no query that a run ranks: no run has a score under it", name)
    return Judges(official_labels, label_sets, runs, measures, official_measure, official_given, votes, leaderboards)


def _judges_measures(args: argparse.Namespace) -> tuple[dict[str, object], tuple[str, object] | None]:
    """The measures by name, and the official leaderboard's (name, measure) where the qrels make it."""
    from examflow.evaluation.judges import check_measure

    def measure(option: str, name: str):
        try:
            return check_measure(name)
        except ValueError as error:
            raise Failure(f"{option} {name!r}: {error}") from None

    option = "--measure" if args.measures else "--official-measure"  # by default, the official measure
    measures = {name: measure(option, name) for name in dict.fromkeys(args.measures or [args.official_measure])}
    if name := repeated(str(parsed) for parsed in measures.values()):
        raise Failure(f"--measure: two names for the same measure ({name}): name it once")
    if args.official and args.official_relevance_level is not None:
        raise Failure("--official-relevance-level: the level of an official leaderboard computed from the qrels "
                      "(--official-measure), not of one given (--official)")  # fmt: skip
    return measures, None if args.official else _official_measure(args, measure)


def _judges_labels(args: argparse.Namespace, official_measure: tuple[str, object] | None):
    """The official labels, the other label sets (ensembles made of their members) and the ensembles' votes."""
    from examflow.evaluation.judges import ensemble, per_page
    from examflow.evaluation.official import check_level_reached
    from examflow.io.qrels import KnownQueries, read_labels
    from examflow.io.queries import read_queries

    # a query id of no query (a typo) would be drawn by every bootstrap replicate, each label set's interval moved
    if args.on_unknown_query and not args.queries:
        raise Failure("--on-unknown-query: it checks the qrels' query ids against --queries: give --queries too")
    unknown_queries = Problems(args.on_unknown_query or "error")
    known = KnownQueries(read_queries(args.queries), unknown_queries) if args.queries else None

    def read(path: str, empty_ok: bool = False):
        labels = read_labels(path, empty_ok, known)
        return per_page(labels) if args.per_page else labels

    official_labels = read(args.official_qrels)
    level = getattr(official_measure[1], "params", {}).get("rel") if official_measure else None
    if level is not None:  # at --official-relevance-level, or as ir-measures' syntax says (`AP(rel=2)`)
        option = (
            "--official-relevance-level"
            if args.official_relevance_level
            else f"--official-measure {args.official_measure}'s rel"
        )
        check_level_reached(args.official_qrels, official_labels["relevance"], level, option)
    label_sets = {name: read(path, empty_ok=True) for name, path in label_arguments(args.labels).items()}
    unknown_queries.summarise()
    votes = {}
    for name, members in ensemble_arguments(args.ensemble, set(label_sets)).items():
        label_sets[name], votes[name] = ensemble({member: label_sets[member] for member in members})
    return official_labels, label_sets, votes


def _judges_runs(args: argparse.Namespace, judged: set[str]) -> pd.DataFrame:
    """The runs' rows of the judged queries (the others left out, counted); a judged query no run ranks said."""
    from examflow.io.runs import NO_KNOWN_QUERY, UNJUDGED_QUERY, read_runs, run_files

    unknown = Problems("warn")
    try:
        runs = read_runs(run_files(args.runs, "--runs"), judged, unknown, UNJUDGED_QUERY)
    except InputError as error:
        subtopics = not args.per_page and any("/" in query for query in judged)
        if subtopics and error.message == NO_KNOWN_QUERY:  # runs rank pages; qrels judge `page/facet`
            raise InputError(error.path, f"{error.message}: the labels judge subtopics (`query/facet`), which runs "
                             "rank as their page: give --per-page") from None  # fmt: skip
        raise
    unknown.summarise()
    if unranked := sorted(judged - set(runs["query_id"])):  # by hand, a typo of a query id is one of them
        check = "" if args.queries else " (a typo? --queries checks the qrels' query ids)"
        if not args.per_page and any("/" in query for query in unranked):
            check = " (subtopics `query/facet`, whose page the runs rank? give --per-page)"
        some = counted(len(unranked), "judged query is", "judged queries are")
        moves = "it moves" if len(unranked) == 1 else "they move"
        drawn = f" (drawn by the bootstrap with the others, {moves} every interval)" if args.bootstrap else ""
        log.warning("%s ranked by no run%s: %s%s", some, drawn, listed(unranked), check)
    return runs


# Evaluating one system is a use; its labels' agreement (κ, α) stands, its leaderboards' has nothing to order.
ONE_RUN = "%s: the leaderboards' agreement (Kendall's τ, Spearman's ρ, ...) needs two runs or more and is left empty"


def _official_measure(args: argparse.Namespace, measure: Callable) -> tuple[str, object]:
    """(name, measure) of the official leaderboard; at a relevance level other than 1, named as ir-measures
    writes it (`AP(rel=2)`), since the label sets' `map` stays at level 1."""
    from examflow.evaluation.judges import at_relevance_level

    name, level = args.official_measure, args.official_relevance_level or 1
    given = measure("--official-measure", name)
    try:
        parsed = at_relevance_level(name, given, level)
    except ValueError as error:
        raise Failure(f"--official-relevance-level {level}: {name!r}: {error}") from None
    return (name, parsed) if parsed is given else (str(parsed), parsed)


def _generated(args: argparse.Namespace, runs: set[str]) -> set[str]:
    """The runs of --responses that no run file holds: the judges rank runs by the passages their labels
    judge, and a generated response ranks none (docs/judges.md)."""
    from examflow.io.responses import response_run_ids

    if args.responses and not (args.official or args.leaderboard):
        raise Failure("--responses: their runs are left out of a given --official or --leaderboard, and there is none")
    return response_run_ids(args.responses) - runs if args.responses else set()


def _say_left_out(path: str, generated: set[str]) -> None:
    if generated:
        runs = "runs" if len(generated) > 1 else "run"
        log.warning("%s: %d %s of generated responses (--responses) left out: the judges compare the run files' "
                    "runs alone: %s", path, len(generated), runs, listed(sorted(generated)))  # fmt: skip


def _without(path: str, official: dict[str, float], generated: set[str]) -> dict[str, float]:
    """The official leaderboard without the `generated` responses' runs, said."""
    _say_left_out(path, generated & set(official))
    return {run: value for run, value in official.items() if run not in generated}


def _responses_hint(args: argparse.Namespace) -> str:
    """Said of a leaderboard's unknown run where --responses is not given: a RAG campaign's leaderboards
    rank the generated responses' runs too, which the judges leave out once told which they are."""
    return "" if args.responses else " (a run of generated responses? --responses leaves those out)"


def _check_official_runs(
    path: str, official: dict[str, float], runs: set[str], unknown: Problems, meant: set[str], hint: str
) -> None:
    """A given official leaderboard against the runs: one it ranks that --runs lacks goes to `unknown` (a
    typo would drop it from every statistic; `meant` and `hint` as `match_runs`); runs it lacks are left
    out of the agreement, said once."""
    from examflow.io.leaderboard import match_runs

    shared = runs & set(official)
    if not shared:
        raise InputError(path, f"ranks none of the {len(runs)} runs given")
    if len(shared) == 1:
        log.warning(ONE_RUN, f"{path} ranks one of the runs given")
    for note in match_runs(path, official, runs, unknown, "the runs of --runs", sorted(meant), hint):
        log.warning("%s", note)
    unknown.summarise()


def label_arguments(arguments: list[str], option: str = "--labels", taken=frozenset()) -> dict[str, str]:
    """`NAME=FILE` arguments by name; a name is given once, and `official` is the official qrels'."""
    from examflow.evaluation.judges import OFFICIAL

    named: dict[str, str] = {}
    for argument in arguments:
        name, equals, path = argument.partition("=")
        if not equals or not name.strip() or not path:
            shape = "NAME=QRELS, e.g. umbrela=labels/umbrela.qrels" if option == "--labels" else "NAME=FILE"
            raise Failure(f"{option} {argument!r}: expected {shape}")
        _check_judge_name(option, argument, name)
        if name == OFFICIAL or name in named or name in taken:
            raise Failure(
                f"{option} {argument!r}: the name {name!r} is taken"
                + (" (the official qrels')" if name == OFFICIAL else "")
            )
        named[name] = path
    return named


def _check_judge_name(option: str, argument: str, name: str) -> None:
    """A judge's name goes into file columns and measure names (`name:measure`): ASCII letters, digits, _ and -."""
    from examflow.registry import NAME

    if not NAME.fullmatch(name):
        raise Failure(
            f"{option} {argument!r}: a name is ASCII letters, digits, _ and - (it names columns), not {name!r}"
        )


def outside_leaderboards(
    args: argparse.Namespace, taken: set[str], run_ids: set[str], judged: set[str], generated: set[str]
) -> dict:
    """Other judges' AutoJudge leaderboards (`--leaderboard NAME=FILE`): each measure's runs among the runs, its
    topics among the queries judged (others left out, counted in a warning; none judged is an error)."""
    from examflow.io.autojudge import judged_topics, known_runs, read_autojudge

    boards, unknown = {}, Problems(args.on_unknown_run)
    for name, path in label_arguments(args.leaderboard, "--leaderboard", taken).items():
        measures = read_autojudge(path, args.leaderboard_layout)
        _say_left_out(path, generated & {run for measured in measures.values() for run in measured.lines})
        boards[name] = known_runs(path, measures, run_ids, "--runs", unknown, generated, _responses_hint(args))
        boards[name] = judged_topics(path, boards[name], judged, args.leaderboard_layout, args.query_mode == "all")
    unknown.summarise()
    return boards


def ensemble_arguments(arguments: list[str], names: set[str]) -> dict[str, list[str]]:
    """`NAME=A,B,...` arguments: an ensemble of two or more of the label sets given (`--labels`), by name."""
    from examflow.evaluation.judges import OFFICIAL

    ensembles: dict[str, list[str]] = {}
    for argument in arguments:
        name, equals, listed = argument.partition("=")
        members = [member.strip() for member in listed.split(",") if member.strip()]
        if not equals or not name.strip() or len(members) < 2:
            raise Failure(f"--ensemble {argument!r}: expected NAME=A,B,... (two or more label sets of --labels)")
        _check_judge_name("--ensemble", argument, name)
        if name in names or name in ensembles or name == OFFICIAL:
            raise Failure(f"--ensemble {argument!r}: the name {name!r} is taken")
        unknown = [member for member in members if member not in names]
        if unknown or len(set(members)) < len(members):
            problem = f"{unknown[0]!r} is no label set of --labels" if unknown else "a member is named twice"
            raise Failure(f"--ensemble {argument!r}: {problem}")
        ensembles[name] = members
    return ensembles


def nrp_command(args: argparse.Namespace) -> None:
    from examflow.io import write_tables
    from examflow.nrp.evaluate import nrp_tables
    from examflow.nrp.inputs import combined_dimensions
    from examflow.outputs import NRP, Facts, check_written, remove_unwanted

    qrels, cannot_judge, settings = _nrp_settings(args)
    inputs = _nrp_inputs(args, qrels, cannot_judge, combined_dimensions(settings.weights))
    tables = nrp_tables(inputs, settings)
    facts = Facts(wilcoxon=bool(args.wilcoxon), expert=bool(args.expert))
    check_written(NRP, facts, tables)
    write_tables({Path(args.out) / name: table for name, table in tables.items()})
    remove_unwanted(NRP, facts, args.out)
    ranked = tables["per_answer.tsv"].drop_duplicates(["llm", "prompt", "sample", "query_id"])  # judged queries' only
    empty = ranked["answer"].value_counts()
    log.info("NRP (denominator %s) of %d answers (%d empty, %d missing) to %d queries -> %s", args.denominator,
             len(ranked), empty.get("empty", 0), empty.get("missing", 0), ranked["query_id"].nunique(),
             args.out)  # fmt: skip


def _nrp_settings(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, set[int]], NRPSettings]:
    """The dimensions' qrels, their labels that say "cannot judge", and the rankers and weights, each option
    checked against the others before any file is read."""
    from examflow.config import check_relevance_range
    from examflow.nrp.evaluate import NRPSettings
    from examflow.nrp.inputs import cannot_judge_problem, dimension_problem, rankers_needing_texts, weight_problem

    qrels = assignments(args.qrels, "--qrels", str)
    if problem := next(filter(None, map(dimension_problem, qrels)), None):
        raise Failure(f"--qrels: {problem}")
    specs = [ranker_spec(text, args.run) for text in args.ranker]
    if args.run and not any(args.run in spec.values() for spec in specs):  # given, and read by no ranker
        raise Failure("--run: no ranker reads it (give --ranker run)")
    rankers = [check_ranker(f"--ranker[{i}]", spec) for i, spec in enumerate(specs)]
    names = [r["name"] for r in rankers]
    if name := repeated(names):
        raise Failure(f"--ranker: two rankers are named {name!r}; give them names")
    if not args.corpus and rankers_needing_texts(rankers):
        raise Failure(f"--corpus: the rankers {', '.join(rankers_needing_texts(rankers))} score the judged "
                      "documents' texts; give --corpus (only `--ranker run` works without)")  # fmt: skip
    weights = assignments(args.weight, "--weight", float) or {d: 1 / len(qrels) for d in qrels}
    fixed = assignments(args.fix_ranker, "--fix-ranker", str)
    cannot_judge: dict[str, set[int]] = {}
    for dimension, label in assignments(args.cannot_judge, "--cannot-judge", int, many=True):
        cannot_judge.setdefault(dimension, set()).add(label)
    relevance_range = check_relevance_range("--relevance-range", *args.relevance_range)
    for dimension, labels in cannot_judge.items():
        if problem := cannot_judge_problem(labels, relevance_range, "--relevance-range"):
            raise Failure(f"--cannot-judge {dimension}: {problem}")
    # a misspelt dimension of --cannot-judge kept its documents in D_q, in silence
    for option, mapping in (("--weight", weights), ("--fix-ranker", fixed), ("--cannot-judge", cannot_judge)):
        if set(mapping) - set(qrels):
            raise Failure(f"{option}: {sorted(set(mapping) - set(qrels))[0]!r} is no dimension of --qrels")
    if problem := weight_problem(weights, list(qrels)):
        raise Failure(f"--weight: {problem}")
    if set(fixed.values()) - set(names):
        raise Failure(f"--fix-ranker: {sorted(set(fixed.values()) - set(names))[0]!r} is none of the --ranker names")
    wilcoxon = [tuple(w) for w in args.wilcoxon]
    return qrels, cannot_judge, NRPSettings(rankers, weights, fixed, args.denominator, wilcoxon, args.cache_dir)


def _nrp_inputs(
    args: argparse.Namespace, qrels: dict[str, str], cannot_judge: dict[str, set[int]], combined: list[str]
) -> NRPInputs:
    """The queries, the judgments, the judged documents' texts, the answers and the expert ranking, each
    checked against the others: an answer ranks among the documents judged for its query (`combined`: the
    dimensions of the combined NRP)."""
    from functools import partial

    import pandas as pd

    from examflow.io import read_passages, read_queries
    from examflow.nrp.evaluate import NRPInputs
    from examflow.nrp.inputs import answer_name, judged_origins, read_answers, read_expert, read_judgments

    queries = read_queries(args.queries)
    unknown = Problems(args.on_unknown_query)
    relevance_range = (args.relevance_range[0], args.relevance_range[1])  # checked with the options (_nrp_settings)
    judgments = read_judgments(qrels, queries, unknown, cannot_judge, relevance_range, combined)
    wanted = set().union(*(set(j["passage_id"]) for j in judgments.values()))
    documents = None  # without a corpus (run rankers only) the documents are the judged ids
    if args.corpus:
        missing = Problems(args.on_missing_passage)
        origins = partial(judged_origins, judgments, qrels)
        documents = read_passages(args.corpus, wanted, missing, "judged document", origins)
        missing.summarise()  # `warn` drops them: each query's |D_q|, so its NRP, is said to have changed
        judgments = {d: j[j["passage_id"].isin(documents)] for d, j in judgments.items()}
    for dimension, judged in judgments.items():
        if judged.empty:
            what = "judged document with a text" if documents is not None else "judged document"
            raise InputError(qrels[dimension], f"no {what} is left for dimension {dimension!r}")
    # cast: the query_id column holds ids
    known = {cast(str, q): set(j) for q, j in pd.concat(judgments.values()).groupby("query_id")["passage_id"]}
    answers = read_answers(args.answers, set(queries["query_id"]), unknown, known)
    unknown.summarise()
    unjudged = sorted(set(answers["query_id"]) - set(known))
    if unjudged:
        log.warning("%s answers but no judged document, and no NRP: %s",
                    counted(len(unjudged), "query has", "queries have"), listed(unjudged))  # fmt: skip
    if not answers["query_id"].isin(known).any():
        raise InputError(args.answers, "no answer to a query with judged documents: nothing to rank")
    if unanswered := sorted(set(known) - set(answers["query_id"])):
        log.warning("%s judged documents but no system's answer, and no NRP: %s",
                    counted(len(unanswered), "query has", "queries have"), listed(unanswered))  # fmt: skip
    check_systems(args.wilcoxon, answers)
    for row in cast(Iterator[_AnswerRow], answers[answers["query_id"].isin(known)].itertuples(index=False)):
        known[row.query_id].add(answer_name(row.llm, row.prompt, row.sample))
    expert = read_expert(args.expert, known) if args.expert else None
    texts = dict(zip(queries["query_id"], queries["query_text"]))
    return NRPInputs(texts, documents, judgments, answers, expert)


class _AnswerRow(Protocol):
    """A row of an answers table (`examflow.nrp.inputs.ANSWER_COLUMNS`) as `itertuples` gives it: a cast,
    since pandas types cells as any scalar; these cells are strings."""

    llm: str
    prompt: str
    sample: str
    query_id: str


WILCOXON = "--wilcoxon (the workflow's nrp.wilcoxon)"


def check_systems(pairs: list[list[str]], answers: pd.DataFrame) -> None:
    """Each --wilcoxon system is an (llm, prompt) of the answers (a name with a typo would test nothing), and
    the two of a test share a sample number (the test pairs answers of the same query and sample)."""
    from examflow.nrp.inputs import SEPARATOR

    samples = answers.groupby(["llm", "prompt"])["sample"].agg(set).to_dict()
    for pair in pairs:
        for system in (tuple(pair[:2]), tuple(pair[2:])):
            if system not in samples:
                slash = f" (no llm or prompt holds {SEPARATOR!r})" if any(SEPARATOR in name for name in system) else ""
                raise Failure(f"{WILCOXON}: {system[0]!r} / {system[1]!r} is no (llm, prompt) of --answers{slash}")
        first, second = samples[tuple(pair[:2])], samples[tuple(pair[2:])]
        if not first & second:
            raise Failure(f"{WILCOXON} {' '.join(pair)}: the two share no sample number ({listed(sorted(first))} "
                          f"and {listed(sorted(second))}), and the test pairs answers of the same query and sample")  # fmt: skip


def ranker_spec(text: str, run: str | None) -> dict:
    """`--ranker bm25`, or a JSON object `{"kind": "monot5", "model": ...}`; a ranker that reads a file
    (the run ranker) reads --run unless the object names one."""
    spec = json_argument(text, "--ranker") if text.lstrip().startswith("{") else {"kind": text}
    kind = spec.get("kind") if isinstance(spec, dict) else None
    entry = RANKERS.get(kind) if isinstance(kind, str) else None
    if entry and entry.input_file and entry.input_file not in spec:
        if run:
            spec[entry.input_file] = run
        elif not set(spec) - {"kind", "name", *entry.options}:  # an unknown key (`file`): check_ranker names it
            raise Failure(f"--ranker {kind} needs --run RUNFILE")
    return spec


def assignments(values: list[str] | None, option: str, kind, many: bool = False):
    """`NAME=VALUE` options as a dict (or, with `many`, as a list of pairs); a name given twice is refused
    (a dict would keep the last silently)."""
    from examflow.errors import repeated

    pairs = []
    for text in values or []:
        # a value holds no `=` where it is a number; a name may (a workbench method's `class:model=x`)
        name, equals, value = text.rpartition("=") if kind in (int, float) else text.partition("=")
        try:
            converted = kind(value) if name and equals else None
        except ValueError:
            converted = None
        if converted is None:
            noun = {"int": "whole number", "float": "number"}.get(kind.__name__, kind.__name__)
            raise Failure(f"{option} {text!r}: expected NAME=VALUE with {a(noun)} value")
        pairs.append((name, converted))
    if not many and (twice := repeated(name for name, _ in pairs)):
        raise Failure(f"{option}: {twice!r} is given twice")
    return pairs if many else dict(pairs)


def plan_command(args: argparse.Namespace) -> None:
    from examflow.io.tables import write_tables
    from examflow.plan import format_plan, gpu_visible, plan_method, plan_table
    from examflow.questions.shards import check_bucket_count

    methods = [method_option(text, f"--method[{i}]") for i, text in enumerate(args.method)]  # before any file
    pool = Path(args.pool)
    passages, queries = read_pooled(pool, "passages"), read_pooled(pool, "queries")
    questions = read_questions(args.questions)
    check_bucket_count("--questions", args.questions, args.shards)
    if not args.questions and (asking := next((m for m in methods if m.entry.reads_bank), None)):
        # no bank would plan 0 pairs for it: a cost of nothing, in silence (a stranger by hand)
        raise Failure(
            f"--questions: method {asking.name!r} grades {KINDS[asking.kind].target}s: give the bank's shards"
        )
    if repeated_name := repeated([m.name for m in methods]):
        raise Failure(f"--method: {repeated_name!r} is named twice")
    gpu_here = not any(method.on_gpu for method in methods) or gpu_visible()  # torch only for a GPU back end
    plans = [
        plan_method(method, passages, questions, queries, args.cache_dir, args.shards, gpu_here) for method in methods
    ]
    sys.stdout.write(format_plan(plans))
    if args.out:
        write_tables({args.out: plan_table(plans)})


def report_command(args: argparse.Namespace) -> None:
    """The figures and pages of one method's evaluation, of NRP (`--nrp`), or of the judges (`--judges`)."""
    from examflow.io.tables import write_tables

    out = Path(args.out)
    if args.judges:
        _reported_alone(args, "judges", "the judges' tables")
        write_tables(judges_report(Path(args.judges), out))
        return
    if args.nrp:
        _reported_alone(args, "nrp", "the NRP tables", "facts")
        write_tables(nrp_report(Path(args.nrp), out, args.facts))
        return
    if not (args.eval and args.method and (args.grades or args.workbench_graded)):
        raise Failure("examflow report: give --method, --eval and --grades (or --workbench-graded), or --nrp")
    if args.grades and args.workbench_graded:
        raise Failure("examflow report: give --grades or --workbench-graded, not both")
    from examflow.outputs import REPORT, remove_unwanted

    facts, files = method_report(args)
    write_tables({out / path: content for path, content in files.items()})
    remove_unwanted(REPORT, facts, out)  # an earlier run's correlation page, its official leaderboard since removed


def _reported_alone(args: argparse.Namespace, option: str, tables: str, *used: str) -> None:
    """--judges and --nrp report their tables alone: a method's option beside them would be dropped in silence."""
    if unused := sorted(args.given - {option, "out", *used}):
        raise Failure(f"--{unused[0].replace('_', '-')}: not with --{option}, which reports {tables} alone")


def judges_report(tables: Path, out: Path) -> dict[str | Path, bytes | str]:
    """The judges' figure and page (examflow.outputs.JUDGES_REPORT) from the tables of `compare-judges`."""
    from examflow.evaluation.judges import AGREEMENT_COLUMNS, LABEL_COLUMNS
    from examflow.outputs import JUDGES, JUDGES_REPORT
    from examflow.report import figures, pages

    written = [c for c in AGREEMENT_COLUMNS if c != "note"]  # a table of before the note has none
    agreement = _tsv(tables / JUDGES["agreement"].path, written)
    labels = _tsv(tables / JUDGES["labels"].path, LABEL_COLUMNS)
    return {
        out / JUDGES_REPORT["judges_png"].path: figures.judges_figure(agreement),
        out / JUDGES_REPORT["judges_html"].path: pages.judges_page(agreement, labels),
    }


def nrp_report(tables: Path, out: Path, facts: list[str] | None) -> dict[str | Path, bytes | str]:
    """NRP's figure and page (examflow.outputs.NRP_REPORT) from the tables of `examflow nrp`: the expert's
    agreement only where the facts say an expert ranking was given (a table an earlier run left is stale)."""
    from examflow.outputs import NRP, NRP_REPORT, Facts
    from examflow.report import figures, pages

    table = {name: tables / file.path for name, file in NRP.items()}
    expert = Facts.of(facts).expert if facts is not None else table["expert_agreement"].exists()
    per_system, denominator = nrp_per_system(table["per_system"])
    selection, agreement = _tsv(table["ranker_selection"]), _tsv(table["expert_agreement"]) if expert else None
    return {
        out / NRP_REPORT["nrp_png"].path: figures.nrp_figure(per_system, denominator),
        out / NRP_REPORT["nrp_html"].path: pages.nrp_page(per_system, selection, agreement, denominator),
    }


def method_report(args: argparse.Namespace) -> tuple[Facts, dict[str, bytes | str]]:
    """The facts of one method's evaluation, and every report file of it that they ask for
    (examflow.outputs.REPORT), by path."""
    from examflow.evaluation.evaluate import grades_target
    from examflow.io.leaderboard import read_leaderboard
    from examflow.outputs import EVALUATION, REPORT, Facts, wanted
    from examflow.report import figures, pages
    from examflow.report.board import Board

    folder, method, tau = Path(args.eval), args.method, args.tau
    table = {name: folder / file.path for name, file in EVALUATION.items()}
    official = read_leaderboard(args.official) if args.official else None
    facts = Facts.of(args.facts) if args.facts is not None else Facts(bool(official), table["agreement"].exists())
    leaderboard, (grades, settings, runs) = (
        _of_method(_tsv(table["leaderboard"], BOARD_READ, **BOARD_TYPES), method, table),
        _report_inputs(args),
    )
    kind = settings.get("kind")
    official = _checked_official(args, official, runs, (table["leaderboard"], leaderboard))
    evaluated = sorted(int(t) for t in leaderboard["tau"].dropna().unique())
    if tau not in evaluated:  # the figures would be empty
        raise Failure(f"--tau {tau}: {table['leaderboard']} holds τ {', '.join(map(str, evaluated))} only")
    correlation = _tsv(table["correlation"], CORRELATION_READ, **CORRELATION_TYPES) if facts.official else None
    if correlation is not None:
        correlation = correlation[correlation["method"] == method]
    board = Board.of(leaderboard, tau, kind, args.measures, official, correlation)
    builders: dict[str, Callable[[], bytes | str]] = {
        "leaderboard_png": lambda: figures.leaderboard_figure(board),
        "leaderboard_html": lambda: pages.leaderboard_page(board),
        "scatter_png": lambda: figures.scatter_figure(board),
        "correlation_html": lambda: pages.correlation_page(board),
        "grades_png": lambda: figures.grade_distribution(grades),
        "kappa_png": lambda: figures.kappa_heatmap(_tsv(table["agreement"]), _tsv(table["kappa"])),
        "questions_html": lambda: pages.questions_page(
            _tsv(table["questions"]),
            _tsv(table["uncovered"]),
            tau,
            method,
            kind,
            judged=facts.judgments,
            top=_top_grade(settings),
        ),
        "impact_html": lambda: pages.impact_page(
            _tsv(table["impact_questions"]), _tsv(table["impact_passages"]), _tsv(table["impact_systems"]), method
        ),
        "example_html": lambda: worked_example(
            args, grades, method, _similarities(settings), grades_target(grades) != "query"
        ),
    }
    if facts.official and not args.official:
        raise Failure("--facts official: give the official leaderboard (--official)")
    return facts, {file.path: builders[name]() for name, file in wanted(REPORT, facts).items()}


def _checked_official(
    args: argparse.Namespace,
    official: dict[str, float] | None,
    evaluated: set[str] | None,
    board: tuple[Path, pd.DataFrame],
) -> dict[str, float] | None:
    """The official leaderboard of the evaluated runs, checked as `examflow evaluate` checks it: a run it
    ranks that was not evaluated (a typo) would be missing from the figures in silence; under `warn`, it
    is dropped (counted), as evaluate drops it (where it drops them all, the pages show no official run and
    name none as evaluated without a score). `evaluated`: the runs of the rankings evaluate read, where
    they are at hand (else leaderboard.tsv's): a run that no measure gives a score (under `present`, none
    of its queries has questions) has no row in leaderboard.tsv, and is no typo."""
    from examflow.io.leaderboard import match_runs
    from examflow.io.runs import RESERVED_RUNS

    if official is None:
        return None
    path, leaderboard = board
    among = ""
    if evaluated is None:
        evaluated = set(leaderboard["run_id"])
        among = f"the runs of {path} (a run evaluated without a score is known by --pool)"
    unknown = Problems(args.on_unknown_run)
    match_runs(args.official, official, evaluated - set(RESERVED_RUNS), unknown, among)
    unknown.summarise()
    return {run: rank for run, rank in official.items() if run in evaluated}


def _of_method(leaderboard: pd.DataFrame, method: str, table: dict[str, Path]) -> pd.DataFrame:
    """The method's rows of leaderboard.tsv (one evaluation may hold several: a workbench graded file's)."""
    mine = leaderboard[leaderboard["method"] == method]
    if mine.empty:
        held = ", ".join(sorted(map(str, leaderboard["method"].dropna().unique())))
        raise Failure(f"--method {method!r}: {table['leaderboard']} holds no row of it (methods: {held or 'none'})")
    return mine.reset_index(drop=True)


def _report_inputs(args: argparse.Namespace) -> tuple[pd.DataFrame, dict, set[str] | None]:
    """What the report reads of the evaluation's inputs: the method's grades, its settings (empty where not
    recorded) and the runs of the rankings the evaluation read, where they are at hand: from its grades
    table and the pool (--pool), or a workbench graded file (its rows of the method: self-ratings of the
    reference implementation; its rankings), read once."""
    from examflow.grading.grades import GRADES_READ
    from examflow.grading.merge import read_grades_metadata
    from examflow.io.tables import read_table
    from examflow.io.workbench import read_workbench_graded

    if args.grades:
        runs = set(read_table(pooled(args.pool, "rankings"), ["run_id"], only=True)["run_id"]) if args.pool else None
        return read_table(args.grades, GRADES_READ), read_grades_metadata(args.grades).get("method", {}), runs
    tables = read_workbench_graded(args.workbench_graded)
    grades = tables["grades"]
    if args.method not in set(grades["method"]):
        raise InputError(args.workbench_graded, f"no grades of method {args.method!r} (--method)")
    return grades[grades["method"] == args.method].reset_index(drop=True), {}, set(tables["rankings"]["run_id"])


def worked_example(
    args: argparse.Namespace, grades: pd.DataFrame, method: str, similarities: bool = False, reads_bank: bool = True
) -> str:
    """The worked example page: the configured topic, or else the first with questions and pooled passages.
    `reads_bank`: whether the method's targets are the bank's (a method that grades against the query needs none)."""

    from examflow.questions.shards import no_questions
    from examflow.report import pages

    needed = {"--pool": args.pool} | ({"--questions": args.questions} if reads_bank else {})
    if missing := [option for option, given in needed.items() if not given]:
        if args.example_query:  # it would be ignored
            raise Failure(f"--example-query needs {' and '.join(needed)}")
        return pages.page(f"Worked example of {method}", f"<p>No {' and '.join(missing)} given.</p>")
    passages = read_pooled(args.pool, "passages")
    passages = passages[passages["origin"] != "gold"]
    questions = read_questions(args.questions) if args.questions else no_questions()
    # the topics graded: those with questions (or nuggets), or for direct grading any with pooled passages
    topics = sorted(set(grades["query_id"]) & set(passages["query_id"]))
    # A topic without questions or passages is shown (and why there is no grade); one that is no query of
    # the pool's (a typo) would be a page of nothing.
    known = sorted(set(read_pooled(args.pool, "queries")["query_id"]))
    if args.example_query and args.example_query not in known:
        raise Failure(f"--example-query {args.example_query!r}: no query of the pool (its queries: {listed(known)})")
    query_id = args.example_query or (topics[0] if topics else None)
    if query_id is None:
        return pages.page(f"Worked example of {method}", "<p>No topic has both grades and pooled passages.</p>")
    mine = passages[passages["query_id"] == query_id]
    return pages.example_page(query_id, mine, grades, questions, method, similarities)


def _similarities(settings: dict) -> bool:
    """Whether a method's answers are similarities (the offline grader's cosines), not a model's words."""
    from examflow.registry import BACKENDS

    backend = settings.get("backend", {}).get("kind")
    return backend in BACKENDS and BACKENDS[backend].by_quantiles


def _top_grade(settings: dict) -> int | None:
    """A method's highest grade as its grades table records it: the rungs of an offline grader's quantile
    ladder (3 of `quantiles: [0.5, 0.75, 0.9]`); None, the kind's."""
    from examflow.registry import DEFAULT_QUANTILES

    return len(settings.get("quantiles", DEFAULT_QUANTILES)) if _similarities(settings) else None


# What the report reads of an evaluation's leaderboard and correlations: a damaged table is one error.
BOARD_READ = ["method", "measure", "tau", "run_id", "kind", "score", "stderr"]
BOARD_TYPES = {"tau": float, "score": float, "stderr": float}
CORRELATION_READ = ["method", "measure", "tau", "spearman", "kendall", "n_runs"]
CORRELATION_TYPES = {"tau": float, "spearman": float, "kendall": float}


def _tsv(path: Path, columns: tuple[str, ...] | list[str] = (), **types) -> pd.DataFrame:
    """A table examflow wrote, ids as written, with the `columns` and the `types` its reader needs."""
    from examflow.io.tables import read_tsv

    return read_tsv(path, columns, **types)


def _correlation(path: Path) -> pd.DataFrame:
    """correlation.tsv, read only where an official leaderboard is given: one left in the folder by an
    earlier evaluation with a leaderboard since removed would be stale."""
    if not path.exists():
        raise Failure(f"--official: {path} does not exist (evaluated without an official leaderboard?)")
    return _tsv(path, CORRELATION_READ, **CORRELATION_TYPES)


def nrp_per_system(path: Path) -> tuple[pd.DataFrame, str]:
    """NRP's per_system.tsv and the denominator (docs or list) it was computed with."""
    from examflow.nrp.evaluate import denominator_of

    table = _tsv(path)
    return table, denominator_of(table, path)


def _report_figure(path: str) -> tuple[str, bytes]:
    """(method, PNG) of a leaderboard figure `examflow report` drew: the method is the folder it is in."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputError(path, f"cannot read the figure: {error.strerror}") from None
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise InputError(path, "not a PNG image (`examflow report` draws METHOD/leaderboard.png)")
    return Path(path).parent.name, data


def summary_command(args: argparse.Namespace) -> None:

    from examflow.grading.merge import read_grades_metadata
    from examflow.io.leaderboard import read_leaderboard
    from examflow.io.tables import write_tables
    from examflow.outputs import EVALUATION
    from examflow.report.board import Board
    from examflow.summary import OfficialSource, provenance, run_summary

    graded = {meta["method"]["name"]: meta for meta in map(read_grades_metadata, args.grades)}
    flagged = _tsv(Path(args.flagged)) if args.flagged else None
    dropped = _tsv(Path(args.dropped)) if args.dropped else None
    official = read_leaderboard(args.official) if args.official else None
    boards: dict[str, Board] = {}
    taus = assignments(args.method_tau, "--method-tau", int)
    for folder in map(Path, args.eval):
        table = {name: folder / file.path for name, file in EVALUATION.items()}
        leaderboard = _tsv(table["leaderboard"], BOARD_READ, **BOARD_TYPES)
        correlation = _correlation(table["correlation"]) if official else None
        for key, rows in leaderboard.groupby("method", sort=False):
            method = cast(str, key)  # the method column holds names
            tau, option = (taus[method], f"--method-tau {method}=") if method in taus else (args.tau, "--tau ")
            if tau not in set(rows["tau"].dropna()):  # the summary's tables would be empty
                raise Failure(f"{option}{tau}: {table['leaderboard']} holds no row of {method} at that τ")
            kind = graded.get(method, {}).get("method", {}).get("kind")
            mine = correlation[correlation["method"] == method] if correlation is not None else None
            boards[method] = Board.of(rows, tau, kind, args.measures, official, mine)
    if unknown := sorted(set(taus) - set(boards)):
        raise Failure(f"--method-tau: {', '.join(map(repr, unknown))}: no such method among --eval's leaderboards")
    nrp = nrp_per_system(Path(args.nrp))[0] if args.nrp else None
    official_source = (
        OfficialSource(args.official, args.official_measure, args.official_relevance_level, args.official_query_mode)
        if args.official
        else None
    )
    judges = _tsv(Path(args.judges)) if args.judges else None
    figures: dict[str, bytes] = {}
    for method, png in map(_report_figure, args.figures):
        if method in figures:  # the second would silently replace the first
            raise Failure(f"--figures: two figures of method {method!r} (a figure's folder names its method)")
        figures[method] = png
    document = run_summary(
        graded,
        flagged,
        args.results,
        boards,
        nrp,
        args.configfile,
        official_source,
        args.snakefile,
        judges,
        args.out_summary,
        args.config_setting,
        figures,
        dropped,
    )
    record = json.dumps(provenance(graded, args.config_digest, args.bank), indent=2, sort_keys=True) + "\n"
    files = {args.out_summary: document.markdown(), args.out_provenance: record}
    if args.out_rst:
        files[args.out_rst] = document.rst()
    write_tables(files)


def with_contexts(baselines: dict[str, Baseline], inputs, settings, grading: str) -> dict[str, Baseline]:
    """Each method's baseline with its evaluation's context (`examflow.evaluation.impact.evaluation_context`),
    its models and its `grading` settings."""
    from dataclasses import replace

    from examflow.evaluation.impact import evaluation_context, method_context

    context = evaluation_context(inputs.rankings, inputs.passages, settings)
    grades = inputs.grades if "model" in inputs.grades else inputs.grades.assign(model=None)
    models = grades.groupby("method")["model"].agg(lambda named: named.dropna().unique().tolist())
    return {
        method: replace(b, context=method_context(context, models[method], grading)) for method, b in baselines.items()
    }


def edit_impact(baselines: dict[str, Baseline], stores: dict[str, BaselineStore]) -> dict[str, pd.DataFrame]:
    """impact_*.tsv: each method against its latest baseline of another bank (empty on a first run, and
    without a baseline store)."""
    import pandas as pd

    from examflow.evaluation.impact import IMPACT_FILES, bank_digest, comparable, context_differences, impact_tables

    parts: dict[str, list] = {name: [] for name in IMPACT_FILES}
    for method, baseline in baselines.items():
        previous = stores[method].previous(bank_digest(baseline.questions)) if method in stores else None
        if previous:
            log.info(
                "method %s: bank %s compared with the earlier bank %s",
                method,
                bank_digest(baseline.questions),
                previous[0],
            )
            if not comparable(previous[1], baseline):
                differences = context_differences(previous[1], baseline)
                # Said each time the evaluation reruns until the bank is edited again: it stays mixed till then.
                log.warning(
                    "method %s: the earlier bank was evaluated %s: impact lists the questions changed, not passages' or "
                    "systems' changes, which would mix those in (said each time the evaluation reruns, until the next "
                    "bank edit)",
                    method,
                    f"with other {', '.join(differences)}" if differences
                    else "by an earlier examflow, which kept one digest of its context (what differs is not known)",
                )  # fmt: skip
        for name, table in impact_tables(previous[1] if previous else None, baseline).items():
            parts[name].append(table.assign(method=method))
    return {IMPACT_FILES[name]: pd.concat(tables, ignore_index=True) for name, tables in parts.items()}


def _evaluation_inputs(args: argparse.Namespace):
    import pandas as pd

    from examflow.evaluation.evaluate import Inputs
    from examflow.io.responses import read_gold_articles
    from examflow.io.workbench import read_workbench_graded

    gold = read_gold_articles(args.gold_articles) if args.gold_articles else None
    if args.workbench_graded:
        if given := [f"--{name}" for name in ("grades", "pool", "questions") if getattr(args, name)]:
            raise Failure(f"{', '.join(given)}: not read with --workbench-graded, which holds the grades, runs and "
                          "passages it evaluates (its questions are those it graded)")  # fmt: skip
        if args.n_exam == "gold":
            raise Failure("--n-exam gold: needs graded gold articles, which a workbench graded file does not hold")
        tables = read_workbench_graded(args.workbench_graded)
        return Inputs(
            tables["grades"],
            tables["rankings"],
            None,
            tables["passages"],
            tables["judgments"],
            gold,
            graded_pool=False,
        )
    if not (args.grades and args.pool):
        raise InputError("examflow evaluate", "give --grades and --pool, or --workbench-graded")
    pool = Path(args.pool)
    grades = pd.concat(_grades_tables(args.grades), ignore_index=True)
    questions = read_questions(args.questions) if args.questions else None
    return Inputs(
        grades,
        read_pooled(pool, "rankings"),
        questions,
        read_pooled(pool, "passages"),
        read_pooled(pool, "judgments"),
        gold,
    )


def _grades_tables(paths: list[str]) -> list:
    """The grades tables given, each a method's own: a method in two of them would have its grades merged."""
    from examflow.grading.grades import GRADES_READ
    from examflow.grading.merge import job_shard, read_grades_metadata
    from examflow.io.tables import read_table, with_columns

    tables: list = []
    owner: dict[str, str] = {}
    for path in paths:
        table = read_table(path, ())
        if "method" not in table.columns:
            raise InputError(path, "not a grades table (no `method` column): give grades/METHOD.parquet")
        if shard := job_shard(read_grades_metadata(path)):  # read alone, all 0 for an embedding method, exit 0
            raise InputError(path, f"the table of one grading job ({shard}), not a method's grades: give the table "
                             "`examflow merge-grades` writes of all the method's shards")  # fmt: skip
        with_columns(path, table, GRADES_READ)
        for method in table["method"].unique():
            if method in owner:
                raise InputError(path, f"method {method!r} is in {owner[method]} too: give each method's grades once")
            owner[method] = path
        tables.append(table)
    return tables


def method_option(text: str, option: str = "--method") -> Method:
    """A grading method given as JSON on the command line, checked as a config's `grading.methods` entry is."""
    from examflow.config import check_method_option

    return check_method_option(option, json_argument(text, "--method"))


def json_argument(text: str, name: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise Failure(f"{name}: not valid JSON ({error.msg}, column {error.colno})") from None
