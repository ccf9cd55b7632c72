"""Key format: `ugk_` + 43 base62 characters (32 random bytes) + 6 base62 characters of CRC32.

The checksum lets typos and scanners be caught offline, before any lookup. Keys are stored
only as SHA-256 hex digests; the plain key exists once, in the creation response.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import zlib

PREFIX = "ugk_"
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_RANDOM_LEN = 43
_CHECK_LEN = 6
KEY_RE = re.compile(rf"^{PREFIX}[0-9A-Za-z]{{{_RANDOM_LEN + _CHECK_LEN}}}$")


def _base62(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        value, rem = divmod(value, 62)
        out.append(_ALPHABET[rem])
    return "".join(reversed(out))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), _CHECK_LEN)


def generate_key() -> str:
    body = _base62(int.from_bytes(secrets.token_bytes(32), "big"), _RANDOM_LEN)
    return PREFIX + body + _checksum(body)


def is_well_formed(key: str) -> bool:
    """Shape and checksum; constant work for every input of the right length."""
    if not KEY_RE.match(key):
        return False
    body, check = key[len(PREFIX) : -_CHECK_LEN], key[-_CHECK_LEN:]
    return secrets.compare_digest(_checksum(body), check)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def display_prefix(key: str) -> str:
    """A non-secret hint shown in listings (like `ugk_AbC4…`)."""
    return key[: len(PREFIX) + 4] + "…"


def new_key_id() -> str:
    return "key_" + secrets.token_hex(8)


def new_webhook_secret() -> str:
    """Standard Webhooks secret: `whsec_` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
