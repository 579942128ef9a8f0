"""The grading progress line from the jobs' progress files, and job logs kept across attempts
(the workflow's side: tests/test_workflow_progress.py)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write

from examflow.errors import INTERRUPTED_LINE, Failure
from examflow.joblogs import KeepEarlierLogs, keep_earlier
from examflow.progress import progress_line, progress_period, read_progress


def job(method_shard: str, started: float, updated: float, cached: int, to_grade: int, graded: int, state: str) -> str:
    return json.dumps(
        {"job": method_shard, "cached": cached, "to_grade": to_grade, "graded": graded, "started": started,
         "updated": updated, "state": state}
    )  # fmt: skip


@pytest.fixture
def results(tmp_path):
    """A run that started at t=1000 with five grading jobs: one done, one running, one that has not
    looked in the cache yet, one not started, and one whose file is an earlier run's (so it has not
    started in this one)."""
    folder = tmp_path / "results"
    progress = folder / "logs/progress"
    write(progress / "run.json", json.dumps({"started": 1000.0, "jobs": ["m/s0", "m/s1", "m/s2", "m/s3", "m/s4"]}))
    write(progress / "m/s0.json", job("m/s0", 1010.0, 1040.0, 50, 300, 300, "done"))
    write(progress / "m/s1.json", job("m/s1", 1020.0, 1055.0, 0, 500, 100, "running"))
    write(progress / "m/s3.json", job("m/s3", 900.0, 950.0, 7, 70, 70, "done"))
    write(progress / "m/s4.json", job("m/s4", 1050.0, 1050.0, 0, None, 0, "running"))  # not counted yet
    write(progress / "other/s9.json", job("other/s9", 1030.0, 1031.0, 0, 9, 9, "done"))  # not this run's
    return folder


def test_the_line_counts_prompts_sent_to_the_model_over_the_run_s_grading_time(results):
    # 300 + 100 of 300 + 500 prompts answered from t=1010 (the first job's start) to t=1060: 8 prompts/s,
    # and the 400 left take 50 s more. The cache's 50 are no graded work.
    assert progress_line(read_progress(results), now=1060.0) == (
        "examflow: answered 400 of 800 prompts, 8.0 prompts/s, ETA 0:00:50 for the prompts counted so far; "
        "grade jobs: 1 starting, 1 running, 1 done, 2 waiting; 50 more prompts answered by the cache"
    )


def test_after_the_run_a_job_left_running_was_stopped_and_time_ends_at_the_last_count(results):
    run = results / "logs/progress/run.json"
    run.write_text(json.dumps({**json.loads(run.read_text()), "ended": 1100.0}))
    # Time ends at the last count written (t=1055): 400 prompts in 45 s; nothing runs, so no ETA.
    assert progress_line(read_progress(results), now=5000.0) == (
        "examflow: answered 400 of 800 prompts, 8.9 prompts/s; "
        "grade jobs: 1 done, 2 stopped, 2 not started; 50 more prompts answered by the cache"
    )


def test_a_killed_job_s_prompts_are_not_in_the_eta(results):
    """A stranger's trial: a grading job killed (`kill -9`) left its prompts in the ETA, which counted down
    work no process was doing."""
    from examflow.progress import _host

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = {"host": _host(), "pid": int(ended.stdout)}  # a process of this host that is gone
    write(results / "logs/progress/m/s0.json", json.dumps(
        {**json.loads(job("m/s0", 1010.0, 1040.0, 50, 300, 200, "running")), **killed}
    ))  # fmt: skip
    line = progress_line(read_progress(results), now=1060.0)
    # 200 + 100 prompts answered in 50 s: 6 prompts/s; the running job has 400 left (67 s), the killed one
    # its 100 (not in the ETA)
    assert line.startswith("examflow: answered 300 of 800 prompts, 6.0 prompts/s, ETA 0:01:07 for the prompts ")
    assert "grade jobs: 1 starting, 1 running, 1 stopped, 2 waiting;" in line


@pytest.mark.parametrize("ended", [False, True])
def test_a_run_the_cache_answers_whole_says_so_not_0_of_0(tmp_path, ended):
    """A cache-only rerun read `answered 0 of 0 prompts, prompts/s not known yet; ...; 3,345 more prompts
    answered by the cache`."""
    progress = tmp_path / "logs/progress"
    write(progress / "run.json", json.dumps({"started": 1000.0, "jobs": ["m/s0", "m/s1"], "ended": ended}))
    write(progress / "m/s0.json", job("m/s0", 1010.0, 1011.0, 2000, 0, 0, "done"))
    write(progress / "m/s1.json", job("m/s1", 1010.0, 1012.0, 1345, 0, 0, "done" if ended else "running"))
    jobs = "2 done" if ended else "1 running, 1 done"
    line = f"examflow: no prompts to ask, the cache answered all 3,345; grade jobs: {jobs}"
    assert progress_line(read_progress(tmp_path), now=1020.0) == line
    write(progress / "m/s1.json", job("m/s1", 1010.0, 1012.0, 1345, None, 0, "running"))  # yet to count
    assert progress_line(read_progress(tmp_path), now=1020.0).startswith(
        "examflow: answered 0 of 0 prompts; grade jobs: 1 done, 1 stopped"
        if ended
        else "examflow: answered 0 of 0 prompts, prompts/s not known yet"
    )


def test_examflow_progress_prints_the_line_and_names_a_folder_without_progress(results, tmp_path):
    def examflow_progress(folder):
        command = [sys.executable, "-m", "examflow", "progress", "--results", str(folder)]
        return subprocess.run(command, capture_output=True, text=True)

    done = examflow_progress(results)
    assert done.returncode == 0 and done.stdout.startswith("examflow: answered 400 of 800 prompts, ")
    assert "examflow: done" not in done.stderr  # a status of a run that is not done (a stranger's trial)
    assert done.stdout.rstrip().endswith(
        "grade jobs: 1 starting, 1 running, 1 done, 2 waiting; 50 more prompts answered by the cache"
    )
    (tmp_path / "nothing").mkdir()
    empty = examflow_progress(tmp_path / "nothing")
    assert empty.returncode == 2 and empty.stdout == ""
    assert empty.stderr == (
        f"examflow: error: {tmp_path / 'nothing'}: no grading progress here (no logs/progress/): "
        "no run has graded into it yet\n"
    )


def test_a_results_folder_that_is_not_there_is_named_as_such(tmp_path, capsys):
    from examflow.cli import main

    assert main(["progress", "--results", str(tmp_path / "typo")]) == 2
    assert (
        capsys.readouterr().err
        == f"examflow: error: {tmp_path / 'typo'}: folder not found (--results: a run's results_dir)\n"
    )


def test_a_run_whose_jobs_have_not_started_says_so(tmp_path):
    write(tmp_path / "logs/progress/run.json", json.dumps({"started": 1000.0, "jobs": ["m/a", "m/b"]}))
    assert progress_line(read_progress(tmp_path), now=1001.0) == "examflow: grading: 2 grade jobs, none started yet"
    # 14 minutes on: where to look (a cluster job larger than any node waited for ever, said as above)
    assert progress_line(read_progress(tmp_path), now=1000.0 + 14 * 60) == (
        "examflow: grading: 2 grade jobs, none started yet in 14 min (on a cluster, `squeue` says why a job "
        "waits: docs/cluster.md, Resources)"
    )


def test_a_run_that_ended_before_its_jobs_started_says_how_it_ended(tmp_path):
    """A run that failed at its pool step read `2 grade jobs, none started yet`, which docs/cluster.md
    explains as jobs in a cluster's queue (a stranger's trial): the results folder's record says how it ended."""
    write(tmp_path / "logs/progress/run.json", json.dumps({"started": 1000.0, "jobs": ["m/a", "m/b"], "ended": 1002.0}))
    write(tmp_path / ".examflow.lock", json.dumps({"pid": 1, "outcome": "failed"}))
    assert progress_line(read_progress(tmp_path), now=5000.0) == (
        "examflow: grading: the run failed before any of its 2 grade jobs started: the run's last lines name the "
        "step that failed and its log"
    )
    write(tmp_path / ".examflow.lock", json.dumps({"pid": 1, "outcome": "running"}))  # no process holds it: killed
    assert progress_line(read_progress(tmp_path), now=5000.0) == (
        "examflow: grading: the run was stopped before any of its 2 grade jobs started"
    )
    (tmp_path / ".examflow.lock").unlink()  # no record (a folder written before outcomes were recorded)
    assert progress_line(read_progress(tmp_path), now=5000.0) == (
        "examflow: grading: the run ended before any of its 2 grade jobs started"
    )
    write(tmp_path / "logs/progress/run.json", json.dumps({"started": 1000.0, "jobs": ["m/a"], "ended": 1002.0}))
    assert progress_line(read_progress(tmp_path), now=5000.0) == (
        "examflow: grading: the run ended before its one grade job started"  # not `any of its 1 grade job`
    )


def test_jobs_that_have_not_counted_their_prompts_yet_are_starting_not_done_with_zero_prompts(tmp_path):
    progress = tmp_path / "logs/progress"
    write(progress / "run.json", json.dumps({"started": 1000.0, "jobs": ["m/a", "m/b", "m/c"]}))
    write(progress / "m/a.json", job("m/a", 1001.0, 1001.0, 0, None, 0, "running"))
    write(progress / "m/b.json", job("m/b", 1002.0, 1002.0, 0, None, 0, "running"))
    assert progress_line(read_progress(tmp_path), now=1003.0) == (
        "examflow: grading: 2 grade jobs starting (reading tables, looking in the cache), 1 waiting"
    )


def test_jobs_that_failed_before_counting_their_prompts_do_not_read_as_zero_of_zero(tmp_path):
    """A model that cannot be loaded fails its job before the cache is read: there is no total yet."""
    from examflow.progress import job_progress

    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with pytest.raises(Failure), job_progress(folder / "logs/progress/m/s0.json", "m/s0") as progress:
        raise Failure("config backend.model: 'model': could not be loaded (header too small)")
    assert progress_line(read_progress(folder), now=progress.counts.updated) == (
        "examflow: answered no prompts (no grade job got as far as counting its prompts); grade jobs: 1 failed"
    )


def test_each_earlier_attempt_s_log_is_kept_in_attempt_order(tmp_path):
    log = tmp_path / "grade" / "it's a shard.log"
    assert keep_earlier(log) is None
    for attempt in ("first", "second", "third"):
        write(log, attempt)
        keep_earlier(log)
    assert not log.exists()
    assert [(tmp_path / "grade" / f"it's a shard.log.{n}").read_text() for n in (1, 2, 3)] == [
        "first",
        "second",
        "third",
    ]


@pytest.mark.parametrize("text", ["0", "-5", "soon", "nan", "inf"])
def test_a_progress_period_that_is_no_number_of_seconds_is_refused_in_one_line(text):
    with pytest.raises(Failure) as error:
        progress_period({"EXAMFLOW_PROGRESS_SECONDS": text})
    assert str(error.value) == f"EXAMFLOW_PROGRESS_SECONDS: expected a number of seconds above 0, found {text!r}"
    from examflow.config import config_sources

    assert config_sources(error.value, ["mine.yaml"], []) == ""  # the run's error names no config file for it
    assert progress_period({}) == 30 and progress_period({"EXAMFLOW_PROGRESS_SECONDS": "2.5"}) == 2.5
    assert progress_period({"EXAMFLOW_PROGRESS_SECONDS": ""}) == 30  # set empty: unset, as a shell user means


def test_a_job_s_logs_move_aside_when_snakemake_announces_the_job_and_only_then(tmp_path):
    logs = {7: [tmp_path / "pool.log", tmp_path / "grade" / "a b.log"], 8: [tmp_path / "missing.log"]}
    for path in logs[7]:
        write(path, f"earlier {path.name}")
    asked, warnings = [], []
    logger = logging.getLogger("test-keep-earlier-logs")
    logger.addFilter(KeepEarlierLogs("job_info", lambda jobid: asked.append(jobid) or logs[jobid], warnings.append))
    logger.warning("Shell command: ...", extra={"event": "shellcmd", "jobid": 7})
    assert asked == [] and all(path.exists() for path in logs[7])
    logger.warning("a job", extra={"event": "job_info", "jobid": 7})
    logger.warning("a job without logs so far", extra={"event": "job_info", "jobid": 8})
    assert asked == [7, 8] and [path.exists() for path in logs[7]] == [False, False]
    assert [Path(f"{path}.1").read_text() for path in logs[7]] == ["earlier pool.log", "earlier a b.log"]
    assert not (tmp_path / "missing.log.1").exists() and warnings == []


def test_a_log_that_cannot_move_aside_is_a_warning_and_the_job_goes_on(tmp_path):
    log = write(tmp_path / ("x" * 250 + ".log"), "earlier")  # NAME.log.1 would be longer than a name may be
    warnings = []
    logger = logging.getLogger("test-keep-earlier-logs-warns")
    logger.addFilter(KeepEarlierLogs("job_info", lambda jobid: [log], warnings.append))
    logger.warning("a job", extra={"event": "job_info", "jobid": 1})
    assert len(warnings) == 1 and warnings[0].startswith(f"examflow: the earlier log {log} could not be kept: ")
    assert log.read_text() == "earlier"


def test_a_progress_file_that_cannot_be_written_never_fails_the_grading(tmp_path, caplog):
    from examflow.progress import job_progress

    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    with caplog.at_level(logging.WARNING), job_progress(blocked / "m" / "s.json", "m/s") as progress:
        progress.planned(cached=0, to_grade=10)
        progress.graded(10)
    assert progress.counts.graded == 10 and progress.counts.state == "done"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith("grading progress is no longer written (the grading goes on)")


def test_pairs_that_got_no_grade_are_counted_apart_from_the_graded_ones(tmp_path):
    from examflow.progress import job_progress

    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with job_progress(folder / "logs/progress/m/s0.json", "m/s0") as progress:
        progress.planned(cached=0, to_grade=60)
        progress.graded(60)
        progress.failures(7)  # 3 HTTP 500, 3 unparsable, 1 timeout, say
    line = progress_line(read_progress(folder), now=progress.counts.updated)
    assert line.startswith("examflow: answered 60 of 60 prompts (100%)")
    assert line.endswith(
        "grade jobs: 1 done; 7 pairs failed (no grade: the grade jobs' logs, and summary.md once the run completes, count them by kind)"
    )


def test_prompts_the_model_gave_no_answer_to_are_not_counted_as_answered(tmp_path, monkeypatch):
    """A server down: every prompt is asked and none answered (a stranger read "answered 3,345 of 3,345")."""
    from examflow import progress as module
    from examflow.progress import job_progress

    monkeypatch.setattr(module, "WRITE_EVERY", 0.0)  # every count written
    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with job_progress(folder / "logs/progress/m/s0.json", "m/s0") as progress:
        progress.planned(cached=0, to_grade=50)
        progress.graded(20, unanswered=20)
        progress.graded(20, replayed=5, unanswered=3)
        line = progress_line(read_progress(folder), now=progress.counts.updated + 1)
    # 35 asked of 45 left to the model (5 came from the reply cache), 23 of them with no answer: the rate is
    # of prompts asked
    assert line.startswith("examflow: answered 12 of 45 prompts and got no answer to 23 (77% asked), ")
    assert " prompts/s asked, ETA " in line


def test_an_answer_cut_off_or_unparsable_is_an_answer_a_transport_failure_is_none():
    from examflow.grading.grades import unanswered

    for error in ("http-500: Internal Server Error", "timeout: no reply in 5 s", "connection: refused", "malformed: x",
                  "too-large: 2 MB", "non-finite: the model scored the digits NaN or infinite"):  # fmt: skip
        assert unanswered(error), error
    for error in (None, "cut-off: the server cut the answer at max_tokens = 4: '2'", "unparsable: not a grade: 'x'"):
        assert not unanswered(error), error


def test_a_job_stopped_by_its_failures_points_to_its_log_not_to_a_summary(tmp_path):
    """max_error_rate exceeded: the job fails, the run stops, and no summary.md is written."""
    from examflow.progress import job_progress

    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with pytest.raises(Failure), job_progress(folder / "logs/progress/m/s0.json", "m/s0") as progress:
        progress.planned(cached=0, to_grade=35)
        progress.graded(35)
        progress.failures(17)
        raise Failure("17 of 35 pairs failed, more than grading.max_error_rate = 0 allows")
    line = progress_line(read_progress(folder), now=progress.counts.updated)
    assert line.endswith("grade jobs: 1 failed; 17 pairs failed (no grade: the grade jobs' logs count them by kind)")
    progress.failures(1)
    line = progress_line(read_progress(folder), now=progress.counts.updated)
    assert line.endswith("grade jobs: 1 failed; 1 pair failed (no grade: the grade jobs' logs count them by kind)")


def test_the_line_counts_in_the_jobs_unit_pairs_for_the_embedding_grader_requests_for_a_mix(tmp_path):
    """An embedding grader is sent pairs, not prompts; a run with both kinds of job says requests."""
    from examflow.progress import job_progress

    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["cosine/s0", "llm/s0"]}))
    with job_progress(folder / "logs/progress/cosine/s0.json", "cosine/s0", "pairs") as progress:
        progress.planned(cached=5, to_grade=40)
        progress.graded(40)
    alone = read_progress(folder)
    alone.waiting = 0  # as if the run had only this job
    assert progress_line(alone, now=progress.counts.updated).startswith("examflow: answered 40 of 40 pairs (100%), ")
    assert progress_line(alone, now=progress.counts.updated).endswith("; 5 more pairs answered by the cache")
    with job_progress(folder / "logs/progress/llm/s0.json", "llm/s0") as progress:
        progress.planned(cached=0, to_grade=30)
        progress.graded(30)
    both = progress_line(read_progress(folder), now=progress.counts.updated)
    assert both.startswith("examflow: answered 70 of 70 requests (100%), ")
    assert both.endswith("; 5 more requests answered by the cache")


def test_a_job_with_a_second_pass_to_count_shows_no_share_until_it_is_counted(tmp_path, monkeypatch):
    """criteria_llm's aggregation prompts (or qa_llm_verify's verifications) are known once the first
    answers are: a share taken before would go backwards, 91 % then 84 % (a stranger's trial)."""
    from examflow import progress as module
    from examflow.progress import job_progress

    monkeypatch.setattr(module, "WRITE_EVERY", 0.0)  # every count written

    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with job_progress(folder / "logs/progress/m/s0.json", "m/s0") as progress:
        progress.planned(cached=0, to_grade=40, more=True)  # the four criteria of ten targets
        progress.graded(40)
        first = progress_line(read_progress(folder), now=progress.counts.updated + 1)
        progress.planned(cached=0, to_grade=10)  # their ten aggregations: the last pass
        progress.graded(4)
        second = progress_line(read_progress(folder), now=progress.counts.updated + 1)
    assert first.startswith("examflow: answered 40 of 40 prompts, ") and "%" not in first
    assert second.startswith("examflow: answered 44 of 50 prompts (88%), ") and "counted so far" not in second


def test_a_failed_run_names_the_failures_its_steps_logged_and_no_earlier_run_s(tmp_path):
    import os

    from examflow.joblogs import failures_logged

    old = write(tmp_path / "logs/pool.log", "examflow: error: runs/a.run:3: an earlier run's failure\n")
    os.utime(old, (900.0, 900.0))
    write(tmp_path / "logs/grade/m/shard-1.log", "INFO starting\nexamflow: error: first\nexamflow: error: m: last\n")
    t = "2026-11-29 07:02:32,896"
    write(tmp_path / "logs/grade/m/shard-2.log", f"{t} INFO examflow: sent 3 prompts\nexamflow: done\n")  # done
    write(tmp_path / "logs/grade/m/shard-3.log", f"{t} INFO examflow.grading.grader: 3 to grade\n")  # killed
    write(tmp_path / "logs/grade/m/shard-4.log", "")  # killed before it wrote a word
    write(tmp_path / "logs/pool/shard-0.log", f"{t} INFO examflow: x\nexamflow: interrupted (outputs are written "
                                              "only when a step completes)\n")  # fmt: skip
    write(tmp_path / "logs/pool/shard-1.log", "/usr/bin/python: No module named examflow\n")  # a broken environment
    # Ctrl-C while the step still imported, before examflow's handler: Python's own traceback (a stranger's trial)
    write(tmp_path / "logs/plan.log", 'Traceback (most recent call last):\n  File "cli.py", line 16, in <module>\n'
                                      "KeyboardInterrupt\n")  # fmt: skip
    write(tmp_path / "logs/nrp.log", "Traceback (most recent call last):\n")  # a bug
    # an error that lists its causes below its first line: the first of them is named (it said `queries:`), and
    # the others by their names (it said `2 of 2` and named q1 alone)
    write(tmp_path / "logs/questions.log", "examflow: error: no questions for 8 of 8 queries:\n  q1: 3 unparsable "
                                           "answers, the last: 'Four.'\n  enwiki:Tea: HTTP 500\n"
                                           + "".join(f"  q{i}: HTTP 500\n" for i in range(3, 9))
                                           + "A rerun asks again.\n")  # fmt: skip
    assert failures_logged(tmp_path / "logs", since=1000.0) == [
        (tmp_path / "logs/grade/m/shard-1.log", "m: last"),
        (tmp_path / "logs/grade/m/shard-3.log", "the step stopped without an error of its own: killed (out of "
                                                "memory, a time limit, a signal)"),
        # sbatch refused the job (a partition misspelt): its log was empty, and said out of memory (a stranger's)
        (tmp_path / "logs/grade/m/shard-4.log", "the step wrote nothing: killed before its first line (a signal, "
                                                "out of memory: Snakemake's output above gives its exit status, 137 "
                                                "for SIGKILL), or it never started (on a cluster: a job the "
                                                "scheduler refused or cancelled; its error is in Snakemake's output "
                                                "above)"),
        (tmp_path / "logs/nrp.log", "the step stopped on an unexpected error, a bug in examflow: its log holds the "
                                    "traceback; please report it"),
        (tmp_path / "logs/plan.log", "the step was interrupted"),
        (tmp_path / "logs/pool/shard-0.log", "the step was interrupted"),
        (tmp_path / "logs/pool/shard-1.log", "the step failed before examflow ran: /usr/bin/python: No module "
                                             "named examflow"),
        (tmp_path / "logs/questions.log", "no questions for 8 of 8 queries: q1: 3 unparsable answers, the last: "
                                          "'Four.'; and enwiki:Tea, q3, q4, q5, q6, ..."),
    ]  # fmt: skip


def test_a_run_stopped_with_no_step_failed_says_so_and_that_a_rerun_goes_on(tmp_path, capsys):
    """SIGTERM to snakemake let its jobs end, then Snakemake's `At least one job did not complete` was the last
    word (a stranger's trial): no step failed, and the run's end says what that means."""
    from examflow.joblogs import name_failures

    write(tmp_path / "logs/grade/m/shard-2.log", "2026-11-29 07:02:32,896 INFO examflow: sent 3\nexamflow: done\n")
    name_failures(tmp_path / "logs", since=1000.0)
    assert capsys.readouterr().err.splitlines() == [
        "examflow: no step of this run failed by its log: the run was stopped (Ctrl-C, SIGTERM to snakemake), or "
        "Snakemake's own error above stopped it (mend that first); what completed is kept, and a rerun goes on from "
        "there"
    ]
    # Ctrl-C in a terminal interrupts the jobs too: their logs say so, and that is no failure (a stranger read
    # `a step failed: the step was interrupted` twice, though nothing had failed)
    for step in ("nrp", "summary"):
        write(tmp_path / f"logs/{step}.log", f"2026-11-29 07:02:32,896 INFO examflow: start\n{INTERRUPTED_LINE}\n")
    name_failures(tmp_path / "logs", since=1000.0)
    assert capsys.readouterr().err.splitlines() == [
        f"examflow: the run was interrupted (Ctrl-C): 2 steps stopped unfinished, with no failure of their "
        f"own "
        f"({tmp_path / 'logs/nrp.log'}, {tmp_path / 'logs/summary.log'}); what completed is kept, and a rerun goes "
        "on from there"
    ]
    write(tmp_path / "logs/grade/m/shard-3.log", "examflow: error: m: three of three failed\n")
    name_failures(tmp_path / "logs", since=1000.0)
    assert capsys.readouterr().err.splitlines() == [
        f"examflow: a step failed: m: three of three failed (its log: {tmp_path / 'logs/grade/m/shard-3.log'})",
        f"examflow: the run was interrupted (Ctrl-C): 2 steps stopped unfinished, with no failure of their "
        f"own "
        f"({tmp_path / 'logs/nrp.log'}, {tmp_path / 'logs/summary.log'}); what completed is kept, and a rerun goes "
        "on from there",
    ]


def test_a_run_that_fails_names_the_warnings_of_the_steps_that_completed_before_its_failures(tmp_path, capsys):
    """The judges' step warned of dropped rows, then the pool failed: the rerun after the mend ran the judges no
    more, and no run's end named their warning (a stranger's trial). The failed step's own warnings are its
    failure's: not named twice."""
    from examflow.joblogs import name_failures

    t = "2026-12-02 10:32:46,100"
    write(tmp_path / "logs/judges.log", f"{t} WARNING examflow.errors: 2 qrels rows dropped\nexamflow: done\n")
    write(tmp_path / "logs/pool.log", f"{t} WARNING examflow: retried\nexamflow: error: runs/a.run:3: bad\n")
    name_failures(tmp_path / "logs", since=1000.0, parsed=["method umb grades 0-3"])
    assert capsys.readouterr().err.splitlines() == [
        "examflow: the configuration warned: method umb grades 0-3",
        f"examflow: a step warned: 2 qrels rows dropped (its log: {tmp_path / 'logs/judges.log'})",
        f"examflow: a step failed: runs/a.run:3: bad (its log: {tmp_path / 'logs/pool.log'})",
    ]


def test_steps_that_completed_only_when_run_again_are_named_once_each_alike_in_one_line(tmp_path, capsys):
    """A preempted cluster's many shards took a line each, and a step retried twice two (a reviewer's reading):
    each step once, by its latest attempt that stopped; attempts that stopped alike share a line."""
    from examflow.joblogs import name_retries

    t, grade = "2026-11-29 07:02:32,896", tmp_path / "logs/grade/m"
    for kept in ("shard-1.log.1", "shard-1.log.2", "shard-2.log.1"):  # killed while grading: no line of an end
        write(grade / kept, f"{t} INFO examflow: sent 3 prompts\n")
    write(grade / "shard-3.log.1", f"{t} INFO examflow: x\nexamflow: done\n")  # completed (a checkpoint's re-run)
    write(tmp_path / "logs/pool.log.1", "examflow: error: runs/a.run:3: bad\n")
    earlier = write(grade / "shard-4.log.1", "examflow: error: an earlier run's\n")
    os.utime(earlier, (900.0, 900.0))
    name_retries(tmp_path / "logs", since=1000.0, most=1)
    assert capsys.readouterr().err.splitlines() == [
        "examflow: 2 steps completed when run again; an earlier attempt stopped: the step stopped without an error "
        f"of its own: killed (out of memory, a time limit, a signal) (their attempts' logs: {grade / 'shard-1.log.2'}, "
        f"{grade / 'shard-2.log.1'})",
        f"examflow: 1 more step completed when run again (their logs are under {tmp_path / 'logs'})",
    ]


@pytest.mark.parametrize(
    ("text", "limit", "clipped"),
    [
        ("abcdefghij", 10, "abcdefghij"),
        ("abcdefghij" * 4, 10, "abcde … [30 characters] … fghij"),
        ("abcdefghij" * 4, 11, "abcde … [30 characters] … fghij"),  # an odd limit keeps one less
        ("abcdefghij" * 4, 0, " … [40 characters] … "),
        ("abcdefghij" * 4, 1, " … [40 characters] … "),  # no end kept: `text[-0:]` would be all of it
        ("abcdefghij" * 2 + "k", 10, "abcdefghij" * 2 + "k"),  # the marker would not shorten it: whole
    ],
)
def test_a_long_line_keeps_its_start_and_its_end(text, limit, clipped):
    from examflow.bounds import clip_middle

    assert clip_middle(text, limit) == clipped


def test_a_run_s_end_names_a_failed_pairs_warning_whole(tmp_path, capsys, caplog):
    """A grading job's failures within the allowance, of every kind that has a hint: its warning ends with the
    `--forcerun` to ask again and what to change, which the run's end cut at 300 characters (then at 1,000: a
    reviewer's failures made 1,108)."""
    import pandas as pd

    from examflow.config import methods
    from examflow.grading.grades import check_failures
    from examflow.joblogs import name_warnings

    method = methods([{"name": "m", "kind": "self_rating", "backend": {"kind": "openai", "model": "m"}}])[0]
    errors = [f"http-500: {'y' * 300}… [99 more characters]", "unparsable: not a grade 0-5: 'maybe'",
              "cut-off: the server cut the answer at max_tokens = 5: '2'", "too-long: no room for the passage",
              "filtered: the server's content filter withheld the answer"]  # fmt: skip
    grades = pd.DataFrame({"error": errors + [None] * 5, "unparsable": [False, True] + [False] * 8})
    out = str(tmp_path / "results" / "grades" / "m" / "shard-07.parquet")
    with caplog.at_level(logging.WARNING, logger="examflow"):
        check_failures(grades, method, "shard-07", 0.5, cache_dir=str(tmp_path / "cache"), out=out)
    (warning,) = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warning) > 1000 and f"(`snakemake --forcerun {out}` asks again those that got no answer)" in warning
    write(tmp_path / "logs/grade/m/shard-07.log", f"2026-12-02 10:00:00,000 WARNING examflow: {warning}\n")
    name_warnings(tmp_path / "logs", since=1000.0)
    assert capsys.readouterr().err.splitlines() == [
        f"examflow: a step warned: {warning} (its log: {tmp_path / 'logs/grade/m/shard-07.log'})"
    ]


def test_a_run_that_completes_names_the_warnings_of_its_steps_and_no_earlier_run_s(tmp_path, capsys):
    """Snakemake shows no log of a job that succeeded: a row dropped under `validation: warn` was said in
    pool.log alone (a stranger's trial)."""
    import logging
    import os

    from examflow.joblogs import ParseWarnings, name_warnings

    t = "2026-11-29 07:02:32,896"
    old = write(tmp_path / "logs/evaluate/m.log", f"{t} WARNING examflow: an earlier run's warning\nexamflow: done\n")
    os.utime(old, (900.0, 900.0))
    write(tmp_path / "logs/pool.log", f"{t} WARNING examflow.errors: 2 run rows of unknown queries dropped (first: "
                                      f"r.run:4: ...)\n{t} INFO examflow: pooled\n{t} WARNING examflow: flagged 1\n"
                                      "examflow: done\n")  # fmt: skip
    write(tmp_path / "logs/summary.log", f"{t} INFO examflow: x WARNING y\n{t} WARNING other.library: not ours\n")
    hint = " (`snakemake --forcerun grade/m/shard-1.parquet` asks again)"  # a warning's end says what to do
    write(tmp_path / "logs/grade/m/shard-1.log", f"{t} WARNING examflow: {'x' * 2400}{hint}\nexamflow: done\n")
    name_warnings(tmp_path / "logs", since=1000.0)
    assert capsys.readouterr().err.splitlines() == [  # grading's shards last: they could fill every line
        "examflow: a step warned: 2 run rows of unknown queries dropped (first: r.run:4: ...) (and 1 more warning; its log: "
        f"{tmp_path / 'logs/pool.log'})",
        f"examflow: a step warned: {'x' * 1000} … [{2400 + len(hint) - 2000} characters] … {'x' * (1000 - len(hint))}{hint} "
        f"(its log: {tmp_path / 'logs/grade/m/shard-1.log'})",
    ]
    name_warnings(tmp_path / "logs", since=1000.0, most=1)
    assert capsys.readouterr().err.splitlines()[1:] == [
        f"examflow: 1 more step warned (their logs are under {tmp_path / 'logs'})"
    ]
    # the configuration's warnings, from the parse, first: ParseWarnings keeps them as the logger gives them
    parsed = ParseWarnings()
    logging.getLogger("examflow.config").addHandler(parsed)
    try:
        logging.getLogger("examflow.config").warning("method %s grades 0-%d", "umb", 3)
        logging.getLogger("examflow.config").info("not a warning")
    finally:
        logging.getLogger("examflow.config").removeHandler(parsed)
    name_warnings(tmp_path / "logs", since=1000.0, parsed=parsed.messages, most=0)
    assert capsys.readouterr().err.splitlines() == [
        "examflow: the configuration warned: method umb grades 0-3",
        f"examflow: 2 more steps warned (their logs are under {tmp_path / 'logs'})",
    ]
    # a step that warned only what the parse did is not named twice, nor a warning the parse gave twice
    write(tmp_path / "logs/evaluate/m.log", f"{t} WARNING examflow: method umb grades 0-3\nexamflow: done\n")
    name_warnings(tmp_path / "logs", since=1000.0, parsed=parsed.messages * 2)
    named = capsys.readouterr().err.splitlines()
    assert named[0] == "examflow: the configuration warned: method umb grades 0-3", named
    assert [line.rsplit("its log: ", 1)[1] for line in named[1:]] == [
        f"{tmp_path / 'logs/pool.log'})",
        f"{tmp_path / 'logs/grade/m/shard-1.log'})",
    ]


def warned_and_done(log: Path, *warnings: str) -> None:
    """A step's log: its warnings (`logger: message`), then the line of a step done."""
    write(log, "".join(f"2026-12-01 07:02:32,896 WARNING {warning}\n" for warning in warnings) + "examflow: done\n")


def named_at_the_end(capsys, logs: Path, **options) -> list[str]:
    """The lines a run that completes ends with, for the step logs under `logs` (all written since its start)."""
    from examflow.joblogs import name_warnings

    name_warnings(logs, since=1000.0, **options)
    return capsys.readouterr().err.splitlines()


def test_steps_that_warn_alike_take_one_line(tmp_path, capsys):
    """Each judge's evaluation saying the same (no label reaches τ 4) took every line, and grading's retries
    were left to `N more steps warned` (a stranger's trial): alike first warnings share one line."""
    alike = "examflow: no judged passage's EXAM-Label reaches 4: STRICT κ is left empty"
    for method in ("a", "b", "c"):
        warned_and_done(tmp_path / f"logs/evaluate/{method}.log", alike)
    retried = "examflow.llm: LLM call failed (http-500: Error code: 500); retry 1 in 0.1 s"
    warned_and_done(tmp_path / "logs/grade/a/shard-1.log", retried, retried)
    logs = tmp_path / "logs"
    assert named_at_the_end(capsys, logs, most=2) == [
        "examflow: 3 steps warned: no judged passage's EXAM-Label reaches 4: STRICT κ is left empty (the headline of their warnings; their "
        f"logs: {logs / 'evaluate/a.log'}, {logs / 'evaluate/b.log'} and 1 more)",
        f"examflow: a step warned: LLM call failed (http-500: Error code: 500); retry 1 in 0.1 s (and 1 more warning; its log: "
        f"{logs / 'grade/a/shard-1.log'})",
    ]
    assert named_at_the_end(capsys, logs, most=1)[1:] == [  # past `most` lines, the steps counted
        f"examflow: 1 more step warned (their logs are under {logs})"
    ]


def test_rows_dropped_are_named_before_a_notice_and_alike_steps_count_their_other_warnings(tmp_path, capsys):
    """A run file's byte-order mark, read first by the pool and the judges, was the one line of their end: the
    pool's passages dropped from the collection and the judges' unranked query went unsaid, the grouped line
    counting no other warning (a stranger's trial). Rows dropped head a step's line; alike steps count the rest."""
    bom = "examflow.io.lines: runs/a.run: starts with a UTF-8 byte-order mark; ignored"
    dropped = "examflow.errors: 1 × pooled passages missing from the collection, dropped (first: c.run:32: ...)"
    warned_and_done(tmp_path / "logs/pool.log", bom, dropped)
    warned_and_done(tmp_path / "logs/judges.log", bom, "examflow.commands: 1 judged query is ranked by no run: q5")
    warned_and_done(tmp_path / "logs/report.log", bom)
    logs = tmp_path / "logs"
    assert named_at_the_end(capsys, logs) == [
        f"examflow: 2 steps warned: {bom.split(': ', 1)[1]} (the headline of their warnings, and 1 more warning; "
        f"their logs: {logs / 'judges.log'}, {logs / 'report.log'})",
        f"examflow: a step warned: {dropped.split(': ', 1)[1]} (and 1 more warning; its log: {logs / 'pool.log'})",
    ]


def test_a_step_that_retried_and_then_counted_its_failed_pairs_is_named_by_the_count(tmp_path, capsys):
    """Within grading.max_error_rate, the run's end showed a retry (the step's first warning), not how many pairs
    failed in the end (a stranger's trial); a step that only retried is still named by its first retry."""
    from examflow.errors import RETRY_AFTER_LINE, RETRY_LINE

    retried = f"examflow.llm: {RETRY_LINE % ('http-500: Error code: 500', 1, 0.5)}"
    capped = f"examflow.llm: {RETRY_AFTER_LINE % (3600, 30)}"  # a 429's wait, cut to max_retry_after
    failed = "examflow.grading.grades: method m, shard shard-1: 1 of 9 pairs failed (1 http-500; e.g. ...)"
    warned_and_done(tmp_path / "logs/grade/m/shard-1.log", capped, retried, failed)
    warned_and_done(tmp_path / "logs/grade/m/shard-2.log", retried)
    # another warning first (the server's other model): the count is still the step's headline (a stranger's trial)
    other = "examflow.llm: asked for model 'm', the server answered 1 of 8 as 'other'"
    seven = "examflow.grading.grades: method m, shard shard-3: 7 of 14 pairs failed (4 malformed, 3 timeout; e.g. ...)"
    warned_and_done(tmp_path / "logs/grade/m/shard-3.log", other, seven)
    logs = tmp_path / "logs/grade/m"
    assert named_at_the_end(capsys, tmp_path / "logs") == [
        "examflow: a step warned: method m, shard shard-1: 1 of 9 pairs failed (1 http-500; e.g. ...) (and 2 "
        f"more warnings; its log: {logs / 'shard-1.log'})",
        f"examflow: a step warned: LLM call failed (http-500: Error code: 500); retry 1 in 0.5 s (its log: "
        f"{logs / 'shard-2.log'})",
        "examflow: a step warned: method m, shard shard-3: 7 of 14 pairs failed (4 malformed, 3 timeout; e.g. ...) "
        f"(and 1 more warning; its log: {logs / 'shard-3.log'})",
    ]


def test_a_job_whose_process_is_gone_reads_stopped_though_its_file_says_running(tmp_path):
    """SIGKILL of a run's whole process group left `examflow progress` saying `2 running` (a stranger's
    trial): a job on this host whose process has ended is stopped; one on another host cannot be told."""
    from examflow.progress import _host

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(ended.stdout)
    folder = tmp_path / "results"
    progress = folder / "logs/progress"
    write(progress / "run.json", json.dumps({"started": 0.0, "jobs": ["m/s0", "m/s1", "m/s2"]}))
    for shard, host, pid in (("s0", _host(), dead), ("s1", "node-7:1", dead), ("s2", _host(), os.getpid())):
        counts = json.loads(job(f"m/{shard}", 10.0, 20.0, 0, 50, 10, "running"))
        write(progress / f"m/{shard}.json", json.dumps(counts | {"host": host, "pid": pid}))
    line = progress_line(read_progress(folder), now=30.0)
    assert line.endswith("grade jobs: 2 running, 1 stopped")
    # a file a later version wrote, with a field this one does not know, is read
    counts = json.loads((progress / "m/s2.json").read_text())
    write(progress / "m/s2.json", json.dumps(counts | {"gpu": "H200"}))
    assert progress_line(read_progress(folder), now=30.0).endswith("grade jobs: 2 running, 1 stopped")


def test_a_job_interrupted_by_ctrl_c_is_stopped_not_failed(tmp_path):
    """The failure lines said `the step was interrupted` while the progress line said `2 failed`."""
    from examflow.progress import job_progress

    folder = tmp_path / "results"
    write(folder / "logs/progress/run.json", json.dumps({"started": 0.0, "jobs": ["m/s0"]}))
    with pytest.raises(KeyboardInterrupt), job_progress(folder / "logs/progress/m/s0.json", "m/s0") as progress:
        progress.planned(cached=0, to_grade=5)
        raise KeyboardInterrupt
    assert progress_line(read_progress(folder), now=progress.counts.updated).endswith("grade jobs: 1 stopped")
