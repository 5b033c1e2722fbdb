"""The tools' errors."""

from __future__ import annotations

from parla.kernel.errors import ParlaError


class ToolError(ParlaError):
    """A failure the model should hear about, in words it can pass on."""
