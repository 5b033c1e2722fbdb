"""A local emulator of the Gemini REST API (generateContent, batchEmbedContents) on 127.0.0.1,
so the real google-genai SDK runs unchanged against it.

It checks what the API checks that our code could get wrong (the key header, the model path, the
request fields), records every request, and is scripted per test: queued HTTP faults (status and
body as the API sends them), dropped connections (closed without an answer), queued replies for
generateContent, and malformed answers. A wrong key gets what the API answers: HTTP 400
INVALID_ARGUMENT "API key not valid" with the ErrorInfo reason API_KEY_INVALID; no key at all
gets 403 PERMISSION_DENIED.
Embeddings are deterministic hashed bags of words, so texts sharing words are similar.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def hashed_embedding(text: str, dim: int) -> list[float]:
    vector = np.zeros(dim, dtype=np.float64)
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    # The API does not normalise below 3072 dims: scale so the client has to.
    return (vector * 3.0).tolist()


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class GeminiRestEmulator:
    api_key: str = "test-key"
    requests: list[Request] = field(default_factory=list)
    faults: deque[tuple[int, str]] = field(default_factory=deque)
    replies: deque[dict[str, Any]] = field(default_factory=deque)
    malformed_embeddings: int = 0
    dropped: int = 0  # the next requests read and then closed without an answer
    # what GET models/{name} knows (`parla doctor` asks whether the Live model exists)
    models: set[str] = field(
        default_factory=lambda: {"gemini-2.5-flash-native-audio-preview-09-2025", "gemini-2.5-flash-lite"}
    )
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- scripting ---------------------------------------------------------------------------

    def fail_next(self, status: int, times: int = 1, message: str = "scripted fault") -> None:
        for _ in range(times):
            self.faults.append((status, message))

    def drop_next(self, times: int = 1) -> None:
        with self._lock:
            self.dropped += times

    def reply_text(self, *texts: str) -> None:
        for text in texts:
            self.replies.append(
                {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}
            )

    def reply_raw(self, body: dict[str, Any]) -> None:
        self.replies.append(body)

    def calls(self, suffix: str) -> list[Request]:
        return [r for r in self.requests if r.path.endswith(suffix)]

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> GeminiRestEmulator:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.do_POST()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                answer = emulator._handle(self.command, self.path, dict(self.headers), raw)
                if answer is None:  # dropped: closed without a response
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                status, body = answer
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- the API -----------------------------------------------------------------------------

    def _handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, Any]] | None:
        with self._lock:
            body = json.loads(raw or b"{}")
            self.requests.append(Request(method, path, {k.lower(): v for k, v in headers.items()}, body))
            if self.dropped:
                self.dropped -= 1
                return None
            if self.faults:
                status, message = self.faults.popleft()
                return status, self._error(status, message)
        key = {k.lower(): v for k, v in headers.items()}.get("x-goog-api-key")
        if not key:
            return 403, self._error(403, "Method doesn't allow unregistered callers. Please use an API key.")
        if key != self.api_key:
            body = self._error(400, "API key not valid. Please pass a valid API key.")
            body["error"]["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"},
                }
            ]
            return 400, body
        got = re.fullmatch(r"/v1(?:beta|alpha)?/models/([\w.-]+)", path.split("?")[0])
        if method == "GET" and got:
            if got.group(1) not in self.models:
                return 404, self._error(404, f"models/{got.group(1)} is not found for API version v1beta")
            return 200, {"name": f"models/{got.group(1)}", "displayName": got.group(1), "version": "001"}
        match = re.fullmatch(r"/v1(?:beta|alpha)?/models/([\w.-]+):(\w+)", path.split("?")[0])
        if not match:
            return 404, self._error(404, f"unknown path {path}")
        model, verb = match.groups()
        if verb == "batchEmbedContents":
            return self._embed(model, body)
        if verb == "generateContent":
            return self._generate(body)
        return 404, self._error(404, f"unknown method {verb}")

    @staticmethod
    def _error(status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}

    def _embed(self, model: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, self._error(400, "requests must be a non-empty list")
        if len(requests) > 100:
            return 400, self._error(400, "at most 100 requests can be in one batch")
        embeddings = []
        for r in requests:
            if r.get("model") != f"models/{model}":
                return 400, self._error(400, f"request model {r.get('model')} differs from {model}")
            if r.get("taskType") not in ("RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY", "SEMANTIC_SIMILARITY", None):
                return 400, self._error(400, f"bad taskType {r.get('taskType')}")
            text = "".join(p.get("text", "") for p in r["content"]["parts"])
            embeddings.append({"values": hashed_embedding(text, int(r.get("outputDimensionality") or 3072))})
        with self._lock:
            if self.malformed_embeddings:
                self.malformed_embeddings -= 1
                embeddings = embeddings[:-1]
        return 200, {"embeddings": embeddings}

    def _generate(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not body.get("contents"):
            return 400, self._error(400, "contents is required")
        with self._lock:
            if self.replies:
                return 200, self.replies.popleft()
        prompt = "".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []))
        text = "Summary: " + " ".join(prompt.split()[:40])
        return 200, {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}
