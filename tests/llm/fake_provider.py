"""A fake OpenAI-compatible chat server on loopback, for fault tests through the real litellm path.

Each request to ``POST <api_base>/chat/completions`` takes the next queued reply (or, when the queue
is empty, the default answer) and is counted, so tests compare the HTTP requests the server saw
with the attempts the trace records::

    with FakeProvider() as server:
        server.queue(Reply.error(429, headers={"Retry-After": "1"}), Reply.answer("ok"))
        litellm.completion(model="openai/fake-model", api_base=server.api_base, api_key="sk-fake", ...)
        assert server.count == 2

Set ``OPENAI_API_BASE=server.api_base`` (and any ``OPENAI_API_KEY``) for sub-runs: litellm reads both.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: The body OpenAI sends when the prompt does not fit the model's context.
CONTEXT_LENGTH_BODY = {"error": {
    "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
               "tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


@dataclass(frozen=True)
class Reply:
    """What the server does with one request."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0  # seconds to wait before answering (cut short when the server stops)

    @classmethod
    def answer(cls, text: str | None = "fake answer", *, model: str = "fake-model-0613", prompt_tokens: int = 10,
               completion_tokens: int = 5, choices: bool = True) -> "Reply":
        """A chat completion; ``text=None`` is a null content, ``choices=False`` an empty choice list."""
        message = {"role": "assistant", "content": text}
        body = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}] if choices else [],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}
        return cls(200, json.dumps(body).encode(), {"Content-Type": "application/json"})

    @classmethod
    def error(cls, status: int, message: str = "fake failure", *, headers: dict[str, str] | None = None,
              body: dict[str, Any] | None = None) -> "Reply":
        payload = body or {"error": {"message": message, "type": "server_error", "code": None}}
        return cls(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})

    @classmethod
    def malformed(cls) -> "Reply":
        """A 200 whose JSON body is cut off."""
        return cls(200, b'{"id": "chatcmpl-fake", "choices": [{"mess', {"Content-Type": "application/json"})

    @classmethod
    def stalled(cls, seconds: float) -> "Reply":
        """No answer for ``seconds`` (longer than the client's timeout), then a normal one."""
        return cls(**{**vars(cls.answer("too late")), "stall": seconds})


def refused_base() -> str:
    """A base URL on loopback where nothing listens: a request sent there is refused at once, so a
    test can point litellm's default there and see that a call went to its server and nowhere else."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class FakeProvider:
    """The server, in a daemon thread on 127.0.0.1 at a free port; a context manager."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply.answer()
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []  # the JSON body of every request, in order
        self.authorizations: list[str | None] = []  # the Authorization header of every request, in order
        self.paths: list[str] = []  # the path every request was sent to, in order
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       name="fake-provider", daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def queue(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def next_reply(self, body: dict[str, Any], authorization: str | None = None, path: str = "") -> Reply:
        with self.lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            self.paths.append(path)
            return self.replies.pop(0) if self.replies else self.default

    def __enter__(self) -> "FakeProvider":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def _handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            reply = fake.next_reply(body, self.headers.get("Authorization"), self.path)
            if reply.stall and fake.stopping.wait(reply.stall):
                return
            try:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except OSError:  # the client gave up (its timeout) before the answer came
                pass

        def log_message(self, *args: Any) -> None:
            """Quiet: tests read ``fake.requests``, not a log."""

    return Handler
