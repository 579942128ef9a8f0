"""Where a benchmark works: a temporary folder, or one the caller keeps (`--keep DIR`) to compare a
benchmark's outputs across commits (`diff -r`: a change that must not alter results)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def kept_or_temporary(keep: str | None) -> Iterator[str]:
    """The folder `keep` (made if need be, never removed), else a temporary one."""
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield keep
    else:
        with tempfile.TemporaryDirectory() as name:
            yield name
