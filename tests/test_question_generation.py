"""Question generation against a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
from llm_server import LLMServer, Slow, Status

from examflow.llm import LLMClient, LLMError, LLMSettings
from examflow.questions.generate import GenerationError, generate_bank, parse_questions, prompt_for, rerun_hint
from examflow.questions.items import item_id

QUERIES = pd.DataFrame(
    [("q1", None, "how do bees make honey", None), ("page", "sec", "Volcanoes", "Formation")],
    columns=["query_id", "facet_id", "query_text", "facet_text"],
    dtype=object,
)


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def client(server, tmp_path, **options) -> LLMClient:
    settings = {"model": "test-model", "base_url": server.base_url, "timeout": 2.0, "backoff": 0.05, "max_attempts": 3}
    return LLMClient(LLMSettings(**(settings | options)), tmp_path / "cache")


@pytest.mark.parametrize(
    "answer",
    [
        '{"questions": ["What is nectar?", "Why fan?"]}',
        'Here you go:\n```json\n{"questions":["What is nectar?","Why fan?"]}\n```',
        "question_set = ['What is nectar?', 'Why fan?']",
        "1. What is nectar?\n2. Why fan?\n",
        '["1. What is nectar?", "2) Why fan?", "What is nectar?", ""]',
        "Here are questions:\n1. What is nectar?\n2. Why fan?\nLet me know if you need more!",
        "**Questions**\n\n- What is nectar?\n- Why fan?\n\n---\nAbout 2.5 million flowers make a kilogram.",
    ],
    ids=[
        "json", "fenced-json", "python-list", "enumerated-lines", "list-with-enumeration-and-repeats",
        "enumerated-lines-in-prose", "bullets-in-markdown-prose",
    ],
)  # fmt: skip
def test_answer_formats_give_the_same_questions(answer):
    assert parse_questions(answer) == ["What is nectar?", "Why fan?"]


def test_a_question_that_begins_like_a_bullet_keeps_its_text():
    """A minus sign or an asterisk is a bullet only before a space (the question's text is its id)."""
    answer = '{"questions": ["-40 degrees: the same in C and F?", "*Bold* claims: true?", "- Why fan?", "2.5 kg?"]}'
    assert parse_questions(answer) == [
        "-40 degrees: the same in C and F?",
        "*Bold* claims: true?",
        "Why fan?",
        "2.5 kg?",
    ]


@pytest.mark.parametrize(
    "answer",
    ["I am not sure what you mean.", "**Sorry**, I cannot help.\n---\n2.5 million bees live there.", "[1, 2]", ""],
)
def test_prose_without_a_list_stays_unparsable(answer):
    assert parse_questions(answer) is None


def test_a_chat_answer_with_its_list_between_sentences_is_taken_at_the_first_attempt(server, tmp_path):
    server.script(
        "bees", "Here are questions:\n1. What is the capital?\n2. How big is it?\nLet me know if you need more!"
    )
    server.script("Formation", '["How do volcanoes form?"]')
    bank = generate_bank(QUERIES, client(server, tmp_path))
    assert [item.text for item in bank[0].items] == ["What is the capital?", "How big is it?"]
    assert server.calls == 2  # one answer per target, none asked again


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_generation_builds_a_bank_and_a_rerun_makes_no_call(server, tmp_path, api):
    server.script("'how do bees make honey'", '{"questions": ["What is nectar?", "Why do bees fan?"]}')
    server.script("subtopic 'Formation'", "```python\n['How do volcanoes form?']\n```")
    bank = generate_bank(QUERIES, client(server, tmp_path, api=api))
    assert [[i.text for i in e.items] for e in bank] == [
        ["What is nectar?", "Why do bees fan?"],
        ["How do volcanoes form?"],
    ]
    assert bank[1].items[0].item_id == item_id("page", "sec", "How do volcanoes form?")
    assert bank[0].info["model"] == "test-model" and bank[0].info["prompt_template"] == "qgen-dl"
    assert bank[1].info["prompt_template"] == "qgen-car" and bank[1].query_text == "Volcanoes / Formation"
    assert server.calls == 2
    assert all(r["path"].endswith("/chat/completions" if api == "chat" else "/completions") for r in server.requests)
    again = generate_bank(QUERIES, client(server, tmp_path, api=api))
    assert [e.items for e in again] == [e.items for e in bank]
    assert server.calls == 2  # every answer came from the cache


def test_unparsable_answers_are_asked_again_up_to_three_times(server, tmp_path, caplog):
    server.script("bees", "I am not sure what you mean.", "Let me think.", '{"questions": ["What is nectar?"]}')
    server.script("Formation", '["How do volcanoes form?"]')
    bank = generate_bank(QUERIES, client(server, tmp_path))
    assert bank[0].items[0].text == "What is nectar?"
    assert server.calls == 4
    # each asking again is said (the log showed the calls alone: a stranger's trial)
    assert [r.getMessage() for r in caplog.records if "asking again" in r.getMessage()] == [
        "1 of 2 answers unparsable (the first: 'I am not sure what you mean.'); asking again, attempt 2 of 3",
        "1 of 1 answers unparsable (the first: 'Let me think.'); asking again, attempt 3 of 3",
    ]
    generate_bank(QUERIES, client(server, tmp_path))
    assert server.calls == 4  # all three attempts replay from the cache


def test_garbage_ends_in_a_clear_error_naming_the_query(server, tmp_path):
    server.script("bees", "garbage")
    server.script("Formation", '["How do volcanoes form?"]')
    with pytest.raises(
        GenerationError,
        match=r"no questions for 1 of 2 queries and subtopics:\n  q1: 3 unparsable answers, the last: 'garbage'",
    ):  # page/sec is a subtopic, asked on its own: counted as one (it read `1 of 2 queries`; a stranger's trial)
        generate_bank(QUERIES, client(server, tmp_path))
    with pytest.raises(GenerationError, match=r"no questions for 1 of 1 queries:\n  q1: "):
        generate_bank(QUERIES.head(1), client(server, tmp_path))


def test_the_hint_says_what_a_rerun_does_with_each_kind_of_failure(server, tmp_path):
    """Failed calls are not cached: the hint that a rerun replays them sent a stranger to delete a cache."""
    server.script("bees", Status(500))
    server.script("Formation", '["How do volcanoes form?"]')
    with pytest.raises(GenerationError) as failed:
        generate_bank(QUERIES, client(server, tmp_path))
    assert str(failed.value).endswith("\n(a failed call is not cached: a rerun asks again)")
    server.script("bees", "garbage")
    with pytest.raises(GenerationError) as unparsable:
        generate_bank(QUERIES, client(server, tmp_path))
    assert "every answer is cached, so a rerun replays these" in str(unparsable.value)
    assert "not cached" not in str(unparsable.value)
    both = rerun_hint(
        ["LLM call failed (http-500)", "nuggets 1-3: 3 unparsable answers, the last: 'LLM call failed ('"]
    )
    assert both.startswith("(every answer is cached") and both.endswith(
        "(a failed call is not cached: a rerun asks again)"
    )
    # An answer cut at max_tokens is cached: its own message says what to change, and neither hint applies.
    assert rerun_hint(["LLM call failed (cut-off: the server cut the answer at max_tokens = 9: '[' (raise ...))"]) == ""


def test_http_429_waits_as_retry_after_says(server, tmp_path):
    server.script("bees", Status(429, {"Retry-After": "1"}), '["What is nectar?"]')
    llm = client(server, tmp_path)
    start = time.monotonic()
    assert llm.complete("how do bees make honey") == '["What is nectar?"]'
    assert time.monotonic() - start >= 1.0
    assert server.calls == 2


def test_http_500_is_retried_then_reported(server, tmp_path):
    server.script("bees", Status(500), Status(500), '["What is nectar?"]')
    assert client(server, tmp_path).complete("bees") == '["What is nectar?"]'
    server.script("honey", Status(503))
    with pytest.raises(LLMError, match="http-503"):
        client(server, tmp_path).complete("honey")
    assert server.calls == 3 + 3


def test_client_errors_are_not_retried(server, tmp_path):
    server.script("bees", Status(400))
    with pytest.raises(LLMError, match="http-400"):
        client(server, tmp_path).complete("bees")
    assert server.calls == 1


def test_a_slow_answer_past_the_timeout_is_an_error_not_an_empty_bank(server, tmp_path):
    server.script("bees", Slow(3.0, '["too late"]'))
    server.script("Formation", '["How do volcanoes form?"]')
    llm = client(server, tmp_path, timeout=0.5, max_attempts=2)
    with pytest.raises(GenerationError, match=r"q1: LLM call failed \(timeout: no answer within 0.5 s\)"):
        generate_bank(QUERIES, llm)


def test_api_key_comes_from_the_named_environment_variable(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_LLM_KEY", "sk-test-123")
    server.script("bees", '["What is nectar?"]')
    client(server, tmp_path, api_key_env="MY_LLM_KEY").complete("bees")
    assert server.requests[0]["auth"] == "Bearer sk-test-123"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="environment variable OPENAI_API_KEY holds no API key"):
        LLMClient(LLMSettings(model="m"), tmp_path)


def test_questions_command_writes_once_and_never_overwrites(server, tmp_path, capsys):
    from examflow.cli import main

    server.script("bees", '{"questions": ["What is nectar?"]}')
    queries = tmp_path / "queries.tsv"
    queries.write_text("q1\thow do bees make honey\n")
    bank = tmp_path / "bank.jsonl"
    args = ["questions", "--queries", str(queries), "--out", str(bank), "--model", "m", "--base-url", server.base_url]
    assert main([*args, "--cache-dir", str(tmp_path / "cache")]) == 0
    written = bank.read_text()
    assert '"question_text": "What is nectar?"' in written
    assert main([*args, "--cache-dir", str(tmp_path / "cache")]) == 2
    assert "exists: the bank is generated once and never overwritten" in capsys.readouterr().err
    assert bank.read_text() == written and server.calls == 1


# FLAN-T5-EXAM's generation prompts as its appendix publishes them (Table 1 of the paper prints the same)
PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "flan-t5-exam-appendix" / "prompts"


@pytest.mark.parametrize(("facet", "published"), [(None, "exam-qgen-DL"), ("Formation", "exam-qgen-CAR")])
def test_python_list_prompts_are_flan_t5_exam_s_as_published(facet, published):
    if not PUBLISHED.is_dir():
        pytest.skip(f"FLAN-T5-EXAM's prompts are not at {PUBLISHED} (../shared/reference is absent)")
    text = (PUBLISHED / published).read_text(encoding="utf-8").strip()
    expected = text.replace("{query_title}", "Volcanoes").replace("{query_subtopic}", "Formation")
    assert prompt_for("Volcanoes", facet, "python-list")[0] == expected


def test_the_dl_prompt_names_its_format_in_its_last_sentence_or_after_it():
    """FLAN-T5-EXAM's DL prompt ends "Keep the questions short and in a Python list format." (its Table 1); a
    JSON format (EXAM++) is a sentence and a block after "Keep the questions short." (docs/methods.md §2)."""
    listed, name = prompt_for("tides", None, "python-list")
    assert listed.endswith("inquiries. Keep the questions short and in a Python list format.")
    assert name == "qgen-dl-python-list" and "Give the question set" not in listed
    as_json, name = prompt_for("tides", None, "json")
    assert name == "qgen-dl" and as_json.endswith(
        "Keep the questions short. Give the question set in the following JSON format:\n```json\n"
        '{"questions":[question_text_1, question_text_2,...]}\n```'
    )
