"""Ctrl-C in a terminal reaches every job Snakemake runs: a grading job stops with one line in its log,
exit 130, no output written, and the grade cache keeps what was flushed. SIGTERM (a cluster's time limit,
scancel) stops it alike, exit 143."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.workflow


def test_an_interrupted_grading_job_says_so_in_one_line(demo, tmp_path):
    pool, bank = demo / "results/demo/pool", sorted((demo / "results/demo/bank").glob("*.parquet"))
    method = {"name": "cosine", "kind": "self_rating", "backend": {"kind": "embedding"}}
    out = tmp_path / "grades.parquet"
    job = subprocess.Popen(
        [sys.executable, "-m", "examflow", "grade", "--method", json.dumps(method), "--passages",
         str(pool / "passages.parquet"), "--queries", str(pool / "queries.parquet"), "--questions", str(bank[0]),
         "--shard", "shard-0", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)],
        stderr=subprocess.PIPE, text=True,
        # As from a terminal: a shell's background job (as CI runs this) starts with SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert job.stderr is not None
    lines = []
    for line in job.stderr:  # the pairs are made; the model loads next (seconds): interrupt it there
        lines.append(line)
        if " pairs" in line and "shard shard-0" in line:
            job.send_signal(signal.SIGINT)
            break
    rest = job.stderr.read()
    assert job.wait(timeout=60) == 130, "".join(lines) + rest
    assert rest.strip().splitlines()[-1] == "examflow: interrupted (outputs are written only when a step completes)"
    assert "Traceback" not in rest and not out.exists()


SIGNALS = {
    signal.SIGINT: (130, "examflow: interrupted (outputs are written only when a step completes)"),
    signal.SIGTERM: (143, "examflow: stopped by SIGTERM: a cluster's time limit, scancel, or kill (outputs are "
                     "written only when a step completes)"),
}  # fmt: skip


@pytest.mark.parametrize("stop", SIGNALS, ids=lambda s: s.name)
def test_a_signal_while_a_429_asks_to_wait_stops_at_once_and_asks_no_more(tmp_path, stop):
    """A job waiting out a 429's `Retry-After: 100` (a stranger's trial) took the whole 100 s after Ctrl-C,
    then sent its retries: the wait stops, and no request goes after the signal. SIGTERM ended the process at
    once: its progress file said `running` (for ever, read from another host) and its log nothing."""
    import time

    from llm_server import LLMServer, Status
    from test_grading_backends import openai_method
    from test_grading_resume import grade_command, shard_inputs

    from examflow.joblogs import stopped

    shard_inputs(tmp_path)
    with LLMServer() as server:
        server.script("", Status(429, {"Retry-After": "100"}))
        words = grade_command(tmp_path, "unused", tmp_path / "cache", tmp_path / "grades.parquet")
        method = openai_method(server, "self_rating")
        method["backend"] |= {"max_attempts": 3, "concurrency": 4}
        words[words.index("--method") + 1] = json.dumps(method)
        words += ["--progress", str(tmp_path / "progress.json")]
        job = subprocess.Popen(
            words, stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
        )
        assert job.stderr is not None
        waiting = 0
        for line in job.stderr:  # each of the 4 threads told to wait: their requests are all counted
            waiting += "retry 1 in 100.0 s" in line
            if waiting == 4:
                break
        sent, started = server.calls, time.monotonic()
        job.send_signal(stop)
        rest = job.stderr.read()
        code, line = SIGNALS[stop]
        assert job.wait(timeout=60) == code, rest
        assert time.monotonic() - started < 30 and waiting == 4
        assert server.calls == sent == 4  # one request a thread, each told to wait; none after the signal
        assert rest.strip().splitlines()[-1] == line and "Traceback" not in rest
        assert json.loads((tmp_path / "progress.json").read_text())["state"] == "stopped"
        assert stopped(rest.splitlines()) == {130: "the step was interrupted", 143: "the step was stopped by "
                                              "SIGTERM: a cluster's time limit, scancel, or kill"}[code]  # fmt: skip


def test_sigterm_while_requests_wait_for_their_replies_says_stopped_at_once(tmp_path):
    """Requests in flight (a slow server): the job waited for their replies (up to `timeout`) before its
    progress file and its log said it stopped: a cluster kills 30 s after SIGTERM, and both said nothing."""
    import threading
    import time

    from llm_server import LLMServer, Slow
    from test_grading_backends import openai_method
    from test_grading_resume import grade_command, shard_inputs

    shard_inputs(tmp_path)
    with LLMServer() as server:
        server.script("", Slow(40, "4"))
        words = grade_command(tmp_path, "unused", tmp_path / "cache", tmp_path / "grades.parquet")
        method = openai_method(server, "self_rating", timeout=60)  # the default
        method["backend"] |= {"max_attempts": 1, "concurrency": 2}
        words[words.index("--method") + 1] = json.dumps(method)
        progress = tmp_path / "progress.json"
        job = subprocess.Popen([*words, "--progress", str(progress)], stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(job.stderr or []), daemon=True).start()
        try:
            while server.calls < 2:  # both threads wait for a reply
                assert job.poll() is None and time.sleep(0.1) is None, "".join(lines)
            job.send_signal(signal.SIGTERM)
            said = time.monotonic()

            def told() -> bool:  # the progress file is written first, then the line, which the reader reads later
                logged = any(line.startswith("examflow: stopped by SIGTERM") for line in lines)
                return logged and json.loads(progress.read_text())["state"] == "stopped"

            while not told() and time.monotonic() - said < 20:
                time.sleep(0.1)
            assert told() and time.monotonic() - said < 15, "".join(lines)
        finally:
            job.kill()
            job.wait()


def test_a_command_run_in_process_leaves_the_callers_sigterm_handler_as_it_was(tmp_path, monkeypatch):
    """`main` raises SIGTERM as Ctrl-C only while a command runs: a test's process (or a notebook) that
    calls it keeps its own handler after; one that ignores SIGTERM, or calls main from a thread (where no
    handler may be set), runs the command as it is."""
    import threading

    from examflow import commands
    from examflow.cli import main

    during = []
    monkeypatch.setattr(commands, "progress_command", lambda args: during.append(signal.getsignal(signal.SIGTERM)))
    before = signal.getsignal(signal.SIGTERM)
    assert main(["progress", "--results", str(tmp_path)]) == 0
    assert signal.getsignal(signal.SIGTERM) is before and during[-1] not in (before, signal.SIG_IGN, signal.SIG_DFL)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        assert main(["progress", "--results", str(tmp_path)]) == 0 and during[-1] is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(main(["progress", "--results", str(tmp_path)])))
    thread.start()
    thread.join()
    assert codes == [0] and during[-1] is before


def test_a_job_stopped_within_a_chunk_counts_the_replies_it_kept(tmp_path):
    """Five replies came, then two requests waited on a slow server: stopped there, the progress line said
    `answered 0 of 200 prompts`, while the reply cache kept the five and the rerun asked 195 (a stranger's
    Ctrl-C). The replies kept are counted as answered."""
    import threading
    import time

    from llm_server import LLMServer, Slow
    from test_grading_backends import openai_method
    from test_grading_resume import grade_command, shard_inputs

    shard_inputs(tmp_path)
    with LLMServer() as server:
        server.script("", *["4"] * 5, Slow(40, "4"))
        words = grade_command(tmp_path, "unused", tmp_path / "cache", tmp_path / "grades.parquet")
        method = openai_method(server, "self_rating", timeout=60)
        method["backend"] |= {"max_attempts": 1, "concurrency": 2}
        words[words.index("--method") + 1] = json.dumps(method)
        words[words.index("--flush-every") + 1] = "64"  # the default: the first chunk is 64 prompts
        progress = tmp_path / "progress.json"
        job = subprocess.Popen([*words, "--progress", str(progress)], stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(job.stderr or []), daemon=True).start()
        try:
            while server.calls < 7:  # five answered, two waiting for a reply
                assert job.poll() is None and time.sleep(0.1) is None, "".join(lines)
            job.send_signal(signal.SIGTERM)
            said = time.monotonic()
            while json.loads(progress.read_text())["state"] != "stopped" and time.monotonic() - said < 15:
                time.sleep(0.1)
        finally:
            job.kill()
            job.wait()
    counts = json.loads(progress.read_text())
    assert (counts["state"], counts["graded"], counts["to_grade"]) == ("stopped", 5, 200), "".join(lines)
