"""A grading job that will fail stops asking its model: past grading.max_error_rate of its pairs, no request
is sent, and a prompt waiting to retry gives its failure at once (a server that never answered held a job for
hours, a stranger's trial). The answers received are kept, and a rerun asks only for the rest."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time

import pytest
from llm_server import LLMServer, Status
from test_grading_backends import QUESTION, grader, openai_method, pairs

from examflow.grading.grades import GaveUp
from examflow.grading.methods import Pair
from examflow.llm import LLMClient, LLMError, LLMSettings
from examflow.progress import job_progress
from examflow.registry import check_method


def client(server, tmp_path, **options) -> LLMClient:
    settings = {"model": "m", "base_url": server.base_url, "max_attempts": 3, "backoff": 0.01, "timeout": 10}
    return LLMClient(LLMSettings(**(settings | options)), tmp_path / "llm")


def kinds(replies) -> list[str]:
    return [r.kind if isinstance(r, LLMError) else "answer" for r in replies]


def test_past_the_failures_allowed_no_request_is_sent(tmp_path):
    with LLMServer(default=lambda prompt: Status(400) if "bad" in prompt else "3") as server:
        prompts = ["good 0", "bad 1", "good 2", "bad 3", "bad 4", "good 5", "bad 6"]
        replies = client(server, tmp_path, concurrency=1).replies(prompts, give_up_after=2)
        # one at a time: the third failure (bad 4) is the last request; an HTTP 400 is not asked twice
        assert kinds(replies) == ["answer", "http-400", "answer", "http-400", "http-400", "not-asked", "not-asked"]
        assert server.calls == 5
        assert str(replies[-1]) == "not-asked: more than 2 prompts had failed"
        # Without a limit, or within it, every prompt is asked; the client asks again after giving up.
        replies = client(server, tmp_path / "again", concurrency=3).replies(prompts)
        assert kinds(replies).count("not-asked") == 0 and server.calls == 5 + 7
        assert kinds(client(server, tmp_path / "more", concurrency=3).replies(prompts, give_up_after=4)) == kinds(
            replies
        )


def test_giving_up_ends_a_wait_to_retry_at_once(tmp_path):
    """`slow` fails with a 500 and would be asked again in 30 s; `bad` fails for good meanwhile: the job will
    fail, and `slow` gives its failure at once instead of waiting (Ctrl-C's way out)."""
    slow_asked = threading.Event()

    def reply(prompt: str) -> Status:  # `bad` fails once `slow` was asked (a thread may start late)
        if prompt == "slow":
            slow_asked.set()
            return Status(500)
        slow_asked.wait(10)
        return Status(400)

    with LLMServer(default=reply) as server:
        llm = client(server, tmp_path, concurrency=2, backoff=30)
        start = time.monotonic()
        replies = llm.replies(["slow", "bad", "never"], give_up_after=0)
        assert time.monotonic() - start < 20  # far from the 30 s wait (a hang would take them)
        assert kinds(replies) == ["http-500", "http-400", "not-asked"]
        assert [r["body"]["messages"][-1]["content"] for r in server.requests] in (["slow", "bad"], ["bad", "slow"])
        # A later call asks again (the stop was this call's)
        assert kinds(llm.replies(["ok"])) == ["http-400"]


def fails_one_in_three(prompt: str):
    """A failure for a third of the prompts, by a digest of each (the same in every run)."""
    return Status(503) if int(hashlib.md5(prompt.encode()).hexdigest(), 16) % 3 == 0 else "4"


def test_a_job_that_will_fail_stops_asking_and_keeps_what_came(tmp_path):
    total = 300  # five chunks of 64: the job stops within its first chunks
    with LLMServer(default=fails_one_in_three) as server:
        method = openai_method(server, "self_rating")  # 2 attempts a prompt, 4 at a time
        expected_failures = sum(isinstance(fails_one_in_three(r), Status) for r in asked_prompts(method, total))
        assert 80 < expected_failures < 120  # about a third: the allowance below is crossed early
        with pytest.raises(GaveUp) as stop:
            grader(method, str(tmp_path), max_error_rate=0.1).grade(pairs(total))
        failed, answered = len(stop.value.failures), stop.value.answered
        assert 30 < failed <= 30 + 4 and all(f.startswith("http-503: ") for f in stop.value.failures)
        # each answer asked once, each failure twice (once where the stop came as it waited to retry); no prompt
        # after the stop
        assert answered + failed <= server.calls <= answered + 2 * failed
        assert answered + failed < total / 2 and len(stop.value.received) == total
        message = str(stop.value.failure(check_method("m", method), "shard-0", 0.1))
        assert message.startswith(f"method self_rating, shard shard-0: {failed} of {total} pairs failed ({failed} "
                                  "http-503; e.g. http-503: ")  # fmt: skip
        assert message.endswith(
            f"more than grading.max_error_rate = 0.1 allows: it stopped asking, {total - answered - failed} pairs "
            "not asked. The answers received are cached: a rerun asks the model again only for the pairs that got none"
        )
        # The answers that came are cached: a rerun without a limit asks for every other pair, and no more.
        calls = server.calls
        again = grader(method, str(tmp_path))
        table = again.grade(pairs(total))
        assert again.sent == total - answered and server.calls - calls == (total - answered) + expected_failures
        assert table["error"].notna().sum() == expected_failures


def test_within_the_allowance_the_job_asks_every_pair(tmp_path):
    with LLMServer(default=fails_one_in_three) as server:
        method = openai_method(server, "self_rating")
        expected_failures = sum(isinstance(fails_one_in_three(r), Status) for r in asked_prompts(method, 100))
        table = grader(method, str(tmp_path), max_error_rate=0.5).grade(pairs(100))
        assert table["error"].notna().sum() == expected_failures and server.calls == 100 + expected_failures


def test_a_dead_server_stops_a_job_at_its_first_failures(tmp_path):
    """Every prompt fails and max_error_rate is 0 (the default): the first failures end the job, whose
    message says no pair got an answer."""
    with LLMServer(default=lambda prompt: Status(401)) as server:
        method = openai_method(server, "self_rating")
        with pytest.raises(GaveUp) as stop:
            grader(method, str(tmp_path), max_error_rate=0.0).grade(pairs(200))
        assert 1 <= server.calls <= 4 and stop.value.answered == 0  # at most the 4 prompts in flight
        message = str(stop.value.failure(check_method("m", method), "shard-0", 0))
        assert f"it stopped asking, {200 - server.calls} pairs not asked. No pair got an answer from the model: " in (
            message
        )


def test_a_prompt_two_pairs_share_is_asked_once_and_fails_both(tmp_path, caplog):
    """A passage under two ids (MS MARCO has such) puts the same prompt twice in a job: one request, its answer
    both pairs'; a failure of it is two failed pairs, in the job's table and in the early stop's count."""
    texts = ["nectar flows", "nectar flows", "nectar flows", "the moon raises tides", "lava"]
    shared = [Pair("q1", None, f"p{i}", "q1/x", QUESTION, text) for i, text in enumerate(texts)]
    with LLMServer(default=lambda prompt: Status(503) if "nectar" in prompt else "4") as server:
        method = openai_method(server, "self_rating")  # 2 attempts a prompt
        caplog.set_level(logging.INFO)
        with job_progress(tmp_path / "progress.json", "m/s", "prompts") as progress:
            table = grader(method, str(tmp_path), max_error_rate=0.8, progress=progress).grade(shared)
        assert server.calls == 2 + 1 + 1  # the shared prompt twice (it is retried), the others once
        # the progress counts prompts: the shared ones are not "answered by the cache" (a stranger's trial)
        counts = json.loads((tmp_path / "progress.json").read_text())
        assert (counts["cached"], counts["to_grade"], counts["graded"]) == (0, 3, 3)
        assert table["error"].notna().tolist() == [True, True, True, False, False]
        assert "0 of 5 prompts cached; 3 to grade (2 more the same as one of them, answered with it)" in caplog.text
        with pytest.raises(GaveUp) as stop:  # 1 prompt failed, 3 pairs: more than 0.4 × 5
            grader(method, str(tmp_path / "again"), max_error_rate=0.4).grade(shared)
        # one chunk, one distinct failure: every prompt asked, the stop after it counting three failed pairs
        assert len(stop.value.failures) == 3 and (stop.value.unasked, stop.value.answered) == (0, 2)


def asked_prompts(method: dict, n: int) -> list[str]:
    """The prompts the grading job sends for `pairs(n)`: what the server's digest is taken of."""
    from examflow.grading.backends import chat_template
    from examflow.grading.methods import request

    checked = check_method("m", method)
    asked = [request(checked.kind, p) for p in pairs(n)]
    return [chat_template(r.template)[1].format(**r.fields) for r in asked]


def test_a_local_model_s_job_stops_after_the_chunk_that_failed(tmp_path):
    """A model whose digits score NaN fails every pair: the job stops after its first chunk, and the thread
    that prepares the next chunk's prompts ends with it."""
    import torch
    from tiny_models import build_tiny_t5

    model = str(build_tiny_t5(tmp_path / "tiny", seed=3, digit_boost=4.0))
    method = {
        "name": "t5",
        "kind": "self_rating",
        "backend": {"kind": "hf_seq2seq", "model": model, "decoding": "fast"},
    }
    job = grader(method, str(tmp_path / "cache"), flush_every=4, max_error_rate=0.0)
    with torch.no_grad():
        job.backend.model.lm_head.weight[1:] = float("nan")  # row 0 (padding) left: only the digits' scores
    with pytest.raises(GaveUp) as stop:
        job.grade(pairs(20))
    assert job.sent == 4 and len(stop.value.failures) == 4 and stop.value.unasked == 16
    assert all(f.startswith("non-finite: ") for f in stop.value.failures)
    assert not [t for t in threading.enumerate() if t.name.startswith("prepare")]
