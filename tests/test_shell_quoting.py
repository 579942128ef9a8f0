"""Every value that reaches a rule's shell line is quoted by Snakemake: `{x:q}`. Option strings are
lists of words (`cli_options`), which `:q` quotes word by word; nothing reaches the shell pre-quoted."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULE = re.compile(r"^\s*(?:rule|checkpoint) (\w+):\n(.*?)(?=^\s*(?:rule|checkpoint) \w+:|\Z)", re.M | re.S)


def placeholders(body: str) -> list[str]:
    shell = body[body.index("shell:") :] if "shell:" in body else ""
    return re.findall(r"\{([^{}]+)\}", shell)


def test_every_shell_placeholder_is_quoted():
    checked = 0
    for path in sorted((ROOT / "workflow/rules").glob("*.smk")):
        for rule, body in RULE.findall(path.read_text(encoding="utf-8")):
            for name in placeholders(body):
                assert name.endswith(":q"), f"{path.name}: rule {rule}: {{{name}}} reaches the shell unquoted"
                checked += name.startswith("params.")
    assert checked >= 15  # the rules' option words among them, each quoted by :q
