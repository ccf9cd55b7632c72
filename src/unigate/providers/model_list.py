"""The models an upstream lists (`GET /models` and its vendors' equivalents): one cheap request,
used to name a provider's models at start-up and to check a provider (`providers/check.py`).
An adapter says where its upstream lists them and how its answer reads; the request, its
failures and the reading of the list are here, once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from unigate.providers.base import RouteFailed, Timeouts
from unigate.providers.http import UpstreamHTTP, raise_for_answer, read_all
from unigate.providers.upstream_status import Reader


@dataclass(frozen=True, slots=True)
class Listing:
    """Where an upstream lists its models: `path`, the list under `items`, each id under `key`
    (without `prefix`, as Google names its models `models/<id>`)."""

    path: str
    items: str = "data"
    key: str = "id"
    prefix: str = ""


async def listed_models(http: UpstreamHTTP, listing: Listing, timeouts: Timeouts, read: Reader) -> list[str]:
    """The ids the upstream lists, or the contract's error (`RouteFailed`, `UpstreamRejected`)."""
    resp = await http.get(listing.path, timeouts)
    if resp.status >= 400:
        await raise_for_answer(resp, read)
    try:
        data = await read_all(resp, "model list")
    finally:
        resp.release()
    try:
        body: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise RouteFailed(
            f"The upstream's model list at {listing.path} is not JSON "
            f"({resp.headers.get('Content-Type') or 'no content type'}).",
            cause="answer",
            upstream_status=resp.status,
        ) from None
    items = body.get(listing.items) if isinstance(body, dict) else None
    if not isinstance(items, list):
        return []
    ids = (item.get(listing.key) for item in items if isinstance(item, dict))
    return [i.removeprefix(listing.prefix) for i in ids if isinstance(i, str) and i]
