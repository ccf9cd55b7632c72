"""Turn a request's credentials into a `Principal`. Every accepted header form goes through
this one function, so scope checks can never differ between `Bearer` and `x-api-key`. The forms
are those the error styles' clients send (`edge/error_styles.py`: `KEY_FORMS`)."""

from __future__ import annotations

import time

from unigate.auth.cache import KeyCache
from unigate.auth.keys import hash_key, is_well_formed
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.error_styles import KEY_HEADERS, KEY_QUERY, KEY_SCHEMES
from unigate.errors import AuthenticationFailed, InvalidRequest


def extract_key(request: Request) -> str | None:
    """The presented key, from the first header form present (one pass over the headers);
    "" when an Authorization header is present but unusable."""
    auth: bytes | None = None
    alt: bytes | None = None
    for name, value in request.scope["headers"]:
        if name == b"authorization":
            if auth is not None:
                raise InvalidRequest("Duplicate Authorization headers.")
            auth = value
        elif alt is None and name in KEY_HEADERS:
            alt = value
    if auth is not None:
        scheme, _, rest = auth.decode("latin-1").strip().partition(" ")
        if scheme.lower() in KEY_SCHEMES and rest.strip():
            return rest.strip()
        return ""
    if alt is not None:
        return alt.decode("latin-1").strip()
    query = request.query
    return next((query[name] for name in KEY_QUERY if name in query), None)


async def authenticate(request: Request, cache: KeyCache) -> Principal:
    key = extract_key(request)
    if key is None:
        raise AuthenticationFailed(
            "Missing API key. Send it as 'Authorization: Bearer <key>'.", code="missing_api_key"
        )
    key_hash = hash_key(key)
    principal = cache.peek(key_hash)
    if principal is None:
        # Shape and checksum only matter for keys the cache does not know: a typo or a
        # scanner's guess is refused here without touching the database.
        if not is_well_formed(key):
            raise AuthenticationFailed("Malformed API key.", code="invalid_api_key")
        principal = await cache.lookup(key_hash)
        if principal is None:
            raise AuthenticationFailed("Invalid API key.", code="invalid_api_key")
    if principal.revoked_at is not None:
        raise AuthenticationFailed("This API key has been revoked.", code="revoked_api_key")
    if principal.expires_at is not None and principal.expires_at <= time.time():
        raise AuthenticationFailed("This API key has expired.", code="expired_api_key")
    return principal
