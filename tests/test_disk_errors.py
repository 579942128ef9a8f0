"""A full disk or a read-only results folder: one line naming the file, exit 2, earlier outputs kept.

The results folder is a small tmpfs mounted by the test (root only; skipped elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import own_collection


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True
        ).returncode
        == 0
    )
    if not mounted:
        pytest.skip("needs root to mount a small tmpfs")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def pool(files, out) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "examflow", "pool", "--queries", str(files["queries"]), "--corpus",
               str(files["corpus"]), "--qrels", str(files["qrels"]), "--runs", str(files["run_good"]),
               str(files["run_poor"]), "--out", str(out)]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True)


def snapshot(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_a_full_disk_and_a_read_only_folder_fail_in_one_line_keeping_earlier_outputs(tmp_path, small_disk):
    files = own_collection(tmp_path / "mine")
    out = small_disk / "pool"
    assert pool(files, out).returncode == 0
    before = snapshot(out)
    assert "passages.parquet" in before

    filler = small_disk / "filler"
    fill(small_disk)
    full = pool(files, out)
    assert full.returncode == 2
    errors = [line for line in full.stderr.splitlines() if line.startswith("examflow: error:")]
    assert len(errors) == 1 and "cannot write: No space left on device" in errors[0] and str(out) in errors[0]
    assert "Traceback" not in full.stderr
    assert snapshot(out) == before  # no temporary file left, nothing half-written

    filler.unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    read_only = pool(files, out)
    assert read_only.returncode == 2 and "Traceback" not in read_only.stderr
    assert "cannot write: Read-only file system" in read_only.stderr
    assert snapshot(out) == before


def fill(disk) -> None:
    handle = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:  # to the last block
        while os.write(handle, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(handle)


def test_a_full_disk_under_the_caches_names_the_file_and_leaves_no_half_written_one(small_disk):
    """A write or flush that fills the disk names no file: the command line said `output: cannot write`
    (a stranger's cache_dir on a small tmpfs)."""
    from examflow.cache import ContentCache
    from examflow.llm import ResponseCache

    replies, grades = ResponseCache(small_disk / "llm"), ContentCache(small_disk / "grades", "x", {}, "s", {})
    replies.put("k0", {"prompt": "p", "text": "t"})  # their folders exist before the disk is full
    grades.add([("k0", {"answer": "t"})])
    fill(small_disk)
    with pytest.raises(OSError) as raised:
        replies.put("k1", {"prompt": "p", "text": "x" * 100_000})
    assert raised.value.filename == str(replies.path("k1"))
    assert not list((small_disk / "llm").rglob("*.tmp"))
    with pytest.raises(OSError) as raised:
        grades.add([("k1", {"answer": "x" * 100_000})])
    assert raised.value.filename == grades.file.name and raised.value.filename.startswith(str(small_disk / "grades"))
    try:
        grades.close()  # its buffer's flush fails again: the disk is still full
    except OSError:
        pass


def test_a_folder_where_an_output_goes_replaces_no_earlier_output_and_is_named(tmp_path):
    """A folder in the place of one table: the tables renamed before it were replaced (an evaluation's folder
    held two evaluations), and the error named the last table staged, not the folder (a stranger by hand)."""
    files = own_collection(tmp_path / "mine")
    out = tmp_path / "pool"
    assert pool(files, out).returncode == 0
    (out / "summary.tsv").unlink()
    (out / "summary.tsv").mkdir()
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()}
    files["run_poor"].write_text(files["run_poor"].read_text().replace("poor", "fair"))  # another pool: new tables
    result = pool(files, out)
    assert result.returncode == 2
    assert (
        result.stderr.strip().splitlines()[-1] == f"examflow: error: {out / 'summary.tsv'}: cannot write: is a folder"
    )
    assert {path.name: path.read_bytes() for path in out.iterdir() if path.is_file()} == before
    # passages, rankings, queries, judgments, flagged and dropped: every table but the folder's
    assert (out / "summary.tsv").is_dir() and len(before) == 6
