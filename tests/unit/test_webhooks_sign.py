"""Standard Webhooks v1 signing: known vectors, round trip, tampering, tolerance, rotation."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from unigate.webhooks.signing import SignatureError, headers, new_message_id, sign, verify

# The example from the Standard Webhooks spec / reference library tests.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TS = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode()
NOW = 1_700_000_000
BODY = b'{"id":"task_1","status":"SUCCESS"}'


def test_spec_vector() -> None:
    assert sign(SPEC_SECRET, SPEC_ID, SPEC_TS, SPEC_BODY) == SPEC_SIG


def test_vector_computed_independently() -> None:
    key = base64.b64decode(SECRET[len("whsec_") :])
    mac = hmac.new(key, b"msg_abc.1700000000." + BODY, hashlib.sha256).digest()
    assert sign(SECRET, "msg_abc", NOW, BODY) == "v1," + base64.b64encode(mac).decode()
    # The prefix is optional, as in the reference library.
    assert sign(SECRET.removeprefix("whsec_"), "msg_abc", NOW, BODY) == sign(SECRET, "msg_abc", NOW, BODY)


def test_round_trip_headers() -> None:
    msg_id = new_message_id()
    h = headers(SECRET, msg_id, BODY, now=NOW)
    assert h["webhook-id"] == msg_id and h["webhook-timestamp"] == str(NOW)
    assert h["content-type"] == "application/json"
    assert h["webhook-signature"] == sign(SECRET, msg_id, NOW, BODY)
    verify(SECRET, h, BODY, now=NOW)
    verify(SECRET, {k.upper(): v for k, v in h.items()}, BODY, now=NOW + 299)  # case-insensitive


def test_message_ids_are_unique_and_dotless() -> None:
    ids = {new_message_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(i.startswith("msg_") and "." not in i for i in ids)


@pytest.mark.parametrize(
    "field, value",
    [("webhook-id", "msg_other"), ("webhook-timestamp", str(NOW + 1)), ("body", b'{"id":"task_2"}')],
)
def test_tampering_fails(field: str, value: object) -> None:
    h = headers(SECRET, "msg_abc", BODY, now=NOW)
    body = BODY
    if field == "body":
        assert isinstance(value, bytes)
        body = value
    else:
        assert isinstance(value, str)
        h[field] = value
    with pytest.raises(SignatureError):
        verify(SECRET, h, body, now=NOW)


def test_wrong_secret_fails() -> None:
    h = headers(SECRET, "msg_abc", BODY, now=NOW)
    with pytest.raises(SignatureError):
        verify(OTHER, h, BODY, now=NOW)


@pytest.mark.parametrize("skew", [301, -301, 10_000])
def test_timestamp_outside_tolerance_fails(skew: int) -> None:
    h = headers(SECRET, "msg_abc", BODY, now=NOW)
    with pytest.raises(SignatureError):
        verify(SECRET, h, BODY, now=NOW + skew)
    verify(SECRET, h, BODY, now=NOW + skew, tolerance=abs(skew))


def test_multiple_signatures_accepted() -> None:
    # Rotation: one header carries old and new signatures; either secret verifies.
    h = headers([OTHER, SECRET], "msg_abc", BODY, now=NOW)
    assert len(h["webhook-signature"].split(" ")) == 2
    verify(SECRET, h, BODY, now=NOW)
    verify(OTHER, h, BODY, now=NOW)
    # Unknown schemes and junk are skipped, a later v1 still matches.
    h["webhook-signature"] = "v1a,abc v1,bm90LWl0 " + sign(SECRET, "msg_abc", NOW, BODY)
    verify(SECRET, h, BODY, now=NOW)


@pytest.mark.parametrize(
    "h",
    [
        {},
        {"webhook-id": "msg_abc", "webhook-timestamp": str(NOW)},
        {"webhook-id": "msg_abc", "webhook-timestamp": "soon", "webhook-signature": "v1,x"},
        {"webhook-id": "msg.abc", "webhook-timestamp": str(NOW), "webhook-signature": "v1,x"},
        {"webhook-id": "msg_abc", "webhook-timestamp": str(NOW), "webhook-signature": "v2,x"},
    ],
)
def test_malformed_headers_fail(h: dict[str, str]) -> None:
    with pytest.raises(SignatureError):
        verify(SECRET, h, BODY, now=NOW)


@pytest.mark.parametrize("secret", ["", "whsec_", "whsec_!!!not-base64", "whsec_abc", "   "])
def test_empty_or_invalid_secret_raises(secret: str) -> None:
    with pytest.raises(ValueError) as info:
        sign(secret, "msg_abc", NOW, BODY)
    assert not isinstance(info.value, SignatureError)
    with pytest.raises(ValueError):
        headers(secret, "msg_abc", BODY, now=NOW)
    with pytest.raises(ValueError):
        verify(secret, headers(SECRET, "msg_abc", BODY, now=NOW), BODY, now=NOW)
    with pytest.raises(ValueError):
        headers([], "msg_abc", BODY, now=NOW)


@pytest.mark.parametrize("msg_id", ["", "msg.1", "a.b.c"])
def test_ids_with_dots_are_not_signed(msg_id: str) -> None:
    with pytest.raises(ValueError):
        sign(SECRET, msg_id, NOW, BODY)
