"""`ParlaError`: the base of every failure Parla explains to its user in one line. Each package
keeps its own errors in its `errors.py`, all derived from this one; the command line prints a
`ParlaError` as one line and anything else as a traceback.

`ValueError` is left to programming errors and pydantic validators; a message meant for the user
travels in a `ParlaError`.
"""

from __future__ import annotations


class ParlaError(Exception):
    """A failure with a message for the user: what went wrong and what to do."""
