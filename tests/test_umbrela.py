"""UMBRELA direct grading: the published prompts, UMBRELA's reading of a label, grades over real HTTP."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from llm_server import LLMServer
from test_grading_backends import direct_inputs, grader, openai_method, values

from examflow.grading.grader import make_pairs
from examflow.grading.parsing import parse_umbrela
from examflow.prompts import chat_template
from examflow.registry import KINDS

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "umbrela" / "prompt_templates"
PUBLISHED = {
    "umbrela": "qrel_zeroshot_bing",
    "umbrela_few": "qrel_fewshot_bing",
    "umbrela_basic": "qrel_zeroshot_basic",
}


@pytest.mark.parametrize("kind", sorted(PUBLISHED))
def test_prompts_render_as_the_published_templates(kind):
    if not REFERENCE.is_dir():
        pytest.skip(f"the published UMBRELA templates are not at {REFERENCE} (../shared/reference is absent)")
    import yaml

    published = yaml.safe_load((REFERENCE / f"{PUBLISHED[kind]}.yaml").read_text())
    # the templates' system message is empty; UMBRELA's GPT judge sends "You are a helpful assistant."
    assert published["system_message"] == ""
    query, passage = "how long is life cycle of flea", "The life cycle of a flea can last 20 days {to} a year."
    expected = published["prefix_user"].format(query=query, passage=passage)
    system, user = chat_template(KINDS[kind].template)
    assert user.format(query=query, context=passage) == expected and system == "You are a helpful assistant."


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("##final score: 2", 2),
        (
            "1. Consider the intent ... the passage matches (M) ...\n4. decide on a final score (O).\n##final score: 3",
            3,
        ),
        ('{"M": 2, "T": 1, "O": 1}', 1),  # UMBRELA reads "o" first
        ("The passage is related but does not answer it.\nRelevance category: 1", 1),
        ("Explanation: it answers the query exactly.\n\n3", 3),
        ("I would give it a score of 2 because ...", 2),
        ("FINAL SCORE: 0", 0),
    ],
)
def test_answers_read_as_umbrela_reads_them(answer, label):
    assert parse_umbrela(answer) == label


@pytest.mark.parametrize(
    "answer",
    [
        "I cannot help with judging this content.",  # a refusal: no label (UMBRELA: 0)
        "##final score: 4",  # out of range (UMBRELA: 0, no pattern matches)
        "##final score: -1",  # out of range (UMBRELA would read the 1)
        "Step 1 says a lot.\n##final score: 7",  # out of range (UMBRELA would read the 1 of "Step 1")
        "",
    ],
)
def test_answers_without_a_label_0_to_3_are_failures(answer):
    assert parse_umbrela(answer) is None


def test_grades_over_http_labels_and_failures(tmp_path):
    """Each kind through the OpenAI client against a local server with canned replies: labels 0-3,
    and a refusal or an out-of-range label is a failure in every parse mode, never a grade."""
    queries, passages = direct_inputs()
    with LLMServer() as server:
        server.script("Passage: bees make honey\n", "Considering the intent...\n##final score: 3")
        server.script("Passage: tides\n", "##final score: 5")
        for kind in PUBLISHED:
            for mode in ("strict", "reference"):
                table = grader(openai_method(server, kind, mode=mode), str(tmp_path / kind / mode)).grade(
                    make_pairs(kind, passages, pd.DataFrame(), queries)
                )
                assert values(table["rating"]) == [3, None]
                assert table["error"].tolist()[1] == "unparsable: not a grade 0-3: '##final score: 5'"
        # as UMBRELA's GPT judge asks: its system message, then the published prompt
        messages = [r["body"]["messages"] for r in server.requests]
        assert {(m[0]["role"], m[0]["content"]) for m in messages} == {("system", "You are a helpful assistant.")}
        rendered = {chat_template(KINDS[kind].template)[1].format(query="how bees make honey", context=text)
                    for kind in PUBLISHED for text in ("bees make honey", "tides")}  # fmt: skip
        prompts = [m[1]["content"] for m in messages]
        assert len(prompts) == 12 and set(prompts) == rendered  # 3 kinds × 2 modes × 2 passages, as published


def test_a_vote_over_samples_keeps_its_count_and_margin(tmp_path):
    """samples: 3 at temperature 0.7: each pair asked three times (three API calls, three cache entries), the
    grade the majority label (a three-way tie to the lowest), votes and margin kept; a failed sample fails
    the pair. A second run asks nothing."""
    queries, _ = direct_inputs()
    passages = pd.DataFrame({"query_id": "q1", "passage_id": ["p0", "p1", "p2"], "text": ["bees", "tides", "wax"]})
    with LLMServer() as server:
        server.script("Passage: bees\n", *(f"##final score: {label}" for label in (2, 3, 2)))
        server.script("Passage: tides\n", *(f"##final score: {label}" for label in (1, 3, 0)))
        server.script("Passage: wax\n", "##final score: 1", "I will not judge this.", "##final score: 1")
        method = openai_method(server, "umbrela", samples=3)
        method["backend"]["temperature"] = 0.7
        pairs = make_pairs("umbrela", passages, pd.DataFrame(), queries)
        table = grader(method, str(tmp_path)).grade(pairs)
        sent = len(server.requests)
        again = grader(method, str(tmp_path)).grade(pairs)
        assert len(server.requests) == sent == 9
    assert values(table["rating"]) == [2, 0, None]
    assert values(table["votes"]) == [2, 1, None] and values(table["margin"]) == [1, 0, None]
    # (which sample met the refusal depends on which request the server answered first)
    assert re.fullmatch(
        r"unparsable: not a grade 0-3: 'I will not judge this\.' \(sample [123] of 3\)", table["error"].tolist()[2]
    )
    assert table["raw"].tolist()[0].count("[sample ") == 3
    assert table.equals(again)
    assert sorted(r["body"]["temperature"] for r in server.requests) == [0.7] * 9


@pytest.mark.parametrize(
    ("change", "message"),
    [({"samples": 3}, "samples differ only when drawn: the openai back end with a temperature above 0"),
     ({"samples": 3, "kind": "sun"}, "a vote over samples is UMBRELA's: kinds umbrela, umbrela_few, umbrela_basic"),
     ({"samples": 0}, "expected a whole number, 1 or more, found 0"),
     ({"samples": True}, "expected a whole number")],
)  # fmt: skip
def test_samples_only_where_a_vote_means_something(change, message):
    from examflow.errors import ConfigError
    from examflow.registry import check_method

    method = {"name": "u", "kind": "umbrela", "backend": {"kind": "openai", "model": "m"}} | change
    with pytest.raises(ConfigError, match=f"methods.u.samples: {re.escape(message)}"):
        check_method("methods.u", method)
    assert check_method("m", {**method, "samples": 1}).samples == 1


def test_a_local_model_grades_as_umbrela_reads_its_answers(tmp_path):
    """A tiny FLAN-T5-shaped model built here: each pair's rating is UMBRELA's reading of its answer,
    and an answer without a label 0-3 is a failure."""
    from tiny_models import build_tiny_t5

    model = str(build_tiny_t5(tmp_path / "model", seed=3, digit_boost=4.0, scale=2.0, flan=True))
    queries = pd.DataFrame([("q1", None, "how bees make honey", None), ("q2", None, "lava 2 magma", None)],
                           columns=["query_id", "facet_id", "query_text", "facet_text"], dtype=object)  # fmt: skip
    texts = ["bees make honey", "tides 3", "lava and magma", "compost 1 feeds soil", "the moon", "honey 0"]
    passages = pd.DataFrame({"query_id": ["q1", "q2"] * 3, "passage_id": [f"p{i}" for i in range(6)], "text": texts})
    backend = {"kind": "hf_seq2seq", "model": model, "decoding": "greedy", "max_new_tokens": 3, "batch_size": 4}
    method = {"name": "u", "kind": "umbrela", "backend": backend}
    table = grader(method, str(tmp_path / "cache")).grade(make_pairs("umbrela", passages, pd.DataFrame(), queries))
    assert len(table) == 6
    for raw, rating, error in zip(table["raw"], values(table["rating"]), table["error"]):
        label = parse_umbrela(raw)
        assert rating == label and (error is None) == (label is not None), (raw, rating, error)
    assert table["rating"].notna().any()  # the tiny model says digits: some labels are read


@pytest.mark.parametrize(
    ("answer", "reference", "strict"),
    [
        ("The intent is clear.\n##final score: 2", 2, 2),
        ("**Final Score: 1**", 1, 1),
        ("Explanation: it answers the query exactly.\n\n3", 3, 3),
        ("It is related.\nRelevance category: 1", 1, 1),
        ("I cannot judge this; see section 2 of the policy.", 2, None),  # a refusal that cites a number
        ("I cannot rate this on a scale 0 to 3", 3, None),
        ("##final score: 2.5", 2, None),
        ("##final score: 2\nBecause the passage ...", 2, None),  # the prompt asks for no reasoning after it
        ('{"M": 2, "T": 1, "O": 1}', 1, None),
        ("final score -1", None, None),  # out of range, not a label after a dash
        ("-2", None, None),  # a negative number: UMBRELA's last pattern reads its digit
        ("It rates −2 on the scale.", None, None),  # the minus sign U+2212
        ("Score: –2", None, None),  # an en dash, U+2013, in a range of the signs' regex class
        ("##final score: —2", None, None),  # an em dash
        ("relevance category-2", 2, None),  # a hyphen after a word is no minus sign
        ("**Final score:** 2", 2, 2),  # markdown emphasis anywhere on the line
        ("## Final Score: **2**", 2, 2),
        ("Final score (O): 2", 2, 2),  # the prompt names the score (O)
        ("final  score: 1", 1, 1),
        ("##final score: 2\n\n###", 2, 2),  # the few-shot prompt's separator after the label
    ],
)
def test_strict_reads_only_a_label_stated_on_the_last_line(answer, reference, strict):
    assert parse_umbrela(answer) == reference
    assert parse_umbrela(answer, strict=True) == strict


def test_a_refusal_that_cites_a_number_is_a_failure_in_strict_mode(tmp_path):
    queries, passages = direct_inputs()
    with LLMServer() as server:
        server.script("Passage: bees make honey\n", "I cannot judge this; see section 2 of the policy.")
        server.script("Passage: tides\n", "The intent is unclear.\n##final score: 1")
        ratings = {}
        for mode in ("strict", "reference"):
            table = grader(openai_method(server, "umbrela", mode=mode), str(tmp_path)).grade(
                make_pairs("umbrela", passages, pd.DataFrame(), queries)
            )
            ratings[mode] = values(table["rating"])
        assert len(server.requests) == 2  # the second mode rereads the cached answers
    assert table["error"].isna().all()
    assert ratings == {"strict": [None, 1], "reference": [2, 1]}
