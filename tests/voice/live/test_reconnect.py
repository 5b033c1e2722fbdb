"""The reconnect policy alone: failure counts, backoff, the stable-period reset, 1007 refusals
(retry fresh, then without tail turns, then give up) and fatal failures."""

import pytest

from parla.voice.live.close_codes import ConnectionFailure
from parla.voice.live.reconnect import GiveUp, ReconnectPolicy, Retry

pytestmark = pytest.mark.tier("fast")

DROP = ConnectionFailure("transient", 1011, "close 1011: Internal error")
REFUSAL = ConnectionFailure("refused", 1007, "close 1007: bad field")
FATAL = ConnectionFailure("fatal", 1008, "close 1008: key", advice="check the API key")


def policy(attempts: int = 3) -> ReconnectPolicy:
    return ReconnectPolicy(attempts=attempts, delay=0.5, max_delay=3.0, stable_s=60.0)


def test_backoff_doubles_up_to_the_maximum_then_gives_up_after_the_attempts():
    p = policy(attempts=5)
    delays = [p.failed(DROP, lasted=None) for _ in range(5)]
    assert delays == [
        Retry(1, 0.5, False),
        Retry(2, 1.0, False),
        Retry(3, 2.0, False),
        Retry(4, 3.0, False),
        Retry(5, 3.0, False),
    ]
    assert p.failed(DROP, lasted=1.0) == GiveUp(
        "the Live API connection failed 6 times in a row (last: close 1011: Internal error); "
        "check the network, then start the conversation again"
    )


def test_a_connection_that_lasted_the_stable_period_starts_the_count_again():
    p = policy()
    p.failed(DROP, lasted=None)
    p.failed(DROP, lasted=10.0)
    assert p.failed(DROP, lasted=59.9) == Retry(3, 2.0, False)
    assert p.failed(DROP, lasted=60.0) == Retry(1, 0.5, False)


def test_a_connection_ended_as_asked_starts_the_counts_again():
    p = policy()
    p.failed(DROP, lasted=None)
    p.failed(REFUSAL, lasted=None)
    p.ended_as_asked()
    assert p.failures == 0 and p.refusals == 0 and p.seed_history
    assert p.failed(DROP, lasted=None) == Retry(1, 0.5, False)


def test_refusals_retry_fresh_then_without_history_then_give_up():
    p = policy(attempts=10)
    assert p.seed_history
    assert p.failed(REFUSAL, lasted=None) == Retry(1, 0.5, True)
    assert p.seed_history  # the first refusal: fresh, with the tail turns
    assert p.failed(REFUSAL, lasted=None) == Retry(2, 1.0, True)
    assert not p.seed_history  # the second: the memory block only
    assert p.failed(REFUSAL, lasted=None) == GiveUp(
        "the Live API refused the session three times (close 1007: bad field)"
    )


def test_another_failure_between_refusals_resets_the_refusal_count():
    p = policy(attempts=10)
    p.failed(REFUSAL, lasted=None)
    p.failed(REFUSAL, lasted=None)
    assert p.failed(DROP, lasted=None) == Retry(3, 2.0, False)
    assert p.refusals == 0 and p.seed_history
    assert isinstance(p.failed(REFUSAL, lasted=None), Retry)


def test_refusals_count_as_failures_too():
    p = policy(attempts=1)
    assert p.failed(REFUSAL, lasted=None) == Retry(1, 0.5, True)
    assert p.failed(REFUSAL, lasted=None) == GiveUp(
        "the Live API connection failed 2 times in a row (last: close 1007: bad field); "
        "check the network, then start the conversation again"
    )


def test_a_fatal_failure_gives_up_at_once_with_its_advice():
    p = policy()
    assert p.failed(FATAL, lasted=120.0) == GiveUp("check the API key")
    assert p.failures == 0
