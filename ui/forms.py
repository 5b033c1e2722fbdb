"""Reading the inspector's forms, and the one-line errors its pages show."""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.requests import Request

from parla.kernel.errors import ParlaError


async def form_fields(request: Request) -> dict[str, str]:
    # the pages post urlencoded forms only (no uploads): no multipart parser needed
    return dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))


def one_line(e: Exception) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def number(form: dict[str, str], key: str) -> float:
    try:
        return float(form.get(key, "5"))
    except ValueError:
        raise ParlaError(f"{key} is a number from 0 to 10") from None
