"""Job logs: a rerun keeps every earlier attempt's log beside the new one."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path


def keep_earlier(log: str | Path) -> Path | None:
    """Move an existing `NAME.log` to the first free `NAME.log.N` (N = 1, 2, ...: the order of the
    attempts), so that the job about to write `NAME.log` does not overwrite it; where it went, if
    anywhere."""
    log = Path(log)
    if not log.exists():
        return None
    number = 1
    while Path(f"{log}.{number}").exists():
        number += 1
    kept = Path(f"{log}.{number}")
    os.replace(log, kept)
    return kept


class KeepEarlierLogs(logging.Filter):
    """On Snakemake's logger in its main process: when a record of kind `event` announces a job (by
    its `jobid`), that job's earlier logs move aside. Snakemake announces every job, a retried one
    and one a checkpoint adds included, before it removes the job's logs, locally and on a cluster."""

    def __init__(self, event: str, logs_of: Callable[[int], Iterable[str]], warn: Callable[[str], None]):
        super().__init__()
        self.event, self.logs_of, self.warn = event, logs_of, warn

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "event", None) == self.event:
            jobid: int = record.jobid  # type: ignore[attr-defined]  # an extra field Snakemake's logger adds, like `event`
            for log in self.logs_of(jobid):
                try:
                    keep_earlier(log)
                except OSError as error:  # the job still runs; its log replaces the earlier one
                    self.warn(f"examflow: the earlier log {log} could not be kept: {error}")
        return True  # the record itself is shown as ever
