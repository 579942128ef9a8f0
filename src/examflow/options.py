"""Typed configuration options: a type, a range or a set of choices, a default and a line of help.

One `Option` checks a value from a config file or a command line, writes its JSON schema and its row
of the option tables in `config/README.md`; `check_options` checks a mapping of them at once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examflow.errors import ConfigError, a, suggestion

REQUIRED = object()  # the default of an option that must be given
# type[Any], not type: a value that passes isinstance stays Any for the range checks, not object
_TYPES: dict[str, tuple[type[Any], ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
}  # fmt: skip


@dataclass(frozen=True)
class Option:
    type: str  # JSON schema type: string, integer, number or boolean
    default: Any = REQUIRED
    help: str = ""
    choices: tuple = ()
    minimum: float | None = None
    nullable: bool = False
    maximum: float | None = None
    pattern: str | None = None  # a string's form, whole (a device: `cuda:1`): `help` says it in words
    above: float | None = None  # exclusive bounds
    below: float | None = None
    model: bool = False  # names a model, a hub id or a local folder (`check_model_folder`)
    # How requests travel, not what they ask (a timeout, retries, requests in flight): no grade follows it
    transport: bool = False
    also: tuple[str, ...] = ()  # its names in other tools (the OpenAI SDK's `max_retries`): a config's is told this one

    def check(self, key: str, value: Any) -> Any:
        if value is None and self.nullable:
            return None
        if self.choices and value not in self.choices:
            raise ConfigError(key, f"must be one of {', '.join(map(str, self.choices))}, not {value!r}")
        # bool is an int in Python; a YAML `yes` must not pass as a batch size.
        if isinstance(value, bool) != (self.type == "boolean") or not isinstance(value, _TYPES[self.type]):
            raise ConfigError(key, f"expected {'null or ' if self.nullable else ''}{a(self.type)}, found {value!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise ConfigError(key, f"expected {self.help}, not {value!r}")
        if isinstance(value, float) and not math.isfinite(value):  # NaN passes every bound
            raise ConfigError(key, f"expected a finite number, found {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(key, f"must be at least {self.minimum}, not {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(key, f"must be at most {self.maximum}, not {value!r}")
        if self.above is not None and value <= self.above:
            raise ConfigError(key, f"must be more than {self.above}, not {value!r}")
        if self.below is not None and value >= self.below:
            raise ConfigError(key, f"must be less than {self.below}, not {value!r}")
        # `temperature: 0` is the default 0.0: the same setting must be the same cache key
        return float(value) if isinstance(self.default, float) else value

    def json_schema(self) -> dict:
        schema: dict[str, Any] = {"type": [self.type, "null"] if self.nullable else self.type}
        if self.choices:
            schema = {"enum": list(self.choices) + ([None] if self.nullable else [])}
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.above is not None:
            schema["exclusiveMinimum"] = self.above
        if self.below is not None:
            schema["exclusiveMaximum"] = self.below
        if self.pattern is not None:
            schema["pattern"] = f"^(?:{self.pattern})$"
        if self.default is not REQUIRED:
            schema["default"] = self.default
        return schema | {"description": self.help} | ({"also": list(self.also)} if self.also else {})


def check_model_folder(key: str, model: str) -> None:
    """A model named by what only a path can be (not a Hugging Face hub id, `name` or `org/name`) must be a
    folder here: the loader would ask the hub for it, and a missing folder fail deep in a job, after the
    pool, in the hub's words. The workflow checks it as it starts (its rules read the folder's files for new
    weights anyway); a command run by hand leaves it to the loader (a plan may size a model not here)."""
    only_a_path = model.startswith(("/", ".", "~", "$")) or model.count("/") > 1 or "\\" in model
    if only_a_path and not Path(model).is_dir():
        raise ConfigError(key, f"{model!r}: no such folder here (a hub id is `name` or `org/name`; a path is read "
                          "as written, `~` and `$NAME` unexpanded)")  # fmt: skip


def other_names(options: dict[str, Option]) -> dict[str, str]:
    """Each option's names in other tools, to its own."""
    return {other: name for name, option in options.items() for other in option.also}


def check_options(key: str, given: Any, options: dict[str, Option]) -> dict[str, Any]:
    """`given` with every option checked by type and range, unknown ones refused, defaults filled in."""
    if not isinstance(given, dict):
        raise ConfigError(key, f"expected a mapping of options, found {given!r}")
    for name in given:
        if name not in options:
            meant = suggestion(name, options, other_names(options))
            raise ConfigError(f"{key}.{name}", f"unknown option{meant}; known: {', '.join(options)}")
    checked = {}
    for name, option in options.items():
        if name in given:
            checked[name] = option.check(f"{key}.{name}", given[name])
        elif option.default is REQUIRED:
            raise ConfigError(f"{key}.{name}", "required, and missing")
        else:
            checked[name] = option.default
    return checked
