"""`examflow.contents`: the digest of a step's input files, which reruns the step where Snakemake's
comparison of modification times cannot see an edit."""

from __future__ import annotations

import hashlib
import os

from conftest import write

from examflow.contents import contents_digest


def by_hand(*named: tuple[str, bytes]) -> str:
    """The digest as documented: each file's blake2b-128, in order, beside its path."""
    parts = [f"{path}:{hashlib.blake2b(data, digest_size=16).hexdigest()}" for path, data in named]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def test_an_edit_with_the_old_modification_time_changes_the_digest_and_touch_does_not(tmp_path):
    memo = tmp_path / ".snakemake/memo.json"
    run, qrels = write(tmp_path / "a.run", "q1 Q0 d1 1 2.0 a\n"), write(tmp_path / "q.qrels", "q1 0 d1 1\n")
    paths = [str(run), str(qrels)]
    first = contents_digest(paths, memo)
    assert first == by_hand((str(run), run.read_bytes()), (str(qrels), qrels.read_bytes()))
    assert memo.is_file()

    os.utime(run)  # touch: newer, the same content
    assert contents_digest(paths, memo) == first

    times = os.stat(run)
    write(run, "q1 Q0 d2 1 2.0 a\n")  # the same size, then its old times back, as `cp -p` leaves them
    os.utime(run, ns=(times.st_atime_ns, times.st_mtime_ns))
    edited = contents_digest(paths, memo)
    assert edited != first and edited == by_hand((str(run), run.read_bytes()), (str(qrels), qrels.read_bytes()))
    assert contents_digest(paths[::-1], memo) != edited  # the order given is part of it


def test_a_missing_file_counts_by_name_and_a_damaged_or_unwritable_memo_costs_nothing_but_time(tmp_path):
    memo = tmp_path / "memo.json"
    present = write(tmp_path / "queries.tsv", "q1\ttext\n")
    digest = contents_digest([str(present), str(tmp_path / "bank.jsonl")], memo)
    assert digest != contents_digest([str(present), str(tmp_path / "other.jsonl")], memo)
    memo.write_text("{not json")
    assert contents_digest([str(present), str(tmp_path / "bank.jsonl")], memo) == digest
    blocked = write(tmp_path / "a file", "")  # the memo's folder cannot be made: nothing is written
    assert contents_digest([str(present)], blocked / "memo.json") == by_hand((str(present), present.read_bytes()))
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
