"""A batch's pace: at most `share` of its key's requests and tokens per minute, so the key's
interactive calls keep the rest. Spacing (one line every `60 / (rpm * share)` seconds, tokens
likewise) rather than bursts: the key's own limiter admits every line as a direct call, so a
batch that burst through its share would leave the key's window full for the calls that matter.
A key without rpm or tpm is paced by the batch's concurrency alone.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from unigate.auth.principal import Principal
from unigate.limits.estimate import output_cap, prompt_tokens


class Pacer:
    def __init__(self, principal: Principal, share: float) -> None:
        self.per_request = 60.0 / (principal.rpm * share) if principal.rpm else 0.0
        self.per_token = 60.0 / (principal.tpm * share) if principal.tpm else 0.0
        self._next = time.monotonic()

    @property
    def paced(self) -> bool:
        return bool(self.per_request or self.per_token)

    async def wait(self, body: dict[str, Any]) -> None:
        """Wait for the line's turn, then book the time its request and tokens take."""
        if not self.paced:
            return
        cost = self.per_request
        if self.per_token:
            cost += self.per_token * (prompt_tokens(body) + (output_cap(body) or 0))
        now = time.monotonic()
        start = max(self._next, now)
        self._next = start + cost
        if start > now:
            await asyncio.sleep(start - now)

    def back_off(self, seconds: float) -> None:
        """The key's limiter refused a line: nothing starts before `seconds` from now."""
        self._next = max(self._next, time.monotonic() + seconds)
