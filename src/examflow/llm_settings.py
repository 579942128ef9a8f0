"""The `openai` back end's settings, and which of them decide an answer (the caches' keys): apart from
`examflow.llm`, whose OpenAI client takes a second and more to import, so that the plan and the grade cache
can key an API method's answers without it."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class LLMSettings:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    api: str = "chat"  # or "completions"
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout: float = 60.0
    max_attempts: int = 5
    concurrency: int = 4
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_retry_after: float = 120.0  # the longest a 429's Retry-After is waited for
    max_reply_bytes: int = 262_144  # the most of a reply body read; a longer one is a failure
    cut_off: str = "fail"  # an answer cut at max_tokens: a `cut-off` failure, or `keep` it as it is


def answer_settings(settings: LLMSettings) -> dict:
    """What decides an answer: the endpoint (the same model name on two servers is two models; `…/v1/` is
    `…/v1`, as the client reads it), the model and the decoding settings. Keys of both the LLM cache and
    the grade cache (a setting's type is the option's: `temperature: 0` reads as 0.0, `examflow.options`)."""
    chosen = {
        k: v for k, v in asdict(settings).items() if k in ("base_url", "model", "api", "temperature", "max_tokens")
    }
    base_url = chosen["base_url"]
    return chosen | {"base_url": base_url.rstrip("/") if base_url else base_url}
