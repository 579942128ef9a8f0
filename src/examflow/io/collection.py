"""Passage collections (TSV `doc_id<TAB>text`, JSONL, Parquet), read in one streaming pass.

Only the passages asked for are kept in memory, so pooling over an 8.8 M-passage
MS MARCO collection needs memory for the pool, not for the collection.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from examflow.errors import InputError, Problems
from examflow.io.irds import irds_passages, is_irds
from examflow.io.lines import (
    JSON_FAILURES,
    base_suffix,
    cr_hint,
    decode,
    json_problem,
    json_value,
    raw_lines,
    trec_line,
    unknown_format,
)

log = logging.getLogger(__name__)
ID_FIELDS = ("doc_id", "docid", "id", "_id", "pid")
TEXT_FIELDS = ("text", "contents", "body")


class Origin(NamedTuple):
    """Why a passage was asked for, and the line that asked (a run's or the qrels'), where one is known:
    the collection has no line to name for a passage it lacks."""

    said: str  # `run 'bm25' ranks it for query 'q2' at rank 2`
    path: str | Path | None = None
    line: int | None = None

    @classmethod
    def at_line(cls, said: str, path: str | Path | None, query_id: str, doc_id: str) -> Origin:
        """`said` at the line of the run or qrels file `path` (where one is given) for the pair."""
        return cls(said) if path is None else cls(said, path, trec_line(path, query_id, doc_id))


def read_passages(
    path: str | Path,
    wanted: set[str],
    problems: Problems,
    what: str = "pooled passage",
    origins: Callable[[list[str]], dict[str, Origin]] | None = None,
) -> dict[str, str]:
    """Texts of the `wanted` passage ids; missing or empty ones go to `problems`, named as `what` they are.
    `origins`, given the missing ids, says where each was asked for (a run's line that ranks it)."""
    readers = {".tsv": _tsv, ".jsonl": _jsonl, ".parquet": _parquet}
    reader = _irds if is_irds(path) else readers.get(base_suffix(path))
    if reader is None:
        raise unknown_format(path, "collection format: use .tsv, .jsonl (optionally .gz) or .parquet")
    found: dict[str, str] = {}
    empty: set[str] = set()  # in the collection, with no text: reported as such, not as missing too
    for number, doc_id, text in reader(path, wanted):
        if not text.strip():
            empty.add(doc_id)
            problems.report(
                f"{what}s with empty text",
                InputError(path, f"empty text for {what} {doc_id!r}", number, "text"),
            )
        elif doc_id in found and found[doc_id] != text:
            raise InputError(path, f"{what} {doc_id!r} appears twice with different texts", number, "doc_id")
        else:
            found[doc_id] = text
    missing = sorted(wanted - found.keys() - empty)
    where = origins(missing) if origins and missing else {}
    for doc_id in missing:
        problems.report(f"{what}s missing from the collection", _missing(path, what, doc_id, where.get(doc_id)))
    return found


def _missing(path, what: str, doc_id: str, origin: Origin | None) -> InputError:
    """A passage the collection lacks, at the line that asked for it where one is known."""
    if origin is None:
        return InputError(path, f"{what} {doc_id!r} is not in the collection")
    if origin.path is None:
        return InputError(path, f"{what} {doc_id!r} is not in the collection ({origin.said})")
    message = f"{what} {doc_id!r} is not in the collection {path} ({origin.said})"
    return InputError(origin.path, message, origin.line, "doc_id")


def _irds(spec: str | Path, wanted: set[str]) -> Iterator[tuple[None, str, str]]:
    # cast: read_passages picks this reader for an ir_datasets id alone, a string (`is_irds`)
    for doc_id, text in irds_passages(cast(str, spec), wanted).items():
        yield None, doc_id, text


def _tsv(path, wanted: set[str]) -> Iterator[tuple[int, str, str]]:
    wanted_bytes = {doc_id.encode() for doc_id in wanted}
    for number, raw in raw_lines(path):
        doc_id, tab, text = raw.partition(b"\t")
        if not tab or b"\t" in text:
            found = raw.count(b"\t") + 1
            raise InputError(
                path, f"expected 2 tab-separated columns (doc_id text), found {found}{cr_hint(raw)}", number
            )
        if doc_id in wanted_bytes:
            yield number, decode(path, number, doc_id), decode(path, number, text, len(doc_id) + 1)
        elif (stripped := doc_id.strip()) is not doc_id and stripped in wanted_bytes:  # `is`: strip() kept it
            raise _spaced(path, number, "doc_id", decode(path, number, doc_id))


def _jsonl(path, wanted: set[str]) -> Iterator[tuple[int, str, str]]:
    id_field = text_field = None
    picked = 0  # the line the fields were picked on
    for number, raw in raw_lines(path):
        try:
            # decoded first (naming a byte that is not UTF-8): json.loads would guess UTF-16 from a NUL byte
            record = json.loads(decode(path, number, raw))
        except JSON_FAILURES as error:
            raise InputError(path, f"not valid JSON ({json_problem(error)})", number) from None
        if not isinstance(record, dict):  # a number or a list is valid JSON, but holds no passage
            raise InputError(path, f"expected a JSON object, found {type(record).__name__}", number)
        if id_field is None or text_field is None:
            id_field = _pick(path, number, record, ID_FIELDS, "id")
            text_field = _pick(path, number, record, TEXT_FIELDS, "text")
            picked = number
        doc_id = record.get(id_field)
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            raise InputError(path, _no_value(record, id_field, ID_FIELDS, picked, "a string or whole number"), number,
                             id_field)  # fmt: skip
        if str(doc_id) in wanted:  # read again, its keys checked: a second "text" would have won in silence
            record = json_value(path, number, raw)
            text = record.get(text_field)
            if not isinstance(text, str):
                raise InputError(path, _no_value(record, text_field, TEXT_FIELDS, picked, "a string"), number,
                                 text_field)  # fmt: skip
            yield number, str(doc_id), text
        elif isinstance(doc_id, str) and (stripped := doc_id.strip()) is not doc_id and stripped in wanted:
            raise _spaced(path, number, id_field, doc_id)


def _spaced(path, number: int | None, field: str, doc_id: str) -> InputError:
    """An id written with whitespace around the id a run ranks: the passage would be "missing" from a
    collection that holds it (ids hold no whitespace, docs/inputs.md)."""
    return InputError(path, f"{doc_id!r} has whitespace around the id {doc_id.strip()!r} asked for: ids are "
                            "written without whitespace", number, field)  # fmt: skip


def _no_value(record: dict, field: str, candidates: tuple[str, ...], picked: int, expected: str) -> str:
    """Why a line's `field` holds no id or text: not there (another of the `candidates` in its place: the file's
    field was picked on line `picked`), null, or another type."""
    if field not in record:
        other = next((name for name in candidates if name in record), None)
        return "missing" + (
            f": this line has {other!r}, the file's field is {field!r} (from line {picked})" if other else ""
        )
    value = record[field]  # a list or an object is named, not repeated: it may be of any size
    found = "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else json.dumps(value)
    return f"expected {expected}, found {found}"


def _pick(path, number: int, record, candidates: tuple[str, ...], what: str) -> str:
    if not isinstance(record, dict):
        raise InputError(path, "expected a JSON object", number)
    found = _first_of(f"{path}:{number}", record, candidates, what)
    if found is None:
        raise InputError(path, f"no {what} field (one of {', '.join(candidates)})", number)
    return found


def _first_of(where: str, names, candidates: tuple[str, ...], what: str) -> str | None:
    """The first of `candidates` among `names` (a record's keys, a table's columns), said where several are."""
    found = [name for name in candidates if name in names]
    if len(found) > 1:  # `text` and `body`: one is read, for every passage, and the other was dropped in silence
        log.warning("%s: holds %s: the passages' %s is read from %r alone (the first of %s)", where,
                    " and ".join(map(repr, found)), what, found[0], ", ".join(candidates))  # fmt: skip
    return found[0] if found else None


def _parquet(path, wanted: set[str]) -> Iterator[tuple[int | None, str, str]]:
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as error:
        raise InputError(path, f"not a readable Parquet file ({error})") from None
    names = table.schema_arrow.names
    id_field, text_field = (
        _first_of(str(path), names, ID_FIELDS, "id"),
        _first_of(str(path), names, TEXT_FIELDS, "text"),
    )
    if id_field is None or text_field is None:
        raise InputError(
            path, f"needs an id column ({', '.join(ID_FIELDS)}) and a text column ({', '.join(TEXT_FIELDS)})"
        )
    wanted_array = pa.array(sorted(wanted), pa.string())
    for batch in table.iter_batches(batch_size=65_536, columns=[id_field, text_field]):
        ids = pc.cast(batch.column(0), "string")
        asked = pc.is_in(ids, value_set=wanted_array)
        keep = batch.filter(asked)
        trimmed = pc.is_in(pc.utf8_trim_whitespace(ids), value_set=wanted_array)
        spaced = ids.filter(pc.and_(pc.invert(asked), trimmed))
        if len(spaced):
            raise _spaced(path, None, id_field, spaced[0].as_py())
        for doc_id, text in zip(pc.cast(keep.column(0), "string").to_pylist(), keep.column(1).to_pylist()):
            yield None, doc_id, text or ""
