"""A results folder belongs to one run at a time, and to one configuration.

Snakemake locks the working directory, not the results: two runs started in different
directories on one `results_dir` would overwrite each other's job logs and tables. The
first run to start holds an exclusive lock on `results_dir/.examflow.lock` for as long as
its process lives (the system drops it when the process dies, even by SIGKILL); a second
is refused with the first one's process id and directory. The file stays after the run
and names the configuration that wrote the folder, so that a report of that folder is
never built from another collection's configuration.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
from pathlib import Path

from examflow.errors import Failure

LOCK = ".examflow.lock"
_held: list = []  # the open lock files of this process: closing one would release its lock


def lock_results(folder: str | Path, configfiles: list[str]) -> None:
    """Hold `folder`'s lock until this process ends, or fail naming the run that holds it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / LOCK, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _owner(folder)
        handle.close()
        raise Failure(
            f"{folder}/ is in use by another examflow run (process {holder.get('pid', '?')}, started in "
            f"{holder.get('workdir', '?')}): wait for it to finish, or give this configuration another results_dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    record = {"pid": os.getpid(), "workdir": os.getcwd(), "configfiles": [str(Path(f).resolve()) for f in configfiles]}
    handle.write(json.dumps(record) + "\n")
    handle.flush()
    _held.append(handle)


def _owner(folder: Path) -> dict:
    try:
        return json.loads((folder / LOCK).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}


def check_report_target(report: str, results: str | Path, configfiles: list[str]) -> None:
    """Refuse to write a report into the results folder of another configuration than the one read."""
    here = Path(results).resolve()
    for folder in Path(report).resolve().parents:
        if (folder / LOCK).is_file() and folder != here:
            wrote = _owner(folder).get("configfiles") or ["?"]
            read = ", ".join(configfiles)
            raise Failure(
                f"--report {report}: {folder}/ holds the results of another configuration ({', '.join(wrote)}) "
                f"than the one read ({read}, whose results are in {here}/); add the --configfile of that run: "
                f"{report_command(report, wrote)}"
            )
        if folder == here:
            return


def report_command(report: str, configfiles) -> str:
    """The complete command that builds a report of a run made with these config files (named relative
    to the working directory where they lie below it)."""
    words = ["snakemake", "--report", report]
    for file in map(str, configfiles):
        relative = os.path.relpath(file)
        words += ["--configfile", file if relative.startswith("..") else relative]
    return shlex.join(words)


def report_target(argv: list[str]) -> str | None:
    """The report file a `snakemake --report [FILE]` command line asks for; None for any other command."""
    for index, word in enumerate(argv):
        if word.startswith("--report="):
            return word.split("=", 1)[1]
        if word == "--report":
            following = argv[index + 1] if index + 1 < len(argv) else ""
            return following if following and not following.startswith("-") else "report.html"
    return None
