"""Turn a request's credentials into a `Principal`. Every accepted header form goes through
this one function, so scope checks can never differ between `Bearer` and `x-api-key`. The forms
are those the error styles' clients send (`edge/error_styles.py`: `KEY_FORMS`)."""

from __future__ import annotations

import time
from collections.abc import Callable

from unigate.auth.cache import KeyCache
from unigate.auth.keys import PREFIX, is_well_formed
from unigate.auth.principal import Principal
from unigate.edge.asgi import RawHeaders, Request, as_pairs
from unigate.edge.error_styles import KEY_HEADERS, KEY_QUERY, KEY_SCHEMES
from unigate.errors import AuthenticationFailed, InvalidRequest


def extract_key(request: Request) -> str | None:
    """The presented key, from the first header form present (one pass over the headers); an
    Authorization header without a usable scheme is refused saying how to send it."""
    headers = request.scope["headers"]
    try:
        auth, alt = _key_headers(headers)
    except TypeError:  # another server's pairs: typed once (edge/asgi.py's `as_pairs`)
        auth, alt = _key_headers(as_pairs(headers))
    if auth is not None:
        scheme, _, rest = auth.decode("latin-1").strip().partition(" ")
        if scheme.lower() in KEY_SCHEMES and rest.strip():
            return rest.strip()
        raise AuthenticationFailed(_unusable(scheme, rest), code="invalid_api_key")
    if alt is not None:
        return alt.decode("latin-1").strip()
    query = request.query
    return next((query[name] for name in KEY_QUERY if name in query), None)


def _key_headers(headers: RawHeaders) -> tuple[bytes | None, bytes | None]:
    """The Authorization header and the first other key header, in one pass; 400 for two
    Authorization headers."""
    auth: bytes | None = None
    alt: bytes | None = None
    for name, value in headers:
        if name == b"authorization":
            if auth is not None:
                raise InvalidRequest("Duplicate Authorization headers.")
            auth = value
        elif alt is None and name in KEY_HEADERS:
            alt = value
    return auth, alt


def _unusable(scheme: str, rest: str) -> str:
    """What is wrong with an Authorization header no scheme accepts (never quoting the key)."""
    if not rest.strip() and scheme.lower() in KEY_SCHEMES:
        return f"The Authorization header has no key after '{scheme}': send 'Authorization: Bearer <key>'."
    if not rest.strip():  # a bare key
        return (
            "The Authorization header has the key without its scheme: send 'Authorization: Bearer "
            f"{PREFIX}…' (with the word Bearer and a space before the key)."
        )
    # The scheme is named only when it is a known word: anything else may be part of a secret.
    shown = f" '{scheme}'" if scheme.lower() in ("basic", "digest", "negotiate", "apikey") else ""
    return (
        f"The Authorization scheme{shown} is not accepted: send 'Authorization: Bearer <key>' "
        "(or the header 'x-api-key: <key>')."
    )


def _malformed(key: str, is_admin_key: Callable[[str], bool] | None) -> str:
    if key.startswith("uga_") or (is_admin_key is not None and is_admin_key(key)):
        return (
            "Malformed API key: this is the gateway's admin key, which manages the gateway (/admin/*, "
            "the dashboard) but does not call models. Create an API key with `unigate keys create "
            "--name NAME` or POST /admin/keys, and send that one."
        )
    if not key.startswith(PREFIX):
        return (
            f"Malformed API key: unigate API keys start with '{PREFIX}' (this is not one: an upstream "
            "vendor's key goes in the gateway's config, not in requests). Create one with `unigate "
            "keys create --name NAME` or POST /admin/keys."
        )
    return (
        f"Malformed API key: a unigate API key is '{PREFIX}' and 49 letters and digits, and its "
        "checksum does not match; check that the whole key was copied."
    )


async def authenticate(
    request: Request, cache: KeyCache, is_admin_key: Callable[[str], bool] | None = None
) -> Principal:
    """The key's principal; `is_admin_key` lets a refusal say that the admin key was sent."""
    key = extract_key(request)
    if key is None:
        raise AuthenticationFailed(
            "Missing API key. Send it as 'Authorization: Bearer <key>'.", code="missing_api_key"
        )
    key_hash, principal = cache.peek_key(key)
    if principal is None:
        # Shape and checksum only matter for keys the cache does not know: a typo or a
        # scanner's guess is refused here without touching the database.
        if not is_well_formed(key):
            raise AuthenticationFailed(_malformed(key, is_admin_key), code="invalid_api_key")
        principal = await cache.lookup(key_hash)
        if principal is None:
            raise AuthenticationFailed("Invalid API key.", code="invalid_api_key")
    if principal.revoked_at is not None:
        raise AuthenticationFailed("This API key has been revoked.", code="revoked_api_key")
    if principal.expires_at is not None and principal.expires_at <= time.time():
        raise AuthenticationFailed("This API key has expired.", code="expired_api_key")
    return principal
