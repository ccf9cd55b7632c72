"""Standard Webhooks v1 signing and verification (https://www.standardwebhooks.com/).

The signed content is `{msg_id}.{timestamp}.{raw body}`; the signature header is a space-separated
list of `v1,<base64 HMAC-SHA256>` so a secret rotation can sign with old and new key at once.
Secrets are `whsec_` + base64 of the raw key. `verify` is the receiver-side check we document for
users: constant-time comparison and a +/- 5 minute timestamp tolerance.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping, Sequence

SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE = 300


class SignatureError(ValueError):
    """The webhook's signature headers are missing, malformed, stale or do not match."""


def new_message_id() -> str:
    """A server-generated id: stable per event across retries, never contains a `.` (it would
    make the signed string ambiguous), and never derived from user data."""
    return "msg_" + secrets.token_hex(16)


def _key(secret: str) -> bytes:
    # Accept the secret with or without `whsec_`, like the reference library. An empty key would
    # make signatures forgeable by anyone, so it is an error, never a silent default.
    if not isinstance(secret, str) or not secret:
        raise ValueError("webhook secret is empty")
    raw = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("webhook secret is not valid base64") from None
    if not key:
        raise ValueError("webhook secret is empty")
    return key


def _check_id(msg_id: str) -> None:
    if not msg_id or "." in msg_id:
        raise ValueError("webhook message id must be non-empty and contain no '.'")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """Return `v1,<base64 HMAC-SHA256 of "{msg_id}.{timestamp}." + body>`."""
    key = _key(secret)
    _check_id(msg_id)
    signed = f"{msg_id}.{int(timestamp)}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def headers(
    secret: str | Sequence[str], msg_id: str, body: bytes, now: float | None = None
) -> dict[str, str]:
    """Headers for one delivery attempt. `webhook-timestamp` is the time of *this* attempt;
    `msg_id` stays the same across retries. Several secrets (rotation) give several signatures."""
    timestamp = int(time.time() if now is None else now)
    keys = [secret] if isinstance(secret, str) else list(secret)
    if not keys:
        raise ValueError("webhook secret is empty")
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(k, msg_id, timestamp, body) for k in keys),
        "content-type": "application/json",
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> None:
    """Check a received webhook; raise `SignatureError` unless one `v1` signature matches and the
    timestamp is within `tolerance` seconds of `now`. `body` must be the raw bytes received.

    Raises `ValueError` (not `SignatureError`) when `secret` itself is unusable.
    """
    _key(secret)  # fail on an unusable secret before looking at attacker-controlled input
    lowered = {k.lower(): v for k, v in headers.items()}
    msg_id = lowered.get("webhook-id", "")
    ts_text = lowered.get("webhook-timestamp", "")
    sig_header = lowered.get("webhook-signature", "")
    if not msg_id or not ts_text or not sig_header:
        raise SignatureError("missing webhook headers")
    if "." in msg_id:
        raise SignatureError("invalid webhook-id")
    try:
        timestamp = int(ts_text)
    except ValueError:
        raise SignatureError("invalid webhook-timestamp") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise SignatureError("webhook-timestamp outside the tolerance window")
    expected = sign(secret, msg_id, timestamp, body).encode()
    matched = False
    for candidate in sig_header.split(" "):
        if not candidate.startswith("v1,"):
            continue  # other schemes (e.g. v1a) are not ours to judge
        # Compare every candidate (no early exit) with a constant-time primitive.
        matched |= hmac.compare_digest(candidate.encode(), expected)
    if not matched:
        raise SignatureError("no matching webhook signature")
