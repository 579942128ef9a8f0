"""Criteria-based judgments (Farzi & Dietz 2025): four criterion prompts as the paper's code writes them,
the grade read as it reads it (but a failure where it finds none), the label aggregated by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
from llm_server import LLMServer
from test_grading_backends import direct_inputs, grader, openai_method, values

from examflow.evaluation.exam_qrels import exam_labels
from examflow.grading.grader import make_pairs
from examflow.grading.methods import aggregation_request, request
from examflow.prompts import chat_template
from examflow.registry import CRITERIA, KINDS

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "criteria-based-judgments" / "src"


def test_prompts_as_the_papers_code_writes_them():
    """relevance_scoring.get_criteria_score: f"{criteria_prompt}\\nQuery: {query}\\nPassage: {passage}\\nScore:",
    with SYSTEM_MESSAGE_DECOMPOSITION as the system message."""
    queries, passages = direct_inputs()
    pairs = make_pairs("criteria", passages, pd.DataFrame(), queries)
    assert [p.question_id for p in pairs[:4]] == ["q1/exactness", "q1/topicality", "q1/coverage", "q1/contextual-fit"]
    system, user = chat_template(KINDS["criteria"].template)
    for pair, (name, definition) in zip(pairs, CRITERIA):
        criteria_prompt = (f"Please rate how well the given passage meets the {name} criterion "
                           f"in relation to the query. The output should be a single score (0-3) "
                           f"indicating {definition}")  # fmt: skip
        expected = f"{criteria_prompt}\nQuery: how bees make honey\nPassage: bees make honey\nScore:"
        assert user.format(**request("criteria", pair).fields) == expected
    if REFERENCE.is_dir():  # the system message, character for character
        source = (REFERENCE / "relevance_scoring.py").read_text()
        published = source.split('SYSTEM_MESSAGE_DECOMPOSITION = """', 1)[1].split('"""', 1)[0]
        assert system == published
        for name, definition in CRITERIA:
            assert f'"{name}": "{definition}"' in source


def test_grades_over_http_and_the_label_by_hand(tmp_path):
    """Each criterion's first stand-alone digit 0-3; none is a failure. The label: the mean of the four,
    rounded half up; a passage with a failed criterion gets none."""
    queries, passages = direct_inputs()
    with LLMServer() as server:
        for name, answers in (("Exactness", ("3", "0")), ("Topicality", ("Score: 3", "1")),
                              ("Coverage", ("2.", "I cannot say.")), ("Contextual Fit", ("2", "0"))):  # fmt: skip
            for text, answer in zip(("bees make honey", "tides"), answers):
                server.script(f"meets the {name} criterion in relation to the query. The output should be a single "
                              f"score (0-3) indicating {dict(CRITERIA)[name]}\nQuery: how bees make honey\n"
                              f"Passage: {text}\n", answer)  # fmt: skip
        table = grader(openai_method(server, "criteria"), str(tmp_path)).grade(
            make_pairs("criteria", passages, pd.DataFrame(), queries)
        )
        systems = {r["body"]["messages"][0]["content"] for r in server.requests}
    assert values(table["rating"]) == [3, 3, 2, 2, 0, 1, None, 0]
    assert table["error"].tolist()[6] == "unparsable: not a grade 0-3: 'I cannot say.'"
    assert systems == {chat_template("criteria-grade")[0]}
    labels = exam_labels(table)
    # p0: (3 + 3 + 2 + 2) / 4 = 2.5 -> 3; p1: a criterion failed -> no label
    assert labels.values.tolist() == [["q1", "p0", 3]]


AGGREGATION = ("Please rate how the given passage is relevant to the query based on the given scores. The output "
               "must be only a score (0-3) that indicates how relevant they are.\nScore:")  # fmt: skip


def test_the_aggregation_prompt_as_the_papers_code_writes_it():
    """relevance_scoring.aggregate_scores: "Query: {query}\\nPassage: {passage}\\n", "\\n{name}: {score}" per
    criterion, then "\\n\\n" and the request; the system message prompts.create_system_message("3210")."""
    queries, passages = direct_inputs()
    pair = make_pairs("criteria_llm", passages, pd.DataFrame(), queries)[0]
    asked = aggregation_request("criteria_llm", pair, [3, 3, 2, 1])
    system, user = chat_template(asked.template)
    expected = ("Query: how bees make honey\nPassage: bees make honey\n\nExactness: 3\nTopicality: 3\nCoverage: 2"
                f"\nContextual Fit: 1\n\n{AGGREGATION}")  # fmt: skip
    assert user.format(**asked.fields) == expected
    assert system is not None and system.startswith("You are a search quality rater") and system.endswith("mark it 0.")
    with pytest.raises(ValueError, match="asks no aggregation"):
        aggregation_request("criteria", pair, [3, 3, 2, 1])
    if REFERENCE.is_dir():  # the paper's code, run: its system message and its aggregation request, verbatim
        spec = importlib.util.spec_from_file_location("criteria_prompts", REFERENCE / "prompts.py")
        assert spec is not None and spec.loader is not None
        published = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(published)
        assert system == published.create_system_message("3210")
        source = (REFERENCE / "relevance_scoring.py").read_text()
        assert '"that indicates how relevant they are.\\nScore:"' in source and 'f"\\n{name}: {score}"' in source


def test_aggregation_by_the_model_over_http(tmp_path):
    """criteria_llm: the four criterion grades go into a fifth prompt whose grade is the label (not the
    mean); a passage with a failed criterion is not asked; an unreadable aggregation is a failure."""
    queries, passages = direct_inputs()
    passages = pd.concat([passages, pd.DataFrame({"query_id": ["q1"], "passage_id": ["p2"], "text": ["wax"]})])
    with LLMServer() as server:
        for name, answers in (("Exactness", ("3", "0", "1")), ("Topicality", ("3", "1", "1")),
                              ("Coverage", ("2", "none", "0")), ("Contextual Fit", ("2", "0", "0"))):  # fmt: skip
            for text, answer in zip(("bees make honey", "tides", "wax"), answers):
                server.script(f"meets the {name} criterion in relation to the query. The output should be a single "
                              f"score (0-3) indicating {dict(CRITERIA)[name]}\nQuery: how bees make honey\n"
                              f"Passage: {text}\n", answer)  # fmt: skip
        server.script("Passage: bees make honey\n\nExactness: 3\nTopicality: 3\nCoverage: 2\nContextual Fit: 2\n", "1")
        server.script("Passage: wax\n\nExactness: 1\nTopicality: 1\nCoverage: 0\nContextual Fit: 0\n", "maybe")
        method = openai_method(server, "criteria_llm")
        pairs = make_pairs("criteria_llm", passages, pd.DataFrame(), queries)
        table = grader(method, str(tmp_path)).grade(pairs)
        sent = len(server.requests)
        again = grader(method, str(tmp_path)).grade(pairs)  # every answer from the cache
        assert len(server.requests) == sent == 12 + 2
    aggregated = table[table["question_id"] == "q1/relevance"]
    assert aggregated["passage_id"].tolist() == ["p0", "p2"]
    assert values(aggregated["rating"]) == [1, None]
    assert aggregated["error"].tolist()[1] == "unparsable: not a grade 0-3: 'maybe'"
    assert set(aggregated["prompt"]) == {"criteria-relevance"}
    assert len(table) == 12 + 2 and table.equals(again)
    # p0: the model's aggregation, 1, not the mean 2.5 -> 3; p1: a failed criterion; p2: a failed aggregation
    assert exam_labels(table).values.tolist() == [["q1", "p0", 1]]


def test_a_local_model_grades_each_criterion_then_aggregates(tmp_path):
    """A tiny FLAN-T5-shaped model built here (criteria_llm): each criterion's grade is the first digit 0-3 of
    its answer (none: a failure); a passage whose four criteria all got one is asked the aggregation, whose
    grade is the label; the others are not asked."""
    import re

    from tiny_models import build_tiny_t5

    model = str(build_tiny_t5(tmp_path / "model", seed=4, digit_boost=4.0, scale=3.0, flan=True))
    queries, _ = direct_inputs()
    texts = ["bees make honey", "tides 3", "lava and magma", "compost 1 feeds soil", "the moon", "honey 0"]
    passages = pd.DataFrame({"query_id": "q1", "passage_id": [f"p{i}" for i in range(6)], "text": texts})
    backend = {"kind": "hf_seq2seq", "model": model, "decoding": "greedy", "max_new_tokens": 3, "batch_size": 4}
    method = {"name": "c", "kind": "criteria_llm", "backend": backend}
    shard, pairs = (
        grader(method, str(tmp_path / "cache")),
        make_pairs("criteria_llm", passages, pd.DataFrame(), queries),
    )
    table = shard.grade(pairs)
    # FLAN-T5 has no chat template: the paper's code gives it the user prompt without the system message
    system, user = chat_template("criteria-grade")
    prompt = shard.backend.prompt(request("criteria_llm", pairs[0]))
    assert prompt.startswith(user.split("{")[0]) and system.strip() not in prompt
    for raw, rating, error in zip(table["raw"], values(table["rating"]), table["error"]):
        found = re.search(r"\b[0-3]\b", raw or "")
        if found and re.search(r"(?:^|[^\w])[-\u2010-\u2015\u2212]$", raw[: found.start()]):
            found = None  # a negative number is no grade
        assert rating == (int(found.group()) if found else None) and (error is None) == (found is not None), raw
    criteria = table[table["question_id"] != "q1/relevance"]
    whole = criteria.groupby("passage_id")["rating"].count()
    asked = table[table["question_id"] == "q1/relevance"]
    assert len(criteria) == 24 and sorted(asked["passage_id"]) == sorted(whole[whole == 4].index)
    assert set(asked["prompt"]) == {"criteria-relevance"} and 0 < len(asked) < 6  # some passages not asked
    assert table["rating"].nunique() >= 2 and table["error"].notna().any()  # grades that differ, and failures
    labels = exam_labels(table)
    graded = asked[asked["rating"].notna()]
    assert dict(zip(labels["passage_id"], labels["label"])) == dict(zip(graded["passage_id"], graded["rating"]))


@pytest.mark.parametrize(
    ("grades", "label"), [((3, 3, 2, 2), 3), ((1, 1, 2, 1), 1), ((0, 1, 1, 0), 1), ((0, 0, 1, 0), 0)]
)
def test_the_mean_rounded_half_up(grades, label):
    rows = [("q", None, "p", f"q/{c}", g, None, None) for c, g in zip("abcd", grades)]
    graded = pd.DataFrame(
        rows, columns=["query_id", "facet_id", "passage_id", "question_id", "rating", "correct", "error"]
    )
    assert exam_labels(graded.assign(kind="criteria")).values.tolist() == [["q", "p", label]]


def test_criteria_llms_exam_is_the_four_criteria_and_its_aggregation_the_label():
    """EXAM-Cover of criteria_llm counts the criteria a run's passages meet, out of four, as criteria's does;
    the aggregation prompt's grade is the passage's label, not a fifth item of the exam."""
    from examflow.evaluation.evaluate import Inputs, Settings, per_query_values

    ids = [f"q/{name.lower().replace(' ', '-')}" for name, _ in CRITERIA]
    grades = {"p1": (3, 1, 1, 0, 1), "p2": (0, 3, 1, 0, 3)}  # four criteria, then the aggregation
    rows = [("q", None, p, target, g) for p, row in grades.items() for target, g in zip([*ids, "q/relevance"], row)]
    table = pd.DataFrame(rows, columns=["query_id", "facet_id", "passage_id", "question_id", "rating"])
    table = table.assign(correct=pd.NA, error=None, kind="criteria_llm").astype({"correct": "boolean"})
    rankings = pd.DataFrame([("r1", "q", "p1", 1, 2.0), ("r2", "q", "p1", 1, 2.0), ("r2", "q", "p2", 2, 1.0)],
                            columns=["run_id", "query_id", "passage_id", "rank", "score"])  # fmt: skip
    passages = pd.DataFrame({"query_id": ["q", "q"], "passage_id": ["p1", "p2"], "origin": "retrieved"})
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    inputs = Inputs(table.assign(method="m"), rankings, None, passages, judgments)
    values = per_query_values(table, inputs, Settings(taus=[3], measures=[]))
    cover = values[values["measure"] == "exam_cover"].set_index("run_id")["value"]
    # r1: p1 meets Exactness at 3 (1 of 4); r2: p1 and p2 meet Exactness and Topicality (2 of 4)
    assert cover["r1"] == pytest.approx(1 / 4) and cover["r2"] == pytest.approx(2 / 4)
    labels = exam_labels(table)
    assert dict(zip(labels["passage_id"], labels["label"])) == {"p1": 1, "p2": 3}


@pytest.mark.parametrize(
    ("answer", "reference", "strict"),
    [("2", 2, 2), ("Score: 3", 3, 3), ("**1**", 1, 1), ("2/3", 2, 2), ("0.\n\nThe passage is off topic.", 0, 0),
     ("I cannot rate this; see section 2.", 2, None), ("1.5", 1, None), ("2 - fairly relevant", 2, None),
     ("It is relevant.", None, None), ("Score -1", None, None), ("-2", None, None), ("‑2", None, None), ("**Score:** 2", 2, 2),
     ("Exactness-2: 1", 2, None)],  # a negative number is no grade; a hyphen after a word is no minus sign
)  # fmt: skip
def test_strict_reads_only_a_first_line_that_is_the_score(answer, reference, strict):
    from examflow.grading.parsing import parse_criterion

    assert parse_criterion(answer) == reference
    assert parse_criterion(answer, strict=True) == strict


def test_criteria_llms_question_diagnostics_are_the_four_criteria_s():
    """The aggregation grade is no item of the exam in the question diagnostics either: they equal those of
    the same four criterion grades graded as `criteria` (the leave-one-out τ counted a fifth item)."""
    import random

    from examflow.evaluation.evaluate import Inputs, Settings, evaluate

    rng = random.Random(5)
    ids = {q: [f"{q}/{name.lower().replace(' ', '-')}" for name, _ in CRITERIA] for q in ("q1", "q2")}
    rows = [(q, None, f"{q}p{i}", target, rng.randint(0, 3)) for q in ids for i in range(3)
            for target in [*ids[q], f"{q}/relevance"]]  # fmt: skip
    table = pd.DataFrame(rows, columns=["query_id", "facet_id", "passage_id", "question_id", "rating"])
    table = table.assign(correct=pd.NA, error=None, method="m").astype({"correct": "boolean", "rating": "Int64"})
    rankings = pd.DataFrame([(f"r{k}", q, f"{q}p{i}", i + 1, 3.0 - i) for k in range(4) for q in ids
                             for i in rng.sample(range(3), 1 + k % 3)], columns=["run_id", "query_id", "passage_id",
                             "rank", "score"])  # fmt: skip
    passages = table[["query_id", "passage_id"]].drop_duplicates().assign(origin="retrieved", text="x")
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    official = {"r0": 1.0, "r1": 2.0, "r2": 3.0, "r3": 4.0}
    settings = Settings(taus=[2], measures=[], bootstrap=0, diagnostics_tau=2)
    asked = evaluate(Inputs(table.assign(kind="criteria_llm"), rankings, None, passages, judgments), settings, official)
    four = table[~table["question_id"].str.endswith("/relevance")].assign(kind="criteria")
    alone = evaluate(Inputs(four, rankings, None, passages, judgments), settings, official)
    assert len(asked["questions.tsv"]) == 8 and asked["questions.tsv"].equals(alone["questions.tsv"])


def test_criteria_llm_whose_aggregations_all_failed_evaluates_its_exam_and_says_why_no_label(caplog):
    """The four criterion grades still make an exam; every aggregation failed, so no passage has a label and
    trec_eval's measures have no value: a warning saying so, not a traceback in the bootstrap."""
    from examflow.evaluation.evaluate import Inputs, Settings, evaluate

    ids = {q: [f"{q}/{name.lower().replace(' ', '-')}" for name, _ in CRITERIA] for q in ("q1", "q2")}
    rows = [(q, None, f"{q}p{i}", target, (i + j) % 4, None) for q in ids for i in range(3)
            for j, target in enumerate(ids[q])]  # fmt: skip
    rows += [(q, None, f"{q}p{i}", f"{q}/relevance", None, "http-500") for q in ids for i in range(3)]
    table = pd.DataFrame(rows, columns=["query_id", "facet_id", "passage_id", "question_id", "rating", "error"])
    table = table.assign(correct=pd.NA, method="m", kind="criteria_llm").astype(
        {"correct": "boolean", "rating": "Int64"}
    )
    rankings = pd.DataFrame([(f"r{k}", q, f"{q}p{i}", 1, 1.0) for k, i in enumerate(range(3)) for q in ids],
                            columns=["run_id", "query_id", "passage_id", "rank", "score"])  # fmt: skip
    passages = table[["query_id", "passage_id"]].drop_duplicates().assign(origin="retrieved", text="x")
    judgments = pd.DataFrame(columns=["query_id", "facet_id", "passage_id", "relevance"])
    settings = Settings(taus=[3], measures=["map"], bootstrap=20, diagnostics_tau=3)
    outputs = evaluate(Inputs(table, rankings, None, passages, judgments), settings, {"r0": 1.0, "r1": 2.0, "r2": 3.0})
    board = outputs["leaderboard.tsv"].set_index(["measure", "run_id"])
    # r_k ranks passage p_k of each query; p_k meets criterion j at 3 where (k + j) % 4 == 3: one of four;
    # the pool meets criteria 1, 2 and 3 (no passage p_3 would meet criterion 0)
    assert board.loc["exam_cover", "score"].to_dict() == {"r0": 0.25, "r1": 0.25, "r2": 0.25, "_overall_": 0.75}
    assert "map" not in set(outputs["leaderboard.tsv"]["measure"])
    assert "no pooled passage has every grade its label needs: 6 of 30 graded pairs failed" in caplog.text
    # most of each query's grades came, yet neither has a label: trec_eval leaves both out, and says so
    assert (
        "method m: no passage of 2 queries has an EXAM-Qrels label, their grades having failed (q1, q2)" in caplog.text
    )
