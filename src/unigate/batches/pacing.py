"""A batch's pace: at most `share` of its key's requests and tokens per minute, so the key's
interactive calls keep the rest, and at most `share` of each model's own rpm and tpm (the limits
a model sets across all keys: an upstream's quota), so other keys' calls keep theirs. Spacing
(one line every `60 / (rpm * share)` seconds, tokens likewise) rather than bursts: the key's own
limiter admits every line as a direct call, so a batch that burst through its share would leave
the key's window full for the calls that matter. A key without rpm or tpm, on models without
them, is paced by the batch's concurrency alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from unigate.auth.principal import Principal
from unigate.limits.estimate import output_cap, prompt_tokens

ModelLimits = Callable[[str], tuple[int | None, int | None]]  # a model id -> its rpm, tpm


def _no_model_limits(_model: str) -> tuple[int | None, int | None]:
    return None, None


class _Lane:
    """One schedule: seconds per request and per token, and when the next line may start."""

    __slots__ = ("next", "per_request", "per_token")

    def __init__(self, rpm: int | None, tpm: int | None, share: float) -> None:
        self.per_request = 60.0 / (rpm * share) if rpm else 0.0
        self.per_token = 60.0 / (tpm * share) if tpm else 0.0
        self.next = time.monotonic()

    def cost(self, tokens: Callable[[], int]) -> float:
        return self.per_request + (self.per_token * tokens() if self.per_token else 0.0)


class Pacer:
    def __init__(
        self, principal: Principal, share: float, model_limits: ModelLimits = _no_model_limits
    ) -> None:
        self._share = share
        self._key = _Lane(principal.rpm, principal.tpm, share)
        self._model_limits = model_limits
        self._models: dict[str, _Lane | None] = {}  # by model id; None: the model sets no limit

    @property
    def per_request(self) -> float:
        return self._key.per_request

    @property
    def per_token(self) -> float:
        return self._key.per_token

    @property
    def paced(self) -> bool:
        return bool(self._key.per_request or self._key.per_token)

    def _model_lane(self, body: dict[str, Any]) -> _Lane | None:
        model = body.get("model")
        if not isinstance(model, str):
            return None
        if model not in self._models:
            rpm, tpm = self._model_limits(model)
            self._models[model] = _Lane(rpm, tpm, self._share) if rpm or tpm else None
        return self._models[model]

    async def wait(self, body: dict[str, Any]) -> None:
        """Wait for the line's turn on its key's lane and its model's, then book on each the
        time its request and tokens take."""
        model = self._model_lane(body)
        if not self.paced and model is None:
            return
        counted: list[int] = []

        def tokens() -> int:  # counted once, and only when a lane prices tokens
            if not counted:
                counted.append(prompt_tokens(body) + (output_cap(body) or 0))
            return counted[0]

        lanes = [lane for lane in (self._key, model) if lane is not None]
        now = time.monotonic()
        start = max(now, *(lane.next for lane in lanes))
        for lane in lanes:
            lane.next = start + lane.cost(tokens)
        if start > now:
            await asyncio.sleep(start - now)

    def back_off(self, seconds: float) -> None:
        """The key's limiter refused a line: nothing starts before `seconds` from now."""
        self._key.next = max(self._key.next, time.monotonic() + seconds)
