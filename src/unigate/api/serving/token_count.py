"""Token counts for the Anthropic and Gemini formats (`POST /v1/messages/count_tokens`,
`POST /v1beta/models/{model}:countTokens`): asked of the upstream the model's route leads to
when it has a count endpoint (Anthropic's `count_tokens` and Gemini's `countTokens`; a client of
the upstream's own format has its request relayed there as it is, the gateway answering with
the upstream's bytes), else the gateway's local count (`chat_prompt_tokens` in
limits/estimate.py: the count the sandbox reports, an approximation for other upstreams; also
when the counting upstream fails, or has no count endpoint: a compatible host answering 404).
The header `x-unigate-token-count` says which: `upstream` or `estimated`. A count is not a
call: the model is checked (404, 403), nothing is rate-limited, charged or recorded in usage.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import orjson

from unigate.api.serving.relay import send_reply
from unigate.api.serving.serve import Serving
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.errors import UpstreamRejected
from unigate.limits.estimate import chat_prompt_tokens
from unigate.providers.base import Reply, RouteFailed, Target, Unsupported, scrubbed
from unigate.providers.same_format import ClientRequest
from unigate.translate.translation import Json

log = logging.getLogger("unigate.routing")

TOKEN_COUNT_HEADER = b"x-unigate-token-count"
UPSTREAM, ESTIMATED = b"upstream", b"estimated"
_NO_ENDPOINT = frozenset({404, 405})  # what a host answers for a count endpoint it lacks


class TokenCounter:
    def __init__(self, serving: Serving) -> None:
        self.serving = serving

    async def count(
        self,
        request: Request,
        principal: Principal,
        fmt: str,
        payload: Json,
        model: str,
        client: ClientRequest,
        canonical: Callable[[], Json],
        answer: Callable[[int], Json],
    ) -> None:
        """Send the count of `payload` (in the client's format `fmt`) for `model`: the
        upstream's own answer, or `answer(n)` for a count in the gateway's hands."""
        translated = functools.cache(canonical)  # translated once, whichever step needs it
        gw = self.serving.gw
        entry = self.serving.resolve(principal, model)  # 404 / 403 as for a real call
        targets = gw.router.plan(entry, model)
        for i, target in enumerate(targets):
            try:
                counted = await self._ask(target, fmt, payload, client, translated)
            except Unsupported:
                break  # this route's upstream has no count endpoint: the gateway counts
            except UpstreamRejected as rejected:
                if rejected.status not in _NO_ENDPOINT:
                    scrubbed(rejected, target.provider.redactor)
                    raise
                # A compatible host without the count endpoint: the gateway counts.
                log.warning(
                    "token count: route %s has no count endpoint (HTTP %d); using the local estimate",
                    target.route_key,
                    rejected.status,
                )
                break
            except RouteFailed as failure:
                scrubbed(failure, target.provider.redactor)
                after = targets[i + 1].route_key if i + 1 < len(targets) else "the local estimate"
                log.warning(
                    "token count: route %s failed: %s; falling back to %s",
                    target.route_key,
                    failure.message.rstrip("."),
                    after,
                )
                continue
            if isinstance(counted, Reply):
                counted.headers = [*counted.headers, (TOKEN_COUNT_HEADER, UPSTREAM)]
                await send_reply(request, counted)
                return
            await _send_count(request, answer(counted), UPSTREAM)
            return
        await _send_count(request, answer(chat_prompt_tokens(translated())), ESTIMATED)

    @staticmethod
    async def _ask(
        target: Target, fmt: str, payload: Json, client: ClientRequest, canonical: Callable[[], Json]
    ) -> Reply | int:
        provider = target.provider
        if fmt in provider.native_formats:
            return await provider.count_native(payload, target, client)
        return await provider.count_canonical(canonical(), target)


async def _send_count(request: Request, body: Json, source: bytes) -> None:
    await send_reply(request, Reply(body=orjson.dumps(body), headers=[(TOKEN_COUNT_HEADER, source)]))
