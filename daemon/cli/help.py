"""How `--help` reads: sentences wrapped by the terminal, not where the docstring's lines end, no
value type after an option that takes no value, and arguments named in capitals.

typer's rich help keeps a docstring's single line breaks in the command list and in later
paragraphs, so a summary written over two source lines breaks mid-phrase; it prints a type
(`<bool>`, `<int>`) after flags and counters, which take no value; and its usage line wraps a
required argument in braces (`parla show [OPTIONS] {chat}`) where the guides, the reference and
the messages write `CHAT`. Every command and group is registered through `command_help` and these
classes instead."""

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


def argument_name(param: Any) -> str:
    """An argument as the usage line and the reference name it: `CHAT`, `CHATS...`."""
    return param.name.upper() + ("..." if param.nargs == -1 else "")


def usage_arguments(params: list[Any]) -> list[str]:
    """The arguments of a usage line: `CHAT`, or `[CHATS...]` when it may be left out."""
    names = [(argument_name(p), p.required) for p in params if p.param_type_name == "argument"]
    return [name if required else f"[{name}]" for name, required in names]


def _conventional(params: list[Any]) -> list[Any]:
    # typer's options are its own classes (newer typer ships its own copy of click): by their fields
    for param in params:
        takes_no_value = getattr(param, "is_flag", False) or getattr(param, "count", False)
        if takes_no_value and param.metavar is None:
            param.metavar = ""  # what the help shows in place of the type
        if param.param_type_name == "argument" and param.metavar is None:
            param.metavar = argument_name(param)  # the help's list and "Missing argument 'CHAT'"
    return params


class HelpCommand(TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _conventional(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return ([self.options_metavar] if self.options_metavar else []) + usage_arguments(self.get_params(ctx))


class HelpGroup(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _conventional(super().get_params(ctx))


def registered(fn: Callable[..., Any]) -> dict[str, Any]:
    """The keyword arguments that register `fn` as a command with this help."""
    return {"cls": HelpCommand, "help": command_help(fn.__doc__)}
