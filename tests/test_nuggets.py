"""Nugget assignment as AutoNuggetizer asks it: the published assigner prompts (system message and all),
the label read from a Python list, grades over real HTTP and from a tiny local model."""

from __future__ import annotations

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


def test_a_local_model_reads_the_system_message_first(tmp_path):
    """A tiny FLAN-T5-shaped model: its prompt is the system message, a blank line, the user message (cut
    only in the passage), and each pair's grade is the reading of its answer (a tiny model's words are
    no list of labels: failures, never grades)."""
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
    assert prompt.startswith(chat_template("nugget-assign")[0] + "\n\nBased on the query and passage")
    for raw, rating, error in zip(table["raw"], values(table["rating"]), table["error"]):
        expected = SUPPORT_GRADES.get(parse_nugget_label(raw) or "")
        assert rating == expected and (error is None) == (expected is not None), (raw, rating, error)
