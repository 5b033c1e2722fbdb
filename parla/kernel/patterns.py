"""Regular expressions compiled when first matched, not when their module is imported: the store
imports the rule modules (importance, durable, profile) that hold dozens of long alternations,
and the commands that only read it (`parla chats`, `stats`, `show`) never match one."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache


def lazy_pattern(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """`lazy_pattern(p, f)()` is `re.compile(p, f)`, compiled once, on the first call."""
    return cache(lambda: re.compile(pattern, flags))
