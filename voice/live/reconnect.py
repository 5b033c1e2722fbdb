"""When to reconnect a Live conversation, after how long, and when to give up: counts and arithmetic
only (no clock, no socket), so each rule is tested alone.

- A failure reconnects after `delay` doubling per failure in a row, up to `max_delay`. After
  `attempts` failures in a row the conversation gives up; a connection that lasted `stable_s`
  starts the count again, and so does a connection that ended because we asked (GoAway, a switch).
- A refusal (close 1007) is never resent: the next session starts fresh from the store, the second
  refusal in a row starts with the memory block only (no tail turns), the third gives up.
- A fatal failure (a policy close, a refused handshake, an untrusted certificate) gives up at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .close_codes import ConnectionFailure


@dataclass(frozen=True)
class Retry:
    attempt: int  # failures in a row, this one included
    delay: float  # seconds before the next connection
    fresh: bool  # the server refused what the session carried: drop the handle, start fresh


@dataclass(frozen=True)
class GiveUp:
    message: str  # for the user: why the conversation cannot go on and what to do


@dataclass
class ReconnectPolicy:
    attempts: int
    delay: float
    max_delay: float
    stable_s: float
    failures: int = field(default=0, init=False)  # connection failures in a row
    refusals: int = field(default=0, init=False)  # 1007 closes in a row

    @property
    def seed_history(self) -> bool:
        """Whether a fresh session carries the tail turns: not after two refusals in a row, since
        what the server refused may be in them."""
        return self.refusals < 2

    def ended_as_asked(self) -> None:
        """A connection closed because we asked (GoAway, a switch): nothing failed."""
        self.failures = self.refusals = 0

    def failed(self, failure: ConnectionFailure, lasted: float | None) -> Retry | GiveUp:
        """A connection failed after `lasted` seconds (None: it never opened)."""
        if failure.kind == "fatal":
            assert failure.advice is not None
            return GiveUp(failure.advice)
        if lasted is not None and lasted >= self.stable_s:
            self.failures = 0
        self.failures += 1
        if failure.kind == "refused":
            self.refusals += 1
            if self.refusals >= 3:
                return GiveUp(f"the Live API refused the session three times ({failure.reason})")
        else:
            self.refusals = 0
        if self.failures > self.attempts:
            return GiveUp(
                f"the Live API connection failed {self.failures} times in a row (last: {failure.reason}); "
                "check the network, then start the conversation again"
            )
        delay = min(self.delay * 2 ** (self.failures - 1), self.max_delay)
        return Retry(self.failures, delay, fresh=failure.kind == "refused")
