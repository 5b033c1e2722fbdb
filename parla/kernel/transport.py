"""How a call to a Google API fails when the API cannot be reached, whichever transport the
google-genai SDK found."""

from __future__ import annotations

import importlib
from contextlib import suppress


def transport_errors() -> tuple[type[Exception], ...]:
    """google-genai sends through httpx or its fork httpx2, whichever it finds; OSError and
    TimeoutError cover its optional aiohttp transport."""
    found: list[type[Exception]] = [OSError, TimeoutError]
    for name in ("httpx", "httpx2"):
        with suppress(ImportError):
            found.append(importlib.import_module(name).TransportError)
    return tuple(found)
