"""`examflow.contents`: the digest of a step's input files, which reruns the step where Snakemake's
comparison of modification times cannot see an edit."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from conftest import write

from examflow import contents
from examflow.contents import contents_digest


def by_hand(*named: tuple[str, bytes]) -> str:
    """The digest as documented: each file's blake2b-128, in order, beside its path."""
    parts = [f"{path}:{hashlib.blake2b(data, digest_size=16).hexdigest()}" for path, data in named]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The files hashed, in order; files count as settled however recently written (no racy window)."""
    monkeypatch.setattr(contents, "RACY", -1)
    calls: list[str] = []
    real = contents._hash
    monkeypatch.setattr(contents, "_hash", lambda path: calls.append(path) or real(path))
    return calls


def test_an_edit_with_the_old_modification_time_changes_the_digest_and_touch_does_not(tmp_path, hashed):
    memo = tmp_path / ".snakemake/memo.json"
    run, qrels = write(tmp_path / "a.run", "q1 Q0 d1 1 2.0 a\n"), write(tmp_path / "q.qrels", "q1 0 d1 1\n")
    paths = [str(run), str(qrels)]
    first = contents_digest(paths, memo)
    assert first == by_hand((str(run), run.read_bytes()), (str(qrels), qrels.read_bytes()))
    assert hashed == paths and memo.is_file()
    assert contents_digest(paths, memo) == first and hashed == paths  # nothing changed: nothing hashed

    os.utime(run)  # touch: newer, the same content: hashed again, the same digest
    assert contents_digest(paths, memo) == first and hashed == [*paths, str(run)]

    times = os.stat(run)
    write(run, "q1 Q0 d2 1 2.0 a\n")  # the same size, then its old times back, as `cp -p` leaves them
    os.utime(run, ns=(times.st_atime_ns, times.st_mtime_ns))
    edited = contents_digest(paths, memo)
    assert edited != first and edited == by_hand((str(run), run.read_bytes()), (str(qrels), qrels.read_bytes()))
    assert contents_digest(paths[::-1], memo) != edited  # the order given is part of it


def test_a_file_written_just_before_it_was_hashed_is_hashed_again(tmp_path):
    """Within RACY of its last change a second write could leave a file's times as they were (a coarse
    clock): its digest is not remembered."""
    memo = tmp_path / "memo.json"
    fresh = write(tmp_path / "fresh.run", "q1 Q0 d1 1 2.0 a\n")
    contents_digest([str(fresh)], memo)
    assert not memo.exists() or str(fresh.resolve()) not in json.loads(memo.read_text())


def test_a_missing_file_counts_by_name_and_a_damaged_or_unwritable_memo_costs_nothing_but_time(tmp_path, hashed):
    memo = tmp_path / "memo.json"
    present = write(tmp_path / "queries.tsv", "q1\ttext\n")
    digest = contents_digest([str(present), str(tmp_path / "bank.jsonl")], memo)
    assert digest != contents_digest([str(present), str(tmp_path / "other.jsonl")], memo)
    key = os.path.abspath(present)
    for damaged in (
        "{not json",
        "[1, 2]",
        json.dumps({key: 1}),
        json.dumps({key: {"a": 1}}),
        json.dumps({key: [[1], 2]}),
    ):
        memo.write_text(damaged)
        assert contents_digest([str(present), str(tmp_path / "bank.jsonl")], memo) == digest
    blocked = write(tmp_path / "a file", "")  # the memo's folder cannot be made: nothing is written
    assert contents_digest([str(present)], blocked / "memo.json") == by_hand((str(present), present.read_bytes()))
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
