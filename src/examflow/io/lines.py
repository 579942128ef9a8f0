"""Line-numbered reading of plain or gzipped text files, strict about UTF-8."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from examflow.errors import InputError


def open_bytes(path: str | Path) -> IO[bytes]:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found" if not path.exists() else "not a regular file")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def base_suffix(path: str | Path) -> str:
    """`.tsv` for both `x.tsv` and `x.tsv.gz`."""
    suffixes = Path(path).suffixes
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1].lower() if suffixes else ""


def raw_lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without line end) for each non-blank line; an empty file is an error."""
    seen = False
    with open_bytes(path) as handle:
        for number, raw in enumerate(handle, 1):
            raw = raw.rstrip(b"\r\n")
            if raw.strip():
                seen = True
                yield number, raw
    if not seen:
        raise InputError(path, "file is empty")


def decode(path: str | Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = raw[error.start]
        raise InputError(path, f"invalid UTF-8: byte 0x{bad:02x} at offset {error.start} of the line", number) from None


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    for number, raw in raw_lines(path):
        yield number, decode(path, number, raw)


def json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line of a JSONL file; each line must be a JSON object."""
    for number, line in text_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(path, f"not valid JSON ({error.msg}, column {error.colno})", number) from None
        if not isinstance(record, dict):
            raise InputError(path, f"expected a JSON object, found {type(record).__name__}", number)
        yield number, record


def split_columns(path: str | Path, number: int, line: str, names: tuple[str, ...], sep: str | None) -> list[str]:
    """Split a line into exactly `len(names)` columns (sep None: any whitespace)."""
    columns = line.split(sep) if sep is None else line.split(sep, len(names))
    if len(columns) != len(names):
        expected = " ".join(names)
        raise InputError(path, f"expected {len(names)} columns ({expected}), found {len(columns)}", number)
    return columns


def required_text(path: str | Path, number: int, record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if value is None:
        raise InputError(path, "missing", number, field)
    if not isinstance(value, str):
        raise InputError(path, f"expected a string, found {type(value).__name__}", number, field)
    if not value.strip():
        raise InputError(path, "empty text", number, field)
    return value
