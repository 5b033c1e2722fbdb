"""Close-code classification alone: what each way a Live connection ends means for the
conversation (reconnect, start fresh, or give up with advice), and the reason in words."""

import ssl

import pytest
from google.genai import errors
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.frames import Close
from websockets.http11 import Response

from parla.voice.errors import SetupTimeout, UnreadableMessage
from parla.voice.live.close_codes import classify, close_code, failure_reason

pytestmark = pytest.mark.tier("fast")


def closed(code: int, reason: str) -> ConnectionClosed:
    return ConnectionClosed(Close(code, reason), None)


def refused_upgrade(status: int) -> InvalidStatus:
    return InvalidStatus(Response(status, "refused", Headers(), b""))


def sdk_close(code: int, message: str) -> errors.APIError:
    return errors.APIError(code, {"error": {"message": message}})


def test_a_drop_without_a_close_frame_is_1006_and_transient():
    failure = classify(ConnectionClosed(None, None))
    assert (failure.kind, failure.code, failure.reason) == ("transient", 1006, "connection lost (1006)")


@pytest.mark.parametrize("exc", [closed(1011, "Internal error"), sdk_close(1011, "Internal error")])
def test_an_internal_error_close_is_transient_with_the_servers_reason(exc):
    failure = classify(exc)
    assert (failure.kind, failure.code, failure.reason) == ("transient", 1011, "close 1011: Internal error")
    assert failure.advice is None and failure.expected


@pytest.mark.parametrize("exc", [closed(1007, "Invalid JSON payload"), sdk_close(1007, "Invalid JSON payload")])
def test_1007_is_a_refusal(exc):
    failure = classify(exc)
    assert (failure.kind, failure.code) == ("refused", 1007)
    assert failure.reason == "close 1007: Invalid JSON payload"


def test_a_policy_close_is_fatal_and_says_what_to_check():
    failure = classify(closed(1008, "API key not valid"))
    assert failure.kind == "fatal" and failure.code == 1008
    assert failure.advice is not None
    assert "refused the session (close 1008: API key not valid)" in failure.advice
    assert "PARLA_LIVE_MODEL" in failure.advice


def test_a_policy_close_for_an_unknown_model_names_a_model_to_use():
    failure = classify(closed(1008, "models/nope is not found for API version v1beta"))
    assert failure.kind == "fatal" and failure.advice is not None
    assert "models/nope is not found" in failure.advice and "set PARLA_LIVE_MODEL" in failure.advice


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_a_refused_handshake_is_fatal(status):
    failure = classify(refused_upgrade(status))
    assert failure.kind == "fatal" and failure.code is None
    assert (
        failure.advice == f"the server refused the connection with HTTP {status}; check the API key and PARLA_LIVE_URL"
    )


def test_429_is_transient_and_says_the_quota_is_exhausted():
    failure = classify(refused_upgrade(429))
    assert failure.kind == "transient"
    assert failure.reason == (
        "the server refused the connection with HTTP 429 "
        "(quota or rate limit exhausted; see the key's limits in Google AI Studio)"
    )


def test_an_untrusted_certificate_is_fatal():
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_message = "self-signed certificate"
    failure = classify(error)
    assert failure.kind == "fatal"
    assert failure.advice == (
        "the Live API's TLS certificate was not trusted (self-signed certificate); check PARLA_LIVE_URL"
    )


@pytest.mark.parametrize(
    "exc",
    [SetupTimeout("no setup within 5s"), UnreadableMessage("a message could not be read"), OSError("reset")],
)
def test_timeouts_unreadable_messages_and_socket_errors_are_expected_and_transient(exc):
    failure = classify(exc)
    assert failure.kind == "transient" and failure.expected and close_code(exc) is None


def test_an_unexpected_exception_is_transient_but_marked_unexpected():
    failure = classify(KeyError("field"))
    assert failure.kind == "transient" and not failure.expected
    assert failure_reason(KeyError("field")) == "KeyError: 'field'"
