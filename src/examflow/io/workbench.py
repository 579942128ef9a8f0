"""The reference implementation's graded file (the Autograder Workbench's `*.jsonl.gz`).

One line per query, `[query_id, [paragraph, ...]]`; a paragraph holds its `paragraph_id`, `text`,
`paragraph_data` (`judgments`, and `rankings` = the runs that rank it) and its grades:
`exam_grades` (per question: `self_ratings`, or `correctAnswered` / `wrongAnswered` for answer
checking) and `grades` (direct grading of the whole passage). Each (prompt class, model) becomes
one grading method, named by its prompt class, qualified by the model where a class has several.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from examflow.errors import InputError
from examflow.io.lines import text_lines
from examflow.io.qrels import JUDGMENT_COLUMNS
from examflow.io.runs import RUN_COLUMNS

GRADE_COLUMNS = ["method", "query_id", "facet_id", "passage_id", "question_id", "rating", "correct", "answer", "error"]
DEFAULT_PROMPT_CLASS = "QuestionPromptWithChoices"  # what the reference assumes for grades without prompt_info


def read_workbench_graded(path: str | Path) -> dict[str, pd.DataFrame]:
    """Tables `grades`, `rankings`, `judgments` and `passages`."""
    grades, rankings, judgments, passages = [], [], [], []
    for number, query_id, paragraph in _paragraphs(path):
        where = f"paragraphs[{paragraph['_index']}]"
        passage_id = _text(path, number, paragraph, "paragraph_id", where)
        data = paragraph.get("paragraph_data") or {}
        judged = [
            _judgment(path, number, query_id, passage_id, j, f"{where}.paragraph_data")
            for j in _list(data, "judgments")
        ]
        judgments += judged
        rankings += [
            _ranking(path, number, query_id, passage_id, r, f"{where}.paragraph_data") for r in _list(data, "rankings")
        ]
        passages.append((query_id, passage_id, paragraph.get("text") or "", "judged" if judged else "retrieved"))
        for field, rows in (("exam_grades", _exam_grade_rows), ("grades", _direct_grade_rows)):
            for index, grade in enumerate(_list(paragraph, field)):
                try:
                    grades += rows(query_id, passage_id, grade)
                except (KeyError, TypeError, AttributeError, ValueError) as error:
                    raise InputError(
                        path, f"malformed grade ({error!r})", number, f"{where}.{field}[{index}]"
                    ) from None
    if not grades:
        raise InputError(path, "no grades: the file holds no exam_grades or grades")
    table = pd.DataFrame(grades, columns=["key", *GRADE_COLUMNS[1:]], dtype=object)
    table.insert(0, "method", _method_names(table.pop("key")))
    runs = pd.DataFrame(rankings, columns=RUN_COLUMNS)
    # A run may rank a passage under several facets of a page: its best rank counts.
    runs = runs.sort_values(["run_id", "query_id", "rank"]).drop_duplicates(["run_id", "query_id", "passage_id"])
    return {
        "grades": table.astype({"rating": "Int64", "correct": "boolean"}),
        "rankings": runs.reset_index(drop=True),
        "judgments": pd.DataFrame(judgments, columns=JUDGMENT_COLUMNS, dtype=object).astype({"relevance": "int64"}),
        "passages": pd.DataFrame(passages, columns=["query_id", "passage_id", "text", "origin"]).drop_duplicates(
            ["query_id", "passage_id"]
        ),
    }


def _paragraphs(path) -> Iterator[tuple[int, str, dict[str, Any]]]:
    for number, line in text_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(path, f"not valid JSON ({error.msg}, column {error.colno})", number) from None
        if not (isinstance(record, list) and len(record) == 2 and isinstance(record[0], str)):
            raise InputError(path, "expected [query_id, [paragraph, ...]]", number)
        if not isinstance(record[1], list):
            raise InputError(path, "expected a list of paragraphs", number, "paragraphs")
        for index, paragraph in enumerate(record[1]):
            if not isinstance(paragraph, dict):
                raise InputError(path, "expected a JSON object", number, f"paragraphs[{index}]")
            yield number, record[0], paragraph | {"_index": index}


def _text(path, number: int, record: dict, field: str, where: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value:
        raise InputError(path, "missing or not a string", number, f"{where}.{field}")
    return value


def _list(record: dict, field: str) -> list:
    return record.get(field) or []


def _judgment(path, number, query_id, passage_id, judgment: dict, where: str) -> tuple:
    relevance = judgment.get("relevance")
    if isinstance(relevance, bool) or not isinstance(relevance, int):
        raise InputError(path, f"relevance {relevance!r} is not an integer", number, f"{where}.judgments.relevance")
    judged_query = judgment.get("query") or query_id
    facet = judged_query.removeprefix(f"{query_id}/") if judged_query.startswith(f"{query_id}/") else None
    return query_id, facet, passage_id, relevance


def _ranking(path, number, query_id, passage_id, ranking: dict, where: str) -> tuple:
    run_id, rank, score = ranking.get("method"), ranking.get("rank"), ranking.get("score")
    if not isinstance(run_id, str) or not run_id:
        raise InputError(path, "missing run name", number, f"{where}.rankings.method")
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise InputError(path, f"rank {rank!r} is not an integer", number, f"{where}.rankings.rank")
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise InputError(path, f"score {score!r} is not a number", number, f"{where}.rankings.score")
    return run_id, query_id, passage_id, rank, float(score)


def _key(grade: dict) -> tuple[str, str]:
    info = grade.get("prompt_info") or {}
    return info.get("prompt_class") or DEFAULT_PROMPT_CLASS, grade.get("llm") or ""


def _exam_grade_rows(query_id: str, passage_id: str, grade: dict) -> list[tuple]:
    key, answers = _key(grade), dict(grade.get("answers") or [])
    errors = grade.get("llm_response_errors") or {}
    ratings = grade.get("self_ratings")
    if ratings is not None:  # self-rated: the rating is the grade; correctAnswered only derives from it
        return [
            (key, query_id, None, passage_id, r.get("question_id") or r.get("nugget_id"), r["self_rating"], None,
             answers.get(r.get("question_id")), None)
            for r in ratings
        ]  # fmt: skip
    rows = [(key, query_id, None, passage_id, q, None, True, answers.get(q), None) for q in grade["correctAnswered"]]
    rows += [(key, query_id, None, passage_id, q, None, False, answers.get(q), None) for q in grade["wrongAnswered"]]
    rows += [(key, query_id, None, passage_id, q, None, None, None, str(e)) for q, e in errors.items()]
    return rows


def _direct_grade_rows(query_id: str, passage_id: str, grade: dict) -> list[tuple]:
    rating = grade.get("self_ratings")
    if rating is None:
        rating = int(bool(grade.get("correctAnswered")))
    error = grade.get("llm_response_error")
    rating = None if error else rating
    return [(_key(grade), query_id, None, passage_id, query_id, rating, None, grade.get("answer"), error)]


def _method_names(keys: pd.Series) -> pd.Series:
    models = {}
    for prompt_class, llm in set(keys):
        models.setdefault(prompt_class, set()).add(llm)
    return keys.map(lambda key: key[0] if len(models[key[0]]) == 1 else f"{key[0]}:{key[1]}")
