"""Grading passages against exam questions (docs/methods.md §3): prompts, model back ends, parsing, cache."""
