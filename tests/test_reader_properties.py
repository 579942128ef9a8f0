"""Every reader, on any input: it loads, or it fails with an InputError naming the file — never
another exception. Inputs are random bytes, random text in each format's alphabet, and valid files
with one random edit (a character replaced, deleted or inserted), plain and gzipped."""

from __future__ import annotations

import gzip
import json
import re
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examflow.errors import InputError, Problems
from examflow.io import read_passages, read_qrels, read_queries, read_responses, read_runs
from examflow.io.leaderboard import read_leaderboard
from examflow.io.responses import read_gold_articles
from examflow.io.workbench import read_workbench_graded
from examflow.questions.bank import read_bank

QUERIES = pd.DataFrame(
    [("q1", None, "first", None), ("q2", "f1", "second", "facet")],
    columns=["query_id", "facet_id", "query_text", "facet_text"],
    dtype=object,
)
QUERY_IDS = {"q1", "q2"}

VALID = {
    "run.run": "q1 Q0 d1 1 2.5 runA\nq1 Q0 d2 2 1.5 runA\nq2 Q0 d1 1 3 runA\n",
    "qrels.txt": "q1 0 d1 2\nq2/f1 0 d2 -2\nq1 0 d3 0\n",
    "queries.tsv": "q1\tfirst query\nq2\tsecond query\n",
    "queries.json": '{"q1": "first query", "q2": "second query"}',
    "queries.jsonl": '{"query_id": "q1", "text": "first"}\n{"query_id": "q2", "text": "s", "subtopics": [{"facet_id": "f1", "text": "t"}]}\n',
    "corpus.tsv": "d1\tfirst passage\nd2\tsecond passage\n",
    "corpus.jsonl": '{"doc_id": "d1", "text": "first"}\n{"doc_id": 2, "text": "second"}\n',
    "responses.jsonl": '{"run_id": "rag", "query_id": "q1", "text": "An answer.\\n\\nMore."}\n{"run_id": "rag", "query_id": "q2", "text": ["a", "b"]}\n',
    "gold.jsonl": '{"query_id": "q1", "text": "A gold article."}\n',
    "bank.jsonl": json.dumps(
        {"query_id": "q1", "facet_id": None, "items": [{"question_text": "Why?", "gold_answers": ["because"]}]}
    )
    + "\n"
    + json.dumps({"query_id": "q2", "qid": "x", "question": "How?", "choices": {"A": "so"}, "correct": "so"})
    + "\n",
    "bank.tsv": "query_id\tquestion\tanswers\nq1\tWhy?\tbecause | so\n",
    "leaderboard.json": '{"runA": 1, "runB": 2.5, "runC": 2.5}',
    "graded.jsonl": json.dumps(
        [
            "q1",
            [
                {
                    "paragraph_id": "d1",
                    "text": "t",
                    "paragraph_data": {
                        "judgments": [{"paragraphId": "d1", "query": "q1", "relevance": 1}],
                        "rankings": [{"method": "runA", "paragraphId": "d1", "queryId": "q1", "rank": 1, "score": 2.0}],
                    },
                    "exam_grades": [
                        {
                            "correctAnswered": ["q1/a"],
                            "wrongAnswered": [],
                            "self_ratings": [{"question_id": "q1/a", "self_rating": 4}],
                            "answers": [["q1/a", "yes"]],
                            "llm": "flan",
                            "llm_options": {},
                            "prompt_info": {"prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices"},
                        }
                    ],
                }
            ],
        ]
    )  # fmt: skip
    + "\n",
}


def readers():
    return {
        "run.run": lambda path: read_runs([path], QUERY_IDS, Problems("warn")),
        "qrels.txt": lambda path: read_qrels(path, QUERIES, Problems("warn")),
        "queries.tsv": read_queries,
        "queries.json": read_queries,
        "queries.jsonl": read_queries,
        "corpus.tsv": lambda path: read_passages(path, {"d1", "d2", "2"}, Problems("warn")),
        "corpus.jsonl": lambda path: read_passages(path, {"d1", "d2", "2"}, Problems("warn")),
        "responses.jsonl": lambda path: read_responses(path, QUERY_IDS, Problems("warn")),
        "gold.jsonl": lambda path: read_gold_articles(path, QUERY_IDS, Problems("warn")),
        "bank.jsonl": read_bank,
        "bank.tsv": read_bank,
        "leaderboard.json": read_leaderboard,
        "graded.jsonl": read_workbench_graded,
    }


ALPHABET = st.sampled_from(list("q12dQ0 \t\n\r\"'{}[],:.-_/\\aéx") + ["\ufeff", "NaN", "null", "1e400", "\u2028"])
NOISE = st.lists(ALPHABET, max_size=60).map("".join)


@st.composite
def edited(draw, name: str) -> bytes:
    """A valid file with one random edit; now and then gzipped, cut short or given a BOM."""
    text = VALID[name]
    at = draw(st.integers(0, len(text)))
    edit = draw(st.sampled_from(["replace", "delete", "insert", "none"]))
    piece = draw(NOISE)
    text = {"replace": text[:at] + piece + text[at + len(piece) :], "delete": text[:at] + text[at + 1 :],
            "insert": text[:at] + piece + text[at:], "none": text}[edit]  # fmt: skip
    data = text.encode("utf-8")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))] + draw(st.binary(max_size=4))
    return data


def contents(name: str):
    return st.one_of(edited(name), st.binary(max_size=80), NOISE.map(lambda t: t.encode("utf-8")))


def loads_or_names_the_file(name: str, data: bytes, gzipped: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / (name + (".gz" if gzipped else ""))
        path.write_bytes(gzip.compress(data) if gzipped and data[:1] != b"\x00" else data)
        try:
            readers()[name](path)
        except InputError as error:
            assert str(error).startswith(str(path)), str(error)
            assert re.match(rf"{re.escape(str(path))}(:\d+)?: ", str(error)), str(error)


CHECKS = dict(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(VALID))
@settings(**CHECKS)
@given(data=st.data(), gzipped=st.booleans())
def test_any_input_loads_or_names_the_file(name, data, gzipped):
    loads_or_names_the_file(name, data.draw(contents(name)), gzipped)


# What each valid sample holds, read off the sample by eye: a reader that returned nothing would fail.
EXPECTED = {
    "run.run": lambda r: r["passage_id"].tolist() == ["d1", "d2", "d1"] and r["rank"].tolist() == [1, 2, 1],
    "qrels.txt": lambda r: sorted(r["relevance"].tolist()) == [-2, 0, 2],
    "queries.tsv": lambda r: r["query_text"].tolist() == ["first query", "second query"],
    "queries.json": lambda r: r["query_text"].tolist() == ["first query", "second query"],
    "queries.jsonl": lambda r: r["query_id"].tolist() == ["q1", "q2"] and r["facet_id"].tolist()[1] == "f1",
    "corpus.tsv": lambda r: r == {"d1": "first passage", "d2": "second passage"},
    "corpus.jsonl": lambda r: r == {"d1": "first", "2": "second"},
    "responses.jsonl": lambda r: [x.paragraphs for x in r] == [("An answer.", "More."), ("a", "b")],
    "gold.jsonl": lambda r: r == {"q1": "A gold article."},
    "bank.jsonl": lambda r: (
        [(i.text, i.gold_answers) for e in r for i in e.items] == [("Why?", ["because"]), ("How?", ["so"])]
    ),
    "bank.tsv": lambda r: [(i.text, i.gold_answers) for e in r for i in e.items] == [("Why?", ["because", "so"])],
    "leaderboard.json": lambda r: r == {"runA": 1.0, "runB": 2.5, "runC": 2.5},
    "graded.jsonl": lambda r: r["grades"]["rating"].tolist() == [4] and r["rankings"]["run_id"].tolist() == ["runA"],
}


def test_every_valid_sample_loads_what_it_holds():
    assert EXPECTED.keys() == VALID.keys()
    with tempfile.TemporaryDirectory() as folder:
        for name, text in VALID.items():
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8")
            assert EXPECTED[name](readers()[name](path)), name


@settings(**CHECKS)
@given(data=st.binary(max_size=200))
def test_parquet_corpus(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.parquet"
        path.write_bytes(data)
        try:
            read_passages(path, {"d1"}, Problems("warn"))
        except InputError as error:
            assert str(error).startswith(str(path))
