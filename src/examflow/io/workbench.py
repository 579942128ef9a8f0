"""The reference implementation's graded file (the Autograder Workbench's `*.jsonl.gz`).

One line per query, `[query_id, [paragraph, ...]]`; a paragraph holds its `paragraph_id`, `text`,
`paragraph_data` (`judgments`, and `rankings` = the runs that rank it) and its grades:
`exam_grades` (per question: `self_ratings`, or `correctAnswered` / `wrongAnswered` for answer
checking) and `grades` (direct grading of the whole passage). Each (prompt class, model) becomes
one grading method, named by its prompt class, qualified by the model where a class has several.
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa

from examflow.errors import InputError
from examflow.io.lines import JSON_FAILURES, check_id, decode, json_problem, raw_lines
from examflow.io.qrels import judgment_table
from examflow.registry import TOP_GRADE

# The model's answers are not read: no measure uses them, and they are a quarter of the decoding time.
DEFAULT_PROMPT_CLASS = "QuestionPromptWithChoices"  # what the reference assumes for grades without prompt_info
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Grade = Annotated[int, msgspec.Meta(ge=0, le=TOP_GRADE)]  # a self-rating: a 9 would pass every threshold


# The file's schema, as far as examflow reads it; msgspec checks every type while it decodes (a
# DL 2019 file in a tenth of a second) and names the field that breaks it. Other fields are ignored.
# The structs hold no references back (gc=False): the garbage collector need not track them.
class SelfRating(msgspec.Struct, gc=False):
    self_rating: Grade
    question_id: str | None = None
    nugget_id: str | None = None


class PromptInfo(msgspec.Struct, gc=False):
    """Of the prompt's description, its class: what names the method (a struct, not a dict: the rest is skipped)."""

    prompt_class: str | None = None


class ExamGrade(msgspec.Struct, gc=False):
    """Per-question grades: self-ratings, or the questions answered correctly and wrongly."""

    correctAnswered: list[str]
    wrongAnswered: list[str]
    llm: str | None = None
    prompt_info: PromptInfo | None = None
    self_ratings: list[SelfRating] | None = None
    llm_response_errors: dict[str, Any] | None = None


class DirectGrade(msgspec.Struct, gc=False):
    """One grade of the whole passage."""

    correctAnswered: bool | None = None
    llm: str | None = None
    prompt_info: PromptInfo | None = None
    self_ratings: Grade | None = None
    llm_response_error: str | None = None


class Judgment(msgspec.Struct, gc=False):
    relevance: int
    query: str | None = None


class Ranking(msgspec.Struct, gc=False):
    method: NonEmpty
    rank: Annotated[int, msgspec.Meta(ge=0)]  # used as written: a negative rank would pass every budget rank ≤ k
    score: float


class ParagraphData(msgspec.Struct, gc=False):
    judgments: list[Judgment] | None = None
    rankings: list[Ranking] | None = None


class Paragraph(msgspec.Struct, gc=False):
    paragraph_id: NonEmpty
    text: str | None = None
    paragraph_data: ParagraphData | None = None
    exam_grades: list[ExamGrade] | None = None
    grades: list[DirectGrade] | None = None


Line = tuple[str, list[Paragraph]]
_DECODER = msgspec.json.Decoder(Line)


def read_workbench_graded(path: str | Path) -> dict[str, pd.DataFrame]:
    """Tables `grades`, `rankings`, `judgments` and `passages`."""
    # A DL 2019 file is a million small objects without cycles: the garbage collector would walk
    # them over and over as they accumulate (a third of the reading time) and free nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(path)
    finally:
        if enabled:
            gc.enable()


def _read(path: str | Path) -> dict[str, pd.DataFrame]:
    grades, judgments, passages = _GradeColumns(), [], []
    rankings: dict[str, list] = {"run_id": [], "rank": [], "score": []}  # by column: 9 of 10 records are rankings
    ranked_per_passage: list[int] = []  # a ranking's query and passage are its paragraph's: not repeated here
    lines: dict[str, int] = {}  # each query's line
    for number, raw in raw_lines(path):
        query_id, paragraphs = _line(path, number, raw)
        _once(path, number, query_id, paragraphs, lines)
        for at, paragraph in enumerate(paragraphs):
            passage_id, data = paragraph.paragraph_id, paragraph.paragraph_data or ParagraphData()
            check_id(path, number, passage_id, f"paragraphs[{at}].paragraph_id")  # a qrels line's column
            judged = [(query_id, _facet(query_id, j.query), passage_id, j.relevance) for j in data.judgments or []]
            judgments += judged
            ranked = data.rankings or []
            rankings["run_id"] += [r.method for r in ranked]
            ranked_per_passage.append(len(ranked))
            rankings["rank"] += [r.rank for r in ranked]
            rankings["score"] += [r.score for r in ranked]
            passages.append((query_id, passage_id, paragraph.text or "", "judged" if judged else "retrieved"))
            for grade in paragraph.exam_grades or []:
                grades.add_exam_grade(query_id, passage_id, grade)
            for g, direct in enumerate(paragraph.grades or []):
                if direct.self_ratings is None and direct.correctAnswered is None and direct.llm_response_error is None:
                    field = f"paragraphs[{at}].grades[{g}]"
                    raise InputError(path, "a grade needs self_ratings or correctAnswered", number, field)
                grades.add_direct_grade(query_id, passage_id, direct)
    if not grades.sizes:
        raise InputError(path, "no grades: the file holds no exam_grades or grades")
    passage_table = pd.DataFrame(passages, columns=["query_id", "passage_id", "text", "origin"])
    runs = _ranking_table(rankings, ranked_per_passage, passage_table)
    _check_run_ids(path, runs["run_id"].unique())
    return {
        # Ids as strings, as a TSV reads them: joins with the runs' strings then need no conversion.
        "grades": grades.table(path),
        "rankings": runs.reset_index(drop=True),
        "judgments": judgment_table(judgments),
        "passages": passage_table,
    }


class _GradeColumns:
    """The grades' rows by column: a grade's rows, one per question, share its query, passage and method,
    kept once per grade (a tuple per row, transposed, took twice the time)."""

    def __init__(self) -> None:
        self.where: list[tuple[str, str]] = []  # each grade's (query, passage)
        self.keys: list[tuple[str, str]] = []  # each grade's (prompt class, model): its method's name, once
        self.sizes: list[int] = []  # each grade's rows
        self.question_id: list[str | None] = []
        self.rating: list[int | None] = []
        self.correct: list[bool | None] = []
        self.error: list[str | None] = []

    def add_exam_grade(self, query_id: str, passage_id: str, grade: ExamGrade) -> None:
        failed = grade.llm_response_errors or {}
        if grade.self_ratings is not None:  # self-rated: the rating is the grade; correctAnswered derives from it
            rated = [r.question_id or r.nugget_id for r in grade.self_ratings]
            if failed:  # a question both rated and failed keeps its rating
                kept = set(rated)
                failed = {q: e for q, e in failed.items() if q not in kept}
            self._add(query_id, passage_id, grade, rated, failed, rating=[r.self_rating for r in grade.self_ratings])
        else:
            verdicts = [True] * len(grade.correctAnswered) + [False] * len(grade.wrongAnswered)
            self._add(
                query_id, passage_id, grade, grade.correctAnswered + grade.wrongAnswered, failed, correct=verdicts
            )

    def add_direct_grade(self, query_id: str, passage_id: str, grade: DirectGrade) -> None:
        """One row, its question the query; failed where it names an error (even an empty one, as in exam grades)."""
        if grade.llm_response_error is not None:
            self._add(query_id, passage_id, grade, [], {query_id: grade.llm_response_error})
        else:
            rating = grade.self_ratings if grade.self_ratings is not None else int(bool(grade.correctAnswered))
            self._add(query_id, passage_id, grade, [query_id], {}, rating=[rating])

    def _add(self, query_id, passage_id, grade, graded: list, failed: dict, rating=None, correct=None) -> None:
        """One grade's rows: the questions `graded` (their `rating`s or `correct` verdicts, where given), then
        those `failed` (question -> the error)."""
        if not graded and not failed:  # a grade of no question names no method: it must not qualify another's name
            return
        self.where.append((query_id, passage_id))
        self.keys.append(_key(grade))
        self.sizes.append(len(graded) + len(failed))
        self.question_id += graded + list(failed)
        self.error += [None] * len(graded) + [str(e) for e in failed.values()]
        for column, values in ((self.rating, rating), (self.correct, correct)):
            column += (values or [None] * len(graded)) + [None] * len(failed)

    def table(self, path) -> pd.DataFrame:
        """Each column through Arrow: ids as strings, as a TSV reads them (joins with the runs' strings then
        need no conversion), ratings and verdicts nullable."""
        grade = pa.array(np.repeat(np.arange(len(self.sizes)), self.sizes))  # each row's grade
        queries, passages = (pa.array(ids, pa.string()).take(grade) for ids in zip(*self.where))
        rows = len(self.question_id)
        table = pd.DataFrame({
            "query_id": _text(queries),
            "facet_id": _text(pa.nulls(rows, pa.string())),
            "passage_id": _text(passages),
            "question_id": _text(pa.array(self.question_id, pa.string())),
            "rating": pa.array(self.rating, pa.int64()).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get),
            "correct": pa.array(self.correct, pa.bool_()).to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get),
            "error": _text(pa.array(self.error, pa.string())),
        })  # fmt: skip
        table.insert(0, "method", np.repeat(np.array(_method_names(path, self.keys), dtype=object), self.sizes))
        return table


def _text(array: pa.Array) -> pd.Series:
    return array.to_pandas()  # pandas' own text type (a types_mapper would make objects)


def _ranking_table(rankings: dict[str, list], counts: list[int], passages: pd.DataFrame) -> pd.DataFrame:
    """The runs' rankings (`counts[i]` of them rank passage `i`), by run, query and rank; a run that ranks a
    passage under several facets of a page keeps its best rank. Built and ordered in Arrow on integer codes:
    sorting 300,000 rows by their strings took longer than reading them."""
    owner = np.repeat(np.arange(len(counts)), counts)  # each ranking's passage
    query_ids, passage_ids = (
        pa.array(passages[c].to_numpy(dtype=object), pa.string()) for c in ("query_id", "passage_id")
    )
    runs, queries = pa.array(rankings["run_id"], pa.string()).dictionary_encode(), query_ids.dictionary_encode()
    run_code, query_code = (_sorted_codes(array) for array in (runs, queries))
    ranks = np.array(rankings["rank"], dtype=np.int64)
    order = _stable_order([run_code, query_code[owner], ranks])
    # the first of a (run, passage) pair in this stable order has its best rank
    order = order[~pd.Series(run_code[order] * max(len(counts), 1) + owner[order]).duplicated().to_numpy()]
    at = pa.array(owner[order])
    table = pa.table({
        "run_id": runs.dictionary.take(runs.indices.take(pa.array(order))),
        "query_id": query_ids.take(at),
        "passage_id": passage_ids.take(at),
        "rank": ranks[order],
        "score": np.array(rankings["score"], dtype=np.float64)[order],
    })  # fmt: skip
    return table.to_pandas()


def _stable_order(keys: list[np.ndarray]) -> np.ndarray:
    """The rows' order by the keys (non-negative integers; the first decides), equal rows in their order:
    np.lexsort's. Where the keys and the row number fit one int64, a plain sort of it (a seventh of the time
    on 300,000 rows: numpy sorts int64 with SIMD, and unique keys need no stable sort)."""
    rows = len(keys[0])
    sizes = [int(key.max()) + 1 if rows else 1 for key in keys]
    if math.prod(sizes) * max(rows, 1) >= 2**63:
        return np.lexsort(keys[::-1])
    packed = np.zeros(rows, dtype=np.int64)
    for key, size in zip(keys, sizes):
        packed = packed * size + key
    return np.sort(packed * rows + np.arange(rows)) % max(rows, 1)


def _sorted_codes(array: pa.DictionaryArray) -> np.ndarray:
    """Each value's place in the sorted order of the distinct values (code points: Arrow's byte order)."""
    values = array.dictionary.to_pylist()
    place = np.empty(len(values), dtype=np.int64)
    place[sorted(range(len(values)), key=values.__getitem__)] = np.arange(len(values))
    return place[array.indices.to_numpy(zero_copy_only=False)]


def _once(path, number: int, query_id: str, paragraphs: list[Paragraph], lines: dict[str, int]) -> None:
    """Each query on one line, under an id without whitespace, and each passage once in it: a second
    copy's grades would have merged with the first's, and its qrels line vanished."""
    check_id(path, number, query_id, "query id")
    if query_id in lines:
        raise InputError(path, f"query {query_id!r} is on line {lines[query_id]} too: one line per query", number)
    lines[query_id] = number
    if len({p.paragraph_id for p in paragraphs}) < len(paragraphs):
        first: dict[str, int] = {}
        for at, paragraph in enumerate(paragraphs):
            if (earlier := first.setdefault(paragraph.paragraph_id, at)) != at:
                message = f"{paragraph.paragraph_id!r} is paragraphs[{earlier}]'s id too: a passage once per query"
                raise InputError(path, message, number, f"paragraphs[{at}].paragraph_id")


_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<where>.*)`)?$", re.DOTALL)
_UNSAFE = re.compile(r"[^\w.:+=@-]", re.ASCII)


def _line(path, number: int, raw: bytes) -> Line:
    """One line, `[query_id, [paragraph, ...]]`, checked; an error names the line and the field."""
    if raw.isascii():  # the common case, read without a copy as text (msgspec checks the UTF-8 of only
        try:  # the fields it keeps: anything else goes through the strict decoding below)
            return _DECODER.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass  # read again below, to name the problem (or to read Python's NaN)
    text = decode(path, number, raw)
    try:
        try:
            return _DECODER.decode(text)
        except msgspec.DecodeError:  # Python writes NaN and Infinity, which JSON does not have
            return _finite_scores(path, number, msgspec.convert(json.loads(text), Line))
    except msgspec.ValidationError as error:  # a ValueError too: before JSON_FAILURES
        found = _AT.match(str(error))
        assert found is not None  # every part of the pattern may be empty: it matches any message
        where = re.sub(r"^\[1\]", "paragraphs", found["where"] or "")
        if not where.startswith("paragraphs["):
            raise InputError(path, "expected [query_id, [paragraph, ...]]", number) from None
        message = found["message"][:1].lower() + found["message"][1:]
        raise InputError(path, message, number, where) from None
    except JSON_FAILURES as error:
        raise InputError(path, f"not valid JSON ({json_problem(error)})", number) from None


def _finite_scores(path, number: int, line: Line) -> Line:
    """A line that Python's JSON reader read (it reads NaN and 1e400 as floats): a run's score of NaN or
    infinity has no place in trec_eval's order of documents."""
    for at, paragraph in enumerate(line[1]):
        for r, ranking in enumerate((paragraph.paragraph_data or ParagraphData()).rankings or []):
            if not math.isfinite(ranking.score):
                field = f"paragraphs[{at}].paragraph_data.rankings[{r}].score"
                raise InputError(path, f"{ranking.score} is no finite number", number, field)
    return line


def _facet(query_id: str, judged_query: str | None) -> str | None:
    judged_query = judged_query or query_id
    return judged_query.removeprefix(f"{query_id}/") if judged_query.startswith(f"{query_id}/") else None


def _key(grade: ExamGrade | DirectGrade) -> tuple[str, str]:
    return (grade.prompt_info and grade.prompt_info.prompt_class) or DEFAULT_PROMPT_CLASS, grade.llm or ""


def _method_names(path, keys: list[tuple[str, str]]) -> list[str]:
    """Each grade's method: its prompt class, qualified by its model where a class has several, made a
    safe file name (it names the method's qrels file): `google/flan-t5-large` and `../x` stay inside."""
    models: dict[str, set[str]] = {}  # prompt class -> the models graded with it
    for prompt_class, llm in set(keys):
        models.setdefault(prompt_class, set()).add(llm)
    names = {key: _safe(key[0] if len(models[key[0]]) == 1 else f"{key[0]}:{key[1]}") for key in sorted(set(keys))}
    if len(set(names.values())) < len(names):
        shared = next(name for name, count in Counter(names.values()).items() if count > 1)
        raise InputError(path, f"two prompt classes or models would both be named {shared!r} (as a file name)")
    return [names[key] for key in keys]


def _safe(name: str) -> str:
    """Letters, digits and `_.:+=@-`, every other character `_`; never a name of `.` alone or hidden."""
    safe = _UNSAFE.sub("_", name)
    return f"_{safe}" if not safe or safe.startswith(".") else safe


def _check_run_ids(path, runs) -> None:
    """Run ids without whitespace (they are a TREC column); a bad one is named at its first line."""
    for run in runs:
        if not run or any(ch.isspace() for ch in run):
            number, at, r = next((n, a, r) for n, raw in raw_lines(path)
                                 for a, p in enumerate(_line(path, n, raw)[1])
                                 for r, ranking in enumerate((p.paragraph_data or ParagraphData()).rankings or [])
                                 if ranking.method == run)  # fmt: skip
            check_id(path, number, run, f"paragraphs[{at}].paragraph_data.rankings[{r}].method")
