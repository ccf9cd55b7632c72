"""The fake OpenAI upstream with failures injected per conversation and a delay per answer:
for retry, cancel and crash tests of work the gateway repeats on its own (batches)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.fake_openai import FakeOpenAI, _error


@dataclass
class FlakyOpenAI(FakeOpenAI):
    """Each distinct conversation is refused first with a 429, then with a 500, then answered;
    `delay` slows every answer."""

    delay: float = 0.0
    flaky: bool = True
    seen: Counter[str] = field(default_factory=Counter)

    async def _common(self, request: web.Request) -> tuple[dict[str, Any], web.StreamResponse | None]:
        body, early = await super()._common(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        text = json.dumps(body.get("messages"))
        self.seen[text] += 1
        if not self.flaky or early is not None:
            return body, early
        if self.seen[text] == 1:
            refused = _error(429, "slow down", "rate_limit_exceeded")
            refused.headers["Retry-After"] = "0"
            return body, refused
        if self.seen[text] == 2:
            return body, _error(500, "upstream exploded", "server_error")
        return body, None
