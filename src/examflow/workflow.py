"""What the Snakefile asks before it schedules a job: which shards to grade, and whether the
inputs it can check cheaply (bank query ids, the official leaderboard's runs) agree."""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass

from examflow.errors import InputError, Problems
from examflow.io import read_queries
from examflow.io.leaderboard import match_runs, read_leaderboard
from examflow.io.lines import raw_lines
from examflow.io.responses import response_run_ids
from examflow.outputs import Facts
from examflow.questions.bank import read_bank
from examflow.questions.shards import shard_digests, shard_of
from examflow.registry import KINDS

log = logging.getLogger("examflow")


@dataclass(frozen=True)
class BankQueries:
    digests: dict[str, str]  # content digest of each shard's questions
    with_items: dict[str, int]  # query id -> line of its first entry, for queries with questions
    lines: dict[str, int]  # every query id in the bank -> line of its first entry
    facets: bool  # some question or nugget has a facet (subtopic) id


@functools.cache
def bank_queries(path: str, modified: float, shards: int = 16) -> BankQueries:
    """The bank read once per version of the file (`modified` keys the cache)."""
    entries = read_bank(path)
    lines, with_items = {}, {}
    for entry in entries:
        lines.setdefault(entry.query_id, entry.line)
        if entry.items:
            with_items.setdefault(entry.query_id, entry.line)
    facets = any(item.facet_id is not None for entry in entries for item in entry.items)
    return BankQueries(shard_digests(entries, shards), with_items, lines, facets)


@functools.cache
def query_table(spec: str):
    """The queries, read once per Snakefile parse."""
    return read_queries(spec)


def has_facets(spec: str) -> bool:
    return bool(query_table(spec)["facet_id"].notna().any())


def configured_facts(config: dict, generate: bool) -> Facts:
    """The facts that decide which files the steps write (examflow.outputs), from the configuration."""
    inputs, nrp = config["inputs"] or {}, config["nrp"] or {}
    return Facts(
        official=bool(inputs.get("official_leaderboard")),
        judgments=bool(inputs.get("qrels")),
        facets=bool(inputs) and graded_facets(inputs, generate, config["grading"]),
        wilcoxon=bool(nrp.get("wilcoxon")),
        expert=bool(nrp.get("expert")),
    )


def graded_facets(inputs: dict, generate: bool, grading: dict) -> bool:
    """Whether some method grades targets with subtopic ids: questions or nuggets the bank gives a facet
    id (a generated bank: one per subtopic), or, in direct grading, the queries' own subtopics."""
    if not has_facets(inputs["queries"]):
        return False
    if generate or any(KINDS[method["kind"]].target == "query" for method in grading["methods"]):
        return True
    bank = inputs["bank"]
    return bool(bank) and bank_queries(bank, os.path.getmtime(bank), grading["shards"]).facets


def graded_shards(queries_spec: str, bank: str, generate: bool, validation: dict, shards: int = 16) -> list[str]:
    """Shards of the queries that have questions; bank queries that are not queries are problems."""
    query_ids = set(query_table(queries_spec)["query_id"])
    if generate:  # every query gets questions, or generation fails naming it
        return sorted({shard_of(q, shards) for q in query_ids})
    found = bank_queries(bank, os.path.getmtime(bank), shards)
    unknown = Problems(validation["unknown_queries"])
    for query_id in sorted(set(found.lines) - query_ids):
        unknown.report(
            "bank entries with an unknown query id",
            InputError(bank, f"unknown query id {query_id!r}", found.lines[query_id], "query_id"),
        )
    unknown.summarise()
    without = sorted(query_ids - set(found.with_items))
    if without:
        shown = ", ".join(without[:5]) + (", ..." if len(without) > 5 else "")
        log.warning(
            "%d of %d queries have no questions in %s and get no grading jobs: %s",
            len(without), len(query_ids), bank, shown,
        )  # fmt: skip
    return sorted({shard_of(q, shards) for q in set(found.with_items) & query_ids})


def check_leaderboard(inputs: dict, run_files: list[str], validation: dict) -> None:
    """The official leaderboard read, and its runs matched with the runs to evaluate."""
    path = inputs["official_leaderboard"]
    official = read_leaderboard(path)
    evaluated = {run_tag(file) for file in run_files}
    if inputs["responses"]:
        evaluated |= response_run_ids(inputs["responses"])
    problems = Problems(validation["leaderboard_runs"])
    for note in match_runs(path, official, evaluated, problems):
        log.warning("%s", note)
    problems.summarise()


def run_tag(path: str) -> str:
    """The run tag on a run file's first line (one run per file; pooling checks the rest)."""
    for number, raw in raw_lines(path):
        columns = raw.split()
        if len(columns) != 6:
            raise InputError(
                path, f"expected 6 columns (query_id Q0 doc_id rank score run_tag), found {len(columns)}", number
            )
        return columns[5].decode("utf-8", errors="replace")
    raise AssertionError("raw_lines raises on an empty file")
