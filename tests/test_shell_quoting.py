"""Every value that reaches a rule's shell line is quoted by Snakemake: `{x:q}`. Option strings are
lists of words (`cli_options`), which `:q` quotes word by word; nothing reaches the shell pre-quoted."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from examflow.errors import Failure
from examflow.results import check_report_target, check_up_to_date, identity, report_command

ROOT = Path(__file__).resolve().parents[1]
RULE = re.compile(r"^\s*(?:rule|checkpoint) (\w+):\n(.*?)(?=^\s*(?:rule|checkpoint) \w+:|\Z)", re.M | re.S)


def placeholders(body: str) -> list[str]:
    shell = body[body.index("shell:") :] if "shell:" in body else ""
    return re.findall(r"\{([^{}]+)\}", shell)


def test_every_shell_placeholder_is_quoted():
    checked = 0
    for path in sorted((ROOT / "workflow/rules").glob("*.smk")):
        for rule, body in RULE.findall(path.read_text(encoding="utf-8")):
            for name in placeholders(body):
                assert name.endswith(":q"), f"{path.name}: rule {rule}: {{{name}}} reaches the shell unquoted"
                checked += name.startswith("params.")
    assert checked >= 15  # the rules' option words among them, each quoted by :q


def test_a_report_path_that_snakemake_would_expand_is_never_printed_nor_taken(monkeypatch, tmp_path):
    """Snakemake's report writer expands `$NAME` in its path, quoted or not: the command a run printed for
    results in `res $HOME/x` wrote to `res /root/x` and failed with a traceback."""
    monkeypatch.setenv("HOME", "/elsewhere")
    monkeypatch.delenv("UNSET_HERE", raising=False)
    report = str(tmp_path / "res $HOME" / "report.html")
    # written here, then moved into the results folder (the command printed left it here: a stranger's trial)
    # under a name of its own: a stranger's report.html here was moved away (and two runs' reports are two)
    here = f"report-{hashlib.sha256(report.encode()).hexdigest()[:8]}.html"
    assert report_command(report, ["c $HOME.yaml"]) == (
        f"snakemake --report {here} --configfile 'c $HOME.yaml' && mv -- {here} '{report}'"
    )
    # `./` kept before a config file whose name starts with `-` (the command printed failed as pasted)
    assert report_command("r.html", ["./-c.yaml"]) == "snakemake --report r.html --configfile ./-c.yaml"
    with pytest.raises(
        Failure,
        match=r"expands `\$NAME` .* in its path, here to .*/res /elsewhere/report.html; give another path: "
        r"snakemake --report report.html --configfile c.yaml$",  # not moved past the check of whose folder it is
    ):
        check_report_target(report, tmp_path, ["c.yaml"])
    assert report_command("~/exam/report.html", []) == "snakemake --report report.html"  # `~`, expanded too
    kept = str(tmp_path / "res $ 5 $(x)" / "report.html")  # nothing to expand: the path as it is
    assert report_command(kept, []) == f"snakemake --report '{kept}'"
    # A variable not set now may be when the command is run: such a path is never printed nor taken either.
    unset = str(tmp_path / "res $UNSET_HERE" / "report.html")
    assert re.fullmatch(rf"snakemake --report (report-[0-9a-f]{{8}}\.html) && mv -- \1 '{re.escape(unset)}'",
                        report_command(unset, []))  # fmt: skip
    with pytest.raises(Failure, match=r"expands `\$NAME` and a leading `~` in its path; give another path"):
        check_report_target(unset, tmp_path, [])


def test_a_report_takes_the_settings_of_the_run_in_their_order_and_a_record_of_before_has_none(monkeypatch, tmp_path):
    """`--config` settings apply in order, the last of a key winning: the command given back keeps them so.
    A results folder recorded before settings were (no `config` key) says nothing of them."""
    import json

    from examflow.results import LOCK, lock_results, record_outcome

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text("results_dir: elsewhere\n")
    settings = ["results_dir=b", "results_dir=a"]  # Snakemake writes to a/
    lock_results("a", ["my.yaml"], settings)
    record_outcome("a", completed=True)
    check_report_target("a/report.html", "a", ["my.yaml"], settings)  # the run's own: taken
    with pytest.raises(Failure) as refused:
        check_report_target("a/report.html", "elsewhere", ["my.yaml"])
    assert str(refused.value).endswith(
        "with that run's config: snakemake --report a/report.html --configfile my.yaml --config results_dir=b results_dir=a"
    )
    old = tmp_path / "old"
    old.mkdir()
    (old / LOCK).write_text(
        json.dumps({"pid": 1, "workdir": str(tmp_path), "configfiles": [str(tmp_path / "my.yaml")]})
    )
    check_report_target("old/report.html", "old", ["my.yaml"], ["results_dir=old"])


def test_no_report_of_a_run_that_is_running_failed_or_was_killed(monkeypatch, tmp_path):
    """Snakemake's report writer takes the tables as they are: after a failed run, an earlier run's beside
    its own, with no word of it (a stranger's trial). A run killed outright never records how it ended."""
    import json

    from examflow.results import LOCK, lock_results, record_outcome

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text("results_dir: a\n")
    lock_results("a", ["my.yaml"])
    with pytest.raises(Failure, match=r"^--report report.html: a/ is being written by a run \(process "):
        check_report_target("report.html", "a", ["my.yaml"])  # outside the folder too: it shows its tables
    record_outcome("a", completed=False)
    with pytest.raises(
        Failure, match=r"^--report a/r.html: the last run of this configuration failed or was interrupted, so "
    ):
        check_report_target("a/r.html", "a", ["my.yaml"])
    record_outcome("a", completed=True)
    check_report_target("a/r.html", "a", ["my.yaml"])
    assert json.loads((tmp_path / "a" / LOCK).read_text())["outcome"] == "completed"
    killed = tmp_path / "b"
    killed.mkdir()
    (killed / LOCK).write_text(json.dumps({"pid": 1, **identity(["my.yaml"]), "outcome": "running"}))
    with pytest.raises(
        Failure, match=r"the last run of this configuration was stopped before it ended, so b/ lacks tables or holds"
    ):
        check_report_target("b/r.html", "b", ["my.yaml"])
    with pytest.raises(Failure, match=r"^--report r.html: c/ does not exist: no run of this configuration has "):
        check_report_target("r.html", "c", ["my.yaml"])


def test_a_run_after_one_killed_outright_says_how_to_clear_snakemake_s_lock(monkeypatch, tmp_path, caplog):
    """Killed outright, Snakemake leaves its lock on the working directory, and the next run stopped on a
    `LockException` that did not say the run it named was dead (a stranger's trial)."""
    import json
    import logging

    from examflow.joblogs import ParseWarnings
    from examflow.results import LOCK, lock_results, record_outcome, warn_if_stopped

    monkeypatch.chdir(tmp_path)
    killed = tmp_path / "b"
    killed.mkdir()
    (killed / LOCK).write_text(json.dumps({"pid": 4242, **identity(["my.yaml"]), "outcome": "running"}))
    kept = ParseWarnings()
    logging.getLogger("examflow").addHandler(kept)
    try:
        with caplog.at_level(logging.WARNING, logger="examflow.results"):
            warn_if_stopped("b")
    finally:
        logging.getLogger("examflow").removeHandler(kept)
    assert caplog.messages == [
        "the last run of this configuration (process 4242) was stopped before it ended: if Snakemake says the "
        f"directory cannot be locked, and no other snakemake runs in {tmp_path}, `snakemake --unlock` with this "
        "run's options clears its lock; then run again, once the jobs it left running have ended (`pgrep -af "
        "'python -m examflow'` lists them)"
    ]
    assert kept.messages == []  # not named again as a run ends: that run had its lock
    caplog.clear()
    lock_results("a", ["my.yaml"])  # running, and alive: nothing to say; nor once it ended
    warn_if_stopped("a")
    record_outcome("a", completed=False)
    warn_if_stopped("a")
    warn_if_stopped("nowhere")
    assert caplog.messages == []


TWO_STEPS = """
rule all:
    input: "out/b.txt"
rule a:
    input: "in.txt"
    output: "out/a.txt"
    params: n=config["n"]
    shell: "cp {input} {output}"
rule b:
    input: "out/a.txt"
    output: "out/b.txt"
    shell: "cp {input} {output}"
"""


def test_no_report_of_tables_snakemake_would_rebuild(monkeypatch, tmp_path):
    """A run of one target after a failed run, or a config edited since the run, leaves tables that are not
    this configuration's, in a folder whose last run completed: Snakemake's own summary says which (a
    stranger's trial: the report showed them with no word). It asks with the run's rerun triggers, no others:
    a report must not find stale what a run would not rebuild, or nothing could mend it."""
    import json
    import subprocess
    import sys

    from examflow.results import LOCK

    monkeypatch.chdir(tmp_path)
    Path("Snakefile").write_text(TWO_STEPS)
    Path("in.txt").write_text("x\n")
    Path("c.yaml").write_text("n: 1\n")
    subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "c.yaml"], check=True)
    check_up_to_date("r.html", "out", "Snakefile", ["c.yaml"])
    Path("c.yaml").write_text("n: 2\n")
    with pytest.raises(Failure) as refused:
        check_up_to_date("r.html", "out", "Snakefile", ["c.yaml"])
    assert str(refused.value) == (
        "--report r.html: 2 of the 2 files this configuration makes are not up to date: out/a.txt (params "
        "changed), out/b.txt (its step reruns); run the workflow, then build the report"
    )
    Path("c.yaml").write_text("n: 1\n")
    Path("out/b.txt").unlink()
    with pytest.raises(Failure, match=r": 1 of the 2 files .* up to date: out/b.txt \(missing\); run the workflow"):
        check_up_to_date("r.html", "out", "Snakefile", ["c.yaml"])
    subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "c.yaml"], check=True)
    # a step's code changed: stale by Snakemake's default triggers, not for a run made without `code`
    Path("Snakefile").write_text(TWO_STEPS.replace('"cp {input} {output}"', '"cat {input} > {output}"', 1))
    with pytest.raises(Failure, match=r"up to date: out/a.txt \(rule implementation changed\), out/b.txt"):
        check_up_to_date("r.html", "out", "Snakefile", ["c.yaml"])
    (tmp_path / "out" / LOCK).write_text(json.dumps({"rerun_triggers": ["input", "mtime", "params"]}))
    check_up_to_date("r.html", "out", "Snakefile", ["c.yaml"])
    with pytest.raises(
        Failure, match=r"^--report r.html: Snakemake could not say whether the tables are up to date \("
    ):
        check_up_to_date("r.html", "out", "Snakefile", ["gone.yaml"])


def test_no_report_of_tables_another_configuration_made_wherever_it_goes(monkeypatch, tmp_path):
    """`snakemake --touch` after an edit marks every table up to date without making it: the digest the run's
    summary recorded tells (a stranger's trial). And a report outside the results folder, of its tables, with
    another configuration was refused only as not up to date, which a run would not mend."""
    import json

    from examflow.results import LOCK, check_made_with

    monkeypatch.chdir(tmp_path)
    provenance = tmp_path / "provenance.json"
    provenance.write_text(json.dumps({"config_sha256": "e15f557028991ec5" + "0" * 48}))
    check_made_with("r.html", provenance, "e15f557028991ec5" + "0" * 48)
    with pytest.raises(Failure) as refused:
        check_made_with("r.html", provenance, "d17e0a32" + "1" * 56)
    assert str(refused.value) == (
        f"--report r.html: the tables were not made with this configuration ({provenance}: config_sha256 "
        "e15f55702899…, this configuration's d17e0a321111…), as `snakemake --touch` leaves them after an edit: "
        "rebuild them (`snakemake --forceall` with this run's options), then build the report"
    )
    check_made_with("r.html", tmp_path / "none.json", "d17e")  # no record: the summary names the file missing
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / LOCK).write_text(json.dumps({"pid": 1, **identity(["my.yaml"]), "outcome": "completed"}))
    check_report_target(str(tmp_path / "r.html"), "a", ["my.yaml"])
    for configfiles, settings in ((["my.yaml", "my.yaml"], []), (["copy.yaml"], []), (["my.yaml"], ["results_dir=a"])):
        with pytest.raises(Failure, match=r"^--report /\S+/r.html: \S+/a/ holds the results of a run in .*; build it "
                                          r"there with that run's config: snakemake --report /\S+/r.html --configfile my.yaml$"):  # fmt: skip
            check_report_target(str(tmp_path / "r.html"), "a", configfiles, settings)
    check_report_target(str(tmp_path / "r.html"), "a", ["copy.yaml"], after_run=True)  # a run first: it rewrites


def test_a_summary_in_a_form_not_read_refuses_the_report():
    """Read wrongly, Snakemake's summary would let every stale table through: another form is refused."""
    from examflow.results import _summary_rows

    header = "output_file\tdate\trule\tlog-file(s)\tstatus\tplan"
    assert _summary_rows(f"Building DAG of jobs...\n{header}\nout/a.txt\t-\ta\t-\tmissing\tupdate pending\n", "r") == [
        ["out/a.txt", "-", "a", "-", "missing", "update pending"]
    ]
    for text in (
        "",
        header.replace("plan", "todo"),
        f"{header}\nout/a.txt\t-\ta\t-\tok\tpending\n",
        f"{header}\nout/a.txt\n",
    ):
        with pytest.raises(Failure, match=r"^--report r: Snakemake \S+'s summary of the tables is not in the form "):
            _summary_rows(text, "r")


def test_a_path_the_slurm_submission_would_mangle_is_refused_on_slurm_alone():
    """The slurm executor hands each job's command line to sbatch inside double quotes: a results_dir with `$HOME`
    became another path, one with `'` and `"` a job script no shell reads, and each job failed as though it had
    never started, three times with retries (a stranger's trial). A lone `"`, a lone `'` and a backslash arrive
    as written (tried on the test cluster), and a local run quotes every path: they are taken."""
    from examflow.errors import RunSetting
    from examflow.scheduling import check_submitted_paths, submitted_paths

    config = {"results_dir": "results/run $HOME", "cache_dir": "cache", "inputs": {"queries": 'q "1".tsv',
              "runs": ["runs/*.run"], "bank": "b`x`.jsonl"}, "questions": {"generate": False},
              "judges": {"leaderboards": {}}, "nrp": None}  # fmt: skip
    paths = submitted_paths(config, ["runs/a\\b.run", "runs/bob's \"x\".run"], ["my config.yaml"], ["k=$5"],
                            {"the working folder": "/home/o'neil"})  # fmt: skip
    assert paths == [("results_dir", "results/run $HOME"), ("cache_dir", "cache"), ("inputs.queries", 'q "1".tsv'),
                     ("inputs.bank", "b`x`.jsonl"), ("inputs.runs", "runs/a\\b.run"),
                     ("inputs.runs", "runs/bob's \"x\".run"), ("--configfile", "my config.yaml"), ("--config", "k=$5"),
                     ("the working folder", "/home/o'neil")]  # fmt: skip
    check_submitted_paths("local", paths)  # quoted by examflow wherever it reaches a shell
    found = {}
    for key, path in paths:
        try:
            check_submitted_paths("slurm", [(key, path)])
        except RunSetting as error:
            found[key, path] = str(error)
    assert sorted(found) == [("--config", "k=$5"), ("inputs.bank", "b`x`.jsonl"),
                             ("inputs.runs", "runs/bob's \"x\".run"), ("results_dir", "results/run $HOME")]  # fmt: skip
    reason = ("cannot reach a SLURM job (the slurm executor hands each job's command line to sbatch inside double "
              "quotes, where $ and ` expand, and writes a path of both quotes there in a way no shell reads): rename "
              "it (spaces, backslashes and one kind of quote are fine), or run without the cluster")  # fmt: skip
    assert found["results_dir", "results/run $HOME"] == f"results_dir 'results/run $HOME': a path with $ {reason}"
    assert found["--config", "k=$5"] == f"--config 'k=$5': a setting with $ {reason}"
    assert found["inputs.runs", 'runs/bob\'s "x".run'].startswith("""inputs.runs 'runs/bob\\'s "x".run': a path with \
both ' and " cannot""")
