"""What examflow keeps of an LLM server's replies, against a real server on 127.0.0.1: a reply past
`max_reply_bytes` is a failure read in bounded memory, what is stored is bounded, and the request's
API key never reaches a file or a log."""

from __future__ import annotations

import gzip
import json
import logging
import time
import tracemalloc
import zlib
from collections import Counter

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_chain import examflow
from llm_server import Echo, LLMServer, Padded, Raw, Status, Trickle, completion
from test_grading_backends import grader, openai_method, pairs, values
from test_grading_resume import shard_inputs

from examflow.cli import main
from examflow.grading.grades import failure_counts
from examflow.grading.merge import read_grades_metadata
from examflow.llm import LLMClient, LLMError, LLMSettings, log_served

SENTINEL = "sk-sentinel-7f3a9c2e-do-not-store"
LIMIT = 262_144  # the default max_reply_bytes


@pytest.fixture
def server():
    with LLMServer(default=lambda prompt: "3") as running:
        yield running


def client(server, tmp_path, **options) -> LLMClient:
    settings = {"model": "m", "base_url": server.base_url, "max_attempts": 3, "backoff": 0.01, "timeout": 10}
    return LLMClient(LLMSettings(**(settings | options)), tmp_path / "llm")


@pytest.mark.parametrize("declared", [False, True], ids=["streamed", "content-length"])
def test_a_reply_past_the_limit_is_a_failure_read_in_bounded_memory(server, tmp_path, declared):
    server.script("bees", Padded("4", 20_000_000, declared))  # a "4" padded to 20 MB
    llm = client(server, tmp_path)
    tracemalloc.start()
    try:
        with pytest.raises(LLMError) as failed:
            llm.complete("bees")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert failed.value.kind == "too-large"
    assert peak < 4_000_000  # a few chunks past the limit, not the body
    assert server.calls == 1  # not retried: the same prompt gets the same reply
    assert not list((tmp_path / "llm").rglob("*.json"))  # never cached


def test_a_reply_of_the_limit_is_read_whole_and_a_lower_limit_holds_for_the_cache(server, tmp_path):
    server.script("bees", Padded("4", LIMIT, declared=False))
    assert client(server, tmp_path).complete("bees").strip() == "4" and server.calls == 1
    # The cached reply is past a lower limit: asked again, it fails as a fresh one would.
    with pytest.raises(LLMError, match=r"^too-large: the reply is longer than max_reply_bytes = 1999 bytes$"):
        client(server, tmp_path, max_reply_bytes=1999).complete("bees")
    assert server.calls == 2
    server.script("honey", Padded("4", 2000))
    with pytest.raises(LLMError, match=r"^too-large: the reply declares 2000 bytes, more than max_reply_bytes = 1999$"):
        client(server, tmp_path, max_reply_bytes=1999).complete("honey")


def test_too_large_is_a_failure_of_its_own_kind_and_stored_text_is_bounded(server, tmp_path):
    long_grade, long_words = "4" + " " * 5000, "I would rather not say. " * 300
    server.script("bees make honey from nectar 0", long_grade)
    server.script("the moon raises tides 1", Padded("4", 300_000))
    server.script("lava and magma 2", long_words)
    method = openai_method(server, "self_rating", mode="reference")
    table = grader(method, str(tmp_path)).grade(pairs(4))
    assert values(table["rating"]) == [4, None, 0, 3]  # a padded "4" past the limit is no grade
    assert values(table["error"]) == [None, f"too-large: the reply declares 300000 bytes, more than max_reply_bytes = {LIMIT}", None, None]  # fmt: skip
    assert failure_counts(table) == {"too-large": 1}
    assert values(table["raw"]) == [
        long_grade[:2000] + "… [3001 more characters]",
        None,
        long_words[:2000] + f"… [{len(long_words) - 2000} more characters]",
        "3",
    ]
    assert table["unparsable"].tolist() == [False, False, True, False]
    retry = grader(method, str(tmp_path))
    retry.grade(pairs(4))
    assert retry.sent == 1  # the failure was not cached


def files_holding(folder, text: str) -> list[str]:
    """Every file under `folder` that holds `text`: in its bytes, or in a cell of a (compressed) Parquet table."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and _holds(p, text))


def _holds(path, text: str) -> bool:
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
        return any(text in str(value) for column in table.columns for value in table[column])
    return text.encode() in path.read_bytes()


def test_the_api_key_a_server_echoes_is_never_written(server, tmp_path, monkeypatch, caplog, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    caplog.set_level(logging.INFO)
    server.script("bees make honey from nectar 0", Echo("5 {key}"))  # unparsable under strict: an error
    server.script("the moon raises tides 1", Status(401, message="Incorrect API key provided: {key}"))
    server.script("lava and magma 2", Status(500, message="upstream rejected {key}"))
    server.script("compost feeds soil 3", Echo("{key}"))
    backend = {"kind": "openai", "model": "m", "base_url": server.base_url, "backoff": 0.01, "max_attempts": 2}
    method = {"name": "llm", "kind": "self_rating", "backend": backend}
    table = grader(method, str(tmp_path / "cache")).grade(pairs(4))
    table.to_parquet(tmp_path / "grades.parquet")
    assert values(table["error"]) == [
        "unparsable: not a grade 0-5: '5 [redacted API key]'",
        "http-401: Error code: 401 - Incorrect API key provided: [redacted API key]",
        "http-500: Error code: 500 - upstream rejected [redacted API key]",
        "unparsable: not a grade 0-5: '[redacted API key]'",
    ]
    assert values(table["raw"])[0] == "5 [redacted API key]"

    # Question generation: the bank, its cache and the command's error.
    from examflow.cli import main

    server.script("'how do bees make honey'", Echo('{"questions": ["Is {key} a key?"]}'))
    server.script("'why is the sky blue'", Echo("I cannot: {key}"))
    (tmp_path / "queries.tsv").write_text("q1\thow do bees make honey\n")
    args = ["questions", "--queries", str(tmp_path / "queries.tsv"), "--model", "m", "--base-url", server.base_url,
            "--backoff", "0.01", "--cache-dir", str(tmp_path / "cache" / "llm")]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "bank.jsonl")]) == 0
    assert json.loads((tmp_path / "bank.jsonl").read_text())["items"][0]["question_text"] == "Is [redacted API key] a key?"  # fmt: skip
    (tmp_path / "sky.tsv").write_text("q2\twhy is the sky blue\n")
    assert main([*args[:2], str(tmp_path / "sky.tsv"), *args[3:], "--out", str(tmp_path / "sky.jsonl")]) == 2

    error = capsys.readouterr().err
    assert "q2: 3 unparsable answers, the last: 'I cannot: [redacted API key]'" in error

    assert server.requests[0]["auth"] == f"Bearer {SENTINEL}"  # the key was sent, and echoed
    assert files_holding(tmp_path, SENTINEL) == []
    redacted = files_holding(tmp_path, "[redacted API key]")
    assert {"bank.jsonl", "grades.parquet"} <= set(redacted)
    assert {name.split("/")[1] for name in redacted if name.startswith("cache/")} == {"grades", "llm"}
    assert SENTINEL not in caplog.text + error
    assert "LLM call failed (http-500: Error code: 500 - upstream rejected [redacted API key])" in caplog.text
    # A key as short as the placeholders local servers take ("EMPTY", "1") is no secret: answers stay.
    monkeypatch.setenv("OPENAI_API_KEY", "1")
    server.script("placeholder", Echo("{key}"))
    assert client(server, tmp_path).complete("placeholder") == "1"


def test_a_damaged_or_edited_llm_cache_file_is_asked_again(server, tmp_path, caplog):
    llm = client(server, tmp_path)
    assert llm.complete("bees") == "3" and server.calls == 1
    [path] = (tmp_path / "llm").rglob("*.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(record | {"response": "5"}), encoding="utf-8")  # edited
    assert client(server, tmp_path).complete("bees") == "3" and server.calls == 2
    path.write_bytes(b"\xff\xfe not JSON")  # damaged
    assert client(server, tmp_path).complete("bees") == "3" and server.calls == 3
    path.write_text(json.dumps(["3"]), encoding="utf-8")  # JSON, not a record
    assert client(server, tmp_path).complete("bees") == "3" and server.calls == 4
    assert client(server, tmp_path).complete("bees") == "3" and server.calls == 4  # rewritten whole, trusted
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        f"{path}: skipped 0 damaged entries (cut short, not UTF-8, not a JSON object, or a field missing) and 1 "
        "edited ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)",
        *[f"{path}: skipped 1 damaged entries (cut short, not UTF-8, not a JSON object, or a field missing) and 0 "
          "edited ones (checksum mismatch); their values are asked again (of an API back end's reply cache where it holds them, else of the model)"] * 2,
    ]  # fmt: skip


def test_a_compressed_reply_is_bounded_as_it_inflates(server, tmp_path):
    """A server that gzips though asked not to: a "4" padded to 10 MB of spaces compresses to 10 KB, and was
    read whole and graded 4 (a stranger's trial); a small compressed answer is read as any other."""
    padded = json.dumps(completion("4" + " " * 10_000_000, True, "m")).encode()
    server.script("bees", Raw(gzip.compress(padded), headers={"Content-Encoding": "gzip"}))
    server.script("wax", Raw(zlib.compress(json.dumps(completion("3", True, "m")).encode()),
                             headers={"Content-Encoding": "deflate"}))  # fmt: skip
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # deflate without its zlib header, which httpx reads too
    body = json.dumps(completion("2", True, "m")).encode()
    server.script("nectar", Raw(raw.compress(body) + raw.flush(), headers={"Content-Encoding": "deflate"}))
    whole = json.dumps(completion("1", True, "m")).encode()
    members = gzip.compress(whole[:40]) + gzip.compress(whole[40:])  # two gzip members make one body
    server.script("queen", Raw(members, headers={"Content-Encoding": "gzip"}))
    server.script("pollen", Raw(b"\x1f\x8b not gzip", headers={"Content-Encoding": "gzip"}))
    server.script("comb", Raw(b"{}", headers={"Content-Encoding": "br"}))
    llm = client(server, tmp_path)
    with pytest.raises(LLMError, match=r"^too-large: the reply is longer than max_reply_bytes = 262144 bytes$"):
        llm.complete("bees")
    assert server.calls == 1  # not retried
    assert (llm.complete("wax"), llm.complete("nectar"), llm.complete("queen")) == ("3", "2", "1")
    with pytest.raises(LLMError, match=r"^malformed: the reply's compressed body is damaged: "):
        llm.complete("pollen")
    with pytest.raises(LLMError, match=r"^malformed: the reply is compressed as br, which examflow does not inflate$"):
        llm.complete("comb")
    assert server.calls == 4 + 3 + 3  # the damaged and the unreadable asked max_attempts times


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"choices": {"0": {"message": {"content": "3"}}}}', "the reply has no choices"),
        ("[1, 2]", "the reply has no choices"),
        ("5", "the reply has no choices"),
        (
            '{"error": {"message": "overloaded", "code": 503}}',
            "the reply has no choices; it carries an error: overloaded",
        ),
        (
            '{"object": "error", "error": "model not loaded"}',
            "the reply has no choices; it carries an error: model not loaded",
        ),
        ('{"choices": [null]}', "the reply's choice is no object"),
        ('{"choices": [{"message": null}]}', "the reply's choice has no message"),
        ('{"choices": [{"text": "3"}]}', "the reply's choice has no message"),  # a completion's choice, to chat
        ('{"choices": [{"message": {"content": null}}]}', "the reply's answer is null"),
        ('{"choices": [{"message": {"content": 4}}]}', "the reply's answer is no text: 4"),
        (b'{"choices": [{"message": {"content": "2 \xff\xfe"}}]}', "'utf-8' codec can't decode"),
    ],
    ids=[
        "choices-object",
        "list",
        "number",
        "error-object",
        "error-text",
        "null-choice",
        "null-message",
        "no-message",
        "null-content",
        "number-content",
        "not-utf8",
    ],
)
def test_a_reply_of_another_shape_is_malformed_and_retried(server, tmp_path, body, message):
    """Each of these ended a grading job with a traceback (a stranger's server). An `error` a server sends
    with status 200 is quoted: `no choices` alone lost its words (a stranger's trial)."""
    server.script("bees", Raw(body))
    with pytest.raises(LLMError) as failed:
        client(server, tmp_path).complete("bees")
    assert failed.value.kind == "malformed" and message in str(failed.value)
    assert server.calls == 3  # max_attempts


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Raw("<html><body>Proxy sign-in</body></html>", "text/html"), "'<html><body>Proxy sign-in</body></html>'"),
        (Raw('{"choices": [{"message": {"content": "4'), """'{"choices": [{"message": {"content": "4'"""),
        (Raw(""), "''"),
    ],
    ids=["html", "cut-json", "empty"],
)
def test_a_reply_that_is_no_json_is_quoted_and_retried(server, tmp_path, reply, message):
    """A proxy's page with status 200, a body cut short, none: quoted, whatever its content type says."""
    server.script("bees", reply)
    with pytest.raises(LLMError) as failed:
        client(server, tmp_path).complete("bees")
    assert str(failed.value) == f"malformed: the reply is not the API's JSON: {message}"
    assert server.calls == 3  # max_attempts


def test_an_answer_cut_at_max_tokens_is_a_failure_unless_kept(server, tmp_path):
    """`finish_reason: length`: the `2` of a `2.5` would have been graded 2. The answer is cached, marked as
    cut, so that a warm cache fails it as a cold one does; `cut_off: keep` reads it as UMBRELA's code does."""
    from examflow.grading.signatures import api_signature

    server.script("bees", Raw(json.dumps(completion("2", True, "m", finish_reason="length"))))
    message = r"^cut-off: the server cut the answer at max_tokens = 1: '2' \(raise max_tokens, or set cut_off: keep\)$"
    for _ in range(2):  # asked, then from the cache
        with pytest.raises(LLMError, match=message):
            client(server, tmp_path, max_tokens=1).complete("bees")
    assert client(server, tmp_path, max_tokens=1, cut_off="keep").complete("bees") == "2"
    assert server.calls == 1  # not retried, then cached
    options = {"model": "m", "max_tokens": 1}
    assert api_signature(options | {"cut_off": "keep"}, False) != api_signature(options, False)
    assert "cut_off" not in api_signature(options, False)  # the default keys grades as before


@pytest.mark.parametrize("api", ["chat", "completions"])
@pytest.mark.parametrize(("content", "shown"), [("4", ": '4' "), ("", " "), (None, " "), ("no message", " ")])
def test_an_answer_a_content_filter_stopped_is_a_failure_asked_again_by_a_rerun(server, tmp_path, api, content, shown):
    """`finish_reason: content_filter` with a `4` was graded 4, and the run showed no failure (a stranger's
    server): what the filter left is no whole answer. The filter says the same to the same prompt, so it is
    not retried; it is not the model's answer either, so not cached: a rerun, the filter changed, asks again."""
    reply = completion("", api == "chat", "m", finish_reason="content_filter")
    choice = reply["choices"][0]
    holder, field = (choice["message"], "content") if api == "chat" else (choice, "text")
    holder[field] = content
    if content == "no message":  # a chat choice without its message, a completion's without its text
        choice.pop("message" if api == "chat" else "text")
    server.script("bees", Raw(json.dumps(reply)), Raw(json.dumps(reply)))
    message = rf"^filtered: the server's content filter withheld the answer{shown}\(finish_reason content_filter;"
    for calls in (1, 2):
        with pytest.raises(LLMError, match=message) as failed:
            client(server, tmp_path, api=api).complete("bees")
        assert server.calls == calls and failed.value.served == "m"  # the model that answered, counted


def test_a_reply_trickling_past_the_timeout_is_a_timeout(server, tmp_path):
    """Each read came within the timeout, so a reply sent a few bytes at a time held a job for as long as the
    server liked; `timeout` bounds the whole reply."""
    server.script("bees", Trickle("3", seconds=6))
    llm = client(server, tmp_path, timeout=1, max_attempts=1)  # made outside the clock: a first import is slow
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"^timeout: no answer within 1 s$"):
        llm.complete("bees")
    assert time.monotonic() - started < 5  # the whole reply would take 6 s
    server.script("wax", Trickle("4", seconds=0.3))
    assert client(server, tmp_path, timeout=1, max_attempts=1).complete("wax") == "4"


@pytest.mark.parametrize("value", ["abc", "nan", "-5", "1e400"])
def test_a_retry_after_that_is_neither_seconds_nor_a_date_backs_off(server, tmp_path, value):
    """`Retry-After: abc` raised ValueError out of the job; `nan` and `-5` asked again at once, `1e400` after
    max_retry_after: each waits the back-off now."""
    server.script("bees", Status(429, {"Retry-After": value}), "3")
    started = time.monotonic()
    assert client(server, tmp_path, backoff=0.5).complete("bees") == "3" and server.calls == 2
    assert 0.5 <= time.monotonic() - started < 5


def test_the_same_settings_written_two_ways_are_one_cache_key(server, tmp_path):
    """`temperature: 0` (the default 0.0 written as an integer) and a base URL with a trailing slash regraded
    every pair (a stranger's trial: 404 and 524 calls for nothing)."""
    from examflow.config import check_config
    from examflow.defaults import SCHEMA

    methods = [{"name": "m", "kind": "self_rating", "backend": {"kind": "openai", "model": "m", "temperature": 0}}]
    backend = check_config(
        {"inputs": {"queries": "q", "responses": "r", "bank": "b"}, "grading": {"methods": methods}}, SCHEMA
    )["grading"]["methods"][0]["backend"]
    assert backend["temperature"] == 0.0 and isinstance(backend["temperature"], float)
    assert client(server, tmp_path).complete("bees") == "3"
    assert client(server, tmp_path, base_url=server.base_url + "/").complete("bees") == "3"
    assert server.calls == 1


def test_a_compressed_body_inflates_alike_however_it_arrives_and_a_cut_one_is_damaged():
    """Byte by byte (a trickling server): raw deflate lost its first byte when its missing zlib header was
    noticed at the second; a gzip stream cut before its end was read as whole."""
    from examflow.llm import BadBody, _BoundedStream

    body = json.dumps(completion("2", True, "m")).encode()
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    cases = {"raw deflate": ("deflate", raw.compress(body) + raw.flush()), "zlib": ("deflate", zlib.compress(body)),
             "two gzip members": ("gzip", gzip.compress(body[:50]) + gzip.compress(body[50:]))}  # fmt: skip
    for name, (encoding, data) in cases.items():
        for size in (1, 2, 7, len(data)):
            pieces = [data[i : i + size] for i in range(0, len(data), size)]
            assert b"".join(_BoundedStream(pieces, LIMIT, encoding=encoding)) == body, (name, size)
    cut = gzip.compress(body)[:-6]
    with pytest.raises(BadBody, match="ends before its compressed stream does"):
        b"".join(_BoundedStream([cut], LIMIT, encoding="gzip"))


def test_a_job_failing_on_cut_answers_says_a_rerun_meets_them_again():
    """The job's line said a rerun asks again for the failed pairs; a cut answer is cached (a stranger's trial)."""
    from examflow.config import methods
    from examflow.errors import Failure
    from examflow.grading.grades import check_failures

    method = methods([{"name": "m", "kind": "self_rating", "backend": {"kind": "openai", "model": "m"}}])[0]
    grades = pd.DataFrame({"error": ["cut-off: the server cut the answer at max_tokens = 5: '2'", None],
                           "unparsable": [False, False]})  # fmt: skip
    with pytest.raises(
        Failure,
        match=r"1 cut-off; e.g. cut-off: the server cut the answer at max_tokens = 5: '2'\), .*; an answer cut "
        "at max_tokens is an answer and stays: raise",
    ):
        check_failures(grades, method, "shard-0", 0)


def test_a_job_failing_on_unparsable_answers_points_to_the_mode_only_where_a_mode_reads_them():
    """UMBRELA's `##final score: 7` fails in every mode, yet the job's line said "see the method's `mode`" (a
    stranger's trial); a self-rating's prose is read as a grade under `reference` and `paper`. Under `mode:
    strict` (the `openai` default) UMBRELA's and the criteria's label amid words fails, which `reference` reads
    from the cache: the line said no mode would, and to delete the cache (a second stranger's trial); a nugget
    assigner's answer is read alike in every mode."""
    from examflow.config import methods
    from examflow.errors import Failure
    from examflow.grading.grades import check_failures

    grades = pd.DataFrame({"error": ["unparsable: not a grade 0-3: '##final score: 7'"], "unparsable": [True]})
    every_mode = "stays, and no `mode` of this kind reads it: another model or prompt, or"
    strict = ("stays: `mode: reference` reads a label stated amid words, as this kind's authors read it, from the "
              "cache without asking again; else another model or prompt, or")  # fmt: skip
    for kind, mode, hint in (("umbrela", "strict", strict), ("criteria", "strict", strict),
                             ("umbrela", "reference", every_mode), ("nugget_support", "strict", every_mode),
                             ("self_rating", "strict", "stays: see the method's `mode`, or")):  # fmt: skip
        backend = {"kind": "openai", "model": "m"}
        method = methods([{"name": "m", "kind": kind, "mode": mode, "backend": backend}])[0]
        with pytest.raises(Failure) as failed:
            check_failures(grades, method, "shard-0", 0)
        assert f"; an unparsable answer is an answer and {hint} delete the config's `cache_dir`/grades" in str(
            failed.value
        ), kind


def test_a_job_that_stopped_asking_counts_the_pairs_it_did_not_ask():
    from examflow.config import methods
    from examflow.grading.backends import Answer
    from examflow.grading.grades import GaveUp

    method = methods([{"name": "m", "kind": "self_rating", "backend": {"kind": "openai", "model": "m"}}])[0]
    failed = Answer(None, error="http-500: Internal Server Error")
    for received, words in (([failed, None, Answer("3")], "1 pair"), ([failed, None, None], "2 pairs")):
        message = str(GaveUp(["http-500: Internal Server Error"], received).failure(method, "shard-0", 0))
        assert message.startswith("method m, shard shard-0: 1 of 3 pairs failed (1 http-500; e.g. http-500: ")
        assert f"more than grading.max_error_rate = 0 allows: it stopped asking, {words} not asked. " in message


def test_the_model_a_reply_names_is_counted_from_the_server_and_the_reply_cache(server, tmp_path):
    server.script("bees", Raw(json.dumps(completion("4", True, "m-2026-01-01"))))  # a dated version of `m`
    server.script("tides", Raw(json.dumps(completion("2", True, "other-model"))))  # a proxy's other model
    server.script("moon", Raw(json.dumps({"choices": [{"message": {"content": "1"}}]})))  # a reply naming none
    server.script("ebb", Raw(json.dumps(completion("2", True, "other-model", finish_reason="length"))))  # cut
    for name, model in (("sun", ""), ("star", 123), ("comet", " ")):  # names that are none
        server.script(name, Raw(json.dumps(completion("0", True, "m") | {"model": model})))
    # lava: the server names the model asked for; ebb: a cut answer, a failure, but answered by other-model
    prompts = ["bees", "tides", "moon", "lava", "sun", "star", "comet", "ebb"]
    first = client(server, tmp_path)
    answers = ["4", "2", "1", "3", "0", "0", "0"]
    *replies, cut = first.complete_many(prompts)
    assert replies == answers and isinstance(cut, LLMError) and cut.kind == "cut-off"
    expected = {"m-2026-01-01": 1, "other-model": 2, "m": 1}  # as many as the progress line's `answered`
    assert first.served == expected and server.calls == 8
    replayed = client(server, tmp_path)  # a rerun: every answer from the reply cache, its model's name too
    assert replayed.complete_many(prompts)[:7] == answers
    assert replayed.served == expected and replayed.replayed == 8 and server.calls == 8


def test_a_grading_job_counts_the_model_that_served_an_answer_cut_at_max_tokens(server, tmp_path):
    """served_models counts a cut answer, as the docs say (the client counted it, the job's table of models lost
    it with the answer: a stranger's trial found every total short by the cut ones)."""
    server.script("lava", Raw(json.dumps(completion("2", True, "other-model", finish_reason="length"))))
    job = grader(openai_method(server, "self_rating"), str(tmp_path))
    table = job.grade(pairs(4))
    assert values(table["error"])[2].startswith("cut-off: ") and table["error"].notna().sum() == 1
    assert job.served == Counter({"m": 3, "other-model": 1})


def test_another_model_is_a_warning_and_a_dated_version_a_note(caplog):
    caplog.set_level(logging.INFO, logger="examflow.llm")
    log_served("m", Counter({"m": 3}))
    assert not caplog.records  # the model asked for: nothing to say
    log_served("gpt-4", Counter({"gpt-4": 3, "gpt-4-2024-08-06": 1, "gpt-4-0613": 1}))
    dated = caplog.records[-1]
    assert (dated.levelno, dated.getMessage()) == (
        logging.INFO,
        "asked for model 'gpt-4', the server answered 1 of 5 as 'gpt-4-0613', 1 of 5 as 'gpt-4-2024-08-06'",
    )
    log_served("gpt-4", Counter({"gpt-4-2024-08-06": 2, "gpt-4o-mini": 1}))  # a name that starts alike: another
    other = caplog.records[-1]
    assert (other.levelno, other.getMessage()) == (
        logging.WARNING,
        "asked for model 'gpt-4', the server answered 2 of 3 as 'gpt-4-2024-08-06', 1 of 3 as 'gpt-4o-mini': "
        "another model than the configured one",
    )


def test_grading_jobs_record_the_served_models_and_the_merge_sums_them(tmp_path, caplog, capsys):
    def served_as(prompt: str) -> Raw:  # one question of five answered by another model
        return Raw(json.dumps(completion("3", True, "other-model" if "what bees do honey make" in prompt else "m")))

    with LLMServer(default=served_as) as running:
        # a minute for a reply: on a loaded machine no retry's warning joins the served model's
        method = json.dumps(openai_method(running, "self_rating", timeout=60))
        for shard, query in (("a", "q1"), ("b", "q2")):  # q2's prompts are q1's: answered by the reply cache
            inputs = tmp_path / shard
            inputs.mkdir()
            shard_inputs(inputs)
            for name in ("passages", "queries", "questions"):
                table = pd.read_parquet(inputs / f"{name}.parquet")
                table["query_id"] = query
                table.to_parquet(inputs / f"{name}.parquet")
            caplog.clear()
            examflow("grade", "--method", method, "--shard", shard, "--passages", inputs / "passages.parquet",
                     "--queries", inputs / "queries.parquet", "--questions", inputs / "questions.parquet",
                     "--cache-dir", tmp_path / "cache", "--out", tmp_path / f"{shard}.parquet")  # fmt: skip
            metadata = read_grades_metadata(str(tmp_path / f"{shard}.parquet"))
            assert metadata["served_models"] == {"m": 160, "other-model": 40}
            warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert warned == [
                "asked for model 'm', the server answered 40 of 200 as 'other-model': another model than the "
                "configured one"
            ]
        assert running.calls == 200
        # shard a again: every answer from the grade cache, which kept each answer's model
        examflow("grade", "--method", method, "--shard", "a", "--passages", tmp_path / "a/passages.parquet",
                 "--queries", tmp_path / "a/queries.parquet", "--questions", tmp_path / "a/questions.parquet",
                 "--cache-dir", tmp_path / "cache", "--out", tmp_path / "again.parquet")  # fmt: skip
        assert read_grades_metadata(str(tmp_path / "again.parquet"))["served_models"] == {"m": 160, "other-model": 40}
        assert running.calls == 200
    shards = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    examflow("merge-grades", "--method", method, "--out", tmp_path / "merged.parquet", *shards)
    assert read_grades_metadata(str(tmp_path / "merged.parquet"))["served_models"] == {"m": 320, "other-model": 80}
    # a shard given twice would count its pairs twice (and its served models): refused, naming both
    capsys.readouterr()
    assert main(["merge-grades", "--method", method, "--out", str(tmp_path / "twice.parquet"), *map(str, shards),
                 str(shards[0])]) == 2  # fmt: skip
    error = capsys.readouterr().err
    assert error.startswith(f"examflow: error: {shards[0]}: query 'q1', passage 'p0', question ")
    assert error.endswith(f"is graded again in {shards[0]} (the shard given twice): each pair is in one shard, once\n")
    assert not (tmp_path / "twice.parquet").exists()
    # no shard: refused (an empty table read as a pool without passages); a shard whose served_models is no
    # {name: answers}: its file named
    assert main(["merge-grades", "--method", method, "--out", str(tmp_path / "none.parquet")]) == 2
    assert capsys.readouterr().err.endswith("no shards given: name every grading job's table (`grade --out`)\n")
    assert not (tmp_path / "none.parquet").exists()
    grades = pd.read_parquet(shards[1])
    edited = pa.Table.from_pandas(grades, preserve_index=False)
    metadata = read_grades_metadata(str(shards[1])) | {"served_models": {"m": "160"}}
    pq.write_table(edited.replace_schema_metadata({b"examflow": json.dumps(metadata).encode()}), tmp_path / "c.parquet")
    assert main(["merge-grades", "--method", method, "--out", str(tmp_path / "bad.parquet"), str(shards[0]),
                 str(tmp_path / "c.parquet")]) == 2  # fmt: skip
    assert capsys.readouterr().err == (
        f"examflow: error: {tmp_path / 'c.parquet'}: metadata served_models: expected {{model name: answers}}, "
        "found {'m': '160'}\n"
    )


def test_a_connection_failure_names_the_address_and_why_and_an_http_error_keeps_the_server_s_words(server, tmp_path):
    """`connection: Connection error.` for a port typo and for `htp://`, and `http-500: Error code: 500` for a
    body `{"error": "boom"}`: neither the address nor the cause nor the server's words (a stranger's trials)."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        LLMError, match=rf"^connection: request to http://127.0.0.1:{port}/v1/ failed: .*Connection refused"
    ):
        client(server, tmp_path, max_attempts=1, base_url=f"http://127.0.0.1:{port}/v1").complete("bees")
    server.script("wax", Raw(json.dumps({"error": "boom"}), code=500))
    with pytest.raises(LLMError, match=r'^http-500: Error code: 500 - {"error": "boom"}$'):
        client(server, tmp_path, max_attempts=1).complete("wax")
    server.script("comb", Status(404, message="no such model"))  # the API's own error shape: openai reads it
    with pytest.raises(LLMError, match=r"^http-404: Error code: 404 - no such model$"):
        client(server, tmp_path, max_attempts=1).complete("comb")
    # A proxy's HTML page: one line, or the job's failure line that quotes it ends at its first line break
    server.script("hive", Raw("<html>\r\n<head><title>502 Bad Gateway</title></head>\n</html>\n", "text/html", 502))
    with pytest.raises(
        LLMError, match=r"^http-502: Error code: 502 - <html> <head><title>502 Bad Gateway</title></head> </html>$"
    ):
        client(server, tmp_path, max_attempts=1).complete("hive")
    # A redirect followed with a GET lost the prompt: the failure was the other address's 501, of no redirect
    server.script("nectar", Raw("", code=302, headers={"Location": "/v2/chat/completions"}))
    asked = server.calls
    with pytest.raises(
        LLMError, match=r"^http-302: the server redirected the request to /v2/chat/completions, which a client asks "
    ):
        client(server, tmp_path, max_attempts=3).complete("nectar")
    assert server.calls == asked + 1  # not asked again: the same request is redirected the same way
    server.script("propolis", Raw("", code=302, headers={"Location": "http://me:secret@127.0.0.1:1/v2"}))
    with pytest.raises(LLMError, match=r"^http-302: the server redirected the request to http://127.0.0.1:1/v2, "):
        client(server, tmp_path, max_attempts=1).complete("propolis")
    server.script("royal jelly", Raw("", code=303))
    with pytest.raises(LLMError, match=r"^http-303: the server answered with a redirect that names no address: "):
        client(server, tmp_path, max_attempts=1).complete("royal jelly")
    # A user and password in the URL stay out of the message, which grades and logs keep
    with pytest.raises(LLMError, match=rf"^connection: request to http://127.0.0.1:{port}/v1/ failed: "):
        client(server, tmp_path, max_attempts=1, base_url=f"http://me:secret@127.0.0.1:{port}/v1").complete("bees")


def test_a_client_whose_replies_stopped_on_an_error_asks_again_afterwards(server, tmp_path, monkeypatch):
    """`replies` stops its other threads' retries when one raises (Ctrl-C, a bug); the client must not stay
    stopped: every later prompt would fail `interrupted` without a request."""
    llm = client(server, tmp_path)
    answer = llm.reply

    def reply(prompt, *rest):
        if prompt == "wax":
            raise RuntimeError("a bug")
        return answer(prompt, *rest)

    monkeypatch.setattr(llm, "reply", reply)
    with pytest.raises(RuntimeError, match="a bug"):
        llm.replies(["wax", "bees"])
    assert [r.text for r in llm.replies(["bees", "honey"])] == ["3", "3"]


def test_answers_read_as_grades_though_none_is_one_are_a_warning_of_their_job(caplog):
    """`mode: reference` read a tiny model's `H H H` as 0 for every pair, and the job said so at INFO alone: the
    run's end named no step that warned (a stranger's trial). A failed pair is the failures' line, not this."""
    from examflow.config import methods
    from examflow.grading.grades import check_failures

    backend = {"kind": "hf_seq2seq", "model": "m"}
    method = methods([{"name": "m", "kind": "self_rating", "mode": "reference", "backend": backend}])[0]
    grades = pd.DataFrame({"error": [None, None, None, "timeout: 30 s"], "unparsable": [True, True, False, True]})
    with caplog.at_level(logging.WARNING):
        check_failures(grades, method, "shard-0", 0.5)
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said[0] == (
        "method m, shard shard-0: 2 of 4 answers are no grade, each read as mode reference says (docs/methods.md §3: "
        "a grade by the published parse, or none); the grades' `raw` column holds them, and `mode: strict` fails them "
        "instead"
    )
    assert len(said) == 2 and said[1].startswith("method m, shard shard-0: 1 of 4 pairs failed (1 timeout")
    caplog.clear()
    check_failures(grades.assign(unparsable=False), method, "shard-0", 0.5)
    assert "answers are no grade" not in caplog.text
