"""What the input files hold, as one digest for a step's params.

Snakemake reruns a step when an input is newer than its outputs. A file brought back to an older
modification time (`cp -p`, `rsync -a`, `tar x` of an earlier version) is not newer, and the step's
results would stay those of the other content. The digest of what the step reads, as a param, reruns
it whatever the times say; `touch` alone changes no digest and reruns nothing.

Files are hashed again only when their size, times or inode change: the last digests are kept in a
memo file beside Snakemake's own records (a lost or damaged memo costs one hashing, never a wrong
digest). A file changed less than `RACY` before it was hashed is not remembered: a second write in the
same tick of a coarse clock would leave its times as they were (git's "racily clean" entries).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

MEMO = Path(".snakemake") / "examflow-contents.json"  # relative to the workflow's working directory
RACY = 2_000_000_000  # nanoseconds: FAT's clock ticks every 2 s, most others far more often
# Each memo as this process last read or wrote it, with the file's (mtime, size) then: the Snakefile asks
# for a digest once a rule (about 10 times a parse), and the memo is read again only when it changed.
_MEMOS: dict[Path, tuple[tuple[int, int] | None, dict[str, list]]] = {}
_FRESH: dict[tuple, str] = {}  # digests of files changed within RACY, for this process only


def contents_digest(paths: Iterable[str], memo: Path = MEMO) -> str:
    """One digest of the files' contents, in the order given; a path that is not a file (yet) counts by
    its name only: the step's own checks name a missing input."""
    known = _known(memo)
    parts, changed = [], False
    for path in paths:
        key = os.path.abspath(path)
        try:
            stat = os.stat(key)
        except OSError:
            parts.append(f"{path}:absent")
            continue
        # ctime changes with every write and cannot be set back: the times Snakemake compares can
        seen = [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]
        entry = known.get(key)
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] == seen and isinstance(entry[1], str)):
            entry = [seen, _FRESH.get((key, *seen)) or _hash(key)]
            if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) > RACY:
                known[key], changed = entry, True
            else:  # not remembered across runs, but hashed once in this one
                _FRESH[(key, *seen)] = entry[1]
        parts.append(f"{path}:{entry[1]}")
    if changed:
        _write(memo, known)
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def _hash(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, lambda: hashlib.blake2b(digest_size=16)).hexdigest()


def _stamp(memo: Path) -> tuple[int, int] | None:
    try:
        stat = memo.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _known(memo: Path) -> dict[str, list]:
    stamp, cached = _MEMOS.get(memo.absolute(), (None, None))
    if cached is None or stamp != _stamp(memo):
        cached = _read(memo)
        _MEMOS[memo.absolute()] = (_stamp(memo), cached)
    return cached


def _read(memo: Path) -> dict[str, list]:
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):  # none yet, or damaged: every file is hashed again
        return {}
    return known if isinstance(known, dict) else {}


def _write(memo: Path, known: dict[str, list]) -> None:
    """Whole or not at all (jobs that parse the workflow may write it at the same time: each writes a file
    of its own, then renames it), with the user's umask; a folder that cannot be written costs a hashing
    at the next run, nothing else."""
    written = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(json.dumps(known))
        os.replace(written, memo)
        _MEMOS[memo.absolute()] = (_stamp(memo), known)
    except OSError:
        with contextlib.suppress(OSError):
            written.unlink()
