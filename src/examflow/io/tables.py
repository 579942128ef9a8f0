"""Tables written atomically (all of a step's tables appear together or not at all), and read back
with ids exactly as written."""

from __future__ import annotations

import csv
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from examflow.errors import Failure, InputError


def text_series(column: pd.Series) -> pd.Series:
    """A column of ids or messages as strings the way this pandas reads text (`str` from pandas 3 on, objects
    before), a missing value kept missing: `astype("str")` writes it as 'None' before pandas 3."""
    array = pa.array(column.to_numpy(dtype=object), pa.string(), from_pandas=True)
    return array.to_pandas().set_axis(column.index).rename(column.name)


def write_tables(tables: Mapping[str | Path, pd.DataFrame | pa.Table | str | bytes]) -> None:
    """Write each table to a temporary sibling, then rename them all into place.

    `.parquet` targets take a DataFrame or an Arrow table (to keep schema metadata); other
    DataFrames are written as TSV, text and bytes (a figure) as they are.
    """
    staged: list[tuple[str, Path]] = []  # (temporary file, its target)
    where: Path | None = None  # the file being written or renamed, for the error
    try:
        _stage_all(tables, staged)
        # A folder where a table goes is the one thing that stops a rename in the same folder: found
        # before the first, so that a failed step replaces none of its earlier outputs.
        if folders := [target for _, target in staged if target.is_dir()]:
            raise Failure(f"{folders[0]}: cannot write: is a folder")
        for temporary, where in staged:
            os.replace(temporary, where)
    except OSError as error:  # a full disk, a read-only folder: the earlier outputs stay as they were
        where = where or (staged[-1][1] if staged else error.filename)
        raise Failure(f"{where}: cannot write: {_reason(error)}") from None
    finally:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


def _reason(error: OSError) -> str:
    """The system's words for the error; pyarrow hides the errno in its message."""
    number = error.errno or next(map(int, re.findall(r"\[errno (\d+)\]", str(error))), None)
    return os.strerror(number) if number else str(error)


def _stage_all(
    tables: Mapping[str | Path, pd.DataFrame | pa.Table | str | bytes], staged: list[tuple[str, Path]]
) -> None:
    for target, frame in tables.items():
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(handle)
        os.chmod(temporary, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs are read by others too
        staged.append((temporary, target))
        if isinstance(frame, str):
            Path(temporary).write_text(frame, encoding="utf-8")
        elif isinstance(frame, bytes):
            Path(temporary).write_bytes(frame)
        elif isinstance(frame, pa.Table):
            pq.write_table(frame, temporary)
        elif target.suffix == ".parquet":
            frame.to_parquet(temporary, index=False)
        else:
            write_tsv(frame, temporary)


def write_tsv(frame: pd.DataFrame, path: str | Path) -> None:
    """Cells as written, one row a line — a run named `q"x` is `q"x`, as trec_eval, awk and examflow's own
    inputs (an official leaderboard) read it. A table with a tab or a line break in a cell (free text) cannot
    be so: it is CSV-quoted, every cell, so its first character says which of the two it is (`read_tsv`)."""
    columns = [frame.iloc[:, i] for i in range(frame.shape[1])]  # by position: a name may repeat
    texts = [pd.Series(frame.columns.astype(str))] + [c.astype("string") for c in columns if c.dtype.kind not in "biuf"]
    needs_quotes = any(cells.str.contains("[\t\r\n]", regex=True).any() for cells in texts)
    # a lone column's empty cell is an empty line, which csv writes only quoted
    needs_quotes |= len(columns) == 1 and bool(columns[0].isna().any() | (columns[0] == "").any())
    frame.to_csv(path, sep="\t", index=False, quoting=csv.QUOTE_ALL if needs_quotes else csv.QUOTE_NONE)


# Columns of ids and names, beside every `*_id`: read as written, even where they look like numbers.
TEXT_COLUMNS = frozenset(
    {"method", "measure", "kind", "table", "llm", "prompt", "llm_a", "prompt_a", "llm_b", "prompt_b", "ranker",
     "dimension", "sample", "item", "system", "origin", "phrase", "change", "note", "text", "question_text",
     "old_question_text", "answer", "error", "model"}
)  # fmt: skip


def among(table: pd.DataFrame, listed: pd.DataFrame, keys=("query_id", "passage_id")):
    """Per row of `table`, whether its `keys` are those of a row of `listed`."""
    return pd.MultiIndex.from_frame(table[list(keys)]).isin(pd.MultiIndex.from_frame(listed[list(keys)]))


NOT_PARQUET = "not a Parquet table (the tables examflow writes for its steps are Parquet files)"


def optional(value):
    """None for a missing table value, whichever way pandas spells it (None, NaN, NA); else the value (a
    list of answers, say, which `pd.isna` would take apart)."""
    missing = value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
    return None if missing else value


def read_table(path: str | Path, columns: Iterable[str], wanted: str = "", only: bool = False) -> pd.DataFrame:
    """A Parquet table examflow wrote, with the `columns` the reader needs (another step's table named in
    its place is one error, not a KeyError deep in the step). `wanted`: which table goes here, said where
    a user's own file is named in its place. `only`: those columns alone (the runs of a pool's rankings:
    0.04 s, where 1.5 M rows whole took 1.5 s)."""
    try:
        has_columns(path, pq.read_schema(existing(path)).names, columns)
        return pd.read_parquet(path, columns=list(columns) if only else None)
    except pa.ArrowInvalid:  # a JSONL or TSV file named where a table examflow wrote goes
        raise InputError(path, NOT_PARQUET + (f": {wanted}" if wanted else "")) from None


def with_columns(path: str | Path, table: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    has_columns(path, list(table.columns), columns)
    return table


def has_columns(path: str | Path, names: list, columns: Iterable[str]) -> None:
    """Refuse a table of these column `names` that lacks one of `columns`: another table named in its place."""
    missing = [name for name in columns if name not in names]
    if missing:
        has = ", ".join(map(str, names)) or "none"
        raise InputError(path, f"not the table wanted here: no column {missing[0]!r} (its columns: {has})")


def read_tsv(path: str | Path, columns: Iterable[str] = (), **types) -> pd.DataFrame:
    """A TSV table examflow wrote, every cell as written: ids named `NA`, `null`, `nan`, `001`, `1e5`
    or `True` stay those strings (pandas would read missing values and numbers into them).

    Ids and names (`*_id` and TEXT_COLUMNS) stay text; another column whose cells all read as numbers
    (or all as True/False) is converted. An empty cell is a missing value: pandas writes one so.
    `types` (column: type) override the result, e.g. `tau=float`; `columns` and the typed ones must be there.
    """
    with open(existing(path), "rb") as file:
        quoted = file.read(1) == b'"'  # `write_tsv` quotes every cell or none
        if file.seek(0, os.SEEK_END) == 0:
            raise InputError(path, "empty: not a table examflow wrote")
        file.seek(-1, os.SEEK_END)
        if file.read(1) != b"\n":  # a table examflow wrote ends its last row: this one was cut short
            raise InputError(path, "cut short: its last line has no end (a table examflow wrote has)")
    quoting: Literal[0, 3] = 0 if quoted else 3  # csv.QUOTE_MINIMAL, csv.QUOTE_NONE
    try:
        table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=quoting)
    except pd.errors.EmptyDataError:  # blank lines alone
        raise InputError(path, "empty: not a table examflow wrote") from None
    for name in table.columns:
        cells = table[name].where(table[name] != "")
        table[name] = cells if name.endswith("_id") or name in TEXT_COLUMNS else _typed(cells)
    with_columns(path, table, [*columns, *types])
    try:
        return table.astype(types)
    except ValueError as error:  # `tau=float` of a column holding words
        raise InputError(path, f"not the table wanted here ({error})") from None


def _typed(cells: pd.Series) -> pd.Series:
    numbers = pd.to_numeric(cells, errors="coerce")
    if (numbers.isna() == cells.isna()).all():
        return numbers
    if cells.notna().all() and cells.isin(["True", "False"]).all():
        return cells == "True"
    return cells


def existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "table not found (was the step that writes it run?)")
    return path
