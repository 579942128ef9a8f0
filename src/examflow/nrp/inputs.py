"""NRP's inputs beyond EXAM's readers: generated answers and an expert's ranking of a few items.

Answers are JSONL `{"llm", "prompt", "sample", "query_id", "text"}`; an answer is named
`{llm}/{prompt}/{sample}` wherever it meets a document id (a run file, an expert ranking), so
these three hold no `/` and no answer name is also a judged document of its query: every name
means one item.
An expert ranking is JSON `{query_id: [item, ...]}` (best first) or TSV `query_id<TAB>item<TAB>rank`
(rank 1 is best; equal ranks tie); an item is a judged document id or an answer's name.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import pandas as pd

from examflow.errors import InputError, Problems, counted, listed
from examflow.io.collection import Origin
from examflow.io.lines import (
    base_suffix,
    check_id,
    json_entries,
    json_lines,
    misspelling_of,
    required_id,
    split_columns,
    text_lines,
)
from examflow.io.qrels import DEFAULT_RANGE, read_qrels
from examflow.registry import RANKERS

log = logging.getLogger(__name__)

ANSWER_COLUMNS = ["llm", "prompt", "sample", "query_id", "text", "answer"]
EXPERT_COLUMNS = ["query_id", "item", "rank"]
SEPARATOR = "/"  # between the llm, prompt and sample of an answer's name
COMBINED = "combined"  # the weighted sum of the dimensions' NRP, a dimension of the tables beside them
_Ranked = tuple[int | None, str, str, float]  # an expert's rank: (line, query_id, item, rank)


def answer_name(llm: str, prompt: str, sample: str) -> str:
    return SEPARATOR.join((llm, prompt, sample))


def read_answers(
    path: str | Path, query_ids: set[str], unknown_queries: Problems, documents: dict[str, set[str]] | None = None
) -> pd.DataFrame:
    """One row per answer; `answer` says whether its text is `given` or `empty` (scored as "").
    `documents`: each query's judged document ids, which no answer name may equal."""
    rows: list[tuple[str, str, str, str, str, str]] = []
    first_line: dict[tuple[str, str, str, str], int] = {}  # (llm, prompt, sample, query_id) -> its line
    for number, record in json_lines(path):
        llm, prompt, sample, query_id = (
            required_id(path, number, record, f) for f in ("llm", "prompt", "sample", "query_id")
        )
        for field, value in (("llm", llm), ("prompt", prompt), ("sample", sample)):
            if SEPARATOR in value:
                raise InputError(path, f"{value!r} holds {SEPARATOR!r}, which separates llm/prompt/sample in "
                                 "answer names", number, field)  # fmt: skip
        name = answer_name(llm, prompt, sample)
        if name in (documents or {}).get(query_id, ()):
            raise InputError(path, f"the answer name {name!r} is also a judged document of query {query_id!r}",
                             number, "sample")  # fmt: skip
        if query_id not in query_ids:
            unknown_queries.report(
                "answers with an unknown query id",
                InputError(path, f"unknown query id {query_id!r}", number, "query_id"),
            )
            continue
        if "text" not in record:  # a misspelt key (`txt`, `Text`) would have read as an empty answer
            hint = misspelling_of(record, "text")
            raise InputError(path, f'missing{hint}: write "" or null for a system that gave no answer', number, "text")
        text = record["text"]
        if text is not None and not isinstance(text, str):
            raise InputError(path, f"expected a string or null, found {type(text).__name__}", number, "text")
        key = (llm, prompt, sample, query_id)
        if key in first_line:
            raise InputError(path, f"a second answer {name} to query {query_id!r} "
                             f"(first on line {first_line[key]})", number, "sample")  # fmt: skip
        first_line[key] = number
        given = bool(text and text.strip())
        kept = text if text and given else ""  # given implies a text: `text and` only narrows its type
        rows.append((llm, prompt, sample, query_id, kept, "given" if given else "empty"))
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


def complete_answers(answers: pd.DataFrame, query_ids: list[str]) -> pd.DataFrame:
    """Every (llm, prompt) system with each of its samples for every query: an absent answer is
    `missing`, scored as the empty string."""
    grid = (
        answers[["llm", "prompt", "sample"]].drop_duplicates().merge(pd.DataFrame({"query_id": query_ids}), how="cross")
    )
    full = grid.merge(
        answers[answers["query_id"].isin(query_ids)], on=["llm", "prompt", "sample", "query_id"], how="left"
    )
    missing = full["answer"].isna()
    full.loc[missing, ["text", "answer"]] = ["", "missing"]
    return full.sort_values(["llm", "prompt", "query_id", "sample"]).reset_index(drop=True)[ANSWER_COLUMNS]


def read_expert(path: str | Path, known: dict[str, set[str]]) -> pd.DataFrame:
    """The expert's ranks; `known`: each judged query's judged documents and answer names."""
    rows: Iterable[_Ranked] = _expert_json(path) if base_suffix(path) == ".json" else _expert_tsv(path)
    seen: set[tuple[str, str]] = set()
    ranks: dict[str, list[tuple[int | None, float]]] = {}  # query_id -> (line, rank) of each of its items
    for number, query_id, item, rank in (rows := list(rows)):
        if query_id not in known:
            raise InputError(path, f"{query_id!r} is no query with a judged document", number, "query_id")
        if item not in known[query_id]:
            raise InputError(path, f"{item!r} is no judged document or answer of query {query_id!r}", number, "item")
        if (query_id, item) in seen:
            raise InputError(path, f"item {item!r} ranked twice for query {query_id!r}", number, "item")
        seen.add((query_id, item))
        ranks.setdefault(query_id, []).append((number, rank))
    for query_id, ranked in ranks.items():  # Kendall's τ needs two items the expert tells apart
        if len({rank for _, rank in ranked}) < 2:
            raise InputError(path, f"query {query_id!r}: rank at least two items, not all tied", ranked[-1][0], "rank")
    return pd.DataFrame([row[1:] for row in rows], columns=EXPERT_COLUMNS)


def rankers_needing_texts(rankers: list[dict]) -> list[str]:
    """The names of the rankers that score the documents' texts (all but `run`)."""
    return [ranker["name"] for ranker in rankers if RANKERS[ranker["kind"]].reads_texts]


def dimension_problem(name: str) -> str | None:
    """Why `name` cannot name a quality dimension, or None: `combined` is the weighted sum's row in every
    table, and a dimension reaches the command as `NAME=QRELS`."""
    if name == COMBINED:
        return f"{COMBINED!r} names the weighted sum of the dimensions in the tables: name the dimension otherwise"
    if not name or any(c.isspace() or c == "=" for c in name):
        return f"{name!r}: a dimension's name is one word without '='"
    return None


def cannot_judge_problem(labels: Collection[int], relevance_range: tuple[int, int], option: str) -> str | None:
    """Why these "cannot judge" labels cannot be, or None: a qrels line holding a label outside the
    relevance range (`option`) is refused as it is read, so such a label would never be met."""
    low, high = relevance_range
    if outside := sorted(label for label in labels if not low <= label <= high):
        return (f"label {outside[0]} is outside the relevance range {low}..{high} ({option}), which refuses it in a "
                "qrels line")  # fmt: skip
    return None


def weight_problem(weights: dict[str, float], dimensions: list[str]) -> str | None:
    """Why these weights of the combined NRP cannot be used, or None. A dimension without a weight
    would silently drop out of the sum, and a NaN weight would drop every combined value."""
    if unweighted := [d for d in dimensions if d not in weights]:
        return f"give every dimension a weight, or none (equal weights): {unweighted[0]!r} has none"
    for dimension, weight in weights.items():
        if not (math.isfinite(weight) and weight >= 0):
            return f"the weight of {dimension!r} is {weight}: a weight is a finite number, 0 or more"
    total = math.fsum(weights.values())
    if not total:
        return "every weight is 0"
    if not math.isclose(total, 1.0, rel_tol=1e-9):  # 3 and 1 read as a ratio gave a `combined` NRP of 2.79
        shares = ", ".join(f"{d}={w / total:.4g}" for d, w in weights.items())
        return f"the weights sum to {total:.10g}: the combined NRP is a weighted mean, its weights sum to 1 ({shares})"
    return None


def combined_dimensions(weights: dict[str, float]) -> list[str]:
    """The dimensions the combined NRP is made of: those of a weight above 0, where there are several. A
    dimension weighted 0 is switched off: its queries judged or not, it takes no answer out of `combined`."""
    return [dimension for dimension, weight in weights.items() if weight > 0] if len(weights) > 1 else []


def read_judgments(
    qrels: dict[str, str],
    queries: pd.DataFrame,
    unknown: Problems,
    cannot_judge: dict[str, set[int]],
    relevance_range: tuple[int, int] = DEFAULT_RANGE,
    combined: Collection[str] = (),
) -> dict[str, pd.DataFrame]:
    """Each quality dimension's judgments, its "cannot judge" labels left out (they are no judgments).
    NRP ranks among a query's documents: a subtopic's judgment (`query/facet`) is an unknown query,
    not a second judgment of the same document, which would count it twice in D_q. `combined`: the
    dimensions of the combined NRP, whose query left out leaves it out of `combined` too."""
    whole = queries.drop_duplicates("query_id").assign(facet_id=None)
    judgments, labelled = {}, {}
    for dimension, path in qrels.items():
        table = read_qrels(path, whole, unknown, relevance_range)
        judged = table[~table["relevance"].isin(cannot_judge.get(dimension, set()))].reset_index(drop=True)
        labelled[dimension] = set(table["query_id"])
        if gone := sorted(labelled[dimension] - set(judged["query_id"])):  # it has no D_q in this dimension
            log.warning("dimension %s: %s only cannot-judge labels (%s), so no NRP there%s: %s", dimension,
                        _queries(gone, "has", "have"), path, _nor_combined(dimension, combined), listed(gone))  # fmt: skip
        judgments[dimension] = judged
    # one its file leaves out, where another dimension judges it: the tables would show fewer queries, unsaid
    every = set().union(*(set(table["query_id"]) for table in judgments.values()))
    for dimension, path in qrels.items():
        if lacking := sorted(every - labelled[dimension]):
            log.warning("dimension %s judges no document of %s another dimension judges (%s), so no NRP there%s: "
                        "%s", dimension, _queries(lacking), path, _nor_combined(dimension, combined),
                        listed(lacking))  # fmt: skip
    return judgments


def _nor_combined(dimension: str, combined: Collection[str]) -> str:
    return ", nor a combined one" if dimension in combined else ""


def _queries(ids: list[str], one: str = "", more: str = "") -> str:
    """`1 query has`, `3 queries have` (`one`, `more`: the verb, if any)."""
    return counted(len(ids), f"query {one}".rstrip(), f"queries {more}".rstrip())


def judged_origins(judgments: dict[str, pd.DataFrame], qrels: dict[str, str], ids: list[str]) -> dict[str, Origin]:
    """Where each judged document id comes from, for a message on one the collection lacks: the line of
    the first dimension's qrels that judges it."""
    where: dict[str, Origin] = {}
    for dimension, judged in judgments.items():
        rows = judged[judged["passage_id"].isin(set(ids) - where.keys())].drop_duplicates("passage_id")
        for doc_id, query_id in zip(rows["passage_id"], rows["query_id"]):
            said = f"dimension {dimension!r} judges it for query {query_id!r}"
            where[doc_id] = Origin.at_line(said, qrels[dimension], query_id, doc_id)
    return where


def _expert_json(path: str | Path) -> Iterator[_Ranked]:
    for number, query_id, items in json_entries(path, "{query_id: [item, ...]}", "query_id"):
        if isinstance(items, list):  # an id of digits alone (MS MARCO's) may be a JSON number: the id as text
            items = [str(i) if type(i) is int else i for i in items]  # not a bool, which is an int too
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items) or len(items) < 2:
            raise InputError(path, "expected a list of at least two item ids, best first", number, query_id)
        for rank, item in enumerate(items, 1):
            check_id(path, number, item, "item")
            yield number, query_id, item, float(rank)


def _expert_tsv(path: str | Path) -> Iterator[_Ranked]:
    for number, line in text_lines(path):
        query_id, item, rank = split_columns(path, number, line, ("query_id", "item", "rank"), "\t")
        check_id(path, number, query_id, "query_id")
        check_id(path, number, item, "item")
        try:
            value = float(rank)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(path, f"not a finite number: {rank!r}", number, "rank")
        yield number, query_id, item, value
