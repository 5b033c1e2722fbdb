"""What the inspector's application (`ui.app.Inspector`) hands the pages it serves beside its own
(`ui.profile`, `ui.reminders`): the renderer of a page and the redirect back to one after a change
(post/redirect/get), with a one-line note of what was done or why not."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response


class RenderPage(Protocol):
    """`template` rendered as a page of the inspector with `values` (`Inspector.page`)."""

    def __call__(
        self, request: Request, template: str, status_code: int = 200, **values: object
    ) -> Awaitable[HTMLResponse]: ...


def back(request: Request, path: str, *, note: str | None = None, error: str | None = None) -> Response:
    """A redirect to the inspector's page at `path`, which shows `note` or `error`."""
    query = {k: v for k, v in (("note", note), ("error", error)) if v}
    url = request.scope.get("root_path", "") + path + (f"?{urlencode(query)}" if query else "")
    return RedirectResponse(url, status_code=303)
