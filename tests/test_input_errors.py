"""Malformed inputs: each error names the file, the line and (where there is one) the field."""

from __future__ import annotations

import gzip
import json
import logging
import re

import pandas as pd
import pytest
from conftest import write

from examflow.errors import InputError, Problems
from examflow.grading.grades import GRADE_COLUMNS
from examflow.io import read_passages, read_qrels, read_queries, read_responses, read_runs
from examflow.questions.bank import read_bank

QUERY_IDS = {"q1", "q2"}


def strict() -> Problems:
    return Problems("error")


def raises_at(path, line: int | None, field: str | None, pattern: str):
    """Context manager asserting an InputError located at path:line naming field."""
    where = re.escape(f"{path}:{line}: " if line else f"{path}: ")
    what = re.escape(f"field '{field}': ") if field else ""
    return pytest.raises(InputError, match=where + what + pattern)


# A bad run file, the line and field the error names (None: the file as a whole), and what it says.
BAD_RUNS = [
    ("q1 Q0 d1 1 2.5 runA\nq1 Q0 d2 2 runA\n", 2, None, "expected 6 columns .* found 5"),
    ("q1 Q0 d1 1 2.5 runA\nq1 Q0 d2 two 2.0 runA\n", 2, "rank", "not an integer: 'two'"),
    ("q1 Q0 d1 1 high runA\n", 1, "score", "not a number: 'high'"),
    ("q1 Q0 d1 1 nan runA\n", 1, "score", "not a finite number"),
    # Python reads these as 10, 1000 and 3; trec_eval's atof and atol read 1, 1 and 0
    ("q1 Q0 d1 1_0 2.0 runA\n", 1, "rank", "not a number as trec_eval reads one: '1_0'"),
    ("q1 Q0 d\u00a01 1 2.0 runA\n", 1, None, r"U\+00A0, a space that is not ASCII, at column 8: trec_eval reads it as part of a field"),
    # in place of a separator, the columns counted right: Python's split read q1 and Q0, trec_eval one field
    ("q1\u00a0Q0 d1 1 2.0 runA\n", 1, None, r"U\+00A0, a space that is not ASCII, at column 3: .*; write a plain space$"),
    ("q1 Q0 d1 99999999999999999999 2 runA\n", 1, "rank", "'99999999999999999999' is beyond a 64-bit integer"),
    ("q1 Q0 d1 --5 2 runA\n", 1, "rank", "not an integer: '--5'$"),
    (f"q1 Q0 d1 {'9' * 5000} 2 runA\n", 1, "rank", r"'99999999999999999999'… \(5,000 characters\) is beyond a 64-bit integer$"),
    ("# my run\nq1 Q0 d1 1 2.0 runA\n", 1, None, r"expected 6 columns .* found 3 \(a comment\? these files have none\)"),
    ("q1 Q0 d1 1 1_000 runA\n", 1, "score", "not a number as trec_eval reads one: '1_000'"),
    ("q1 Q0 d1 1 \u0663 runA\n", 1, "score", "not a number as trec_eval reads one: '\u0663'"),
    ("q1 Q0 d1 1 3 runA\nq2 Q0 d1 1 3 runA\nq1 Q0 d1 2 2 runA\n", 3, "doc_id",
     r"document 'd1' ranked twice for query 'q1' \(first on line 1\)"),
    ("q1 Q0 d1 1 3 runA\nq1 Q0 d2 2 2 runB\n", 2, "run_tag", "second run tag 'runB'"),
    (b"q1 Q0 d1 1 3 runA\nq1 Q0 d\xff2 2 2 runA\n", 2, None, "invalid UTF-8: byte 0xff at offset 7 of the line$"),
    (gzip.compress(b"q1 Q0 d1 1 3 runA\n", mtime=0), 1, None,
     r"gzip-compressed: name it .gz$"),
    ("q1 Q0 d1 1 3 runA\rq1 Q0 d2 2 2 runA\r", 1, None, r"expected 6 columns .*, found 12 \(lines that end in a carriage return alone"),
    ("", None, None, "file is empty"),
    ("\n\n  \n", None, None, "file is empty"),
    ("q1 Q0 d1 1 2.0 _gold_\n", 1, "run_tag", "run tag '_gold_' is reserved for examflow's own rows"),
]  # fmt: skip


@pytest.mark.parametrize("content, line, field, pattern", BAD_RUNS)
def test_a_bad_run_file_is_named_at_its_line_and_field(tmp_path, content, line, field, pattern):
    run = write(tmp_path / "a.run", content)
    with raises_at(run, line, field, pattern):
        read_runs([run], QUERY_IDS, strict())


ONE_QUERY = pd.DataFrame({"query_id": ["q1"], "facet_id": [None], "query_text": ["x"], "facet_text": [None]})
READERS = {
    "queries": read_queries,
    "qrels": lambda path: read_qrels(path, ONE_QUERY, strict()),
    "corpus": lambda path: read_passages(path, {"d1", "d2"}, strict()),
    "responses": lambda path: read_responses(path, QUERY_IDS, strict()),
}
# Other bad files: the reader, the file (None: not there), the line and field of the error, what it says.
BAD_FILES = [
    ("queries", "q.tsv", None, None, None, "file not found"),
    ("queries", "q.tsv", "q1\tfirst query\nq2\t  \n", 2, "text", "empty text"),
    ("queries", "q.tsv", "q1\tfirst\nq2\tsecond\nq1\tagain\n", 3, "query_id", r"duplicate query id 'q1' \(first on line 1\)"),
    ("queries", "q.jsonl", '{"query_id": "p", "text": "P"}\n{"query_id": "r", "text": "R", "subtopics": [{"text": "S"}]}\n',
     2, "subtopics[0].facet_id", "missing"),
    ("qrels", "q.qrels", "q1 0 d1 1\nq1 0 d2 relevant\n", 2, "relevance", "not an integer: 'relevant'"),
    ("qrels", "q.qrels", "q1 0 d1 1\nq1/s9 0 d2 1\n", 2, "query_id", r"unknown query id 'q1/s9' \(no subtopic 's9' of query 'q1' here\)"),
    ("queries", "q.jsonl", '{"query_id": "p", "title": "P"}\n', 1, "text", "missing"),
    # a null is no absent field, and a line that names its id otherwise than the file's first line (strangers)
    ("queries", "q.jsonl", '{"query_id": "p", "text": null}\n', 1, "text", "null: a text is a string$"),
    ("corpus", "c.jsonl", '{"docid": "d1", "contents": "a"}\n{"id": "d2", "contents": "b"}\n', 2, "docid",
     r"missing: this line has 'id', the file's field is 'docid' \(from line 1\)$"),
    ("corpus", "c.jsonl", '{"docid": "d1", "contents": "a"}\n{"docid": null, "contents": "b"}\n', 2, "docid",
     "expected a string or whole number, found null$"),
    ("corpus", "c.jsonl", '{"docid": "d1", "contents": ["a"]}\n', 1, "contents", "expected a string, found a list$"),
    ("qrels", "q.qrels", "q1 0 d1 1_0\n", 1, "relevance", "not a number as trec_eval reads one: '1_0'"),
    ("qrels", "q.qrels", "q1 0 d1 1\nq1 0 d1 0\n", 2, "doc_id", r"document 'd1' judged twice for 'q1' \(first on line 1\)"),
    ("corpus", "c.tsv", "d1\tone\nd2\t \n", 2, "text", "empty text for pooled passage 'd2'"),
    ("corpus", "c.tsv", "d1\tone\nd2 two\n", 2, None, "expected 2 tab-separated columns .* found 1"),
    # the text decoded apart from the id, its offset counted in the line (a stranger's read 0)
    ("corpus", "c.tsv", b"d1\tone\nd2\tt\xc9wo\n", 2, None, "invalid UTF-8: byte 0xc9 at offset 4 of the line$"),
    ("corpus", "c.jsonl", '{"title": "x", "text": "y"}\n', 1, None, "no id field"),
    # Found by test_reader_properties: `1` is valid JSON, and the reader asked it for a field.
    ("corpus", "c.jsonl", '{"doc_id": "d1", "text": "first"}\n1\n', 2, None, "expected a JSON object, found int"),
    ("responses", "r.jsonl", '{"run_id": "a", "query_id": "q1", "text": "ok"}\n{"run_id": "a",\n', 2, None, "not valid JSON"),
    ("queries", "q.jsonl", '{"query_id": "p", "text": "P", "subtopics": [{"facet_id": "s", "text": "S"}, {"facet_id": "s", "text": "T"}]}\n',
     1, "subtopics[1].facet_id", "subtopic 's' of query 'p' twice"),
    ("queries", "q.jsonl", '{"query_id": "p", "text": "P", "subtopic": [{"facet_id": "s", "text": "S"}]}\n', 1, "subtopic",
     r"unknown field \(did you mean 'subtopics'\?\)"),
    # json keeps a key's last value: a second query_id filed the answer under another query, in silence
    ("responses", "r.jsonl", '{"run_id": "a", "query_id": "q1", "query_id": "q2", "text": "ok"}\n', 1, "query_id",
     "written twice in one object"),
    ("queries", "q.jsonl", '{"query_id": "p", "text": "P", "subtopics": [{"facet_id": "s", "text": "S", "text": "T"}]}\n',
     1, "text", "written twice in one object"),
    ("corpus", "c.jsonl", '{"doc_id": "d1", "text": "one"}\n{"doc_id": "d2", "text": "two", "text": "three"}\n', 2,
     "text", "written twice in one object"),
    # Python's JSON reader fails beyond syntax: nesting past its recursion limit, integers past 4,300 digits
    ("queries", "q.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", 1, None, r"not valid JSON \(nested too deeply to read\)$"),
    ("queries", "q.json", '{"q1": ' + "[" * 100_000 + "]" * 100_000 + "}", None, None, r"not valid JSON \(nested too deeply"),
    ("queries", "q.jsonl", '{"query_id": ' + "9" * 5000 + ', "text": "a"}\n', 1, None, r"not valid JSON \(a number too long"),
    ("corpus", "c.jsonl", '{"doc_id": "d1", "text": ' + "[" * 100_000 + "]" * 100_000 + "}\n", 1, None, "not valid JSON .nested too deeply"),
    ("qrels", "q.qrels", "q1 0 d1 9223372036854775808\n", 1, "relevance", "'9223372036854775808' is beyond a 64-bit integer"),
    # json.loads guessed UTF-16 from a NUL byte (and named the failure "a number too long")
    ("corpus", "c.jsonl", '\x00{"doc_id": "d1", "text": "one"}\n', 1, None, r"not valid JSON \(Expecting value, column 1\)$"),
    # a corpus line of gzip's bytes read as one column; an old Mac file as one line of many
    ("corpus", "c.tsv", gzip.compress(b"d1\tone\n", mtime=0), 1, None, "gzip-compressed: name it .gz$"),
    ("queries", "q.jsonl", '{"query_id": "p", "text": "P"}\r{"query_id": "r", "text": "R"}\r', 1, None,
     r"not valid JSON \(Extra data, column 32\) \(lines that end in a carriage return alone"),
    ("corpus", "c.tsv", "d1\tone\rd2\ttwo\r", 1, None, r"expected 2 tab-separated columns .*, found 3 \(lines that end in a carriage return alone"),
]  # fmt: skip


@pytest.mark.parametrize("reader, name, content, line, field, pattern", BAD_FILES)
def test_a_bad_input_file_is_named_at_its_line_and_field(tmp_path, reader, name, content, line, field, pattern):
    path = tmp_path / name if content is None else write(tmp_path / name, content)
    with raises_at(path, line, field, pattern):
        READERS[reader](path)


def test_two_files_with_the_same_tag(tmp_path):
    first = write(tmp_path / "a.run", "q1 Q0 d1 1 3 runA\n")
    second = write(tmp_path / "b.run", "q1 Q0 d1 1 3 runA\n")
    with raises_at(second, 1, "run_tag", f"run tag 'runA' is also the tag of {re.escape(str(first))}"):
        read_runs([first, second], QUERY_IDS, strict())


def test_a_run_file_named_twice_is_read_once(tmp_path, monkeypatch):
    """The same file by two names (a pattern and a relative path) was refused as two files of one run tag."""
    from examflow.io.runs import run_files

    run = write(tmp_path / "runs" / "a.run", "q1 Q0 d1 1 3 runA\n")
    write(tmp_path / "runs" / "b.run", "q1 Q0 d1 1 3 runB\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    files = run_files([str(tmp_path / "runs" / "*.run"), "../runs/a.run", str(run)], "--runs")
    assert files == [str(run), str(tmp_path / "runs" / "b.run")]


def test_every_command_reads_a_run_file_named_twice_once_and_refuses_two_files_of_one_tag(tmp_path, capsys):
    """`pool` refused a file given twice as two files of one tag, where compare-judges and the workflow read
    it once; `official` took two files of one tag as one run."""
    from examflow.cli import main
    from examflow.commands import read_pooled

    write(tmp_path / "q.tsv", "q1\tquery one\n")
    write(tmp_path / "c.tsv", "d1\tpassage one\nd2\tpassage two\n")
    write(tmp_path / "qrels", "q1 0 d1 1\n")
    run = write(tmp_path / "a.run", "q1 Q0 d1 1 3 runA\nq1 Q0 d2 2 2 runA\n")
    copy = write(tmp_path / "b.run", "\nq1 Q0 d2 1 3 runA\n")  # the tag on its second line
    pool, board = tmp_path / "pool", tmp_path / "board.tsv"
    files = [
        "--queries",
        str(tmp_path / "q.tsv"),
        "--corpus",
        str(tmp_path / "c.tsv"),
        "--qrels",
        str(tmp_path / "qrels"),
    ]
    assert main(["pool", *files, "--runs", str(run), str(tmp_path / "*.run"), "--out", str(pool)]) == 2
    assert capsys.readouterr().err.endswith(
        f"error: {copy}:2: field 'run_tag': run tag 'runA' is also the tag of {run}\n"
    )
    assert not pool.exists()
    assert main(["pool", *files, "--runs", str(run), f"{tmp_path}/./a.run", "--out", str(pool)]) == 0
    assert read_pooled(pool, "rankings")[["run_id", "passage_id", "rank"]].values.tolist() == [
        ["runA", "d1", 1], ["runA", "d2", 2],
    ]  # fmt: skip
    assert main(["official", "--pool", str(pool), "--runs", str(run), str(copy), "--out", str(board)]) == 2
    assert capsys.readouterr().err.endswith(
        f"error: {copy}:2: field 'run_tag': run tag 'runA' is also the tag of {run}\n"
    )
    assert not board.exists()
    assert main(["official", "--pool", str(pool), "--runs", str(run), str(run), "--out", str(board)]) == 0
    assert board.read_text() == "run_id\tscore\trank\nrunA\t1.0\t1.0\n"  # AP of d1 at rank 1; ranks average ties
    # A level no judgment reaches: every run 0 by AP, a leaderboard of ties (nDCG weighs the labels themselves)
    level = ["official", "--pool", str(pool), "--runs", str(run), "--relevance-level", "2", "--out", str(board)]
    assert main([*level, "--measure", "map"]) == 2
    assert capsys.readouterr().err.endswith(
        f"error: {pool / 'judgments.parquet'}: no judgment reaches --relevance-level 2 (the highest is 1): every run would score 0\n"
    )
    assert main([*level, "--measure", "ndcg_cut_10"]) == 0


def test_a_run_file_a_pattern_matches_whose_name_starts_with_a_dash_is_refused(tmp_path, monkeypatch):
    """`--runs -b.run` reads as an unknown option in every step (a stranger's `-in/…` paths)."""
    from examflow.errors import ConfigError
    from examflow.io.runs import run_files

    write(tmp_path / "a.run", "q1 Q0 d1 1 3 runA\n")
    write(tmp_path / "-b.run", "q1 Q0 d1 1 3 runB\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^config inputs.runs: '\*.run' matches '-b.run', which starts with '-'"):
        run_files(["*.run"], "inputs.runs")
    assert run_files([str(tmp_path / "*.run")], "inputs.runs") == [str(tmp_path / "-b.run"), str(tmp_path / "a.run")]
    (tmp_path / "runs").mkdir()  # a folder named where its files go
    with pytest.raises(
        ConfigError, match=r"^config inputs.runs: 'runs' is a folder: name its run files \(runs/\*, say\)$"
    ):
        run_files(["runs"], "inputs.runs")


def test_a_rank_with_leading_zeros_is_the_number_trec_eval_reads(tmp_path):
    zeros = "0" * 30  # a 31-digit field that holds 7: atol reads 7, and so must we
    run = write(tmp_path / "a.run", f"q1 Q0 d1 {zeros}7 2 runA\nq1 Q0 d2 -{zeros}3 1 runA\n")
    assert read_runs([run], QUERY_IDS, strict())["rank"].tolist() == [7, -3]


def test_run_with_unknown_query_fails_or_is_counted(tmp_path):
    run = write(tmp_path / "a.run", "q1 Q0 d1 1 3 runA\nq9 Q0 d1 1 3 runA\nq9 Q0 d2 2 2 runA\n")
    with raises_at(run, 2, "query_id", "unknown query id 'q9'"):
        read_runs([run], QUERY_IDS, strict())
    lenient = Problems("warn")
    table = read_runs([run], QUERY_IDS, lenient)
    assert table["query_id"].tolist() == ["q1"]
    assert lenient.counts == {"run rows with an unknown query id": 2}


def test_qrels_facet_ids_and_unknown_queries(tmp_path):
    queries = read_queries(
        write(
            tmp_path / "q.jsonl", '{"query_id": "page", "text": "P", "subtopics": [{"facet_id": "s1", "text": "S"}]}\n'
        )
    )
    qrels = write(tmp_path / "q.qrels", "page/s1 0 d1 2\npage/s2 0 d2 1\n")
    with raises_at(qrels, 2, "query_id", r"unknown query id 'page/s2' \(no subtopic 's2' of query 'page' here\)"):
        read_qrels(qrels, queries, strict())
    table = read_qrels(qrels, queries, Problems("warn"))
    assert table.to_dict("records") == [{"query_id": "page", "facet_id": "s1", "passage_id": "d1", "relevance": 2}]


def test_an_empty_response_is_read_as_no_passage_with_a_count_and_a_wrongly_typed_text_is_an_error(tmp_path, caplog):
    lines = ['{"run_id": "a", "query_id": "q1", "text": "An answer."}', '{"run_id": "b", "query_id": "q1", "text": ""}',
             '{"run_id": "a", "query_id": "q2", "text": ["  ", ""]}', '{"run_id": "b", "query_id": "q2", "text": []}']  # fmt: skip
    empty = write(tmp_path / "r.jsonl", "\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING):
        responses = read_responses(empty, QUERY_IDS, strict())
    assert [(r.run_id, r.query_id, r.paragraphs) for r in responses] == [
        ("a", "q1", ("An answer.",)), ("b", "q1", ()), ("a", "q2", ()), ("b", "q2", ()),
    ]  # fmt: skip
    # the run left out first: the step's headline at the run's end, where a count of empty answers hid it (a
    # stranger's system vanished from every table behind `and 1 more warning`)
    assert caplog.messages == [
        f"{empty}: runs with only empty responses, not evaluated: b",
        f"{empty}: 3 empty response(s): the run has no passage for that query (first: line 2, run 'b', query 'q1')",
    ]
    typed = write(tmp_path / "s.jsonl", '{"run_id": "a", "query_id": "q1", "text": 42}\n')
    with raises_at(typed, 1, "text", "expected a string or a list of strings, found a number$"):
        read_responses(typed, QUERY_IDS, strict())
    # null is no missing field (a stranger read `missing` of a `"text": null` as its field misspelt)
    with raises_at(typed, 1, "text", "expected a string or a list of strings, found null$"):
        read_responses(write(typed, '{"run_id": "a", "query_id": "q1", "text": null}\n'), QUERY_IDS, strict())
    # TREC RAG's answer shape, a list of sentences with citations: named, not repeated (kilobytes of it)
    cited = json.dumps({"run_id": "a", "query_id": "q1", "text": [{"text": "x" * 3000, "citations": [1]}]})
    with raises_at(typed, 1, "text", "expected a string or a list of strings, found a list holding an object$"):
        read_responses(write(typed, cited + "\n"), QUERY_IDS, strict())
    with raises_at(typed, 1, "text", re.escape("missing (is 'txt' meant to be 'text'?)")):
        read_responses(write(typed, '{"run_id": "a", "query_id": "q1", "txt": "An answer."}\n'), QUERY_IDS, strict())
    with raises_at(typed, 1, "text", "missing$"):
        read_responses(write(typed, '{"run_id": "a", "query_id": "q1", "answer": "An answer."}\n'), QUERY_IDS, strict())


def test_collection_missing_pooled_passage(tmp_path):
    corpus = write(tmp_path / "c.tsv", "d1\tone\nd2\ttwo\n")
    with raises_at(corpus, None, None, "pooled passage 'd3' is not in the collection"):
        read_passages(corpus, {"d1", "d3"}, strict())
    lenient = Problems("warn")
    assert read_passages(corpus, {"d1", "d3"}, lenient) == {"d1": "one"}
    assert lenient.counts == {"pooled passages missing from the collection": 1}
    # a passage of empty text is in the collection: it was counted as missing too, and the run's last
    # line named the wrong reason (a stranger's trial)
    blank = Problems("warn")
    assert read_passages(write(tmp_path / "e.tsv", "d1\tone\nd2\t \n"), {"d1", "d2", "d3"}, blank) == {"d1": "one"}
    assert blank.counts == {"pooled passages with empty text": 1, "pooled passages missing from the collection": 1}
    assert "'d3' is not in the collection" in str(blank.examples["pooled passages missing from the collection"])


def test_a_collection_id_with_whitespace_around_a_pooled_one_is_named_at_its_line(tmp_path):
    """`tea-d1 ` where the runs rank `tea-d1`: the passage was "not in the collection", with no line, and
    dropped under `missing_passages: warn` (a stranger's trial). In every format, whatever the policy."""
    tsv = write(tmp_path / "c.tsv", "d1\tone\nd2 \ttwo\n")
    jsonl = write(tmp_path / "c.jsonl", '{"docid": "d1", "contents": "one"}\n{"docid": " d2", "contents": "two"}\n')
    parquet = tmp_path / "c.parquet"
    pd.DataFrame({"doc_id": ["d1", "d2\u00a0"], "text": ["one", "two"]}).to_parquet(parquet)
    for path, line, field, written in ((tsv, 2, "doc_id", "d2 "), (jsonl, 2, "docid", " d2"),
                                       (parquet, None, "doc_id", "d2\u00a0")):  # fmt: skip
        message = f"{written!r} has whitespace around the id 'd2' asked for: ids are written without whitespace"
        for policy in (strict(), Problems("warn")):
            with raises_at(path, line, field, re.escape(message)):
                read_passages(path, {"d1", "d2"}, policy)
        assert read_passages(path, {"d1"}, strict()) == {"d1": "one"}  # a passage no run ranks is not read


def test_collection_formats_agree(tmp_path):
    rows = {"d1": "first passage", "d2": "second passage", "d3": "third"}
    tsv = write(tmp_path / "c.tsv.gz", gzip.compress("".join(f"{k}\t{v}\n" for k, v in rows.items()).encode()))
    jsonl = write(tmp_path / "c.jsonl", "".join(f'{{"docid": "{k}", "contents": "{v}"}}\n' for k, v in rows.items()))
    parquet = tmp_path / "c.parquet"
    pd.DataFrame({"doc_id": list(rows), "text": list(rows.values())}).to_parquet(parquet)
    for path in (tsv, jsonl, parquet):
        assert read_passages(path, {"d1", "d3"}, strict()) == {"d1": "first passage", "d3": "third"}


def test_a_jsonl_corpus_with_two_text_fields_says_which_it_reads(tmp_path, caplog):
    """`{"id", "text", "body"}`: `text` was read and `body` dropped, in silence (a stranger's trial)."""
    both = write(
        tmp_path / "c.jsonl", '{"id": "d1", "_id": "x", "body": "a", "text": "b"}\n{"id": "d2", "text": "c"}\n'
    )
    with caplog.at_level(logging.WARNING):
        assert read_passages(both, {"d1", "d2"}, strict()) == {"d1": "b", "d2": "c"}
    assert caplog.messages == [
        f"{both}:1: holds 'id' and '_id': the passages' id is read from 'id' alone (the first of doc_id, docid, id, "
        "_id, pid)",
        f"{both}:1: holds 'text' and 'body': the passages' text is read from 'text' alone (the first of text, "
        "contents, body)",
    ]
    caplog.clear()
    table = tmp_path / "c.parquet"  # the same of a Parquet corpus's columns
    pd.DataFrame({"doc_id": ["d1"], "body": ["a"], "contents": ["b"]}).to_parquet(table)
    with caplog.at_level(logging.WARNING):
        assert read_passages(table, {"d1"}, strict()) == {"d1": "b"}
    assert caplog.messages == [f"{table}: holds 'contents' and 'body': the passages' text is read from 'contents' "
                               "alone (the first of text, contents, body)"]  # fmt: skip


def test_queries_formats(tmp_path):
    json_file = write(tmp_path / "q.json", '{"q1": "first", "q2": "second"}')
    assert read_queries(json_file)["query_text"].tolist() == ["first", "second"]
    jsonl = write(
        tmp_path / "q.jsonl",
        '{"query_id": "p", "text": "Page", "subtopics": [{"facet_id": "a", "text": "A"}, {"facet_id": "b", "text": "B"}]}\n{"query_id": "q", "query_text": "Q"}\n',
    )
    table = read_queries(jsonl)
    assert table.values.tolist() == [["p", "a", "Page", "A"], ["p", "b", "Page", "B"], ["q", None, "Q", None]]
    # A header line (a pandas export's) was a query named `query_id`, said only as a query without questions
    header = write(tmp_path / "q.tsv", "query_id\tText\nq1\tfirst\n")
    with pytest.raises(InputError, match=r"q.tsv:1: a header line \('query_id', 'Text'\): a queries TSV has none"):
        read_queries(header)
    assert read_queries(write(header, "id\twhat is an id\nqid\tquery\n"))["query_id"].tolist() == ["id", "qid"]


def test_gold_articles_are_checked_like_responses(tmp_path):
    from examflow.io.responses import gold_responses, read_gold_articles

    path = write(
        tmp_path / "gold.jsonl", '{"query_id": "q1", "text": "One.\\n\\nTwo."}\n{"query_id": "zz", "text": "x"}\n'
    )
    for policy in ([Problems("error")], []):  # an error, also without a policy given
        with pytest.raises(InputError, match=r"gold.jsonl:2: field 'query_id': unknown query id 'zz'"):
            read_gold_articles(path, {"q1"}, *policy)
    articles = read_gold_articles(path, {"q1"}, Problems("warn"))
    assert [(r.run_id, r.paragraphs) for r in gold_responses(articles)] == [("_gold_", ("One.", "Two."))]
    write(path, '{"query_id": "q1", "text": "  "}\n')
    with pytest.raises(InputError, match=r"gold.jsonl:1: field 'text': empty text"):
        read_gold_articles(path)


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--method", "m", "--eval", "{eval}", "--grades", "{table}", "--out", "{out}"],
        ["summary", "--grades", "{table}", "--config-digest", "0", "--results", "r", "--out-summary", "{out}/s.md",
         "--out-provenance", "{out}/p.json"],
        ["evaluate", "--grades", "{table}", "--pool", "{eval}", "--out", "{out}"],
    ],
    ids=["report", "summary", "evaluate"],
)  # fmt: skip
def test_a_file_that_is_not_a_table_is_one_line_naming_it(tmp_path, capsys, command):
    """A JSONL file given where a grades table goes ended in pyarrow's traceback (a stranger's trial)."""
    from examflow.cli import main

    table = tmp_path / "graded.jsonl.gz"
    table.write_text('{"query_id": "q1"}\n')
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval/leaderboard.tsv").write_text("method\tmeasure\ttau\trun_id\tkind\tscore\tstderr\tn_queries\n"
                                                   "m\texam_cover\t4\tr\tsystem\t0.5\t0\t1\n")  # fmt: skip
    words = [w.format(eval=tmp_path / "eval", table=table, out=tmp_path / "out") for w in command]
    assert main(words) == 2
    assert (
        capsys.readouterr().err
        == f"examflow: error: {table}: not a Parquet table (the tables examflow writes for its steps are Parquet files)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_bank_named_where_its_shards_go_is_told_apart(tmp_path):
    """`--questions` (evaluate, report, plan, grade) takes bank-shard's tables; the bank itself there said only
    "not a Parquet table" (a stranger's trial)."""
    from examflow.commands import read_questions

    bank = write(tmp_path / "questions.tsv", "query_id\tquestion\nq1\tWhy?\n")
    wanted = "--questions takes the bank's shards, which `examflow bank-shard --out` writes, not the bank itself"
    with pytest.raises(InputError, match=re.escape(f"{bank}: not a Parquet table (the tables examflow writes for its "
                                                   f"steps are Parquet files): {wanted}")):  # fmt: skip
        read_questions([str(bank)])


def test_a_graded_file_python_s_json_reader_cannot_read_is_named_at_its_line(tmp_path):
    """Nesting past the recursion limit, an integer past 4,300 digits: tracebacks, once."""
    from examflow.io.workbench import read_workbench_graded

    nested = write(tmp_path / "nested.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    with raises_at(nested, 1, None, r"not valid JSON \(nested too deeply to read\)$"):
        read_workbench_graded(nested)
    ranking = '{"method": "r", "paragraphId": "p", "queryId": "q1", "rank": ' + "9" * 5000 + ', "score": 1}'
    line = '["q1", [{"paragraph_id": "p", "text": "t", "paragraph_data": {"rankings": [' + ranking + "]}}]]\n"
    long = write(tmp_path / "long.jsonl", line)
    with raises_at(long, 1, None, r"not valid JSON \(a number too long to read\)$"):
        read_workbench_graded(long)


def test_another_step_s_table_in_a_table_s_place_is_one_line_naming_its_columns(tmp_path, capsys):
    """The pool's passages given as its rankings or as a bank's questions, a leaderboard that is no table:
    KeyErrors deep in the step (a stranger's trial)."""
    from examflow.cli import main

    passages = pd.DataFrame({"query_id": ["q1"], "passage_id": ["d1"], "text": ["t"], "origin": ["retrieved"]})
    grades = pd.DataFrame({"method": ["m"], "query_id": ["q1"]})
    pool = tmp_path / "pool"
    pool.mkdir()
    for name in ("rankings", "passages", "judgments"):
        passages.to_parquet(pool / f"{name}.parquet")
    pd.DataFrame({"query_id": ["q1"], "facet_id": [None], "query_text": ["x"], "facet_text": [None]}).to_parquet(
        pool / "queries.parquet"
    )
    grades.to_parquet(tmp_path / "m.parquet")
    write(tmp_path / "eval/leaderboard.tsv", "garbage\n")
    has = "(its columns: query_id, passage_id, text, origin)"
    for words, message in (
        (["evaluate", "--grades", str(tmp_path / "m.parquet"), "--pool", str(pool), "--out", str(tmp_path / "out")],
         f"{tmp_path / 'm.parquet'}: not the table wanted here: no column 'facet_id' (its columns: method, query_id)"),
        (["plan", "--pool", str(pool), "--questions", str(pool / "passages.parquet"), "--method", '{"name": "m", '
          '"kind": "self_rating", "backend": {"kind": "embedding"}}', "--out", str(tmp_path / "plan.tsv")],
         f"{pool / 'passages.parquet'}: not the table wanted here: no column 'facet_id' {has}"),
    ):  # fmt: skip
        assert main(words) == 2, words
        assert capsys.readouterr().err == f"examflow: error: {message}\n"
        assert not (tmp_path / "out").exists()
    grades = pd.DataFrame({c: pd.Series([], dtype=object) for c in GRADE_COLUMNS})
    grades.to_parquet(tmp_path / "m.parquet")
    main(["evaluate", "--grades", str(tmp_path / "m.parquet"), "--pool", str(pool), "--out", str(tmp_path / "out")])
    assert capsys.readouterr().err.endswith(
        f"{pool / 'rankings.parquet'}: not the table wanted here: no column 'run_id' {has}\n"
    )
    main(["report", "--method", "m", "--eval", str(tmp_path / "eval"), "--grades", str(tmp_path / "m.parquet"), "--out",
          str(tmp_path / "out")])  # fmt: skip
    leaderboard = tmp_path / "eval/leaderboard.tsv"
    assert capsys.readouterr().err.endswith(
        f"{leaderboard}: not the table wanted here: no column 'method' (its columns: garbage)\n"
    )
    # damaged: empty, cut short, a score that is a word (tracebacks, a stranger's trial)
    header = "method\tmeasure\ttau\trun_id\tkind\tscore\tstderr\tn_queries\n"
    for content, message in (("", "empty: not a table examflow wrote"),
                             (header + "m\texam_cover\t4\tr\tsystem\t0.", "cut short: its last line has no end"),
                             (header + "m\texam_cover\t4\tr\tsystem\tabc\t0\t1\n", "not the table wanted here")):  # fmt: skip
        write(leaderboard, content)
        main(["report", "--method", "m", "--eval", str(tmp_path / "eval"), "--grades", str(tmp_path / "m.parquet"),
              "--out", str(tmp_path / "out")])  # fmt: skip
        assert capsys.readouterr().err.startswith(f"examflow: error: {leaderboard}: {message}")


def test_an_official_rank_of_hundreds_of_digits_is_no_finite_number(tmp_path):
    from examflow.io.leaderboard import read_leaderboard

    board = write(tmp_path / "official.json", '{"a": 1, "b": 1' + "0" * 400 + "}")
    with raises_at(board, 1, "b", r"rank '10000000000000000000'… \(401 characters\) is not a finite number"):
        read_leaderboard(board)


def test_a_whole_json_file_gzipped_under_a_name_without_gz_says_so(tmp_path):
    from examflow.io.leaderboard import read_leaderboard

    board = write(tmp_path / "official.json", gzip.compress(b'{"a": 1, "b": 2}', mtime=0))
    with raises_at(board, 1, None, "gzip-compressed: name it .gz$"):
        read_leaderboard(board)


@pytest.mark.parametrize("reader", [read_queries, read_bank, lambda path: read_passages(path, {"d1"}, strict())])
def test_a_folder_or_no_file_where_an_input_file_goes_says_so_not_unknown_format(tmp_path, reader):
    """A folder has no suffix, and read `unknown collection format` (a stranger by hand); a missing
    file named without a suffix too."""
    with raises_at(tmp_path, None, None, "is a folder, not a file$"):
        reader(tmp_path)
    with raises_at(tmp_path / "missing", None, None, "file not found$"):
        reader(tmp_path / "missing")
    with pytest.raises(InputError, match="^'': an empty path$"):
        reader("")
    with pytest.raises(InputError, match=r"^\.: is a folder, not a file$"):
        reader(".")


def test_an_empty_path_is_named_so_by_the_readers_that_open_it_alone():
    with pytest.raises(InputError, match="^'': an empty path$"):
        read_responses("", {"q1"}, strict())


def test_an_output_that_is_an_input_of_its_command_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    """`grade --out` on its own `--questions` replaced the bank shard by its grades, and `evaluate --out` on
    its `--pool` wrote into the pool, exit 0 (a stranger by hand); a link to the input is the input."""
    from examflow.cli import main

    monkeypatch.chdir(tmp_path)
    bank = write(tmp_path / "bank.tsv", "query_id\tquestion\nq1\tWho makes wax?\n")
    write(tmp_path / "queries.tsv", "q1\tbees\n")
    (tmp_path / "link.tsv").symlink_to(bank)
    shard = ["bank-shard", "--bank", "bank.tsv", "--queries", "queries.tsv", "--shard", "shard-0", "--shards", "1"]
    for out in ("bank.tsv", str(bank), "link.tsv"):
        assert main([*shard, "--out", out]) == 2
        assert capsys.readouterr().err == (
            f"examflow: error: --out {out}: also the path of --bank, which it reads: write elsewhere\n"
        )
    assert bank.read_text() == "query_id\tquestion\nq1\tWho makes wax?\n"
    # a word of another option that names no file is no input: an output of its name is written, and written
    # again by a rerun, where the word now names that output (it refused `--shard shard-0`: a reviewer's trial)
    assert main([*shard, "--out", "shard-0"]) == 0 and (tmp_path / "shard-0").is_file()
    assert main([*shard, "--out", "shard-0"]) == 0
    assert main(["bank-export", "bank.tsv", "--format", "examflow", "--out", "bank.tsv"]) == 2
    assert capsys.readouterr().err.endswith(
        "--out bank.tsv: also the path of the bank, which it reads: write elsewhere\n"
    )
    (tmp_path / "pool").mkdir()
    assert main(["evaluate", "--grades", "g.parquet", "--pool", "pool", "--out", "pool"]) == 2
    assert capsys.readouterr().err.endswith("--out pool: also the path of --pool, which it reads: write elsewhere\n")
    assert list((tmp_path / "pool").iterdir()) == []
    # an input inside the output folder under the name of a file the command writes there (or removes: no
    # expert ranking given) was replaced or deleted, exit 0 (a stranger's trial); another name is no output
    write(tmp_path / "leaderboard.tsv", "run_id\tscore\nbm25\t0.5\n")
    assert main(["evaluate", "--grades", "g.parquet", "--pool", "pool", "--official", "leaderboard.tsv", "--out",
                 "."]) == 2  # fmt: skip
    assert capsys.readouterr().err.endswith(
        "--out .: evaluate writes its leaderboard.tsv there, and --official reads leaderboard.tsv: write elsewhere\n"
    )
    write(tmp_path / "nrp/expert_agreement.tsv", "q1\td1\t1\nq1\td2\t2\n")
    nrp = [
        "nrp",
        "--queries",
        "queries.tsv",
        "--qrels",
        "relevance=bank.tsv",
        "--answers",
        "a.jsonl",
        "--ranker",
        "bm25",
    ]
    assert main([*nrp, "--expert", "nrp/expert_agreement.tsv", "--out", "nrp"]) == 2
    assert capsys.readouterr().err.endswith(
        "--out nrp: nrp writes its expert_agreement.tsv there, and --expert reads nrp/expert_agreement.tsv: write "
        "elsewhere\n"
    )
    # a link in the folder under such a name, to a file elsewhere: writing the table replaces the link (a reviewer)
    (tmp_path / "real").mkdir()
    (tmp_path / "real/leaderboard.tsv").symlink_to(tmp_path / "leaderboard.tsv")
    assert main(["evaluate", "--grades", "g.parquet", "--pool", "pool", "--official", "real/leaderboard.tsv",
                 "--out", "real"]) == 2  # fmt: skip
    assert "--out real: evaluate writes its leaderboard.tsv there, and --official reads real/leaderboard.tsv" in (
        capsys.readouterr().err
    )
    # a NAME=PATH option's path too: `--labels j=od/leaderboards.tsv` was replaced by the leaderboards (a stranger)
    write(tmp_path / "od/autojudge.eval.txt", "A ndcg_cut_10 q1 1.0\n")
    judges = ["compare-judges", "--runs", "bank.tsv", "--official-qrels", "queries.tsv", "--out", "od"]
    assert main([*judges, "--leaderboard", "t=od/autojudge.eval.txt"]) == 2
    assert capsys.readouterr().err.endswith(
        "--out od: compare-judges writes its autojudge.eval.txt there, and --leaderboard reads od/autojudge.eval.txt: "
        "write elsewhere\n"
    )
    write(tmp_path / "qrels/bm25.qrels", "q1 0 d1 1\n")  # a method's EXAM-Qrels, under any method's name
    assert main(["evaluate", "--grades", "g.parquet", "--pool", "qrels/bm25.qrels", "--out", "."]) == 2
    assert "evaluate writes its qrels/bm25.qrels there" in capsys.readouterr().err
    # a table of the pool's given for its folder: `pool/x.parquet/rankings.parquet: table not found` (a stranger)
    from examflow.commands import read_pooled

    write(tmp_path / "pool/passages.parquet", "")
    with pytest.raises(InputError, match=r"^pool/passages.parquet: a file, where the pool's folder goes \(`examflow "
                       r"pool --out`\): give the folder$"):  # fmt: skip
        read_pooled("pool/passages.parquet", "rankings")


def test_an_abbreviated_option_is_unknown(tmp_path, capsys, monkeypatch):
    """argparse read `--qrel` as `--qrels` and `--dep 1` as `--depth 1` in silence (a stranger by hand)."""
    from examflow.cli import main

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "bank.tsv", "query_id\tquestion\nq1\tWho makes wax?\n")
    write(tmp_path / "queries.tsv", "q1\tbees\n")
    shard = ["bank-shard", "--queries", "queries.tsv", "--shard", "shard-0", "--shards", "1", "--out", "b.parquet"]
    with pytest.raises(SystemExit) as stopped:  # argparse's usage line and error
        main([*shard, "--ban", "bank.tsv"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.endswith("examflow: error: unrecognized arguments: --ban bank.tsv\n")
    assert not (tmp_path / "b.parquet").exists()
    assert main([*shard, "--bank", "bank.tsv"]) == 0
    # an option given twice kept the last in silence (`nrp --run A --run B` ranked by B alone, a stranger's trial)
    assert main([*shard, "--bank", "bank.tsv", "--shards", "2"]) == 2
    assert capsys.readouterr().err.endswith("done\nexamflow: error: --shards: given twice (1, then 2): give it once\n")
    nrp = ["nrp", "--queries", "queries.tsv", "--qrels", "r=q.qrels", "--answers", "a.jsonl", "--ranker", "run"]
    assert main([*nrp, "--run", "a.run", "--out", "nrp", "--run", "b.run"]) == 2
    assert capsys.readouterr().err == "examflow: error: --run: given twice (a.run, then b.run): give it once\n"


@pytest.mark.parametrize("option", ["--out", "--cache-dir", "--progress"])
def test_an_empty_path_to_write_is_refused_before_anything_is_read_or_written(tmp_path, capsys, monkeypatch, option):
    """`--out ""` wrote a grades table into the current folder: the empty path is the current folder."""
    from examflow.cli import main

    monkeypatch.chdir(tmp_path)
    words = {"--method": '{"name": "m"}', "--passages": "p", "--queries": "q", "--questions": "b", "--shard": "s",
             "--cache-dir": "cache", "--out": "g.parquet", "--progress": "progress.json"}  # fmt: skip
    words[option] = " "
    assert main(["grade", *(w for pair in words.items() for w in pair)]) == 2
    assert capsys.readouterr().err == f"examflow: error: {option}: an empty path\n"
    assert not list(tmp_path.iterdir())
