"""Every value that reaches a rule's shell line is quoted: `{x:q}`, or a param that holds words
already shell-quoted (`cli_options`, `shlex.quote`), which its declaration says in a comment."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULE = re.compile(r"^\s*(?:rule|checkpoint) (\w+):\n(.*?)(?=^\s*(?:rule|checkpoint) \w+:|\Z)", re.M | re.S)


def unquoted(body: str) -> list[str]:
    shell = body[body.index("shell:") :] if "shell:" in body else ""
    return [name for name in re.findall(r"\{([^{}]+)\}", shell) if not name.endswith(":q")]


def declared_quoted(body: str, param: str) -> bool:
    """Its declaration says it holds quoted words: on its own line, in the comment just above it, or in
    a comment that names it (`# inputs and settings: shlex-quoted ...`)."""
    lines = body.splitlines()
    at = next((i for i, line in enumerate(lines) if re.match(rf"\s*{param}=", line)), None)
    if at is None:
        return False
    above = lines[at - 1].strip() if at else ""
    named = any(line.strip().startswith("#") and "shlex-quoted" in line and re.search(rf"\b{param}\b", line)
                for line in lines)  # fmt: skip
    return "shlex-quoted" in lines[at] or (above.startswith("#") and "shlex-quoted" in above) or named


def test_every_shell_placeholder_is_quoted_or_holds_quoted_words():
    checked = 0
    for path in sorted((ROOT / "workflow/rules").glob("*.smk")):
        for rule, body in RULE.findall(path.read_text(encoding="utf-8")):
            for name in unquoted(body):
                assert name.startswith("params."), f"{path.name}: rule {rule}: {{{name}}} reaches the shell unquoted"
                param = name.split(".", 1)[1]
                assert declared_quoted(body, param), f"{path.name}: rule {rule}: {{{name}}} is not declared quoted"
                checked += 1
    assert checked >= 15  # the rules' option strings, each declared as quoted
