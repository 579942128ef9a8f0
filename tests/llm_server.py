"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests: chat and completions APIs.

Replies are scripted per prompt substring (the latest matching script wins) and consumed
in order (the last one repeats):
a string is the answer text; `Status(code, headers, message)` answers with an HTTP error; `Slow(seconds,
text, released)` answers late (at once when `released` is set); `Echo(text)` puts the request's API key where `{key}` stands (a proxy that echoes
it); `Padded(text, size)` pads an answer to `size` bytes of body, streamed; `Raw(body)` sends a body as it
is; `Trickle(text, seconds)` sends an answer's body a few bytes at a time. Every request is counted.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Status:
    code: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str | None = None  # the error's message; `{key}` stands for the request's API key


@dataclass
class Echo:
    text: str  # `{key}` stands for the request's API key


@dataclass
class Padded:
    """An answer `text` padded with spaces to a body of `size` bytes, sent in 64 KiB pieces as it is
    made (the server never holds it), with a Content-Length only when `declared`."""

    text: str
    size: int
    declared: bool = True


@dataclass
class Slow:
    seconds: float
    text: str
    released: threading.Event | None = None  # set, it answers at once: a test's gate, not a race with a clock


@dataclass
class Raw:
    """A reply body sent as it is, with status 200 unless told: null content, HTML, truncated JSON."""

    body: str | bytes
    content_type: str = "application/json"
    code: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Trickle:
    """An answer whose body arrives 8 bytes at a time over `seconds` (a server that never stalls long
    enough for a read's timeout)."""

    text: str
    seconds: float


def reply_json(body: dict) -> Raw:
    return Raw(json.dumps(body))


def completion(text: str, chat: bool, model: str, finish_reason: str = "stop") -> dict:
    choice = {"index": 0, "finish_reason": finish_reason}
    choice |= {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
    kind = "chat.completion" if chat else "text_completion"
    return {"id": "x", "object": kind, "created": 0, "model": model, "choices": [choice]}


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # many clients at once (the default, 5, refuses connections)
    daemon_threads = True


class LLMServer:
    def __init__(self, default: Callable[[str], str] = lambda prompt: "no script for this prompt"):
        self.default = default
        self.scripts: list[tuple[str, list]] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.httpd = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def script(self, match: str, *replies) -> None:
        self.scripts.append((match, list(replies)))

    def reply_for(self, prompt: str):
        with self.lock:
            for match, replies in reversed(self.scripts):  # the latest script wins
                if match in prompt:
                    return replies.pop(0) if len(replies) > 1 else replies[0]
        return self.default(prompt)

    def __enter__(self) -> LLMServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                chat = self.path.endswith("/chat/completions")
                prompt = body["messages"][-1]["content"] if chat else body["prompt"]
                with server.lock:
                    server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                reply = server.reply_for(prompt)
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                if isinstance(reply, Status):
                    message = (reply.message or f"scripted {reply.code}").replace("{key}", key)
                    return self._send(reply.code, {"error": {"message": message}}, reply.headers)
                if isinstance(reply, Padded):
                    return self._send_padded(reply, chat, body["model"])
                if isinstance(reply, Echo):
                    reply = reply.text.replace("{key}", key)
                if isinstance(reply, Raw):
                    body = reply.body.encode() if isinstance(reply.body, str) else reply.body
                    return self._send_bytes(reply.code, body, {"Content-Type": reply.content_type, **reply.headers})
                if isinstance(reply, Trickle):
                    return self._send_trickle(json.dumps(completion(reply.text, chat, body["model"])), reply.seconds)
                if isinstance(reply, Slow):
                    if reply.released:
                        reply.released.wait(reply.seconds)
                    else:
                        time.sleep(reply.seconds)
                    reply = reply.text
                self._send(200, completion(reply, chat, body["model"]))

            def _send_padded(self, reply: Padded, chat: bool, model: str):
                head, tail = json.dumps(completion(reply.text + "\0", chat, model)).split("\\u0000")
                spaces = reply.size - len(head.encode()) - len(tail.encode())
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if reply.declared:
                        self.send_header("Content-Length", str(reply.size))
                    self.end_headers()
                    self.wfile.write(head.encode())
                    for start in range(0, spaces, 65536):
                        self.wfile.write(b" " * min(65536, spaces - start))
                    self.wfile.write(tail.encode())
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                    pass

            def _send_trickle(self, text: str, seconds: float):
                pieces = [text[start : start + 8].encode() for start in range(0, len(text), 8)]
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(sum(map(len, pieces))))
                    self.end_headers()
                    for piece in pieces:
                        self.wfile.write(piece)
                        self.wfile.flush()
                        time.sleep(seconds / len(pieces))
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its deadline)
                    pass

            def _send(self, code: int, payload: dict, headers: dict | None = None):
                self._send_bytes(
                    code, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}
                )

            def _send_bytes(self, code: int, data: bytes, headers: dict):
                try:
                    self.send_response(code)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        return Handler
