"""The gate in front of the inspector: nothing is answered without the token.

- Every address starts with the token (`/<token>/...`); a request without it gets 403 and
  nothing of the page. The application sees the rest of the path (the token becomes its root path).
- A request that changes something (anything but GET and HEAD) must also carry the token in the
  `X-Parla-Token` header (htmx sends it) or in the form field `token` (the forms hold it), so a
  page of another site that learnt an address still cannot post to it from the user's browser.
- The Host must name this machine (127.0.0.1 or localhost), which defeats DNS rebinding.
- Every answer forbids scripts, styles and frames from anywhere but the inspector itself, keeps
  the address (with its token) out of Referer headers and out of caches.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .token import same_token

HEADER = "x-parla-token"
FIELD = "token"
_SAFE_METHODS = ("GET", "HEAD")
_LOCAL_HOSTS = ("127.0.0.1", "localhost")
# The forms post a title, a fact or a pin: far below this.
_MAX_FORM_BYTES = 64 * 1024

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        (
            b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
        ),
    ),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + SECURITY_HEADERS})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


class TokenGate:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = (_header(scope, b"host") or "").rsplit(":", 1)[0]
        if host not in _LOCAL_HOSTS:
            await _refuse(send, 403, "the inspector answers only at 127.0.0.1")
            return
        first, _, _ = scope["path"].lstrip("/").partition("/")
        if not same_token(first, self.token):
            await _refuse(send, 403, "this address needs the inspector's token: open the address `parla ui` prints")
            return
        if scope["method"] not in _SAFE_METHODS:
            checked = await self._checked_body(scope, receive, send)
            if checked is None:
                return
            receive = checked
        inner = dict(scope, root_path=scope.get("root_path", "") + "/" + first)

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), *SECURITY_HEADERS])
            await send(message)

        await self.app(inner, receive, secured)

    async def _checked_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The body, read once (it is small) to find the token when the header lacks it, and
        handed on unchanged; None when the request was refused."""
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > _MAX_FORM_BYTES:
                await _refuse(send, 413, "a form of the inspector is never this large")
                return None
            if not message.get("more_body"):
                break
        given = _header(scope, HEADER.encode())
        if given is None and (_header(scope, b"content-type") or "").startswith("application/x-www-form-urlencoded"):
            given = (parse_qs(body.decode("utf-8", "replace")).get(FIELD) or [None])[0]
        if not same_token(given, self.token):
            await _refuse(send, 403, "a change needs the token in the X-Parla-Token header or the form")
            return None
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                later: Message = await receive()  # the disconnect, when it comes
                return later
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        return replay
