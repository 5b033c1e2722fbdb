"""How `--help` reads: sentences wrapped by the terminal, not where the docstring's lines end, and
no value type after an option that takes no value.

typer's rich help keeps a docstring's single line breaks in the command list and in later
paragraphs, so a summary written over two source lines breaks mid-phrase; and it prints a type
(`<bool>`, `<int>`) after flags and counters, which take no value. Every command and group is
registered through `command_help` and these classes instead."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from typer.core import TyperCommand, TyperGroup


def command_help(doc: str | None) -> str:
    """A help text with each prose paragraph on one line (the terminal wraps it); a paragraph that
    starts with click's `\\b` marker is kept line by line, as written, without the marker."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(
        p.removeprefix("\b").strip("\n") if p.startswith("\b") else " ".join(p.split()) for p in paragraphs
    )


def _no_type_after_flags(params: list[Any]) -> list[Any]:
    # typer's options are its own classes (newer typer ships its own copy of click): by their fields
    for param in params:
        takes_no_value = getattr(param, "is_flag", False) or getattr(param, "count", False)
        if takes_no_value and param.metavar is None:
            param.metavar = ""  # what the help shows in place of the type
    return params


class HelpCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _no_type_after_flags(super().get_params(ctx))


class HelpGroup(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _no_type_after_flags(super().get_params(ctx))


def registered(fn: Callable[..., Any]) -> dict[str, Any]:
    """The keyword arguments that register `fn` as a command with this help."""
    return {"cls": HelpCommand, "help": command_help(fn.__doc__)}
