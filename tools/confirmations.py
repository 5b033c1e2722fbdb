"""The user's spoken yes before a tool changes something for good (delete_chat, an MCP tool that
is not read-only): the first call gets a confirmation, the model asks the user, and only a second
call with that confirmation acts. A confirmation names what it is for, is used once and lapses."""

from __future__ import annotations

import secrets
import time


class Confirmations:
    def __init__(self, lapse_s: float) -> None:
        self.lapse_s = lapse_s
        self._issued: dict[str, tuple[str, float]] = {}  # confirmation -> (what it is for, issued at)

    def take(self, confirmation: str | None, subject: str) -> bool:
        """True, once, when `confirmation` was issued for `subject` and has not lapsed."""
        now = time.monotonic()
        self._issued = {k: v for k, v in self._issued.items() if now - v[1] < self.lapse_s}
        issued = self._issued.get(confirmation or "")
        if issued is None or issued[0] != subject:
            return False
        del self._issued[confirmation or ""]
        return True

    def issue(self, subject: str) -> str:
        confirmation = secrets.token_hex(4)
        self._issued[confirmation] = (subject, time.monotonic())
        return confirmation
