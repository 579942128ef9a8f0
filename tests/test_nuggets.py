"""Nugget assignment as AutoNuggetizer asks it: the published assigner prompts (system message and all),
the label read from a Python list, grades over real HTTP and from a tiny local model."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from llm_server import LLMServer
from test_grading_backends import grader, openai_method, values

from examflow.grading.grader import make_pairs
from examflow.grading.parsing import parse_nugget_label
from examflow.prompts import chat_template, template
from examflow.registry import KINDS

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "nuggetizer" / "prompt_templates"
PUBLISHED = {"nugget_support": "assigner_template", "nugget_support_2grade": "assigner_2grade_template"}


def nugget_inputs() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One query, two passages, two nuggets (a bank's nugget rows)."""
    queries = pd.DataFrame([("q1", None, "how do bees make honey", None)],
                           columns=["query_id", "facet_id", "query_text", "facet_text"], dtype=object)  # fmt: skip
    passages = pd.DataFrame({"query_id": ["q1", "q1"], "passage_id": ["p0", "p1"],
                             "text": ["Bees turn nectar into honey.", "Tides follow the moon."]})  # fmt: skip
    nuggets = pd.DataFrame({"query_id": ["q1", "q1"], "facet_id": [None, None], "question_id": ["n1", "n2"],
                            "question_text": ["Bees make honey from nectar", "Honey is stored in combs"],
                            "kind": ["nugget", "nugget"], "gold_answers": [None, None], "choices": [None, None]})  # fmt: skip
    return queries, passages, nuggets


@pytest.mark.parametrize("kind", sorted(PUBLISHED))
def test_prompts_render_as_nuggetizer_renders_them(kind):
    if not REFERENCE.is_dir():
        pytest.skip(f"the published nuggetizer templates are not at {REFERENCE} (../shared/reference is absent)")
    import yaml

    from examflow.grading.methods import request

    published = yaml.safe_load((REFERENCE / f"{PUBLISHED[kind]}.yaml").read_text())
    queries, passages, nuggets = nugget_inputs()
    pair = make_pairs(kind, passages, nuggets, queries)[0]
    asked = request(kind, pair)
    system, user = chat_template(KINDS[kind].template)
    # nuggetizer: format(query=..., context=..., nuggets=[nugget.text ...], num_nuggets=len(nuggets))
    expected = published["prefix_user"].format(query="how do bees make honey", context="Bees turn nectar into honey.",
                                               nuggets=["Bees make honey from nectar"], num_nuggets=1)  # fmt: skip
    assert system == published["system_message"] and user.format(**asked.fields) == expected
    assert template(KINDS[kind].template).format(**asked.fields) == f"{system}\n\n{expected}"  # a model without roles


@pytest.mark.parametrize(
    ("answer", "label"),
    [("['support']", "support"), ("Labels: ['partial_support']", "partial_support"), ('["not_support"]', "not_support"),
     ("['Support ']", "support"), ("support", None), ("['support', 'not_support']", None), ("[1]", None),
     ("['supp", None), ("I cannot label these.", None)],
)  # fmt: skip
def test_the_label_is_the_one_string_of_the_first_list(answer, label):
    assert parse_nugget_label(answer) == label


def test_an_edited_nugget_regrades_only_its_pairs(tmp_path):
    """Bank → shard → grades, then one nugget reworded: only its pairs reach the model again (the grade
    cache answers the rest), and the other nugget's grades are the same."""
    from examflow.questions.bank import read_bank
    from examflow.questions.shards import bank_shard_table

    queries, passages, _ = nugget_inputs()
    bank = tmp_path / "bank.tsv"
    tables = []
    with LLMServer(default=lambda prompt: "['support']" if "Bees" in prompt else "['not_support']") as server:
        for nuggets in (("Bees make honey from nectar", "Honey is stored in combs"),
                        ("Bees make honey from nectar", "Honey is kept in wax combs")):  # fmt: skip
            bank.write_text("query_id\tnugget\n" + "".join(f"q1\t{n}\n" for n in nuggets))
            shard = bank_shard_table(read_bank(bank), "shard-0", 1).to_pandas()
            method = openai_method(server, "nugget_support")
            tables.append(
                grader(method, str(tmp_path / "cache")).grade(make_pairs("nugget_support", passages, shard, queries))
            )
        asked = [r["body"]["messages"][1]["content"] for r in server.requests]
    assert len(asked) == 4 + 2 and all("Honey is kept in wax combs" in prompt for prompt in asked[4:])
    first, second = (t[t["question_id"].str.endswith(tables[0]["question_id"].iat[0][-32:])] for t in tables)
    assert first[["passage_id", "rating"]].equals(second[["passage_id", "rating"]])


def test_grades_over_http_with_the_system_message(tmp_path):
    """2 support, 1 partial_support, 0 not_support; a 2-grade method refuses partial_support; an answer
    without one label is a failure in every parse mode."""
    queries, passages, nuggets = nugget_inputs()
    with LLMServer() as server:
        server.script(
            "Passage: Bees turn nectar into honey.\nNugget List: ['Bees make honey from nectar']", "['support']"
        )
        server.script("Passage: Bees turn nectar into honey.\nNugget List: ['Honey is stored in combs']",
                      "['partial_support']")  # fmt: skip
        server.script(
            "Passage: Tides follow the moon.\nNugget List: ['Bees make honey from nectar']", "['not_support']"
        )
        server.script("Passage: Tides follow the moon.\nNugget List: ['Honey is stored in combs']", "No idea.")
        graded = {}
        for kind in PUBLISHED:
            pairs = make_pairs(kind, passages, nuggets, queries)
            graded[kind] = grader(openai_method(server, kind, mode="reference"), str(tmp_path / kind)).grade(pairs)
        bodies = [r["body"] for r in server.requests]
    assert values(graded["nugget_support"]["rating"]) == [2, 1, 0, None]
    assert values(graded["nugget_support_2grade"]["rating"]) == [2, None, 0, None]
    assert graded["nugget_support_2grade"]["error"].tolist()[1].startswith("unparsable: not a list of one label")
    assert graded["nugget_support"]["error"].tolist()[3] == (
        "unparsable: not a list of one label: support, partial_support or not_support: 'No idea.'"
    )
    assert all([m["role"] for m in body["messages"]] == ["system", "user"] for body in bodies) and len(bodies) == 8
    assert {body["messages"][0]["content"] for body in bodies} == {chat_template("nugget-assign")[0]}


def test_a_local_model_reads_the_user_message_alone(tmp_path):
    """A tiny FLAN-T5-shaped model: its prompt is the user message (cut only in the passage), as the
    criteria-based judgments' code prompts FLAN-T5, which has no chat template; each pair's grade is the
    reading of its answer (a tiny model's words are no list of labels: failures, never grades)."""
    from tiny_models import build_tiny_t5

    from examflow.grading.methods import SUPPORT_GRADES, request

    model = str(build_tiny_t5(tmp_path / "model", seed=3, scale=2.0, flan=True))
    queries, passages, nuggets = nugget_inputs()
    backend = {"kind": "hf_seq2seq", "model": model, "decoding": "greedy", "max_new_tokens": 4, "batch_size": 4}
    method = {"name": "n", "kind": "nugget_support", "backend": backend}
    shard = grader(method, str(tmp_path / "cache"))
    pairs = make_pairs("nugget_support", passages, nuggets, queries)
    table = shard.grade(pairs)
    prompt = shard.backend.prompt(request("nugget_support", pairs[0]))
    assert prompt.startswith("Based on the query and passage") and chat_template("nugget-assign")[0] not in prompt
    for raw, rating, error in zip(table["raw"], values(table["rating"]), table["error"]):
        expected = SUPPORT_GRADES.get(parse_nugget_label(raw) or "")
        assert rating == expected and (error is None) == (expected is not None), (raw, rating, error)


# -- nugget scores by hand, on a hand-made assignment ---------------------------------------------------------

LEVELS = pd.DataFrame(  # (query, passage, nugget, grade): 2 support, 1 partial_support, 0 not_support
    [("q", "p1", "n1", 2.0), ("q", "p1", "n3", 1.0), ("q", "p2", "n1", 1.0), ("q", "p2", "n4", 2.0),
     ("q", "p3", "n2", 1.0), ("q", "p3", "n1", 0.0)],
    columns=["query_id", "passage_id", "question_id", "level"],
)  # fmt: skip
RANKINGS = pd.DataFrame(  # run A ranks p1 and p2; run B p3, and p1 past the budget of 20
    [("A", "q", "p1", 1), ("A", "q", "p2", 2), ("B", "q", "p3", 1), ("B", "q", "p1", 25)],
    columns=["run_id", "query_id", "passage_id", "rank"],
)
NUGGETS = pd.DataFrame({"query_id": "q", "question_id": ["n1", "n2", "n3", "n4"],
                        "importance": ["vital", "vital", "okay", "okay"]})  # fmt: skip
# Run A: n1 support, n2 nothing, n3 partial, n4 support. Run B: n2 partial.
BY_HAND = {
    "A": {"nugget_all": (1 + 0 + 0.5 + 1) / 4, "nugget_strict_all": 2 / 4, "nugget_vital": (1 + 0) / 2,
          "nugget_strict_vital": 1 / 2, "nugget_weighted": (1 * 1 + 1 * 0 + 0.5 * 0.5 + 0.5 * 1) / (1 + 1 + 0.5 + 0.5)},
    "B": {"nugget_all": 0.5 / 4, "nugget_strict_all": 0.0, "nugget_vital": 0.5 / 2, "nugget_strict_vital": 0.0,
          "nugget_weighted": (1 * 0.5) / 3},
}  # fmt: skip


def test_nugget_scores_by_hand():
    from examflow.evaluation.nuggets import nugget_values

    rows = nugget_values(LEVELS, RANKINGS, NUGGETS, k=20)
    found = {run: dict(zip(group["measure"], group["value"])) for run, group in rows.groupby("run_id")}
    assert found == {run: pytest.approx(scores) for run, scores in BY_HAND.items()}
    unrated = nugget_values(LEVELS, RANKINGS, NUGGETS.assign(importance=None), k=20)
    assert set(unrated["measure"]) == {"nugget_all", "nugget_strict_all"}  # no importance: no vital scores


def test_nugget_scores_equal_nuggetizers_own():
    metrics = REFERENCE.parent / "metrics.py"
    if not metrics.is_file():
        pytest.skip(f"nuggetizer's metrics are not at {metrics} (../shared/reference is absent)")
    import importlib.util

    spec = importlib.util.spec_from_file_location("nuggetizer_metrics", metrics)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assignments = {"A": ["support", "not_support", "partial_support", "support"],
                   "B": ["not_support", "partial_support", "not_support", "not_support"]}  # fmt: skip
    for run, labels in assignments.items():
        nuggets = [{"importance": i, "assignment": a} for i, a in zip(NUGGETS["importance"], labels)]
        theirs = module.calculate_nugget_scores("q", nuggets)
        mine = BY_HAND[run]
        assert (theirs.all_score, theirs.strict_all_score, theirs.vital_score, theirs.strict_vital_score) == (
            pytest.approx(mine["nugget_all"]), pytest.approx(mine["nugget_strict_all"]),
            pytest.approx(mine["nugget_vital"]), pytest.approx(mine["nugget_strict_vital"]),
        )  # fmt: skip


def test_nugget_banks_as_tsv_and_as_nuggetizer_writes_them(tmp_path):
    import json

    from examflow.errors import InputError
    from examflow.questions.bank import read_bank

    tsv = tmp_path / "nuggets.tsv"
    tsv.write_text("query_id\tnugget_id\tnugget\timportance\nq1\tq1-n1\tBees make honey\tvital\nq1\t\tCombs\tokay\n")
    items = read_bank(tsv)[0].items
    assert [(i.item_id, i.text, i.kind, i.importance) for i in items][0] == (
        "q1/q1-n1",
        "Bees make honey",
        "nugget",
        "vital",
    )
    assert items[1].importance == "okay" and items[1].item_id.startswith("q1/")
    jsonl = tmp_path / "nuggets.jsonl"
    jsonl.write_text(json.dumps({"qid": "q1", "query": "bees", "nuggets": [
        {"text": "Bees make honey", "importance": "vital"}, {"text": "Combs", "importance": "okay", "assignment": "support"}]}) + "\n")  # fmt: skip
    entry = read_bank(jsonl)[0]
    assert entry.query_text == "bees" and [i.importance for i in entry.items] == ["vital", "okay"]
    assert entry.items[1].extra == {"assignment": "support"}
    tsv.write_text("query_id\tnugget\timportance\nq1\tBees\tvital\nq1\tCombs\tmaybe\n")
    with pytest.raises(InputError, match="nuggets.tsv:3: field 'importance': expected vital or okay, found 'maybe'"):
        read_bank(tsv)
    tsv.write_text("query_id\tnugget\timportance\nq1\tBees\tvital\nq1\tWax\tokay\nq1\tCombs\t\n")
    with pytest.raises(InputError, match="nuggets.tsv:4: field 'importance': nugget .* has no importance, and earlier"):
        read_bank(tsv)  # the line of the nugget without one
    # nugget files number each query's nuggets 1, 2, 3: every nugget of every query is kept
    tsv.write_text("query_id\tnugget_id\tnugget\nq1\t1\tBees\nq1\t2\tWax\nq2\t1\tTides\nq2\t2\tMoon\n")
    assert [[i.item_id for i in e.items] for e in read_bank(tsv)] == [["q1/1", "q1/2"], ["q2/1", "q2/2"]]
    tsv.write_text("query_id\tnugget\timportance\nq1\tBees\tvital\nq1\tBees\tokay\n")
    with pytest.raises(InputError, match="nuggets.tsv:3: field 'nugget': nugget 'q1/.*' twice \\(first on line 2\\)"):
        read_bank(tsv)
    jsonl.write_text(json.dumps({"qid": "q1", "nuggets": [{"text": "A", "importance": "vital"}, {"text": "B"}]}) + "\n")
    with pytest.raises(InputError, match="nuggets.jsonl:1: field 'nuggets\\[1\\].importance'"):
        read_bank(jsonl)


def test_a_label_that_counts_correct_answers_is_said_to_stop_below_a_tau(tmp_path, caplog):
    """qa_verify's EXAM-Label is the number of questions a passage answers correctly: with two keyed questions
    to a query at most (q1's, over its two subtopics), no passage reaches τ 3, 4 or 5 (a stranger's trial:
    every trec_eval row there was 0, said nowhere but the evaluation's log). Other kinds are not counts."""
    from examflow.scheduling import warn_about_answer_counts

    bank = tmp_path / "bank.jsonl"
    lines = [("q1", "f1", ["a"]), ("q1", "f2", ["b", None]), ("q2", None, ["c"])]
    bank.write_text("".join(json.dumps({"query_id": q, "facet_id": f, "items": [
        {"question_text": f"{q} {f} {i}?", **({"gold_answers": [key]} if key else {})} for i, key in enumerate(keys)
    ]}) + "\n" for q, f, keys in lines))  # fmt: skip
    backend = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    methods = [{"name": "qa", "kind": "qa_verify", "backend": backend},
               {"name": "self", "kind": "self_rating", "backend": backend}]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="examflow"):
        warn_about_answer_counts(str(bank), {"shards": 1, "methods": methods}, [1, 2, 3, 4, 5])
        warn_about_answer_counts(str(bank), {"shards": 1, "methods": methods}, [1, 2])  # below: nothing said
    assert [r.getMessage() for r in caplog.records] == [
        f"method qa (qa_verify) labels a passage with the number of questions it answers correctly, at most 2 here "
        f"(the most answer-keyed questions of a query in {bank}): at evaluation.tau 3, 4, 5 its EXAM-Qrels measures "
        "are 0 for every run (EXAM-Cover and the EXAM score count answers at any τ)"
    ]


def test_a_method_finds_its_kind_of_items_in_the_bank_and_ratings_count_as_edits(tmp_path):
    from examflow.errors import ConfigError
    from examflow.evaluation.impact import bank_digest
    from examflow.scheduling import check_bank_kinds

    nuggets = tmp_path / "nuggets.tsv"
    nuggets.write_text("query_id\tnugget\timportance\nq1\tBees\tvital\n")
    questions = tmp_path / "questions.tsv"
    questions.write_text("query_id\tquestion\nq1\tWhat do bees make?\n")
    backend = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    grading = {"shards": 1, "methods": [{"name": "n", "kind": "nugget_support", "backend": backend}]}
    check_bank_kinds(str(nuggets), None, grading)
    with pytest.raises(
        ConfigError, match=r"grading.methods\[0\].kind: 'nugget_support' grades nuggets; the bank .* holds questions"
    ):
        check_bank_kinds(str(questions), None, grading)
    with pytest.raises(ConfigError, match="holds questions"):  # a generated bank of questions
        check_bank_kinds(str(nuggets), "question", grading)
    check_bank_kinds(str(questions), "nugget", grading)  # a bank to be generated with nuggets
    # Answer checking needs some question with an answer key; generated questions have none
    grading["methods"] = [{"name": "qa", "kind": "qa_llm_verify", "backend": backend}]
    with pytest.raises(ConfigError, match=r"grading.methods\[0\].kind: 'qa_llm_verify' checks each answer against the "
                                          r"question's answer key \(gold_answers\), and no question of .*questions.tsv has one"):  # fmt: skip
        check_bank_kinds(str(questions), None, grading)
    with pytest.raises(ConfigError, match="a generated bank's questions have none"):
        check_bank_kinds(str(questions), "question", grading)
    keyed = tmp_path / "keyed.jsonl"
    items = [{"question_text": "What do bees make?"}, {"question_text": "From what?", "gold_answers": ["nectar"]}]
    keyed.write_text(json.dumps({"query_id": "q1", "items": items}) + "\n")
    check_bank_kinds(str(keyed), None, grading)  # one key is enough: the others go unverified
    bank = pd.DataFrame({"query_id": ["q1"], "facet_id": [None], "question_id": ["q1/n"], "question_text": ["Bees"]})
    unrated = bank_digest(bank)
    assert bank_digest(bank.assign(importance=None)) == unrated  # no ratings: the digest it always had
    assert bank_digest(bank.assign(importance="vital")) != bank_digest(bank.assign(importance="okay")) != unrated


def test_equal_nugget_scores_are_equal_floats():
    """Three runs whose queries' nugget_all values differ but average to 17/36 each: summed as floats, two of
    them came out 0.47222222222222227 and one 0.47222222222222215 (a stranger's trial saw the latter for
    0.4722222222222222). Nugget scores are ratios of credits (0, 1/2, 1), summed exactly like the counts."""
    from fractions import Fraction

    from examflow.evaluation.scores import system_scores

    values = {"a": [1 / 3, 1 / 2, 7 / 12], "b": [1 / 4, 1 / 2, 2 / 3], "c": [1 / 6, 3 / 4, 1 / 2]}
    rows = [(run, f"q{i}", measure, pd.NA, value, 1.0) for measure in ("nugget_all", "nugget_weighted")
            for run, of_run in values.items() for i, value in enumerate(of_run)]  # fmt: skip
    per_query = pd.DataFrame(rows, columns=["run_id", "query_id", "measure", "tau", "value", "weight"])
    scores = system_scores(per_query)
    assert scores["score"].tolist() == [float(Fraction(17, 36))] * 6
