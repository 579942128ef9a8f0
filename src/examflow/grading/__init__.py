"""Grading passages against exam questions (SPEC §3): prompts, model back ends, parsing, cache."""

from examflow.grading.parsing import parse_self_rating, verify_answer

__all__ = ["parse_self_rating", "verify_answer"]
