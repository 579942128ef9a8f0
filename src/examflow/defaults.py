"""The configuration's defaults, read from its schema (`workflow/schemas/config.schema.yaml`): the one
source that the config check, the command line and the evaluation's settings all take them from."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


@cache
def _schema() -> dict:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader where PyYAML has one: faster
    return yaml.load(SCHEMA.read_text(encoding="utf-8"), Loader=loader)


def _node(key: str) -> dict:
    node = _schema()
    for part in key.split("."):
        node = node["properties"][part]
    return node


def default(key: str) -> Any:
    """The schema's default of a dotted config key, such as `evaluation.tau` (a copy: lists stay the schema's)."""
    return copy.deepcopy(_node(key)["default"])


def choices(key: str) -> list[str]:
    """The values a config key takes (its schema's `enum`): the command line's option takes the same."""
    return list(_node(key)["enum"])


def number(key: str) -> dict[str, Any]:
    """A number key's type and bounds, as `examflow.options.Option` takes them: the command line's option
    of the same setting accepts exactly what the configuration accepts."""
    node = _node(key)
    words = {"minimum": "minimum", "maximum": "maximum", "exclusiveMinimum": "above", "exclusiveMaximum": "below"}
    return {"type": node["type"]} | {option: node[word] for word, option in words.items() if word in node}
