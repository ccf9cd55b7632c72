"""Turn a request's credentials into a `Principal`. Every accepted header form goes through
this one function, so scope checks can never differ between `Bearer` and `x-api-key`."""

from __future__ import annotations

import time

from unigate.asgi import Request
from unigate.auth.cache import KeyCache
from unigate.auth.keys import hash_key, is_well_formed
from unigate.auth.principal import Principal
from unigate.errors import AuthenticationFailed, InvalidRequest

# Header forms other vendors' SDKs send (reference/protocols.md §1.1).
_ALT_HEADERS = (b"x-api-key", b"x-goog-api-key")


def extract_key(request: Request) -> str | None:
    if request.header_count(b"authorization") > 1:
        raise InvalidRequest("Duplicate Authorization headers.")
    auth = request.header(b"authorization")
    if auth is not None:
        scheme, _, value = auth.decode("latin-1").strip().partition(" ")
        if scheme.lower() in ("bearer", "token") and value.strip():
            return value.strip()
        return ""  # present but unusable: malformed, not missing
    for name in _ALT_HEADERS:
        value_b = request.header(name)
        if value_b is not None:
            return value_b.decode("latin-1").strip()
    return request.query.get("key")


async def authenticate(request: Request, cache: KeyCache) -> Principal:
    key = extract_key(request)
    if key is None:
        raise AuthenticationFailed(
            "Missing API key. Send it as 'Authorization: Bearer <key>'.", code="missing_api_key"
        )
    if not is_well_formed(key):
        raise AuthenticationFailed("Malformed API key.", code="invalid_api_key")
    key_hash = hash_key(key)
    principal = cache.peek(key_hash) or await cache.lookup(key_hash)
    if principal is None:
        raise AuthenticationFailed("Invalid API key.", code="invalid_api_key")
    if principal.revoked_at is not None:
        raise AuthenticationFailed("This API key has been revoked.", code="revoked_api_key")
    if principal.expires_at is not None and principal.expires_at <= time.time():
        raise AuthenticationFailed("This API key has expired.", code="expired_api_key")
    return principal
