"""Inputs that used to give silently wrong numbers, each now a `file:line: field` error or a counted warning."""

from __future__ import annotations

import gzip
import json
import logging
import re

import pandas as pd
import pytest
from conftest import own_collection, write
from test_input_errors import raises_at, strict

from examflow.cli import main
from examflow.config import methods
from examflow.errors import InputError, Problems
from examflow.evaluation.agreement import agreement_tables, paired
from examflow.io import read_passages, read_qrels, read_queries, read_responses, read_runs
from examflow.io.leaderboard import match_runs, read_leaderboard
from examflow.questions.bank import read_bank
from examflow.questions.shards import shard_of
from examflow.scheduling import check_example_query, check_leaderboard, graded_facets, graded_shards

VALIDATION = {"unknown_queries": "error", "leaderboard_runs": "error"}


def test_bank_queries_that_match_no_query_are_an_error_or_a_counted_warning(tmp_path, caplog):
    files = own_collection(tmp_path)
    bank = write(tmp_path / "bank.tsv", files["bank"].read_text() + "Q2\tWhy is the sky blue, capitalised?\n")
    with raises_at(bank, 6, "query_id", "unknown query id 'Q2'"):
        graded_shards(str(files["queries"]), str(bank), None, VALIDATION)
    with caplog.at_level(logging.WARNING):
        shards = graded_shards(str(files["queries"]), str(bank), None, VALIDATION | {"unknown_queries": "warn"})
    assert shards == sorted({shard_of("q1", 16), shard_of("q2", 16)})  # q3 has no questions, Q2 is no query
    assert "1 × bank entries with an unknown query id, dropped" in caplog.text
    assert "1 of 3 queries has no questions" in caplog.text
    caplog.clear()
    nuggets = write(tmp_path / "nuggets.tsv", "query_id\tnugget\nq1\tIce deforms.\nq2\tAir scatters blue light.\n")
    with caplog.at_level(logging.WARNING):
        graded_shards(str(files["queries"]), str(nuggets), None, VALIDATION)
    assert f"1 of 3 queries has no nuggets in {nuggets} and gets no grading jobs: q3" in caplog.text  # not "questions"


def test_queries_without_questions_are_said_to_be_graded_by_the_methods_that_grade_against_the_query(tmp_path, caplog):
    """Beside a method that reads the bank, the warning names those that grade q3 all the same; where every method
    grades against the query, q3 misses nothing and is not warned of (it said `only umb grades them`)."""
    files = own_collection(tmp_path)
    backend = {"kind": "openai", "model": "judge", "base_url": "http://127.0.0.1:8000/v1"}
    llm, umb = methods([{"name": "llm", "kind": "self_rating", "backend": backend},
                        {"name": "umb", "kind": "umbrela", "backend": backend}])  # fmt: skip
    with caplog.at_level(logging.WARNING):
        graded_shards(str(files["queries"]), str(files["bank"]), None, VALIDATION, 16, [llm, umb])
        assert caplog.messages == [
            f"1 of 3 queries has no questions in {files['bank']}: only umb grades it, against the query: q3"
        ]
        caplog.clear()
        graded_shards(str(files["queries"]), str(files["bank"]), None, VALIDATION, 16, [umb])
        assert caplog.messages == []
    # a bank none of whose questions is of a query (their ids in other case, dropped under `warn`): a method
    # that reads it would merge no grading job's table, failing late in words of the command (a reviewer)
    upper = write(tmp_path / "upper.tsv", files["bank"].read_text().replace("q1\t", "Q1\t").replace("q2\t", "Q2\t"))
    warned = VALIDATION | {"unknown_queries": "warn"}
    with pytest.raises(InputError, match=rf"^{re.escape(str(upper))}: no question is of a query of .*queries.tsv: the "
                       "methods that read the bank would grade nothing$"):  # fmt: skip
        graded_shards(str(files["queries"]), str(upper), None, warned, 16, [llm, umb])
    assert graded_shards(str(files["queries"]), str(upper), None, warned, 16, [umb]) == []  # it grades every query


def facet_collection(root):
    """The queries and TSV bank of a stranger's trial: a page `coffee` with two subtopics, a query `tea`
    without any and a page `wind` whose only question names no subtopic of it."""
    queries = write(
        root / "queries.jsonl",
        '{"query_id": "coffee", "text": "Coffee", "subtopics": [{"facet_id": "brewing", "text": "Brewing"}, '
        '{"facet_id": "beans", "text": "Beans"}]}\n{"query_id": "tea", "text": "Tea"}\n'
        '{"query_id": "wind", "text": "Wind", "subtopics": [{"facet_id": "turbines", "text": "Turbines"}]}\n',
    )
    bank = write(
        root / "bank.tsv",
        "query_id\tfacet_id\tquestion\ncoffee\tbrewing\tHow is coffee brewed?\ncoffee\tbeans\tWhere do beans grow?\n"
        "tea\t\tWhat is tea?\ncoffee\tnosuchfacet\tWhat is roasting?\ntea\tgreen\tIs green tea steamed?\n"
        "wind\tgusts\tWhat is a gust?\n",
    )
    return queries, bank


def test_bank_facets_that_are_no_subtopic_of_their_query_are_an_error_or_a_counted_warning(tmp_path, caplog):
    queries, bank = facet_collection(tmp_path)
    subtopic = "unknown facet id 'nosuchfacet': not a subtopic of query 'coffee' (its subtopics: beans, brewing)"
    with raises_at(bank, 5, "facet_id", re.escape(subtopic)):
        graded_shards(str(queries), str(bank), None, VALIDATION)
    with caplog.at_level(logging.WARNING):
        shards = graded_shards(str(queries), str(bank), None, VALIDATION | {"unknown_queries": "warn"})
    # wind's only question is left out, so its bucket (shard-05, no other query's) gets no grading job
    assert shards == ["shard-02", "shard-04"] == sorted({shard_of("coffee", 16), shard_of("tea", 16)})
    assert f"3 × bank entries with an unknown facet id, dropped (first: {bank}:5: field 'facet_id': {subtopic})" in (
        caplog.text
    )
    assert "1 of 3 queries has no questions in" in caplog.text and caplog.text.rstrip().endswith(": wind")

    # `examflow bank-shard` leaves them out of the table that grading and |Q| read, or stops
    out = tmp_path / "shard.parquet"
    args = ["bank-shard", "--bank", str(bank), "--queries", str(queries), "--shard", "shard-0", "--shards", "1"]
    assert main([*args, "--out", str(out)]) == 2 and not out.exists()
    assert main([*args, "--on-unknown-query", "warn", "--out", str(out)]) == 0
    table = pd.read_parquet(out).fillna({"facet_id": "-"})
    assert table[["query_id", "facet_id", "question_text"]].values.tolist() == [
        ["coffee", "brewing", "How is coffee brewed?"], ["coffee", "beans", "Where do beans grow?"],
        ["tea", "-", "What is tea?"],
    ]  # fmt: skip


def test_a_facet_on_a_query_without_subtopics_is_named_as_such(tmp_path, capsys):
    queries, bank = facet_collection(tmp_path)
    write(bank, "query_id\tfacet_id\tquestion\ntea\t\tWhat is tea?\ntea\tgreen\tIs green tea steamed?\n")
    args = ["bank-shard", "--bank", str(bank), "--queries", str(queries), "--shard", "shard-0", "--shards", "1"]
    assert main([*args, "--out", str(tmp_path / "shard.parquet")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"examflow: error: {bank}:3: field 'facet_id': facet id 'green' on query 'tea', which has no subtopics"
    )
    # Nor does it make the run write per-subtopic outputs (the facets qrels) when no subtopic has questions.
    grading = {"methods": [{"kind": "self_rating"}], "shards": 1}
    assert not graded_facets({"queries": str(queries), "bank": str(bank)}, None, grading)
    with_subtopic = write(tmp_path / "subtopic.tsv", "query_id\tfacet_id\tquestion\ncoffee\tbeans\tWhere?\n")
    assert graded_facets({"queries": str(queries), "bank": str(with_subtopic)}, None, grading)


def test_official_leaderboards_are_checked(tmp_path):
    with raises_at(tmp_path / "nan.json", 1, "b", "rank nan is not a finite number"):
        read_leaderboard(write(tmp_path / "nan.json", '{"a": 1, "b": NaN}'))
    with raises_at(tmp_path / "inf.json", 1, "a", "rank inf is not a finite number"):
        read_leaderboard(write(tmp_path / "inf.json", '{"a": Infinity}'))
    with raises_at(tmp_path / "twice.json", 3, None, "key 'a' appears twice"):
        read_leaderboard(write(tmp_path / "twice.json", '{\n"a": 1,\n"a": 2\n}'))
    with raises_at(tmp_path / "space.json", 1, "run_id", "invalid id 'my run'"):
        read_leaderboard(write(tmp_path / "space.json", '{"my run": 1}'))
    assert read_leaderboard(write(tmp_path / "bom.json", b'\xef\xbb\xbf{"a": 1, "b": 2.5}')) == {"a": 1.0, "b": 2.5}

    official = write(tmp_path / "official.json", '{\n"good": 1,\n"typo": 2\n}')
    with raises_at(official, 3, "run_id", "official run 'typo' is not among the evaluated runs"):
        match_runs(official, read_leaderboard(official), {"good", "rag"}, Problems("error"))
    scored = write(tmp_path / "official.tsv", "run_id\tscore\ngood\t0.5\ntypo\t0.4\n")  # a TSV: the row's line
    with raises_at(scored, 3, "run_id", "official run 'typo' is not among the evaluated runs"):
        match_runs(scored, read_leaderboard(scored), {"good", "rag"}, Problems("error"))
    ranked = write(tmp_path / "ranked.tsv", "rank\trun\n1\tgood\n2\t1\n")  # run `1`: found in the run column
    with raises_at(ranked, 3, "run_id", "official run '1' is not among the evaluated runs"):
        match_runs(ranked, read_leaderboard(ranked), {"good", "rag"}, Problems("error"))
    notes = match_runs(official, read_leaderboard(official), {"good", "rag"}, Problems("warn"))
    assert notes == ["1 evaluated run is not on the official leaderboard and takes no part in correlations: rag"]


def test_the_leaderboard_is_checked_at_parse_time_against_run_tags_and_responses(tmp_path):
    files = own_collection(tmp_path)
    responses = write(tmp_path / "responses.jsonl", '{"run_id": "rag", "query_id": "q1", "text": "An answer."}\n')
    inputs = {"official_leaderboard": str(write(tmp_path / "lb.json", '{"good": 1, "poor": 2, "rag": 3}')),
              "responses": str(responses), "queries": str(files["queries"])}  # fmt: skip
    runs = [str(files["run_good"]), str(files["run_poor"])]
    check_leaderboard(inputs, runs, VALIDATION)
    with pytest.raises(InputError, match="official run 'rag' is not among the evaluated runs"):
        check_leaderboard(inputs | {"responses": None}, runs, VALIDATION)
    # A system whose every response is empty has no passage and no leaderboard row: it is not evaluated.
    write(
        responses, '{"run_id": "rag", "query_id": "q1", "text": " "}\n{"run_id": "rag", "query_id": "q2", "text": []}\n'
    )
    with pytest.raises(InputError, match="official run 'rag' is not among the evaluated runs"):
        check_leaderboard(inputs, runs, VALIDATION)
    # A query id written as a JSON number is its digits, as the responses' reader takes it.
    numbered = write(tmp_path / "numbered.jsonl", '{"run_id": "rag", "query_id": 7, "text": "An answer."}\n')
    queries = write(tmp_path / "q7.tsv", "7\tseven\n")
    check_leaderboard(inputs | {"responses": str(numbered), "queries": str(queries)}, runs, VALIDATION)
    # Nor is one that answered only queries the collection does not have (dropped under `warn`).
    write(responses, '{"run_id": "rag", "query_id": "q404", "text": "An answer."}\n')
    with pytest.raises(InputError, match="official run 'rag' is not among the evaluated runs"):
        check_leaderboard(inputs, runs, VALIDATION)


def test_qrels_relevance_outside_the_range_is_an_error_and_car_minus_two_counts_as_non_relevant(tmp_path):
    queries = read_queries(write(tmp_path / "q.tsv", "q1\tquery\n"))
    with raises_at(tmp_path / "bad.qrels", 2, "relevance", r"7 is outside -2..4"):
        read_qrels(write(tmp_path / "bad.qrels", "q1 0 d1 1\nq1 0 d2 7\n"), queries, strict())
    judgments = read_qrels(write(tmp_path / "car.qrels", "q1 0 d1 -2\nq1 0 d2 1\nq1 0 d3 0\n"), queries, strict())
    labels = pd.DataFrame({"qrels_id": ["q1"] * 3, "passage_id": ["d1", "d2", "d3"], "label": [4, 4, 0]})
    tables = agreement_tables(paired(labels, judgments), relevant_judgment=1)
    assert tables["graded"].loc[4, -2] == 1 and tables["graded"].to_numpy().sum() == 3  # not dropped
    assert tables["lenient"].to_numpy().tolist() == [[1, 0], [1, 1]]  # -2 is non-relevant


def test_ids_from_json_follow_the_rules_of_tsv(tmp_path):
    with raises_at(tmp_path / "q.json", 1, "query_id", "invalid id 'q 1'"):
        read_queries(write(tmp_path / "q.json", '{"q 1": "a query"}'))
    with raises_at(tmp_path / "q2.json", 2, "query_id", "invalid id 'a/b'"):
        read_queries(write(tmp_path / "q2.json", '{"ok": "x",\n"a/b": "a query"}'))
    with raises_at(tmp_path / "e.jsonl", 1, "run_id", "empty: an id is one word"):  # it read "invalid id ''"
        read_responses(write(tmp_path / "e.jsonl", '{"run_id": "", "query_id": "q1", "text": "t"}\n'), {"q1"}, strict())
    with raises_at(tmp_path / "r.jsonl", 1, "run_id", "invalid id 'my run'"):
        read_responses(
            write(tmp_path / "r.jsonl", '{"run_id": "my run", "query_id": "q1", "text": "t"}\n'), {"q1"}, strict()
        )


def test_numeric_ids_read_as_digits_and_numbers_where_text_belongs_are_errors(tmp_path):
    queries = read_queries(write(tmp_path / "q.jsonl", '{"query_id": 1037798, "text": "who is robert gray"}\n'))
    assert queries["query_id"].tolist() == ["1037798"]
    with raises_at(tmp_path / "f.jsonl", 1, "query_id", "expected a string or whole number, found 1.5"):
        read_queries(write(tmp_path / "f.jsonl", '{"query_id": 1.5, "text": "x"}\n'))
    with raises_at(tmp_path / "t.jsonl", 1, "text", "expected a string, found int"):
        read_queries(write(tmp_path / "t.jsonl", '{"query_id": "q", "text": 42}\n'))
    bank = read_bank(
        write(tmp_path / "b.jsonl", json.dumps({"query_id": 19335, "items": [{"question_text": "Why?"}]}) + "\n")
    )
    assert bank[0].query_id == "19335" and bank[0].items[0].item_id.startswith("19335/")
    with raises_at(tmp_path / "b2.jsonl", 1, "items[0].question_text", "missing or not a string"):
        read_bank(write(tmp_path / "b2.jsonl", json.dumps({"query_id": "q", "items": [{"question_text": 3}]}) + "\n"))


def test_a_byte_order_mark_is_ignored_everywhere(tmp_path, caplog):
    bom = b"\xef\xbb\xbf"
    with caplog.at_level(logging.WARNING):
        assert read_queries(write(tmp_path / "q.tsv", bom + b"q1\tquery\n"))["query_id"].tolist() == ["q1"]
        runs = read_runs([write(tmp_path / "a.run", bom + b"q1 Q0 d1 1 2 A\n")], {"q1"}, strict())
        assert runs["query_id"].tolist() == ["q1"]
        gzipped = write(tmp_path / "c.tsv.gz", gzip.compress(bom + b"d1\ttext\n"))
        assert read_passages(gzipped, {"d1"}, strict()) == {"d1": "text"}
    assert "starts with a UTF-8 byte-order mark; ignored" in caplog.text
    assert caplog.text.count(f"{tmp_path / 'a.run'}: starts with") == 1  # read for its tag, then whole: said once


def test_damaged_gzip_files_name_the_file(tmp_path):
    with raises_at(tmp_path / "plain.tsv.gz", None, None, "not a valid gzip file"):
        read_queries(write(tmp_path / "plain.tsv.gz", "q1\tquery\n"))
    whole = gzip.compress(b"".join(b"q%d\tquery number %d\n" % (i, i) for i in range(5000)))
    with raises_at(tmp_path / "cut.tsv.gz", None, None, "cut short; read up to line"):
        read_queries(write(tmp_path / "cut.tsv.gz", whole[: len(whole) // 2]))
    # the first deflate block's type made the reserved one (ISA-L's own error), then the checksum
    with raises_at(
        tmp_path / "bits.tsv.gz", None, None, r"not a valid gzip file \(.*\); found while reading its first lines"
    ):
        read_queries(write(tmp_path / "bits.tsv.gz", whole[:10] + bytes([whole[10] | 0b110]) + whole[11:]))
    # A small file without its 8-byte trailer: every line is there, found in one read (it said none could be read)
    with raises_at(tmp_path / "tail.tsv.gz", None, None, "cut short; found while reading its first lines"):
        read_queries(write(tmp_path / "tail.tsv.gz", gzip.compress(b"q1\tquery\n")[:-8]))
    with raises_at(tmp_path / "crc.tsv.gz", None, None, r"not a valid gzip file \(CRC check failed"):
        read_queries(write(tmp_path / "crc.tsv.gz", whole[:-8] + bytes(4) + whole[-4:]))
    with raises_at(tmp_path / "stray.tsv.gz", None, None, r"not a valid gzip file \(Not a gzipped file \(b'ga'\)\)"):
        read_queries(write(tmp_path / "stray.tsv.gz", whole + b"ga"))  # two stray bytes: no stream cut short


def test_an_empty_bank_is_an_error(tmp_path):
    with raises_at(tmp_path / "empty.jsonl", None, None, "the bank holds no questions or nuggets"):
        read_bank(write(tmp_path / "empty.jsonl", json.dumps({"query_id": "q", "items": []}) + "\n"))
    with raises_at(tmp_path / "header.tsv", None, None, "file is empty|holds no questions"):
        read_bank(write(tmp_path / "header.tsv", "query_id\tquestion\n"))


def test_a_shard_with_nothing_to_grade_loads_no_model(tmp_path, capsys):
    empty = pd.DataFrame({"query_id": pd.Series(dtype=object), "passage_id": pd.Series(dtype=object),
                          "text": pd.Series(dtype=object), "origin": pd.Series(dtype=object)})  # fmt: skip
    empty.to_parquet(tmp_path / "passages.parquet")
    pd.DataFrame({"query_id": ["q1"], "facet_id": [None], "query_text": ["q"], "facet_text": [None]}).to_parquet(
        tmp_path / "queries.parquet"
    )
    pd.DataFrame({"query_id": ["q1"], "facet_id": [None], "question_id": ["q1/x"], "question_text": ["Why?"],
                  "kind": ["question"], "gold_answers": [None], "choices": [None]}).to_parquet(tmp_path / "questions.parquet")  # fmt: skip
    method = {"name": "t5", "kind": "self_rating", "backend": {"kind": "hf_seq2seq", "model": str(tmp_path / "absent")}}
    args = ["grade", "--method", json.dumps(method), "--passages", str(tmp_path / "passages.parquet"), "--queries",
            str(tmp_path / "queries.parquet"), "--questions", str(tmp_path / "questions.parquet"), "--shard", "q1",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "grades.parquet")]  # fmt: skip
    assert main(args) == 0  # the model directory does not exist: loading it would have failed
    assert pd.read_parquet(tmp_path / "grades.parquet").empty
    method["backend"]["batch_sise"] = 8
    assert main(args[:2] + [json.dumps(method)] + args[3:]) == 2
    assert (
        "examflow: error: --method.backend.batch_sise: unknown option (did you mean 'batch_size'?)"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "command, option", [("grade", "--method"), ("merge-grades", "--method"), ("plan", "--method[0]")]
)
def test_a_method_key_a_config_refuses_is_refused_on_the_command_line(tmp_path, capsys, command, option):
    """By hand, `calibraton` beside the embedding grader's `kind` was ignored: graded at the default
    calibration, exit 0 (a stranger's trial), where a config names it."""
    method = {"name": "m", "kind": "self_rating", "calibraton": "query", "quantile": [0.5],
              "backend": {"kind": "embedding", "modl": "x"}}  # fmt: skip
    rest = {"grade": ["--passages", "p", "--queries", "q", "--shard", "shard-0", "--cache-dir", "c", "--out", "g"],
            "merge-grades": ["--out", "g"], "plan": ["--pool", "p"]}[command]  # fmt: skip
    assert main([command, "--method", json.dumps(method), *rest]) == 2
    said = capsys.readouterr().err
    assert re.findall(r"(?:error: |; and )(\S+): unknown (?:key|option) \(did you mean '(\w+)'\?\)", said) == [
        (f"{option}.calibraton", "calibration"), (f"{option}.quantile", "quantiles"),
        (f"{option}.backend.modl", "model"),
    ], said  # fmt: skip
    assert not list(tmp_path.iterdir())


def test_the_worked_example_names_a_query(tmp_path):
    queries = own_collection(tmp_path)["queries"]
    check_example_query(str(queries), "q2")
    check_example_query(str(queries), None)  # the first topic with questions and passages, chosen at run time
    with pytest.raises(InputError) as caught:
        check_example_query(str(queries), "q22")
    assert (
        str(caught.value)
        == f"config report.example_query: 'q22' is none of the queries in {queries} (did you mean 'q2'?)"
    )


def test_every_option_of_several_values_gathers_them_when_given_twice():
    """argparse keeps the last of an option given twice: `--tau 1 --tau 4` evaluated τ 4 alone, with exit 0."""
    import argparse

    from examflow.cli import Gathered, parser

    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    several = [(name, action) for name, command in commands.items() for action in command._actions
               if action.option_strings and action.nargs in ("+", "*")]  # fmt: skip
    assert len(several) > 20 and all(isinstance(action, Gathered) for _, action in several)
    wilcoxon = next(a for a in commands["nrp"]._actions if "--wilcoxon" in a.option_strings)  # pairs, appended
    assert type(wilcoxon) is argparse._AppendAction and wilcoxon.nargs == 4
    evaluate = ["evaluate", "--grades", "g.parquet", "--out", "o"]
    assert parser().parse_args([*evaluate, "--tau", "1", "--tau", "4", "5"]).tau == [1, 4, 5]
    assert parser().parse_args(evaluate).tau == [1, 3, 4, 5]  # the default, untouched by an earlier parse
    assert parser().parse_args([*evaluate, "--facts"]).facts == []
