"""Every value that reaches a rule's shell line is quoted by Snakemake: `{x:q}`. Option strings are
lists of words (`cli_options`), which `:q` quotes word by word; nothing reaches the shell pre-quoted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from examflow.errors import Failure
from examflow.results import check_report_target, identity, report_command

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
    assert report_command(report, ["c $HOME.yaml"]) == "snakemake --report report.html --configfile 'c $HOME.yaml'"
    # `./` kept before a config file whose name starts with `-` (the command printed failed as pasted)
    assert report_command("r.html", ["./-c.yaml"]) == "snakemake --report r.html --configfile ./-c.yaml"
    with pytest.raises(
        Failure, match=r"expands `\$NAME` .* in its path, here to .*/res /elsewhere/report.html; .*: snakemake "
    ):
        check_report_target(report, tmp_path, ["c.yaml"])
    assert report_command("~/exam/report.html", []) == "snakemake --report report.html"  # `~`, expanded too
    kept = str(tmp_path / "res $ 5 $(x)" / "report.html")  # nothing to expand: the path as it is
    assert report_command(kept, []) == f"snakemake --report '{kept}'"
    # A variable not set now may be when the command is run: such a path is never printed nor taken either.
    unset = str(tmp_path / "res $UNSET_HERE" / "report.html")
    assert report_command(unset, []) == "snakemake --report report.html"
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
    with pytest.raises(Failure, match=r"^--report a/r.html: the last run of this configuration failed, so "):
        check_report_target("a/r.html", "a", ["my.yaml"])
    record_outcome("a", completed=True)
    check_report_target("a/r.html", "a", ["my.yaml"])
    assert json.loads((tmp_path / "a" / LOCK).read_text())["outcome"] == "completed"
    killed = tmp_path / "b"
    killed.mkdir()
    (killed / LOCK).write_text(json.dumps({"pid": 1, **identity(["my.yaml"]), "outcome": "running"}))
    with pytest.raises(Failure, match=r"the last run of this configuration was stopped before it ended, so b/ holds"):
        check_report_target("b/r.html", "b", ["my.yaml"])
    with pytest.raises(Failure, match=r"^--report r.html: c/ does not exist: no run of this configuration has "):
        check_report_target("r.html", "c", ["my.yaml"])
