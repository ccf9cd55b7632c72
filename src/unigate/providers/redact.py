"""Keeping the gateway's upstream credentials out of what upstreams say back.

Upstreams echo what they received in their error answers (a 400 quoting the `Authorization`
header, a proxy repeating `?key=`), and the gateway relays upstream errors to its clients.
So every upstream error the gateway passes on or logs is scrubbed of the provider's secrets:

- in transport (`UpstreamHTTP`): every error answer's body and headers, whichever adapter
  reads it, including the credential headers of that very request (Kling's per-request JWT);
- in routing (`Router`): every `UpstreamRejected` and `RouteFailed` any adapter raises, so
  errors read from a 200 envelope (Kling, Suno, PicWish) are covered too;
- in the relays of same-format and translated streams: an event that carries an error;
- in the poller: a failed job's reason, which is stored, logged and shown.

A `Redactor` is built once per provider from its config: `api_key` (and the parts of an
`id:secret` pair, as Kling's), the values of configured headers whose names mark credentials,
and a proxy password; each also in its JSON-escaped, percent-encoded and base64 forms. Shapes
that are credentials whoever minted them (JWTs, `Bearer …`/`Basic …` values, `key=` query
parameters) are blanked too. All of this runs on error paths only: the relay of a successful
answer never pays for it (a stream pays one substring test per event run).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlsplit

import orjson

from unigate.config import ProviderConfig

REDACTED = "[redacted]"
MIN_SECRET = 4  # shorter values are no credential, and blanking them would garble messages
# Header names that carry credentials (`Authorization`, `x-api-key`, `api-key`,
# `x-goog-api-key`, `X-API-KEY`, cookies, custom `*-token` / `*-secret` headers, ...).
_CREDENTIAL_NAME = re.compile(r"auth|key|token|secret|passw|cookie|session|signature|credential", re.I)
_SHAPES = re.compile(
    r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"  # a JWT
    r"|(?P<keep>\b(?:[Bb]earer|BEARER|[Bb]asic|Token)\s+|\b(?:key|api[_-]?key|access_token)=)"
    r"(?P<value>[^\s\"',;&#<>]{8,})"
)
STREAM_ERROR_MARK = b'"error"'  # in the error event of every streamed format relayed


def is_credential_header(name: str) -> bool:
    return _CREDENTIAL_NAME.search(name) is not None


def provider_secrets(config: ProviderConfig) -> list[str]:
    """The provider's own secrets: what it sends upstream to authenticate."""
    found = [config.api_key, *config.api_key.split(":")] if config.api_key else []
    found += [value for name, value in config.headers.items() if is_credential_header(name)]
    if config.proxy and "://" in config.proxy:
        password = urlsplit(config.proxy).password
        if password:
            found.append(password)
    return found


class Redactor:
    """Blanks a fixed set of secrets (in the forms an echo takes) and credential shapes."""

    __slots__ = ("_blobs", "_texts")

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) < MIN_SECRET:
                continue
            forms.update(_forms(secret))
        # Longest first: a secret containing another is replaced whole.
        self._texts = tuple(sorted(forms, key=len, reverse=True))
        self._blobs = tuple(t.encode("utf-8") for t in self._texts)

    @classmethod
    def for_provider(cls, config: ProviderConfig) -> Redactor:
        return cls(provider_secrets(config))

    def plus(self, secrets: Iterable[str]) -> Redactor:
        """This redactor and `secrets` (a request's own credential values)."""
        return Redactor([*self._texts, *secrets])

    def text(self, value: str) -> str:
        for secret in self._texts:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return _SHAPES.sub(_blank, value)

    def data(self, value: bytes) -> bytes:
        for secret in self._blobs:
            if secret in value:
                value = value.replace(secret, REDACTED.encode())
        text = value.decode("utf-8", "surrogateescape")
        return _SHAPES.sub(_blank, text).encode("utf-8", "surrogateescape")

    def headers(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(name, self.text(value)) for name, value in items]


def blank_shapes(text: str) -> str:
    """`text` with credential shapes (JWTs, `Bearer …`, `key=…`) blanked, whoever minted them."""
    return _SHAPES.sub(_blank, text)


def _blank(match: re.Match[str]) -> str:
    keep = match.group("keep")
    return keep + REDACTED if keep else REDACTED


def request_secrets(headers: Mapping[str, str] | None) -> list[str]:
    """Credential values a single request carried beyond the pool's own (a minted JWT)."""
    if not headers:
        return []
    out = []
    for name, value in headers.items():
        if is_credential_header(name):
            out.append(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "token", "basic"):
                out.append(rest.strip())
    return out


def _forms(secret: str) -> set[str]:
    """The spellings an echoed secret takes: as is, JSON-escaped, percent-encoded, base64."""
    escaped = orjson.dumps(secret).decode()[1:-1]
    # Some JSON encoders also escape "/" (PHP, Java): an echo may come back either way.
    forms = {secret, escaped, escaped.replace("/", "\\/"), quote(secret, safe="")}
    if len(secret) >= 8:
        forms.add(base64.b64encode(secret.encode()).decode().rstrip("="))
    return {f for f in forms if len(f) >= MIN_SECRET}


# The form of Retry-After a client may get: seconds, or an HTTP date. Anything else an upstream
# put there (an echoed credential, say) is dropped.
_RETRY_AFTER = re.compile(r"^\d{1,9}$|^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$")


def retry_after(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value if _RETRY_AFTER.match(value) else None
