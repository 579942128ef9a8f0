"""`examflow evaluate --workbench-graded`: the reference implementation's graded file as input."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import REFERENCE, needs_reference, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from examflow.errors import InputError
from examflow.io.workbench import _stable_order, read_workbench_graded

SAMPLE = REFERENCE / "format-samples" / "workbench-graded-sample.jsonl.gz"


def evaluate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "examflow", "evaluate", *args], capture_output=True, text=True)


@needs_reference("the published graded sample evaluates end to end", SAMPLE.exists())
def test_the_published_sample_evaluates_end_to_end(tmp_path):
    official = REFERENCE / "derived" / "official_dl19_leaderboard.json"
    args = ("--workbench-graded", str(SAMPLE), "--official", str(official), "--out", str(tmp_path))
    # The sample is 12 passages of one query: most official runs rank none of them.
    refused = evaluate(*args)
    assert refused.returncode == 2 and "official run 'ICT-BERT2' is not among the evaluated runs" in refused.stderr
    assert not list(tmp_path.iterdir())
    result = evaluate(*args, "--on-unknown-run", "warn")
    assert result.returncode == 0, result.stderr
    assert "official runs that are not evaluated, dropped" in result.stderr
    # Expected cover, straight from the file: questions rated >= tau by a paragraph a run ranks <= 20.
    [[query_id, paragraphs]] = [json.loads(line) for line in gzip.open(SAMPLE, "rt")]
    ratings = {
        p["paragraph_id"]: {r["question_id"]: r["self_rating"] for r in p["exam_grades"][0]["self_ratings"]}
        for p in paragraphs
    }
    questions = set().union(*ratings.values())
    board = pd.read_csv(tmp_path / "leaderboard.tsv", sep="\t", dtype={"run_id": str})
    cover = board[board["measure"] == "exam_cover"].set_index(["run_id", "tau"])["score"]
    for tau in (1, 3, 4, 5):
        ranked = {r["method"] for p in paragraphs for r in p["paragraph_data"]["rankings"] if r["rank"] <= 20}
        for run in ranked:
            top = [p["paragraph_id"] for p in paragraphs for r in p["paragraph_data"]["rankings"]
                   if r["method"] == run and r["rank"] <= 20]  # fmt: skip
            covered = {q for p in top for q, rating in ratings[p].items() if rating >= tau}
            assert cover[(run, tau)] == pytest.approx(len(covered) / len(questions))
        everything = {q for p in ratings.values() for q, rating in p.items() if rating >= tau}
        assert cover[("_overall_", tau)] == pytest.approx(len(everything) / len(questions))
    qrels = (tmp_path / "qrels" / "QuestionSelfRatedUnanswerablePromptWithChoices.qrels").read_text().splitlines()
    assert len(qrels) == len(paragraphs) and qrels[0] == f"{query_id} 0 1033903 4"
    correlation = pd.read_csv(tmp_path / "correlation.tsv", sep="\t")
    assert set(correlation["n_runs"]) == {16}  # every ranked run is on the DL19 leaderboard
    kappa = pd.read_csv(tmp_path / "kappa.tsv", sep="\t")
    assert set(kappa["n_pairs"]) == {12}


def paragraph(pid, rankings=(), judgments=(), exam_grades=None, grades=None):
    return {
        "paragraph_id": pid,
        "text": f"text of {pid}",
        "paragraph": {},
        "paragraph_data": {
            "judgments": [{"paragraphId": pid, "query": q, "relevance": r, "titleQuery": "t"} for q, r in judgments],
            "rankings": [
                {"method": m, "paragraphId": pid, "queryId": q, "rank": k, "score": 1.0} for m, q, k in rankings
            ],
        },
        "exam_grades": exam_grades,
        "grades": grades,
    }


def qa_grade(correct, wrong, llm="flan-t5-large"):
    answers = [[q, "an answer"] for q in correct + wrong]
    info = {"prompt_class": "QuestionCompleteConcisePromptWithAnswerKey2", "is_self_rated": False}
    return {"correctAnswered": correct, "wrongAnswered": wrong, "answers": answers, "llm": llm,
            "llm_options": {}, "exam_ratio": 0.5, "prompt_info": info, "self_ratings": None}  # fmt: skip


def test_qa_grades_direct_grades_models_and_facets(tmp_path):
    lines = [
        ["page", [
            paragraph("a", [("r1", "page/f1", 1), ("r1", "page/f2", 3), ("r2", "page/f1", 30)], [("page/f1", 1)],
                      [qa_grade(["page/x"], ["page/y"]), qa_grade([], ["page/x", "page/y"], llm="other")],
                      [{"correctAnswered": True, "answer": "yes", "llm": "m", "llm_options": {},
                        "prompt_info": {"prompt_class": "FagB"}, "self_ratings": None}]),
            paragraph("b", [("r2", "page/f2", 2)], [], [qa_grade(["page/y"], ["page/x"])]),
        ]],
    ]  # fmt: skip
    path = tmp_path / "graded.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    tables = read_workbench_graded(path)
    grades = tables["grades"]
    # the QA prompt class was run by two models: each is a method of its own
    assert sorted(set(grades["method"])) == [
        "FagB",
        "QuestionCompleteConcisePromptWithAnswerKey2:flan-t5-large",
        "QuestionCompleteConcisePromptWithAnswerKey2:other",
    ]
    fag = grades[grades["method"] == "FagB"]
    assert fag[["passage_id", "question_id", "rating"]].values.tolist() == [["a", "page", 1]]
    # a passage ranked under two facets keeps its best rank; a facet judgment keeps its facet
    assert tables["rankings"][["run_id", "passage_id", "rank"]].values.tolist() == [
        ["r1", "a", 1], ["r2", "b", 2], ["r2", "a", 30]
    ]  # fmt: skip
    assert tables["judgments"][["query_id", "facet_id", "relevance"]].values.tolist() == [["page", "f1", 1]]
    result = evaluate("--workbench-graded", str(path), "--tau", "1", "--k", "20", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "methods 3, runs 2, measures " in result.stderr  # r1 and r2; not the pool's row, _overall_
    board = pd.read_csv(tmp_path / "out" / "leaderboard.tsv", sep="\t")
    exam = board[board["measure"] == "exam"].set_index(["method", "run_id"])["score"]
    assert exam[("QuestionCompleteConcisePromptWithAnswerKey2:flan-t5-large", "r1")] == 0.5  # a answers x
    assert exam[("QuestionCompleteConcisePromptWithAnswerKey2:flan-t5-large", "r2")] == 0.5  # only b: y
    assert exam[("QuestionCompleteConcisePromptWithAnswerKey2:other", "r1")] == 0.0

    # A method's report from the same file: its own rows of the evaluation, never another method's
    def report(method: str) -> subprocess.CompletedProcess:
        command = ["report", "--method", method, "--eval", tmp_path / "out", "--workbench-graded", path, "--tau", 1,
                   "--out", tmp_path / "report"]  # fmt: skip
        return subprocess.run([sys.executable, "-m", "examflow", *map(str, command)], capture_output=True, text=True)

    for model, r1 in (("other", "0.000 ± 0.000"), ("flan-t5-large", "0.500 ± 0.000")):
        assert report(f"QuestionCompleteConcisePromptWithAnswerKey2:{model}").returncode == 0
        [page] = pd.read_html(tmp_path / "report" / "leaderboard.html")[:1]
        assert page.set_index("run").loc["r1", "exam every τ"] == r1, model
        assert (tmp_path / "report" / "grades.png").stat().st_size > 0
    unknown = report("QA")
    assert unknown.returncode == 2 and unknown.stderr.startswith("examflow: error: --method 'QA': ")
    assert (
        "holds no row of it (methods: FagB, QuestionCompleteConcisePromptWithAnswerKey2:flan-t5-large" in unknown.stderr
    )


def test_a_budget_or_bootstrap_the_config_refuses_is_refused_in_one_line(tmp_path):
    """--k -3 with --official was a traceback, --k 0 exit 0 with no EXAM-Cover row of any run, and
    --bootstrap -5 a note of "no bootstrap replicates"."""
    # r1 ranks b (answers nothing) first and a (answers q/x of q/x, q/y) second; r2 ranks a first.
    lines = [["q", [paragraph("a", [("r1", "q", 2), ("r2", "q", 1)], [], [qa_grade(["q/x"], ["q/y"])]),
                    paragraph("b", [("r1", "q", 1)], [], [qa_grade([], ["q/x", "q/y"])])]]]  # fmt: skip
    graded = tmp_path / "graded.jsonl.gz"
    with gzip.open(graded, "wt") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    official = write(tmp_path / "official.json", json.dumps({"r1": 1, "r2": 2}))
    given, out = ("--workbench-graded", str(graded), "--official", str(official)), tmp_path / "out"
    for options, message in (
        (["--k", "-3"], "--k: must be at least 1, not -3"),
        (["--k", "0"], "--k: must be at least 1, not 0"),
        (["--bootstrap", "-5"], "--bootstrap: must be at least 0, not -5"),
        (["--k", "two"], "--k: expected an integer, found 'two'"),
    ):
        result = evaluate(*given, *options, "--out", str(out))
        assert (result.returncode, result.stderr) == (2, f"examflow: error: {message}\n")
        assert not out.exists()
    result = evaluate(*given, "--k", "1", "--bootstrap", "0", "--tau", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    board = pd.read_csv(out / "leaderboard.tsv", sep="\t")
    cover = board[board["measure"] == "exam_cover"].set_index("run_id")["score"].to_dict()
    assert cover == {"r1": 0.0, "r2": 0.5, "_overall_": 0.5}  # within rank 1: b for r1, a for r2


def test_malformed_files_name_line_and_field(tmp_path):
    bad_rank = [["q", [paragraph("a", [("r", "q", "first")], [], [qa_grade(["q/x"], [])])]]]
    path = write(tmp_path / "bad.jsonl", json.dumps(bad_rank[0]) + "\n")
    with pytest.raises(
        InputError,
        match=r"bad.jsonl:1: field 'paragraphs\[0\].paragraph_data.rankings\[0\].rank': expected `int`, got `str`",
    ):
        read_workbench_graded(path)
    write(path, '{"query": "q"}\n')
    result = evaluate("--workbench-graded", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "bad.jsonl:1: expected [query_id, [paragraph, ...]]" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()
    broken = paragraph("a", [("r", "q", 1)], [], [{"self_ratings": [{"question_id": "q/x"}], "llm": "m"}])
    write(path, json.dumps(["q", [broken]]) + "\n")
    missing = r"bad.jsonl:1: field 'paragraphs\[0\].exam_grades\[0\].self_ratings\[0\]': object missing required field `self_rating`"
    with pytest.raises(InputError, match=missing):
        read_workbench_graded(path)
    # Python's json writes NaN and Infinity, which JSON has not: read as Python reads them, and checked
    # alike; a score that is no finite number is refused, as in a run file (trec_eval could not order it)
    nan_score = paragraph("a", [("r", "q", 1)], [], [qa_grade(["q/x"], [])])
    for score, shown in ((float("nan"), "nan"), (float("-inf"), "-inf")):
        nan_score["paragraph_data"]["rankings"][0]["score"] = score
        write(path, json.dumps(["q", [nan_score]]) + "\n")
        with pytest.raises(
            InputError,
            match=rf"bad.jsonl:1: field 'paragraphs\[0\].paragraph_data.rankings\[0\].score': {shown} is no finite number$",
        ):
            read_workbench_graded(path)
    write(path, json.dumps(["q", [nan_score]]).replace("-Infinity", "1e400") + "\n")  # read as inf
    with pytest.raises(InputError, match=r"rankings\[0\].score': inf is no finite number$"):
        read_workbench_graded(path)
    # a query on two lines, a passage twice in a query: their grades merged, and a qrels line was lost
    a, b = (paragraph(p, [("r", "q", 1)], [], [qa_grade(["q/x"], [])]) for p in ("a", "b"))
    write(path, json.dumps(["q", [a, b, a]]) + "\n")
    with pytest.raises(
        InputError, match=r"bad.jsonl:1: field 'paragraphs\[2\].paragraph_id': 'a' is paragraphs\[0\]'s id too"
    ):
        read_workbench_graded(path)
    write(path, json.dumps(["q", [a]]) + "\n" + json.dumps(["p", [a]]) + "\n" + json.dumps(["q", [b]]) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:3: query 'q' is on line 1 too: one line per query$"):
        read_workbench_graded(path)
    nan_score["paragraph_data"]["rankings"][0]["rank"] = True
    write(path, json.dumps(["q", [nan_score]]) + "\n")
    with pytest.raises(InputError, match=r"rankings\[0\].rank': expected `int`, got `bool`"):
        read_workbench_graded(path)
    nan_score["paragraph_data"]["rankings"][0]["rank"] = -3  # rank <= k would hold for any k
    write(path, json.dumps(["q", [nan_score]]) + "\n")
    with pytest.raises(
        InputError, match=r"bad.jsonl:1: field 'paragraphs\[0\].paragraph_data.rankings\[0\].rank': expected `int` >= 0"
    ):
        read_workbench_graded(path)
    for rating, bound in ((9, "<= 5"), (-1, ">= 0")):  # a 9 passed every threshold as a grade
        write(path, json.dumps(["q", [paragraph("a", [("r", "q", 1)], [], [self_rated([("q/x", rating)])])]]) + "\n")
        with pytest.raises(InputError, match=rf"self_ratings\[0\].self_rating': expected `int` {bound}$"):
            read_workbench_graded(path)
    # the prompt class names the method: a number there is refused where it is, the prompt's other fields not read
    info = {"prompt_class": 3, "prompt_style": ["anything"]}
    write(
        path, json.dumps(["q", [paragraph("a", [("r", "q", 1)], [], [qa_grade(["q/x"], []) | {"prompt_info": info}])]])
    )
    with pytest.raises(
        InputError, match=r"exam_grades\[0\].prompt_info.prompt_class': expected `str \| null`, got `int`$"
    ):
        read_workbench_graded(path)
    ungraded = [["q", [paragraph("a", [("r", "q", 1)])]]]
    write(path, json.dumps(ungraded[0]) + "\n")
    with pytest.raises(InputError, match="no grades"):
        read_workbench_graded(path)
    # Invalid UTF-8 is refused wherever it is, a field examflow does not read included.
    graded = paragraph("a", [("r", "q", 1)], [], [qa_grade(["q/x"], [])])
    path.write_bytes(
        json.dumps(["q", [graded | {"other": "x"}]]).replace('"x"}', '"\xff"}', 1).encode("latin-1") + b"\n"
    )
    with pytest.raises(InputError, match=r"bad.jsonl:1: invalid UTF-8: byte 0xff"):
        read_workbench_graded(path)


def test_options_a_graded_file_does_not_read_are_refused(tmp_path):
    """--questions, --grades and --pool were read by nothing beside --workbench-graded, silently; n-EXAM
    gold needs graded gold articles, which such a file does not hold. An official leaderboard that --facts
    leaves out was read, and no correlation written."""
    path = write(
        tmp_path / "g.jsonl", json.dumps(["q", [paragraph("a", [("r", "q", 1)], [], [qa_grade(["q/x"], [])])]]) + "\n"
    )
    off = write(tmp_path / "official.json", '{"r": 1}')
    for options, named in ((["--questions", "b.parquet"], "--questions"), (["--grades", "x", "--pool", "p"], "--grades, --pool"),
                           (["--n-exam", "gold"], "--n-exam gold"),
                           (["--official", str(off), "--facts", "judgments"], "--official")):  # fmt: skip
        result = evaluate("--workbench-graded", str(path), *options, "--out", str(tmp_path / "out"))
        assert result.returncode == 2 and f"examflow: error: {named}: " in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_names_from_the_file_are_safe_ids_and_file_names(tmp_path):
    """A prompt class of `../../x` named a qrels file outside --out; a paragraph id with a space broke
    its qrels line; a run id with a tab was quoted in the tables (a stranger's trial)."""
    path = tmp_path / "g.jsonl"
    grade = qa_grade(["q/x"], []) | {"prompt_info": {"prompt_class": "../../evil"}, "llm": "google/flan-t5"}
    write(path, json.dumps(["q", [paragraph("a", [("r", "q", 1)], [], [grade])]]) + "\n")
    assert set(read_workbench_graded(path)["grades"]["method"]) == {"_.._.._evil"}
    result = evaluate("--workbench-graded", str(path), "--bootstrap", "0", "--out", str(tmp_path / "a/out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a/out/qrels/_.._.._evil.qrels").is_file() and not (tmp_path / "evil.qrels").exists()
    write(path, json.dumps(["q", [paragraph("a", [("r", "q", 1)]), paragraph("p 1", [("r", "q", 2)])]]) + "\n")
    with pytest.raises(InputError, match=r"g.jsonl:1: field 'paragraphs\[1\].paragraph_id': invalid id 'p 1'"):
        read_workbench_graded(path)
    lines = [["q", [paragraph("a", [("r", "q", 1)], [], [qa_grade(["q/x"], [])])]],
             ["p", [paragraph("b", [("r", "p", 1), ("my\trun", "p", 2)], [], [qa_grade(["p/x"], [])])]]]  # fmt: skip
    write(path, "".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(
        InputError,
        match=r"g.jsonl:2: field 'paragraphs\[0\].paragraph_data.rankings\[1\].method': invalid id 'my\\trun'",
    ):
        read_workbench_graded(path)


def self_rated(ratings, llm="flan-t5-large", errors=None):
    info = {"prompt_class": "QuestionSelfRatedUnanswerablePromptWithChoices", "is_self_rated": True}
    return {"correctAnswered": [], "wrongAnswered": [], "llm": llm, "prompt_info": info,
            "self_ratings": [{"question_id": q, "self_rating": r} for q, r in ratings],
            "llm_response_errors": errors}  # fmt: skip


def test_empty_grades_failed_pairs_and_grades_without_a_value(tmp_path):
    """A grade of no question from a second model left the method named `CLASS:MODEL`; failed pairs beside
    self-ratings went uncounted; a direct grade with no value read as 0."""
    path = tmp_path / "graded.jsonl"
    lines = [["q", [paragraph("a", [("r", "q", 1)], [], [self_rated([("q/x", 5)], errors={"q/y": "timeout"}),
                                                          self_rated([], llm="other")])]]]  # fmt: skip
    write(path, "".join(json.dumps(line) + "\n" for line in lines))
    grades = read_workbench_graded(path)["grades"]
    assert set(grades["method"]) == {"QuestionSelfRatedUnanswerablePromptWithChoices"}
    assert grades[["question_id", "rating", "error"]].astype(object).where(grades.notna(), None).values.tolist() == [
        ["q/x", 5, None], ["q/y", None, "timeout"]
    ]  # fmt: skip
    valueless = {"llm": "m", "prompt_info": {"prompt_class": "FagB"}, "correctAnswered": None, "self_ratings": None}
    write(path, json.dumps(["q", [paragraph("a", [("r", "q", 1)], [], None, [valueless])]]) + "\n")
    with pytest.raises(InputError, match=r"graded.jsonl:1: field 'paragraphs\[0\].grades\[0\]': a grade needs "):
        read_workbench_graded(path)
    # An error named, even an empty one, fails the pair, in a direct grade as in an exam grade
    failed = valueless | {"self_ratings": 2, "llm_response_error": ""}
    write(
        path, json.dumps(["q", [paragraph("a", [("r", "q", 1)], [], [self_rated([], errors={"q/y": ""})], [failed])]])
    )
    grades = read_workbench_graded(path)["grades"]
    assert grades[["question_id", "rating", "error"]].astype(object).where(grades.notna(), None).values.tolist() == [
        ["q/y", None, ""], ["q", None, ""]
    ]  # fmt: skip


def test_a_rerun_without_the_official_leaderboard_removes_the_correlations_of_the_earlier_one(tmp_path):
    """A folder evaluated again without `--official` kept the earlier correlation.tsv, which read as this run's;
    so did a method's report its correlation page and scatter figure (a stranger's trial)."""
    graded = tmp_path / "graded.jsonl"
    lines = [["q", [paragraph(p, [("r1", "q", 1 + i), ("r2", "q", 2 - i)], [], [self_rated([("q/x", 4 * i)])])
                    for i, p in enumerate(["a", "b"])]]]  # fmt: skip
    write(graded, "".join(json.dumps(line) + "\n" for line in lines))
    official = write(tmp_path / "official.json", '{"r1": 1, "r2": 2}')
    out = tmp_path / "out"
    first = evaluate(
        "--workbench-graded", str(graded), "--official", str(official), "--bootstrap", "0", "--out", str(out)
    )
    assert first.returncode == 0, first.stderr
    assert (out / "correlation.tsv").exists()
    [method] = set(pd.read_csv(out / "leaderboard.tsv", sep="\t")["method"])
    pages = tmp_path / "report"

    def report(*official: str) -> None:
        command = ["report", "--method", method, "--eval", out, "--workbench-graded", graded, *official, "--out", pages]
        done = subprocess.run([sys.executable, "-m", "examflow", *map(str, command)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    report("--official", str(official))
    assert (pages / "correlation.html").exists() and (pages / "scatter.png").exists()
    again = evaluate("--workbench-graded", str(graded), "--bootstrap", "0", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert not (out / "correlation.tsv").exists() and (out / "leaderboard.tsv").exists()
    report()
    assert sorted(path.name for path in pages.iterdir()) == [
        "example.html", "grades.png", "impact.html", "leaderboard.html", "leaderboard.png", "questions.html"
    ]  # fmt: skip


RUN_NAMES = ["r1", "R1", "r10", "r2", "ä-run", "z", "run.b"]  # upper case before lower, ä after z: code points


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 40).flatmap(
        lambda rows: st.lists(  # keys of few values (many ties) and of huge ones (no packing into one int64)
            st.lists(st.integers(0, 3) | st.integers(0, 2**62), min_size=rows, max_size=rows), min_size=1, max_size=3
        )
    )
)
def test_the_packed_sort_orders_rows_as_lexsort_does(keys):
    arrays = [np.array(key, dtype=np.int64) for key in keys]
    assert _stable_order(arrays).tolist() == np.lexsort(arrays[::-1]).tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(  # queries, each a list of passages, each ranked by some runs, perhaps twice (under two facets)
        st.lists(
            st.lists(st.tuples(st.sampled_from(RUN_NAMES), st.integers(1, 6), st.sampled_from([0.5, 1.0])), max_size=4),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=3,
    ),
    st.permutations(["q9", "Q1", "q10"]),
)
def test_rankings_ordered_and_each_run_keeps_its_best_rank(tmp_path, queries, names):
    lines, expected = [], []
    for query_id, passages in zip(names, queries):
        paragraphs = []
        for p, ranked in enumerate(passages):
            passage_id = f"{query_id}-p{p}"
            rankings = [{"method": r, "paragraphId": passage_id, "queryId": query_id, "rank": k, "score": s}
                        for r, k, s in ranked]  # fmt: skip
            grade = {"correctAnswered": ["x"], "wrongAnswered": [], "llm": "m", "prompt_info": {"prompt_class": "P"}}
            paragraphs.append({"paragraph_id": passage_id, "paragraph_data": {"judgments": [], "rankings": rankings},
                               "exam_grades": [grade]})  # fmt: skip
            expected += [(r, query_id, passage_id, k, s, len(expected) + i) for i, (r, k, s) in enumerate(ranked)]
        lines.append(json.dumps([query_id, paragraphs]))
    path = write(tmp_path / "graded.jsonl", "\n".join(lines) + "\n")
    # Independently: sorted by run, query and rank (file order among equals), the first of a run's passage kept
    kept, seen = [], set()
    for run, query_id, passage_id, rank, score, _ in sorted(expected, key=lambda e: (e[0], e[1], e[3], e[5])):
        if (run, passage_id) not in seen:
            seen.add((run, passage_id))
            kept.append([run, query_id, passage_id, rank, score])
    rankings = read_workbench_graded(path)["rankings"]
    assert rankings.values.tolist() == kept
    assert list(rankings.columns) == ["run_id", "query_id", "passage_id", "rank", "score"]
    assert rankings["rank"].dtype == "int64" and rankings["score"].dtype == "float64"


def test_two_methods_one_file_name_is_refused_naming_the_first_in_order():
    """The name was the first of a set's per-process order: with two collisions, either could be said."""
    from examflow.errors import InputError
    from examflow.io.workbench import _method_names

    keys = [("z/x", ""), ("z_x", ""), ("a/b", ""), ("a_b", "")]  # two pairs, each one file name
    for order in (keys, keys[::-1]):
        with pytest.raises(InputError, match=r"^w\.jsonl: two prompt classes or models would both be named 'a_b'"):
            _method_names("w.jsonl", order)
