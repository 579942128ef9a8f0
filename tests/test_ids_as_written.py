"""Ids that pandas would read as missing values or numbers (`NA`, `None`, `null`, `nan`, `001`, `1e5`,
`0x1`, `True`) stay exactly as written: in every input reader, every table examflow reads back, and
through the real `examflow evaluate` → `examflow summary` / `examflow report` commands."""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import subprocess
import sys

import pandas as pd
import pytest
from cli_chain import examflow, graded
from conftest import write
from docutils import nodes
from docutils.core import publish_doctree

from examflow.errors import Problems
from examflow.io import read_passages, read_qrels, read_queries, read_responses, read_runs, read_table, write_tables
from examflow.io.leaderboard import read_leaderboard
from examflow.io.tables import read_tsv
from examflow.io.workbench import read_workbench_graded
from examflow.questions.bank import read_bank

IDS = ["NA", "None", "null", "nan", "001", "1e5", "0x1", "True"]


def test_tables_read_back_keep_ids_as_written_and_empty_number_cells_missing(tmp_path):
    written = pd.DataFrame(
        {
            "method": ["NA"] * 8,
            "measure": ["exam_cover"] * 7 + ["exam"],
            "tau": [4] * 7 + [None],
            "run_id": IDS,
            "score": [0.5, 0.25, None, 1.0, 0.0, 0.125, 0.75, 0.5],
            "n_queries": [3, 2, 1, 3, 3, 2, 1, 3],
            "note": ["null", None, "", "True", "1e5", "x", "y", "z"],
        }
    )
    write_tables({tmp_path / "board.tsv": written, tmp_path / "board.parquet": written})
    read = read_tsv(tmp_path / "board.tsv")
    assert read["run_id"].tolist() == IDS and read["method"].tolist() == ["NA"] * 8
    assert read["note"].tolist()[:1] + read["note"].tolist()[3:] == ["null", "True", "1e5", "x", "y", "z"]
    assert read["note"].iloc[1:3].isna().all()  # pandas writes None and "" alike: an empty cell
    assert read["n_queries"].tolist() == [3, 2, 1, 3, 3, 2, 1, 3] and read["n_queries"].dtype == "int64"
    assert read["score"].iloc[2] != read["score"].iloc[2] and read["score"].iloc[[0, 5]].tolist() == [0.5, 0.125]
    assert read["tau"].iloc[:7].tolist() == [4] * 7 and math.isnan(read["tau"].iloc[7])
    assert read_table(tmp_path / "board.parquet", ["run_id"])["run_id"].tolist() == IDS
    flags = read_tsv(write(tmp_path / "flags.tsv", "ranker\tchosen\tndcg_cut_10\nNA\tTrue\t0.5\nnull\tFalse\t\n"))
    assert flags["ranker"].tolist() == ["NA", "null"] and flags["chosen"].tolist() == [True, False]


def test_tables_hold_names_with_quotes_as_written_and_quote_only_free_text_that_needs_it(tmp_path):
    """A run tagged `q"x` was written `"q""x"` (CSV quoting): the official leaderboard computed from the
    qrels named a run no evaluation knew, and awk read the quotes. Only a cell with a tab or a line break
    (free text) needs quoting; its table is then quoted throughout, so its first character tells."""
    names = ['q"x', '"lead', "back\\slash", "it's"]
    board = pd.DataFrame({"run_id": names, "score": [0.5, 0.25, None, 1.0], "note": ["", None, "a b", "x"]})
    write_tables({tmp_path / "board.tsv": board})
    lines = (tmp_path / "board.tsv").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[0] for line in lines] == ["run_id", *names]
    assert read_tsv(tmp_path / "board.tsv")["run_id"].tolist() == names
    official = write(tmp_path / "official.tsv", "run_id\tscore\n" + "".join(f"{n}\t{i}\n" for i, n in enumerate(names)))
    write_tables({tmp_path / "again.tsv": read_tsv(official)})
    assert read_leaderboard(tmp_path / "again.tsv") == {'q"x': 4.0, '"lead': 3.0, "back\\slash": 2.0, "it's": 1.0}
    texts = board.assign(note=["two\nlines", "a\ttab", "", 'said "so"'])
    write_tables({tmp_path / "texts.tsv": texts})
    assert (tmp_path / "texts.tsv").read_text(encoding="utf-8").startswith('"run_id"\t"score"\t"note"\n"q""x"')
    read = read_tsv(tmp_path / "texts.tsv")
    assert read["run_id"].tolist() == names and read["note"].tolist()[:2] + read["note"].tolist()[3:] == [
        "two\nlines",
        "a\ttab",
        'said "so"',
    ]
    assert read["score"].tolist()[:2] == [0.5, 0.25] and math.isnan(read["score"].iloc[2])
    # a lone column with an empty cell (csv writes an empty line only quoted), a name that repeats, no rows
    for name, frame in {"one": pd.DataFrame({"note": ["a", None]}), "twice": pd.DataFrame([[1, "a"]], columns=["x"] * 2),
                        "none": pd.DataFrame(columns=["run_id", "score"])}.items():  # fmt: skip
        write_tables({tmp_path / f"{name}.tsv": frame})
    assert (
        read_tsv(tmp_path / "one.tsv")["note"].tolist()[0] == "a" and read_tsv(tmp_path / "one.tsv")["note"].isna()[1]
    )
    assert (tmp_path / "twice.tsv").read_text() == "x\tx\n1\ta\n" and read_tsv(tmp_path / "none.tsv").empty


def test_text_columns_keep_a_missing_value_missing_and_a_name_as_written():
    """`astype("str")` wrote None as 'None' before pandas 3: every workbench grade read as failed, and every
    judgment of a whole query as one of subtopic 'None' (a reviewer's trial under pandas 2.2)."""
    from examflow.io.qrels import qrels_ids
    from examflow.io.tables import text_series

    column = pd.Series([None, "NA", "None", float("nan"), "001"], dtype=object, index=[5, 6, 7, 8, 9], name="error")
    texts = text_series(column)
    assert texts.isna().tolist() == [True, False, False, True, False] and texts.index.tolist() == [5, 6, 7, 8, 9]
    assert texts.dropna().tolist() == ["NA", "None", "001"] and texts.name == "error"
    judged = pd.DataFrame({"query_id": ["q1", "q2", "NA"], "facet_id": [None, "None", float("nan")]}, dtype=object)
    assert qrels_ids(judged).tolist() == ["q1", "q2/None", "NA"]


def test_input_readers_keep_ids_as_written(tmp_path):
    tsv = write(tmp_path / "q.tsv", "".join(f"{q}\tquery {q}\n" for q in IDS))
    json_queries = write(tmp_path / "q.json", json.dumps({q: f"query {q}" for q in IDS}))
    jsonl = write(tmp_path / "q.jsonl", "".join(json.dumps({"query_id": q, "text": "t"}) + "\n" for q in IDS))
    for path in (tsv, json_queries, jsonl):
        assert read_queries(path)["query_id"].tolist() == IDS
    queries = read_queries(tsv)
    runs = [write(tmp_path / f"run{i}", f"{q} Q0 {q} 1 2.5 {q}\n") for i, q in enumerate(IDS)]
    table = read_runs(runs, set(IDS), Problems("error"))
    assert table[["run_id", "query_id", "passage_id"]].values.tolist() == [[q, q, q] for q in IDS]
    qrels = write(tmp_path / "qrels", "".join(f"{q} 0 {q} 1\n" for q in IDS))
    assert read_qrels(qrels, queries, Problems("error"))[["query_id", "passage_id"]].values.tolist() == [
        [q, q] for q in IDS
    ]
    bank = read_bank(write(tmp_path / "bank.tsv", "query_id\tquestion\n" + "".join(f"{q}\tWhy {q}?\n" for q in IDS)))
    assert [entry.query_id for entry in bank] == IDS
    corpus = write(tmp_path / "corpus.tsv", "".join(f"{q}\ttext {q}\n" for q in IDS))
    assert read_passages(corpus, set(IDS), Problems("error")) == {q: f"text {q}" for q in IDS}
    responses = write(
        tmp_path / "r.jsonl", "".join(json.dumps({"run_id": q, "query_id": q, "text": "x"}) + "\n" for q in IDS)
    )
    assert [(r.run_id, r.query_id) for r in read_responses(responses, set(IDS), Problems("error"))] == [
        (q, q) for q in IDS
    ]
    assert read_leaderboard(write(tmp_path / "official.json", json.dumps({q: i for i, q in enumerate(IDS)}))) == {
        q: float(i) for i, q in enumerate(IDS)
    }
    graded = tmp_path / "graded.jsonl.gz"
    with gzip.open(graded, "wt") as out:
        for q in IDS:
            ratings = [{"question_id": q, "self_rating": 4}]
            paragraph = {"paragraph_id": q, "text": "t",
                         "paragraph_data": {"judgments": [], "rankings": [{"method": q, "rank": 1, "score": 1.0}]},
                         "exam_grades": [{"correctAnswered": [], "wrongAnswered": [], "self_ratings": ratings}]}  # fmt: skip
            out.write(json.dumps([q, [paragraph]]) + "\n")
    tables = read_workbench_graded(graded)
    assert sorted(tables["rankings"][["run_id", "query_id", "passage_id"]].values.tolist()) == sorted(
        [q, q, q] for q in IDS
    )
    assert tables["grades"][["query_id", "passage_id", "question_id"]].values.tolist() == [[q, q, q] for q in IDS]


# Queries 001 and NA with two questions each; a passage answers (grade 5) the questions whose last
# word it holds, else 0. Four runs named as pandas would not read them.
CORPUS = {"p1": "basalt forms from lava", "p2": "magma rises", "p3": "nothing here", "p4": "the moon pulls water",
          "p5": "gravity of the sun", "p6": "sand"}  # fmt: skip
BANK = {"001": ["What is basalt?", "What is magma?"], "NA": ["What is the moon?", "What is gravity?"]}
RUNS = {"NA": {"001": ["p1", "p2"], "NA": ["p4", "p5"]}, "null": {"001": ["p1", "p3"], "NA": ["p4", "p6"]},
        "None": {"001": ["p3"], "NA": ["p6"]}, "nan": {"001": ["p2"], "NA": ["p4", "p5"]}}  # fmt: skip
OFFICIAL = {"NA": 1, "nan": 2, "null": 3, "None": 4}


def exam_cover(run: str) -> float:
    """Share of each query's questions that some passage of the run answers, averaged over queries."""
    shares = []
    for query, passages in RUNS[run].items():
        words = {w for p in passages for w in CORPUS[p].split()}
        shares.append(sum(q.split()[-1].rstrip("?") in words for q in BANK[query]) / len(BANK[query]))
    return sum(shares) / len(shares)


def grade(prompt: str) -> str:
    question = re.search(r"Question: (.*)", prompt)[1]
    context = re.search(r"Context: (.*)", prompt)[1]
    return "5" if question.split()[-1].rstrip("?") in context.split() else "0"


def test_runs_and_queries_named_na_null_none_nan_go_through_evaluate_summary_and_report(tmp_path):
    queries = write(tmp_path / "queries.tsv", "001\tlava\nNA\ttides\n")
    corpus = write(tmp_path / "corpus.tsv", "".join(f"{p}\t{text}\n" for p, text in CORPUS.items()))
    bank = write(tmp_path / "bank.tsv", "query_id\tquestion\n" + "".join(f"{q}\t{t}\n" for q in BANK for t in BANK[q]))
    qrels = write(tmp_path / "qrels.txt", "001 0 p1 2\n001 0 p3 0\nNA 0 p4 2\nNA 0 p6 0\n")
    runs = [
        write(tmp_path / f"run-{i}.txt", "".join(f"{q} Q0 {p} {r} {9 - r} {run}\n" for q, ps in lists.items()
                                                 for r, p in enumerate(ps, 1)))
        for i, (run, lists) in enumerate(RUNS.items())
    ]  # fmt: skip
    official = write(tmp_path / "official.json", json.dumps(OFFICIAL))
    pool, shard, grades, out = tmp_path / "pool", tmp_path / "bank.parquet", tmp_path / "grades", tmp_path / "eval"
    examflow("pool", "--queries", queries, "--runs", *runs, "--qrels", qrels, "--corpus", corpus, "--out", pool)
    examflow("bank-shard", "--bank", bank, "--queries", queries, "--shard", "shard-0", "--shards", 1, "--out", shard)
    graded_table, _ = graded(tmp_path, pool, shard, grade)
    examflow("evaluate", "--grades", graded_table, "--pool", pool, "--questions", shard, "--official",
             official, "--tau", 4, "--measures", "P_5", "--bootstrap", 10, "--out", out)  # fmt: skip
    board = read_tsv(out / "leaderboard.tsv")
    cover = board[(board["measure"] == "exam_cover") & (board["kind"] == "system")].set_index("run_id")["score"]
    assert cover.to_dict() == pytest.approx({run: exam_cover(run) for run in RUNS})
    assert exam_cover("NA") == 1.0 and exam_cover("nan") == 0.75
    per_query = read_tsv(out / "per_query.tsv")
    assert set(per_query["query_id"]) == {"001", "NA"} and set(per_query["run_id"]) >= set(RUNS)

    examflow("summary", "--grades", grades / "llm.parquet", "--flagged", pool / "flagged.tsv", "--config-digest",
             "0" * 64, "--results", "results", "--eval", out, "--out-summary", tmp_path / "summary.md",
             "--out-rst", tmp_path / "summary.rst", "--out-provenance", tmp_path / "provenance.json")  # fmt: skip
    summary = (tmp_path / "summary.md").read_text()
    assert "| exam_cover | NA | 1.000 |" in summary
    # correlation.tsv is read where an official leaderboard is given, never because an earlier run left it
    assert "Spearman" not in summary
    stream = io.StringIO()
    rst = publish_doctree((tmp_path / "summary.rst").read_text(), settings_overrides={"warning_stream": stream})
    assert stream.getvalue() == "" and ["exam_cover", "NA", "1.000"] in [
        [entry.astext() for entry in row.findall(nodes.entry)][:3] for row in rst.findall(nodes.row)
    ]
    examflow("summary", "--grades", grades / "llm.parquet", "--config-digest", "0" * 64, "--results", "results",
             "--eval", out, "--official", official, "--out-summary", tmp_path / "official.md", "--out-provenance",
             tmp_path / "provenance.json")  # fmt: skip
    # the runs' EXAM-Cover, all different, orders them as the official leaderboard does: ρ = τ = 1
    assert sorted(RUNS, key=lambda run: -exam_cover(run)) == sorted(OFFICIAL, key=OFFICIAL.get)
    assert len({exam_cover(run) for run in RUNS}) == len(RUNS)
    assert re.search(
        r"Spearman's ρ 1\.000 \\\[[0-9.]+, 1\.000\\\], Kendall's τ 1\.000", (tmp_path / "official.md").read_text()
    )
    examflow("report", "--method", "llm", "--eval", out, "--grades", grades / "llm.parquet", "--official", official,
             "--pool", pool, "--questions", shard, "--example-query", "NA", "--out", tmp_path / "report")  # fmt: skip
    [page] = pd.read_html(tmp_path / "report" / "leaderboard.html", keep_default_na=False)[:1]
    systems = page[page["group"] == "official"]
    assert systems["run"].tolist() == sorted(RUNS, key=lambda run: -exam_cover(run))  # the headline order
    assert systems["official rank"].tolist() == [str(OFFICIAL[run]) for run in systems["run"]]
    example = (tmp_path / "report" / "example.html").read_text()
    assert "topic NA" in example and "the moon pulls water" in example
    # Run alone, the report refuses what the workflow checks at parse time: a topic the pool lacks, and an
    # official leaderboard of a run not evaluated (its figures were empty, in silence)
    typo = write(tmp_path / "typo.json", json.dumps({**OFFICIAL, "Nan": 5}))
    for option, message in ((["--example-query", "na"], "--example-query 'na': no query of the pool (its queries: "
                             "001, NA)"),
                            (["--official", typo], f"{typo}:1: field 'run_id': official run 'Nan' is not among the "
                             "evaluated runs")):  # fmt: skip
        words = ["report", "--method", "llm", "--eval", out, "--grades", grades / "llm.parquet", "--pool", pool,
                 "--questions", shard, *option, "--out", tmp_path / "refused"]  # fmt: skip
        refused = subprocess.run([sys.executable, "-m", "examflow", *map(str, words)], capture_output=True, text=True)
        assert refused.returncode == 2 and refused.stderr == f"examflow: error: {message}\n"
        assert not (tmp_path / "refused").exists()
    alone = ["report", "--method", "llm", "--eval", out, "--grades", grades / "llm.parquet", "--example-query", "NA"]
    refused = subprocess.run([sys.executable, "-m", "examflow", *map(str, alone), "--out", tmp_path / "refused"],
                             capture_output=True, text=True)  # fmt: skip
    assert refused.stderr == "examflow: error: --example-query needs --pool and --questions\n"
    # validation.leaderboard_runs: warn, as evaluate's --on-unknown-run: dropped, counted
    examflow(*words[:-2], "--on-unknown-run", "warn", "--out", tmp_path / "warned")
    page = (tmp_path / "warned/leaderboard.html").read_text()
    assert "official runs evaluated without a score" not in page  # `Nan` was not evaluated: dropped
    # where every official run is dropped so, the pages show no official run, and name none as unscored
    nothing = write(tmp_path / "nothing.json", json.dumps({"Nan": 1, "none": 2}))
    examflow(*words[:-4], "--official", nothing, "--on-unknown-run", "warn", "--out", tmp_path / "none")
    [page] = pd.read_html(tmp_path / "none/leaderboard.html", keep_default_na=False)[:1]
    assert "official rank" not in page.columns and set(page["group"]) == {"run", "pool"}
    # and evaluate's: a run dropped so is no evaluated run "without a score" in the correlations' notes
    examflow("evaluate", "--grades", graded_table, "--pool", pool, "--questions", shard, "--official", typo,
             "--on-unknown-run", "warn", "--tau", 4, "--measures", "P_5", "--bootstrap", 10, "--out", tmp_path / "ev")  # fmt: skip
    notes = set(read_tsv(tmp_path / "ev/correlation.tsv")["note"].dropna())
    assert not any("Nan" in note for note in notes), notes
