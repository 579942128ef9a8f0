"""OpenAI-compatible LLM calls (OpenAI, vLLM, Ollama, LiteLLM) with a disk cache and retries.

Every raw response is stored on disk, keyed by the endpoint, the model, the decoding
settings and the prompt, so a rerun costs no API call. HTTP 429 waits as long as
`Retry-After` says, up to `max_retry_after`; 5xx, timeouts, dropped connections and
malformed replies (no choices, null content, a body that is not the API's JSON) back off
exponentially; other HTTP errors fail at once. A call that still fails is an `LLMError`
whose `kind` names the failure, never an empty answer, and it is never cached (an answer the server cut
at `max_tokens` is an answer: cached, marked as cut, and a `cut-off` failure unless `cut_off: keep`; one
its content filter stopped, `finish_reason: content_filter`, is a `filtered` failure, not retried).

What a server sends is bounded where it is read: at most `max_reply_bytes` of a body (an error's
too, counted inflated where a server compresses it though asked not to) reach memory, a longer one is
a `too-large` failure (not retried: the same prompt would get the same reply); a reply's body is read
by `timeout` seconds after the request, however slowly it trickles in (each wait for bytes is bounded
by `timeout` too; headers that trickle in a line at a time are bounded only line by line). Before
anything keeps a server's text (caches, grades, banks, errors, logs), the request's API key in it is
redacted.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import openai

from examflow.bounds import MESSAGE_CHARS, clip, served_name
from examflow.cache import TEXT, check_entry, parse_json, report_damage, stamped
from examflow.errors import NOT_ASKED, RETRY_AFTER_LINE, RETRY_LINE, Failure, writing
from examflow.llm_settings import LLMSettings, answer_settings

# The openai client's HTTP library, whose Response it hands back raw: httpx2 from openai 3 on, httpx before
# (either may be installed beside the other).
if int(openai.__version__.split(".")[0]) >= 3:
    from httpx2 import Response, SyncByteStream
else:  # pragma: no cover
    from httpx import Response, SyncByteStream  # type: ignore[no-redef]  # the same classes

log = logging.getLogger(__name__)


class LLMError(Failure):
    """A call that failed for good: `kind` is timeout, http-NNN, connection, malformed, too-large, cut-off,
    filtered, config, interrupted (Ctrl-C came before the request was sent) or not-asked (`replies` gave up first).
    `served`: the model a server named for an answer that fails all the same (cut at max_tokens)."""

    def __init__(self, kind: str, message: str, served: str | None = None):
        super().__init__(f"{kind}: {message}")
        self.kind, self.served = kind, served


class Reply(NamedTuple):
    text: str
    served: str | None  # the model the reply named (None: it named none, or its cache entry predates the record)


class ResponseCache:
    """One JSON file per (settings, prompt) key, written atomically: safe for parallel jobs. A file
    is checked like the lines of `examflow.cache`: a damaged or edited one is asked again."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The cached record (`response`, and `cut` where the server cut the answer), or None."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        verdict, record = check_entry(parse_json(data), {"response": TEXT})
        if record is not None and record.get("key", key) != key:  # a file copied to another key's name
            verdict, record = "edited", None
        report_damage(path, Counter({verdict: 1}))
        return record

    def put(self, key: str, record: dict) -> None:
        target = self.path(key)
        try:
            handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        except FileNotFoundError:  # the key's folder is new (made here, not asked for before every answer)
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        try:
            with writing(target), os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(stamped({"key": key, **record}), out, ensure_ascii=False)
        except OSError:  # a full disk: no half-written file is left beside the cache's
            os.unlink(temporary)
            raise
        os.replace(temporary, target)


class LLMClient:
    def __init__(self, settings: LLMSettings, cache_dir: str | Path):
        self.settings = settings
        self.cache = ResponseCache(cache_dir)
        self.calls = 0  # HTTP requests sent, retries included
        self.replayed = 0  # prompts answered by the reply cache, no request sent
        self.stored = 0  # replies the server gave, each stored in the reply cache as it came
        # The model each answer came from as the server named it (OpenAI's dated version of the name asked
        # for, a proxy's target, another model altogether), from the reply cache too where it recorded one.
        self.served: Counter[str] = Counter()
        self._calls_lock = threading.Lock()  # complete_many counts from several threads
        self._asked = threading.local()  # when this thread's request was sent: its reply's deadline
        # Set while `replies` stops (on Ctrl-C, or past `give_up_after` failures): a thread waiting to retry (a
        # 429's Retry-After, minutes) stops waiting, and no request is sent after it.
        self._stopping = threading.Event()
        key = os.environ.get(settings.api_key_env)
        if not key and settings.base_url is None:
            raise LLMError("config", f"environment variable {settings.api_key_env} holds no API key")
        # A key this short is a local server's placeholder (EMPTY, x), not a secret; redacting it
        # would rewrite answers ("1" in ratings).
        self.secret = key if key and len(key) >= MIN_SECRET else None
        # Local servers (vLLM, Ollama) take any key; the client insists on one.
        self.client = openai.OpenAI(
            api_key=key or "none",
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
            default_headers={"Accept-Encoding": "identity"},  # the bytes counted are the bytes kept
            http_client=openai.DefaultHttpxClient(event_hooks={"response": [self._bound_body]}),
        )

    def cache_key(self, prompt: str, attempt: int = 0, system: str | None = None) -> str:
        asked = {"prompt": prompt, "attempt": attempt} | ({"system": system} if system is not None else {})
        payload = json.dumps({**answer_settings(self.settings), **asked}, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def complete(self, prompt: str, attempt: int = 0, system: str | None = None) -> str:
        """The model's answer to `prompt` (after the `system` message, if any); `attempt` > 0 asks again
        past a cached answer."""
        return self.reply(prompt, attempt, system).text

    def reply(self, prompt: str, attempt: int = 0, system: str | None = None) -> Reply:
        """The answer, as `complete`, and the model the server named for it."""
        key = self.cache_key(prompt, attempt, system)
        cached = self.cache.get(key)
        # A reply cached before the bound existed is asked again if it would not pass it now.
        if (
            cached is not None
            and len(cached["response"].encode("utf-8", "surrogatepass")) <= self.settings.max_reply_bytes
        ):
            with self._calls_lock:
                self.replayed += 1
            return self._served(
                self.kept(cached["response"]), bool(cached.get("cut")), served_name(cached.get("served"))
            )
        response, cut, served = self._call_with_retries(prompt, system)
        record = {"model": self.settings.model, "prompt": prompt, "attempt": attempt, "response": response}
        record |= {"served": served} if served is not None else {}
        # A cut answer is cached, marked, as the server gave it: whether it is a failure is this client's policy.
        self.cache.put(
            key, record | ({"system": system} if system is not None else {}) | ({"cut": True} if cut else {})
        )
        with self._calls_lock:
            self.stored += 1
        return self._served(response, cut, served)

    def _served(self, text: str, cut: bool, served: str | None) -> Reply:
        """An answer given, its model counted (a reply cached before examflow recorded the name has none):
        a cut one too, though it fails, for the server answered it (the progress line counts it answered)."""
        if served is not None:
            with self._calls_lock:  # `replies` answers from several threads
                self.served[served] += 1
        return Reply(self._whole(text, cut, served), served)

    def _whole(self, text: str, cut: bool, served: str | None) -> str:
        """An answer, unless the server cut it at max_tokens and `cut_off` is `fail` (a `2` of `2.5`)."""
        if cut and self.settings.cut_off == "fail":
            raise self.failure(
                "cut-off",
                f"the server cut the answer at max_tokens = {self.settings.max_tokens}: {clip(text, 80)!r} "
                "(raise max_tokens, or set cut_off: keep)",
                served,
            )
        return text

    def complete_many(
        self, prompts: Sequence[str], attempt: int | Sequence[int] = 0, systems: Sequence[str | None] | None = None
    ) -> list[str | LLMError]:
        """Every prompt's answer (or its failure), `concurrency` at a time; `attempt` one for all, or each's."""
        return [r.text if isinstance(r, Reply) else r for r in self.replies(prompts, attempt, systems)]

    def replies(
        self,
        prompts: Sequence[str],
        attempt: int | Sequence[int] = 0,
        systems: Sequence[str | None] | None = None,
        give_up_after: int | None = None,
    ) -> list[Reply | LLMError]:
        """Every prompt's answer and served model (or its failure), as `complete_many`. Once more than
        `give_up_after` prompts have failed, no request is sent: the prompts left fail as `not-asked`, and a
        prompt waiting to retry gives its failure at once (a job that will fail stops in one timeout, not after
        every prompt's attempts: a server that never answers held a job for hours)."""
        failed = 0
        given_up = threading.Event()

        def not_asked() -> LLMError:
            return self.failure(NOT_ASKED, f"more than {give_up_after} prompts had failed")

        def one(asked: tuple[str, int, str | None]) -> Reply | LLMError:
            nonlocal failed
            if given_up.is_set():
                return not_asked()
            try:
                return self.reply(*asked)
            except LLMError as error:
                if given_up.is_set() and error.kind == "interrupted":  # stopped below before its request went
                    return not_asked()
                with self._calls_lock:
                    failed += 1
                    if give_up_after is not None and failed > give_up_after:
                        given_up.set()
                        self._stopping.set()  # the threads waiting to retry stop waiting
                return error

        attempts = [attempt] * len(prompts) if isinstance(attempt, int) else list(attempt)
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)
        interrupted = False
        try:
            return list(pool.map(one, zip(prompts, attempts, systems or [None] * len(prompts))))
        except BaseException as error:  # Ctrl-C, SIGTERM, a bug: no more requests go
            self._stopping.set()  # (map has cancelled the prompts not started)
            interrupted = isinstance(error, KeyboardInterrupt)
            raise
        finally:
            # An interrupted job says it stopped at once, not after the replies in flight (up to `timeout`: a
            # cluster kills 30 s after SIGTERM); its process's exit still waits for them.
            pool.shutdown(wait=not interrupted, cancel_futures=True)
            if not interrupted:
                self._stopping.clear()  # every thread has ended: the client may ask again

    def _call_with_retries(self, prompt: str, system: str | None = None) -> tuple[str, bool, str | None]:
        delay = self.settings.backoff
        failure: LLMError | None = None  # the last attempt's
        for attempt in range(1, self.settings.max_attempts + 1):
            if self._stopping.is_set():  # asked before (its failure stands), or never
                raise failure or self.failure("interrupted", "stopped before the request was sent")
            try:
                return self._call(prompt, system)
            except BodyFailure as error:
                failure, wait = self._of_body(error), None
            except openai.APIStatusError as error:
                status = error.status_code
                failure = self.failure(f"http-{status}", _status_message(error))
                if status != 429 and status < 500:
                    raise failure from None
                wait = _retry_after(error.response) if status == 429 else None
            except openai.APITimeoutError:
                failure, wait = self._of_body(ReplyTooSlow(self.settings.timeout)), None
            except openai.APIConnectionError as error:
                cause = error.__cause__  # openai before 3 wraps what a hook raises
                failure = self._of_body(cause) if isinstance(cause, BodyFailure) else self._connection(cause or error)
                wait = None
            # a body that is no JSON (`_reply_json`) or no UTF-8, or JSON that holds no answer (`_answer`)
            except (Malformed, UnicodeDecodeError) as error:
                failure, wait = self.failure("malformed", str(error)), None
            if attempt == self.settings.max_attempts:
                raise failure
            if wait is not None and wait > self.settings.max_retry_after:
                log.warning(RETRY_AFTER_LINE, wait, self.settings.max_retry_after)
                wait = self.settings.max_retry_after
            wait = delay if wait is None else wait
            log.warning(RETRY_LINE, failure, attempt, wait)
            if self._stopping.wait(wait):
                raise failure
            delay *= 2
        raise AssertionError("unreachable")

    def _call(self, prompt: str, system: str | None = None) -> tuple[str, bool, str | None]:
        """The answer, whether the server cut it at max_tokens, and the model the reply names (if any)."""
        with self._calls_lock:
            self.calls += 1
        settings = self.settings
        body: dict[str, object] = {
            "model": settings.model,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
        }
        if settings.api == "chat":
            messages = [{"role": "user", "content": prompt}]
            if system is not None:
                messages.insert(0, {"role": "system", "content": system})
            body["messages"] = messages
        else:  # no roles: the system message first, as `examflow.prompts.template` writes it
            body["prompt"] = prompt if system is None else f"{system}\n\n{prompt}"
        self._asked.at = time.monotonic()
        # The client's own request (its retries off, its errors, the bounded body) with the body sent as it is and
        # the reply read as JSON here: its typed `create` checked and converted every request and built a model of
        # every reply, a quarter of a request's CPU time, and examflow reads three fields of it (`_answer`).
        response = self.client.post(
            "/chat/completions" if settings.api == "chat" else "/completions", body=body, cast_to=Response
        )
        reply = _reply_json(response, self.kept)
        served = served_name(_field(reply, "model"), self.kept)
        text, cut = self._answer(reply, served)
        return self.kept(text), cut, served

    def _answer(self, reply: object, served: str | None) -> tuple[str, bool]:
        """The answer text of a reply (its JSON), and whether the server cut it at max_tokens; Malformed where the
        reply's shape holds none (`choices` may be anything); a `filtered` failure where a content filter
        stopped it, whatever shape is left (a `4` of `45`, or no message at all), not retried."""
        choices = _field(reply, "choices")
        if not isinstance(choices, list) or not choices:
            raise Malformed("the reply has no choices" + _carried_error(reply))
        choice = choices[0]
        holder = _field(choice, "message") if self.settings.api == "chat" else choice
        text = _field(holder, "content" if self.settings.api == "chat" else "text")
        if _field(choice, "finish_reason") == "content_filter":
            shown = f": {clip(text, 80)!r}" if isinstance(text, str) and text else ""
            raise self.failure("filtered", f"the server's content filter withheld the answer{shown} "
                                           "(finish_reason content_filter; not cached, a rerun asks again)", served)  # fmt: skip
        if not isinstance(choice, dict):
            raise Malformed("the reply's choice is no object")
        if not isinstance(holder, dict):  # a chat choice's answer is in its message
            raise Malformed("the reply's choice has no message")
        if not isinstance(text, str):
            raise Malformed(
                "the reply's answer is null" if text is None else f"the reply's answer is no text: {text!r}"
            )
        return text, _field(choice, "finish_reason") == "length"

    def kept(self, text: str) -> str:
        """A server's text as examflow may keep it: the request's API key redacted, and a lone
        surrogate (a JSON escape no UTF-8 file can hold) replaced by `?`."""
        if self.secret is not None:
            text = text.replace(self.secret, REDACTED)
        return text.encode("utf-8", "replace").decode("utf-8")

    def failure(self, kind: str, message: str, served: str | None = None) -> LLMError:
        """A failure of `kind`, its message on one line (a proxy's HTML error page spans many: the job's
        failure line, which quotes it, would end at its first), redacted and clipped."""
        return LLMError(kind, clip(self.kept(" ".join(message.split())), MESSAGE_CHARS), served)

    def _connection(self, cause: BaseException) -> LLMError:
        """openai says `Connection error.` alone: the address (without a user or password in it) and why
        (refused, no such host, the server hung up) say more."""
        address = self.client.base_url.copy_with(userinfo=b"")
        return self.failure("connection", f"request to {address} failed: {str(cause) or type(cause).__name__}")

    def _of_body(self, error: BodyFailure) -> LLMError:
        """The failure of a body that could not be read; raised at once where asking again would not help."""
        failure = self.failure(error.kind, str(error))
        if not error.retried:
            raise failure from None
        return failure

    def _bound_body(self, response) -> None:
        """Let at most `max_reply_bytes` of a body be read (httpx would join one of any size in
        memory): a longer declared length stops it at once, a longer stream at the first excess chunk;
        and the body be read by the request's deadline. A body compressed though examflow asks for none
        is inflated here, within the bound (httpx would inflate it whole, past it)."""
        if response.status_code in REWRITTEN_AS_GET and response.request.method == "POST":
            raise Redirected(response.status_code, response.headers.get("location"))
        limit = self.settings.max_reply_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ReplyTooLarge(f"the reply declares {declared} bytes, more than max_reply_bytes = {limit}")
        encodings = [e.strip().lower() for e in response.headers.get("content-encoding", "").split(",") if e.strip()]
        encodings = [e for e in encodings if e != "identity"]
        if encodings and (len(encodings) > 1 or encodings[0] not in ("gzip", "deflate")):
            raise BadBody(f"the reply is compressed as {', '.join(encodings)}, which examflow does not inflate")
        deadline = getattr(self._asked, "at", time.monotonic()) + self.settings.timeout
        response.stream = _BoundedStream(
            response.stream, limit, (deadline, self.settings.timeout), encodings[0] if encodings else None
        )
        if encodings:
            response.headers["content-encoding"] = "identity"  # inflated by the stream


MIN_SECRET = 8  # the shortest API key that is redacted
REDACTED = "[redacted API key]"


class Malformed(Exception):
    """A reply with status 200 that holds no answer."""


class BodyFailure(openai.OpenAIError):
    """A reply body that cannot be read as it is (an OpenAIError, which the client lets through as it is):
    `kind` is its failure's kind, `retried` whether asking again may help."""

    kind, retried = "malformed", True


class ReplyTooLarge(BodyFailure):
    """A body longer than `max_reply_bytes`: the same prompt would get the same reply."""

    kind, retried = "too-large", False


class ReplyTooSlow(BodyFailure):
    """No reply, or a body still arriving, `timeout` seconds after the request (a server that trickles)."""

    kind = "timeout"

    def __init__(self, timeout: float):
        super().__init__(f"no answer within {timeout} s")


class BadBody(BodyFailure):
    """A body compressed in a way examflow does not inflate, or damaged."""


# The redirects an HTTP client follows with a GET, the prompt left behind (307 and 308 keep the POST and its body)
REWRITTEN_AS_GET = (301, 302, 303)


class Redirected(BodyFailure):
    """A request redirected with a GET: the failure was the new address's answer to it (`http-501: Unsupported
    method ('GET')`), which named no redirect (a stranger's trial). The same request is redirected again."""

    retried = False

    def __init__(self, status: int, location: str | None):
        if location is None:
            super().__init__("the server answered with a redirect that names no address: check base_url")
        else:
            super().__init__(f"the server redirected the request to {_without_userinfo(location)}, which a client asks "
                             "with a GET, without the prompt: set base_url to the address it redirects to")  # fmt: skip
        self.kind = f"http-{status}"


def _without_userinfo(address: str) -> str:
    """An address without the user and password in it, which grades and logs keep."""
    from urllib.parse import urlsplit

    parts = urlsplit(address)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


class _BoundedStream(SyncByteStream):
    """A response body that stops with ReplyTooLarge past `limit` bytes (inflated, where `encoding` is gzip or
    deflate) and with ReplyTooSlow past its deadline, (time.monotonic() at which, the timeout it stands for)."""

    def __init__(self, stream, limit: int, deadline: tuple[float, float] = (math.inf, 0), encoding: str | None = None):
        self.stream, self.limit, self.deadline, self.encoding = stream, limit, deadline, encoding
        self.inflater = zlib.decompressobj(_WBITS) if encoding else None
        self.read, self.received = 0, 0  # bytes of the body (inflated) and of the wire
        self.raw = False  # whether deflate came without its zlib header
        self.fed = b""  # deflate's bytes while none is inflated: read again as raw deflate if the header fails

    def __iter__(self):
        for chunk in self.stream:
            # the wire's bytes count too: a compressed stream that inflates to nothing is no endless read
            self.received += len(chunk)
            if self.received > self.limit:
                raise ReplyTooLarge(f"the reply is longer than max_reply_bytes = {self.limit} bytes")
            for piece in self._inflated(chunk):
                self.read += len(piece)
                if self.read > self.limit:
                    raise ReplyTooLarge(f"the reply is longer than max_reply_bytes = {self.limit} bytes")
                yield piece
            if time.monotonic() > self.deadline[0]:
                raise ReplyTooSlow(self.deadline[1])
        if self.inflater is not None and not self.inflater.eof:  # a stream cut before its end
            raise BadBody("the reply's compressed body ends before its compressed stream does")

    def _inflated(self, chunk: bytes):
        if self.inflater is None:
            yield chunk
            return
        if self.encoding == "deflate" and not self.raw and not self.read:
            self.fed += chunk
        while chunk:  # never more than one byte past the limit at a time
            try:
                piece = self.inflater.decompress(chunk, self.limit + 1)
            except zlib.error as error:
                if self.encoding == "deflate" and not self.raw and not self.read:
                    # deflate without its zlib header, as many servers send it (httpx reads both): all of it again
                    self.inflater, self.raw, chunk = zlib.decompressobj(-zlib.MAX_WBITS), True, self.fed
                    continue
                raise BadBody(f"the reply's compressed body is damaged: {error}") from None
            yield piece
            chunk = self.inflater.unconsumed_tail
            if self.encoding == "gzip" and self.inflater.eof and self.inflater.unused_data:  # another member
                chunk, self.inflater = self.inflater.unused_data + chunk, zlib.decompressobj(_WBITS)

    def close(self) -> None:
        self.stream.close()


def is_dated(name: str, asked: str) -> bool:
    """Whether `name` is the model asked for with a date: OpenAI answers `gpt-4o` as `gpt-4o-2024-08-06`
    and `gpt-4` as `gpt-4-0613` (`gpt-4o-mini` is another model)."""
    return re.fullmatch(re.escape(asked) + r"-(\d{4}-\d{2}-\d{2}|\d{4})", name) is not None


def log_served(asked: str, served: Counter[str]) -> None:
    """Say which models the server named for its answers where one is not the model asked for: a note for a
    dated version of it, else a warning (a proxy's target or a server's other model answered)."""
    others = {name: count for name, count in served.items() if name != asked}
    if not others:
        return
    total = sum(served.values())
    names = ", ".join(f"{count} of {total} as {name!r}" for name, count in sorted(others.items()))
    dated = all(is_dated(name, asked) for name in others)
    log.log(
        logging.INFO if dated else logging.WARNING,
        "asked for model %r, the server answered %s%s", asked, names,
        "" if dated else ": another model than the configured one",
    )  # fmt: skip


_WBITS = 47  # a gzip or a zlib header, either


def _reply_json(response: Response, kept: Callable[[str], str]) -> object:
    """A reply's body as JSON (what the typed client decoded): Malformed where it is none, an HTML page of a
    proxy's (the status was 200) quoted."""
    try:
        return json.loads(response.content)
    except json.JSONDecodeError:
        text = response.content.decode("utf-8", "replace")
        raise Malformed(f"the reply is not the API's JSON: {clip(kept(text), 80)!r}") from None


def _field(value: object, name: str) -> object:
    """A field of a part of a reply's JSON; None where the part is no object (a list, a number, null)."""
    return value.get(name) if isinstance(value, dict) else None


def _carried_error(reply: object) -> str:
    """A server's own words where it answers a failure with status 200 and an `error` in the body
    (`{"error": {"message": "overloaded"}}`, as some proxies do), for the failure's message."""
    error = _field(reply, "error")
    message = _field(error, "message") if isinstance(error, dict) else error
    return f"; it carries an error: {message}" if isinstance(message, str) and message.strip() else ""


def _status_message(error: openai.APIStatusError) -> str:
    """openai's message of an HTTP error, and the body where it took nothing from it (`{"error": "boom"}`
    read `Error code: 500`, the server's words lost)."""
    message = str(error.message)
    body = error.response.text.strip() if error.response is not None else ""
    return f"{message} - {body}" if body and message == f"Error code: {error.status_code}" else message


def _retry_after(response) -> float | None:
    """Seconds from a Retry-After header: a number, or an HTTP date; None (back off) for anything else,
    `nan`, `-5` and `1e400` included (a server repeating one must not be asked again at once, or in 2 minutes)."""
    value = response.headers.get("retry-after") if response is not None else None
    if value is None:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # neither a number nor a date: "abc"
        return None
    return max(0.0, moment.timestamp() - time.time()) if moment else None
