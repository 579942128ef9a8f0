"""A results folder belongs to one configuration, and to one run of it at a time.

Snakemake locks the working directory and keeps its record of what produced each file there
(`.snakemake/`), not with the results: two runs started in different directories on one
`results_dir` would overwrite each other's job logs and tables, and a run from a second directory
would find the first one's tables up to date ("Nothing to be done") whatever its configuration says.
So `results_dir/.examflow.lock` names the working directory, config files and `--config` settings
of the run that writes the folder:

- when the workflow is parsed, a folder written from another directory, or being written by another
  run, is refused (`check_results`), dry runs included; in its own directory, a changed or another
  config file is Snakemake's to compare (its params triggers rerun what the change touches);
- when a run starts, it holds an exclusive lock on the file for as long as its process lives (the
  system drops it when the process dies, even by SIGKILL) and writes its record (`lock_results`);
- a report is built only from the directory, config files and `--config` settings of the run that
  wrote the folder (`check_report_target`): the report shows what that configuration says;
- the record ends with how the run ended (`record_outcome`: completed or failed; a run killed outright
  leaves `running`, and no process holds the lock), and a report is refused after a run that did not
  complete: its tables would be an earlier run's, shown as this configuration's; and one whose tables are
  not all up to date by Snakemake's own summary (`check_up_to_date`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from examflow.errors import ConfigError, Failure

LOCK = ".examflow.lock"
# The rerun triggers a report's summary may use: those of the run (a report must not find stale what the run
# would not rerun, or nothing could mend it), less the software environment, which a report command does
# not restate (`--sdm conda`, `--conda-prefix`).
REPORT_TRIGGERS = ("mtime", "params", "input", "code")
log = logging.getLogger(__name__)
_held: list = []  # the open lock files of this process: closing one would release its lock


def baselines_folder(cache_dir: str | Path, results_dir: str | Path) -> Path:
    """Where the evaluations of one results folder keep their baselines for bank-edit impact: named by the
    folder's absolute path, readable, and by its digest (a name alone would join `a/b_c` and `a_b/c`, and the
    same relative path in two checkouts that share a cache)."""
    path = os.path.abspath(results_dir)
    readable = re.sub(r"[^A-Za-z0-9_-]", "_", path)[-48:]
    return Path(cache_dir) / "baselines" / f"{readable}-{hashlib.sha256(path.encode()).hexdigest()[:12]}"


def check_results(folder: str | Path) -> None:
    """Refuse a results folder written from another directory, or being written by another run."""
    folder, record = Path(folder), _owner(Path(folder))
    if not _elsewhere(record, {"workdir": os.getcwd()}):
        return
    if _locked(folder / LOCK):
        raise Failure(
            f"{folder}/ is in use by another examflow run (process {record.get('pid', '?')}, started in "
            f"{record.get('workdir', '?')}): wait for it to finish, or give this configuration another results_dir"
        )
    raise Failure(
        f"{folder}/ {_another(record)}: give this configuration its own results_dir, run it from that "
        f"directory, or delete {folder}/"
    )


def warn_if_stopped(folder: str | Path) -> None:
    """Say so where this configuration's last run was stopped before it ended, with no process left: killed
    outright, Snakemake leaves its own lock on the working directory, and the next run stops on Snakemake's
    words alone (`LockException`), which do not say that the run it names is dead. After `check_results`."""
    if last_outcome(folder) == "stopped":
        log.warning(
            "the last run of this configuration (process %s) was stopped before it ended: if Snakemake says the "
            "directory cannot be locked, and no other snakemake runs in %s, `snakemake --unlock` with this run's "
            "options clears its lock; then run again, once the jobs it left running have ended (`pgrep -af "
            "'python -m examflow'` lists them)", _owner(Path(folder)).get("pid", "?"), os.getcwd(),
            extra={"repeat": False},  # of the start alone: a run that ends has had its lock (joblogs.ParseWarnings)
        )  # fmt: skip


def last_outcome(folder: str | Path) -> str | None:
    """How the last run that wrote `folder` ended: `completed`, `failed`, `stopped` (killed: no process holds
    the lock), `running`; None where no run recorded it."""
    folder = Path(folder)
    outcome = _owner(folder).get("outcome")
    return "stopped" if outcome == "running" and not _locked(folder / LOCK) else outcome


def lock_results(
    folder: str | Path, configfiles: list[str], settings: Sequence[str] = (), triggers: Sequence[str] = REPORT_TRIGGERS
) -> None:
    """Hold `folder`'s lock until this process ends and record this configuration in it, and the run's
    rerun triggers (its report's summary uses no others); a folder that became another's since the workflow
    was parsed is refused."""
    check_results(folder)
    Path(folder).mkdir(parents=True, exist_ok=True)
    # by its absolute path: `record_outcome` finds it by that alone, not by another folder of the same name
    handle = open(Path(folder).resolve() / LOCK, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        check_results(folder)  # names the other run, if it started elsewhere
        raise Failure(f"{folder}/ is in use by another examflow run of this configuration") from None
    _held.append(handle)
    record = {"pid": os.getpid(), **identity(configfiles, settings), "rerun_triggers": sorted(triggers)}
    _rewrite(handle, record | {"outcome": "running"})


def record_outcome(folder: str | Path, completed: bool) -> None:
    """How this process's run ended (`onsuccess`, `onerror`), in the record of the folder it holds."""
    for handle in _held:
        if Path(handle.name) == Path(folder).resolve() / LOCK:
            handle.seek(0)
            _rewrite(handle, json.loads(handle.read() or "{}") | {"outcome": "completed" if completed else "failed"})


def _rewrite(handle, record: dict) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(record) + "\n")
    handle.flush()


def _locked(path: Path) -> bool:
    """Whether a live process holds the lock on `path`."""
    try:
        with open(path, encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False  # closing the file drops this probe's lock
    except BlockingIOError:
        return True
    except OSError:
        return False


def identity(configfiles: list[str], settings: Sequence[str] = ()) -> dict:
    """The run's working directory (where its relative paths start, and Snakemake's record lives), its
    config files and its `--config` settings (`KEY=VALUE` as typed, in their order: the last of a key wins)."""
    return {
        "workdir": os.getcwd(),
        "configfiles": [str(Path(f).resolve()) for f in configfiles],
        "config": list(settings),
    }


def _elsewhere(record: dict, mine: dict) -> bool:
    """Whether a folder's record differs from `mine` in any of mine's keys (a folder moved with its
    project, whose recorded directory is gone, is still this one's)."""
    # A record written before settings were recorded says nothing of them: only what it holds is compared.
    keys = [key for key in mine if key in record or key != "config"]
    differs = any(record.get(key) != mine[key] for key in keys)
    return bool(record) and differs and Path(str(record.get("workdir"))).is_dir()


def _another(record: dict) -> str:
    return f"holds the results of a run in {record.get('workdir', '?')} ({_configuration(record)})"


def _configuration(record: dict) -> str:
    settings = record.get("config") or []
    return f"config {', '.join(record.get('configfiles') or ['?'])}" + (
        f", --config {shlex.join(settings)}" * bool(settings)
    )


def _owner(folder: Path) -> dict:
    try:
        return json.loads((folder / LOCK).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


# What Snakemake reads in a rule's file paths: a brace begins or ends a wildcard (in an input function's files
# even where it is doubled, so a lone one breaks too) and `<name>` is a path variable; it has no escape for either.
SNAKEMAKE_PLACEHOLDER = re.compile(r"\{\s*[.\w]+\s*(?:,[^{}]*)?\}|[{}]|<[a-z][a-z0-9_]*>")


def check_snakemake_paths(paths: Iterable[tuple[str, str | Path]]) -> None:
    """Each (configuration key, path) that reaches a rule as a file Snakemake can take as written."""
    for key, path in paths:
        if found := SNAKEMAKE_PLACEHOLDER.search(str(path)):
            what = "a path variable" if found.group().startswith("<") else "a wildcard"
            raise ConfigError(key, f"{path}: Snakemake reads {found.group()} in a file's path as {what}, and has no "
                              "escape for it: rename the file or folder, or link it under another name")  # fmt: skip


def check_report_target(
    report: str,
    results: str | Path,
    configfiles: list[str],
    settings: Sequence[str] = (),
    snakefile: str | None = None,
    after_run: bool = False,
) -> None:
    """Refuse a report inside a results folder that another configuration than the one read wrote, and a
    path that Snakemake's report writer would change (the error gives the command that builds it); and a
    report of a results folder no run wrote, or whose last run did not complete (`_check_completed`), but
    for a report `after_run` (`--report-after-run`: Snakemake builds it once this run completes)."""
    if _expandable(report):
        written_to = _as_snakemake_reads(report)
        where = f", here to {written_to}" if written_to != report else ""
        raise Failure(
            f"--report {report}: Snakemake's report writer expands `$NAME` and a leading `~` in its path{where}; "
            f"give another path: {report_command(_unexpanded(report), configfiles, snakefile, settings)}"
        )
    here, mine = Path(results).resolve(), identity(configfiles, settings)
    for folder in Path(report).resolve().parents:
        written = _owner(folder) if (folder / LOCK).is_file() else {}
        if written and (folder != here or _elsewhere(written, mine)):
            _not_this_one(report, folder, written, mine, snakefile)
        if folder == here:
            break
    # a report elsewhere shows these tables too: only with the configuration that made them
    written = _owner(here)
    if not after_run and _elsewhere(written, mine):
        _not_this_one(report, here, written, mine, snakefile)
    if after_run:
        return
    if not here.is_dir():  # else Snakemake's report writer names the first missing figure, in a traceback
        raise Failure(f"--report {report}: {results}/ does not exist: no run of this configuration has written it; "
                      "run the workflow, then build the report")  # fmt: skip
    _check_completed(Path(results), written, report)  # wherever the report goes: it shows these tables


def _not_this_one(report: str, folder: Path, written: dict, mine: dict, snakefile: str | None) -> None:
    raise Failure(
        f"--report {report}: {folder}/ {_another(written)}, not of this one ({_configuration(mine)} "
        f"in {mine['workdir']}); build it there with that run's config: "
        f"{report_command(report, written.get('configfiles') or [], snakefile, written.get('config') or [])}"
    )


def check_made_with(report: str, provenance: str | Path, digest: str) -> None:
    """Refuse a report of tables that this configuration did not make, by the configuration digest the run's
    summary recorded: `snakemake --touch` after an edit marks every table up to date without making it, and
    no summary of Snakemake's sees it (a stranger's trial). A folder without the record is
    `check_up_to_date`'s to name."""
    try:
        made = json.loads(Path(provenance).read_text(encoding="utf-8"))["config_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if made != digest:
        raise Failure(f"--report {report}: the tables were not made with this configuration ({provenance}: "
                      f"config_sha256 {str(made)[:12]}…, this configuration's {digest[:12]}…), as `snakemake --touch` "
                      "leaves them after an edit: rebuild them (`snakemake --forceall` with this run's options), "
                      "then build the report")  # fmt: skip


def _check_completed(folder: Path, record: dict, report: str) -> None:
    """Refuse a report of a folder whose last run did not complete: Snakemake's report writer takes the tables
    there as they are, an earlier run's beside the failed one's, with no word of it. (A record written before
    outcomes were recorded says nothing, and is taken as it is.)"""
    outcome = record.get("outcome", "completed")
    if outcome == "completed":
        return
    if outcome == "running" and _locked(folder / LOCK):
        raise Failure(f"--report {report}: {folder}/ is being written by a run (process {record.get('pid', '?')}): "
                      "build the report once it completes")  # fmt: skip
    # `onerror` records both a failed step and Ctrl-C (a stranger read "failed" of a run they had interrupted)
    how = "failed or was interrupted" if outcome == "failed" else "was stopped before it ended"
    raise Failure(f"--report {report}: the last run of this configuration {how}, so {folder}/ lacks tables or holds "
                  "an earlier run's: run the workflow to its end, then build the report")  # fmt: skip


def check_up_to_date(
    report: str, folder: str | Path, snakefile: str, configfiles: Sequence[str], settings: Sequence[str] = ()
) -> None:
    """Refuse a report of tables that are not all what this configuration makes now: after a run of one target
    that followed a failed run, a config file edited since the run, an input replaced. Snakemake's own word
    on which files a run would rebuild, and why: its `--summary` of this configuration (the outcome a run
    records cannot say it: a run with nothing to do records nothing)."""
    command = summary_command(snakefile, configfiles, settings, _report_triggers(_owner(Path(folder))))
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        said = (done.stderr.strip().splitlines() or ["no word"])[-1]
        raise Failure(f"--report {report}: Snakemake could not say whether the tables are up to date ({said})")
    files = _summary_rows(done.stdout, report)
    pending = [row for row in files if row[-1] == "update pending"]
    # the causes first; "ok" is Snakemake's word for a file whose step reruns for another's sake (an input
    # rebuilt, a sibling output missing)
    stale = [f"{row[0]} ({row[-2]})" for row in pending if row[-2] != "ok"]
    stale += [f"{row[0]} (its step reruns)" for row in pending if row[-2] == "ok"]
    if stale:
        shown = ", ".join(stale[:3]) + (", …" if len(stale) > 3 else "")
        raise Failure(f"--report {report}: {len(stale)} of the {len(files)} files this configuration makes are not "
                      f"up to date: {shown}; run the workflow, then build the report")  # fmt: skip


def _report_triggers(record: dict) -> list[str]:
    return [trigger for trigger in REPORT_TRIGGERS if trigger in record.get("rerun_triggers", REPORT_TRIGGERS)]


def summary_command(
    snakefile: str, configfiles: Sequence[str], settings: Sequence[str], triggers: Sequence[str]
) -> list[str]:
    """The `snakemake --summary` command of the configuration these words give, with these rerun triggers."""
    words = [sys.executable, "-m", "snakemake", "--summary", "--cores", "1", "--snakefile", snakefile]
    words += ["--rerun-triggers", *triggers]
    return (
        words + (["--configfile", *configfiles] if configfiles else []) + (["--config", *settings] if settings else [])
    )


def _summary_rows(text: str, report: str) -> list[list[str]]:
    """The file rows of Snakemake's `--summary` table, each ending in its status and its plan; a table of
    another form is refused (read wrongly, a stale table would pass)."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("output_file\t")), None)
    rows = [line.split("\t") for line in lines[header + 1 :]] if header is not None else []
    if (
        header is None
        or lines[header].split("\t")[-2:] != ["status", "plan"]
        or any(len(row) < 6 or row[-1] not in ("update pending", "no update") for row in rows)
    ):
        from importlib.metadata import version

        raise Failure(f"--report {report}: Snakemake {version('snakemake')}'s summary of the tables is not in the form "
                      "examflow reads (output_file … status, plan)")  # fmt: skip
    return rows


def report_command(report: str, configfiles, snakefile: str | None = None, settings: Sequence[str] = ()) -> str:
    """The complete command that builds a report of a run made with these config files (named relative
    to the working directory where they lie below it) and `--config` settings, and with `snakefile` where
    the run named one that snakemake would not find by itself. A run's report that Snakemake would write
    elsewhere (its results folder's path holds a `$NAME`) is written here, then moved into that folder, the
    run's own: the shell expands nothing quoted. (A path of `~` is no results folder: the config check
    refuses one; and `--report` to another configuration's folder goes through `check_report_target`.)"""
    moved = _expandable(report) and not report.startswith("~")
    # Written here under a name of its own: a report.html of the user's stays, two runs' reports stay two.
    here = f"report-{hashlib.sha256(report.encode()).hexdigest()[:8]}.html" if moved else _unexpanded(report)
    words = ["snakemake", "--report", here] + (["--snakefile", snakefile] if snakefile else [])
    files = [_relative(file) for file in map(str, configfiles)]
    # One --configfile with every file: Snakemake keeps only the last of repeated --configfile options.
    command = shlex.join(
        words + (["--configfile", *files] if files else []) + (["--config", *settings] if settings else [])
    )
    return command + (" && " + shlex.join(["mv", "--", here, report]) if moved else "")


def named_config_files(configfiles: Sequence[str], default: str) -> list[str]:
    """The config files as a command names them: relative where they lie below the working directory, and
    none where they are only the one the workflow reads by itself (naming it or not, relative or absolute,
    makes the same command, and the same summary)."""
    if [Path(file).resolve() for file in configfiles] == [Path(default).resolve()]:
        return []
    return [_relative(str(file)) for file in configfiles]


def _relative(file: str) -> str:
    """A config file named relative to the working directory where it lies below it; `./` before a name
    that starts with `-`, which a command line would read as an option."""
    relative = os.path.relpath(file)
    if relative.startswith(".."):
        return file
    return f"./{relative}" if relative.startswith("-") else relative


def _as_snakemake_reads(report: str) -> str:
    """The path Snakemake's report writer takes `report` for: it expands `~` and `$NAME`, quoted or not."""
    return os.path.expandvars(os.path.expanduser(report))


def _expandable(path: str) -> bool:
    """Whether Snakemake's report writer may read `path` as another: it holds a `$NAME` or `${NAME}` (expanded
    wherever the variable is set, now or when the command is run) or begins with `~`."""
    return path.startswith("~") or re.search(r"\$(\w|\{)", path) is not None


def _unexpanded(report: str) -> str:
    """`report`, or where Snakemake may read it as another path, a file name in the working directory."""
    if not _expandable(report):
        return report
    return Path(report).name.replace("$", "_").replace("~", "_") or "report.html"


def report_target(argv: list[str]) -> str | None:
    """The report file a `snakemake --report [FILE]` command line asks for; None for any other command."""
    for index, word in enumerate(argv):
        if word.startswith("--report="):
            return word.split("=", 1)[1]
        if word == "--report":
            following = argv[index + 1] if index + 1 < len(argv) else ""
            return following if following and not following.startswith("-") else "report.html"
    return None
