"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests: chat and completions APIs.

Replies are scripted per prompt substring (the latest matching script wins) and consumed
in order (the last one repeats):
a string is the answer text; `Status(code, headers)` answers with an HTTP error; `Slow(seconds,
text)` answers late. Every request is counted.
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


@dataclass
class Slow:
    seconds: float
    text: str


@dataclass
class Raw:
    """A reply body sent as it is, with status 200 unless told: null content, HTML, truncated JSON."""

    body: str
    content_type: str = "application/json"
    code: int = 200


def reply_json(body: dict) -> Raw:
    return Raw(json.dumps(body))


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
                if isinstance(reply, Status):
                    return self._send(reply.code, {"error": {"message": f"scripted {reply.code}"}}, reply.headers)
                if isinstance(reply, Raw):
                    return self._send_bytes(reply.code, reply.body.encode(), {"Content-Type": reply.content_type})
                if isinstance(reply, Slow):
                    time.sleep(reply.seconds)
                    reply = reply.text
                choice = {"index": 0, "finish_reason": "stop"}
                choice |= {"message": {"role": "assistant", "content": reply}} if chat else {"text": reply}
                kind = "chat.completion" if chat else "text_completion"
                self._send(200, {"id": "x", "object": kind, "created": 0, "model": body["model"], "choices": [choice]})

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
