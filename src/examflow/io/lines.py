"""Line-numbered reading of plain or gzipped text files, strict about UTF-8.

A UTF-8 byte-order mark at the start of a file is dropped (with a warning): left in, it would
become part of the first id. A `.gz` file that is not gzip, or is cut short, is an input error.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import zlib
from collections.abc import Hashable, Iterator
from io import BufferedReader
from pathlib import Path
from typing import Any, cast

from isal import igzip, isal_zlib

from examflow.errors import InputError, closest, repeated

log = logging.getLogger(__name__)
BOM = b"\xef\xbb\xbf"
ISAL_ERROR = cast(type[Exception], isal_zlib.error)  # isal's stubs declare the class an instance


def open_bytes(path: str | Path) -> igzip.IGzipFile | BufferedReader:
    if problem := _not_a_file(path):
        raise InputError(path, problem)
    path = Path(path)
    # ISA-L inflates the same gzip stream in under half zlib's time (a tenth of reading a graded file)
    return igzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def base_suffix(path: str | Path) -> str:
    """`.tsv` for both `x.tsv` and `x.tsv.gz`."""
    suffixes = Path(path).suffixes
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1].lower() if suffixes else ""


def unknown_format(path: str | Path, formats: str) -> InputError:
    """The error for a path whose name no reader takes: what is wrong with the path itself first (a
    folder named by mistake has no suffix either), else the `formats` that are read."""
    return InputError(path, _not_a_file(path) or f"unknown {formats}")


def _not_a_file(given: str | Path) -> str | None:
    """What keeps `given` from being read as a file, if anything; an empty string is no path (Path("")
    would read the current folder)."""
    if isinstance(given, str) and not given.strip():
        return "an empty path"
    path = Path(given)
    if path.is_file():
        return None
    return (
        "is a folder, not a file" if path.is_dir() else "file not found" if not path.exists() else "not a regular file"
    )


EMPTY_FILE = "file is empty"
GZIP_MAGIC = b"\x1f\x8b"
CR_ALONE = " (lines that end in a carriage return alone, as old Mac files? end them in LF or CRLF)"


def raw_lines(path: str | Path, say_bom: bool = True) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes without line end) for each non-blank line; an empty file is an error."""
    seen = False
    with open_bytes(path) as handle:
        for number, raw in _numbered(path, handle):
            raw = raw.rstrip(b"\r\n")
            if number == 1:
                raw = without_bom(path, _not_gzipped(path, raw), say_bom)
            if raw.strip():
                seen = True
                yield number, raw
    if not seen:
        raise InputError(path, EMPTY_FILE)


def _not_gzipped(path: str | Path, first: bytes) -> bytes:
    """The first line, unless it starts with gzip's magic number: compressed, under a name without `.gz`
    (a corpus line of such bytes read as one column)."""
    if first.startswith(GZIP_MAGIC) and Path(path).suffix != ".gz":
        raise InputError(path, "gzip-compressed: name it .gz", 1)
    return first


def read_bytes(path: str | Path) -> bytes:
    """A whole file, gunzipped for `.gz`, without a byte-order mark."""
    with open_bytes(path) as handle:
        return without_bom(path, _not_gzipped(path, b"".join(raw for _, raw in _numbered(path, handle))))


def without_bom(path, raw: bytes, say: bool = True) -> bytes:
    """`raw` without a byte-order mark, said unless `say` is False (a file read twice, once for its first line)."""
    if raw.startswith(BOM):
        if say:
            log.warning("%s: starts with a UTF-8 byte-order mark; ignored", path)
        return raw[len(BOM) :]
    return raw


def _numbered(path, handle) -> Iterator[tuple[int, bytes]]:
    """Lines with their numbers; a damaged gzip stream is an input error at the line it broke."""
    number = 0
    try:
        for number, raw in enumerate(handle, 1):
            yield number, raw
    except (gzip.BadGzipFile, EOFError, ISAL_ERROR) as error:
        # ISA-L takes a header too short to read (a file that is not gzip, a few stray bytes after the last
        # member) for a stream cut short: zlib, reading the damaged file again, says which it is
        verdict = _zlib_verdict(path) or error
        what = "cut short" if isinstance(verdict, EOFError) else f"not a valid gzip file ({verdict})"
        read = f"read up to line {number}" if number else "found while reading its first lines"
        raise InputError(path, f"{what}; {read}") from None


def _zlib_verdict(path) -> Exception | None:
    """What Python's own gzip reader finds wrong with the file, if anything."""
    try:
        with gzip.open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:
        return error
    return None


def decode(path: str | Path, number: int, raw: bytes, offset: int = 0) -> str:
    """`raw`, the line's bytes from `offset` on, as text; a byte that is not UTF-8 named at its offset in the line."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = raw[error.start]  # (a file that starts with gzip's bytes was refused as such: `_not_gzipped`)
        message = f"invalid UTF-8: byte 0x{bad:02x} at offset {offset + error.start} of the line"
        raise InputError(path, message, number) from None


def text_lines(path: str | Path, say_bom: bool = True) -> Iterator[tuple[int, str]]:
    for number, raw in raw_lines(path, say_bom):
        yield number, decode(path, number, raw)


def trec_line(path: str | Path, query_id: str, doc_id: str) -> int | None:
    """The first line of a run or qrels file (query in the first column, document in the third, as both
    have them; a qrels' `query/facet` is its query's) for `query_id` and `doc_id`, read again to name it
    in a message: the readers keep no line numbers, which millions of rows would carry for nothing."""
    for number, line in text_lines(path, say_bom=False):
        query, _, doc = (line.split() + ["", "", ""])[:3]
        if doc == doc_id and (query == query_id or query.startswith(f"{query_id}/")):
            return number
    return None


class _KeyTwice(Exception):
    """A JSON object that names a key twice (json keeps the last value, in silence)."""


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) < len(pairs):
        raise _KeyTwice(repeated(key for key, _ in pairs))
    return record


JSON_FAILURES = (ValueError, RecursionError)  # json.loads's, beyond JSONDecodeError too (`json_problem`)


def json_problem(error: Exception) -> str:
    """What json.loads found wrong: a syntax error (JSONDecodeError, a ValueError), an integer of more than
    Python's 4,300 digits (a ValueError) or nesting deeper than the recursion limit (RecursionError)."""
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg}, column {error.colno}"
    if isinstance(error, RecursionError):
        return "nested too deeply to read"
    return "a number too long to read" if "integer string conversion" in str(error) else str(error)


def json_value(path: str | Path, number: int, line: str | bytes) -> Any:
    """A line's JSON value; a key written twice in one of its objects is an error at the line."""
    try:
        return json.loads(line, object_pairs_hook=_once_each)
    except UnicodeDecodeError:  # a ValueError too: the caller names the byte
        raise
    except JSON_FAILURES as error:
        raise InputError(path, f"not valid JSON ({json_problem(error)}){cr_hint(line)}", number) from None
    except _KeyTwice as twice:
        raise InputError(path, "written twice in one object", number, str(twice.args[0])) from None


def json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line of a JSONL file; each line must be a JSON object, each of its
    objects naming a key once (a second `query_id` filed an answer under another query)."""
    for number, line in text_lines(path):
        record = json_value(path, number, line)
        if not isinstance(record, dict):
            raise InputError(path, f"expected a JSON object, found {type(record).__name__}", number)
        yield number, record


def split_columns(path: str | Path, number: int, line: str, names: tuple[str, ...], sep: str | None) -> list[str]:
    """Split a line into exactly `len(names)` columns (sep None: ASCII whitespace, as trec_eval splits)."""
    if sep is None and not line.isascii():
        # Python splits at U+00A0 and its kin, trec_eval does not: the two would read other columns
        odd = next((c for c in line if c.isspace() and not c.isascii()), None)
        if odd:
            raise InputError(path, f"U+{ord(odd):04X}, a space that is not ASCII, at column {line.index(odd) + 1}: "
                             "trec_eval reads it as part of a field, not between two; write a plain space", number)  # fmt: skip
    columns = line.split(sep) if sep is None else line.split(sep, len(names))
    if len(columns) != len(names):
        expected = " ".join(names)
        separated = " tab-separated" if sep == "\t" else ""
        message = f"expected {len(names)}{separated} columns ({expected}), found {len(columns)}{_why(line)}"
        raise InputError(path, message, number)
    return columns


def cr_hint(line: str | bytes) -> str:
    """The hint for a line that holds a carriage return: a file whose lines end in one alone reads as one line."""
    carriage = "\r" in line if isinstance(line, str) else b"\r" in line
    return CR_ALONE if carriage else ""


def _why(line: str) -> str:
    """What may have split a line wrongly: a comment, a JSON object, or line ends of CR alone."""
    if "\r" in line:
        return CR_ALONE
    if line.lstrip().startswith("#"):
        return " (a comment? these files have none)"
    if line.lstrip().startswith("{"):  # an AutoJudge *.eval.jsonl read in a column layout, say
        return " (a JSON object: this file is read as columns, not as JSON lines)"
    return ""


def read_alike(text: str) -> bool:
    """Whether C's number readers (trec_eval's `atof`, `atol`) read all of `text` as Python's `float`
    and `int` do: Python also reads `1_000` (1 to trec_eval) and the digits of other scripts (0 to it)."""
    return "_" not in text and text.isascii()


def number_text(path: str | Path, number: int, text: str, field: str) -> str:
    """A number's text, refused where trec_eval would read another number (`read_alike`)."""
    if not read_alike(text):
        raise InputError(path, f"not a number as trec_eval reads one: {shown(text)}", number, field)
    return text


INTEGER_LIMIT = 2**63  # the tables hold integers in 64 bits


def integer_field(path: str | Path, number: int, text: str, field: str) -> int:
    """A whole number as trec_eval reads one (`number_text`), within 64 bits: a rank of 20 digits failed
    deep in pandas, and Python reads no integer of more than 4,300 digits."""
    if len(text) <= 18 and text.isascii() and text.isdigit():  # a plain rank, at once: millions of run lines
        return int(text)
    if not re.fullmatch(r"[+-]?[0-9]+", number_text(path, number, text, field)):
        raise InputError(path, f"not an integer: {shown(text)}", number, field)
    # (leading zeros count for nothing, as in trec_eval's atol; the length check spares int() 5,000 digits)
    if len(text.lstrip("+-").lstrip("0")) > 19 or not -INTEGER_LIMIT <= int(text) < INTEGER_LIMIT:
        raise InputError(path, f"{shown(text)} is beyond a 64-bit integer", number, field)
    return int(text)


def shown(text: str) -> str:
    """A field's text as an error repeats it: one of 5,000 digits cut short."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}… ({len(text):,} characters)"


def misspelling_of(record: dict[str, Any], field: str) -> str:
    """` (is 'txt' meant to be 'text'?)` where a key of `record` is a likely typo of the missing `field`, else
    nothing: a misspelt key would have read as the field left out."""
    named = next((key for key in record if key != field and closest(key, [field])), None)
    return f" (is {named!r} meant to be {field!r}?)" if named else ""


def required_id(path: str | Path, number: int | None, record: dict[str, Any], field: str, where: str = "") -> str:
    """An id: a string, or a whole number written without quotes (read as its digits)."""
    value = record.get(field)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    name = f"{where}{field}"
    if value is None:
        raise InputError(path, "missing" if field not in record else "null: an id is a string", number, name)
    if not isinstance(value, str):
        raise InputError(path, f"expected a string or whole number, found {json.dumps(value)}", number, name)
    check_id(path, number, value, name)
    return value


def check_id(path: str | Path, number: int | None, value: str, field: str) -> None:
    # Ids end up as whitespace-separated TREC columns, and `query/facet` names a subtopic in qrels.
    slash = field.endswith("query_id") and "/" in value
    if not value:
        raise InputError(path, "empty: an id is one word", number, field)
    if any(ch.isspace() for ch in value) or slash:
        rule = "no whitespace, no /" if field.endswith("query_id") else "no whitespace"
        raise InputError(path, f"invalid id {value!r} ({rule})", number, field)


class FirstLines:
    """The line each key of a file was first read on: a key read again is an error naming both lines."""

    def __init__(self, path: str | Path):
        self.path = path
        self.lines: dict[Hashable, int | None] = {}

    def add(self, key: Hashable, number: int | None, field: str, what: str) -> None:
        """Note `key` read on line `number`; `what` says what a second one is ("document 'd' judged twice")."""
        if key in self.lines:
            raise InputError(self.path, f"{what} (first on line {self.lines[key]})", number, field)
        self.lines[key] = number


def line_of(text: str, key: str) -> int | None:
    """The line of a JSON object's key in its text (for error messages)."""
    at = text.find(json.dumps(key))
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def json_entries(path: str | Path, what: str, key_field: str) -> Iterator[tuple[int | None, str, Any]]:
    """(line, key, value) of a file holding one non-empty JSON object whose keys are ids."""
    mapping, text = json_object(path, what)
    if not mapping:
        raise InputError(path, f"expected a non-empty JSON object {what}")
    for key, value in mapping.items():
        number = line_of(text, key)
        check_id(path, number, key, key_field)
        yield number, key, value


def json_object(path: str | Path, what: str = "") -> tuple[dict[str, Any], str]:
    """A file holding one JSON object, and its text; repeated keys are an error at their line. `what`:
    the object expected, shown when the file is not one."""
    expected = f"; expected a JSON object {what}" if what else ""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        start = raw.rfind(b"\n", 0, error.start) + 1
        raise InputError(
            path, f"invalid UTF-8: byte 0x{raw[error.start]:02x} at offset {error.start - start} of the line",
            raw.count(b"\n", 0, error.start) + 1,
        ) from None  # fmt: skip

    def unique(pairs):
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                at = text.find(json.dumps(key), text.find(json.dumps(key)) + 1)
                raise InputError(path, f"key {key!r} appears twice", text.count("\n", 0, at) + 1 if at >= 0 else None)
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except JSON_FAILURES as error:
        line = error.lineno if isinstance(error, json.JSONDecodeError) else None
        raise InputError(path, f"not valid JSON ({json_problem(error)}){expected}", line) from None
    if not isinstance(data, dict):
        raise InputError(path, f"expected a JSON object {what}".rstrip() + f", found {type(data).__name__}")
    return data, text


def required_text(path: str | Path, number: int, record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if value is None:
        raise InputError(path, "missing" if field not in record else "null: a text is a string", number, field)
    if not isinstance(value, str):
        raise InputError(path, f"expected a string, found {type(value).__name__}", number, field)
    if not value.strip():
        raise InputError(path, "empty text", number, field)
    return value
