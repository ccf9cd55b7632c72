"""Driving a provider's native batch adapter in a test: build the provider from its config, hand
its `NativeBatches` to a coroutine, close the provider; poll a batch until it is over; collect
its results. Shared by the OpenAI and Anthropic adapter tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from unigate.batches.native import NativeBatches, NativeResult, NativeState
from unigate.config import ProviderConfig
from unigate.providers.base import ProviderContext
from unigate.providers.registry import build_provider

T = TypeVar("T")


def run_native(tmp_path: Path, config: ProviderConfig, use: Callable[[NativeBatches], Awaitable[T]]) -> T:
    """`use(batches)` on a fresh provider built from `config`, closed afterwards."""

    async def main() -> T:
        provider = build_provider(config, ProviderContext(data_dir=tmp_path))
        batches = provider.native_batches()
        assert batches is not None
        try:
            return await use(batches)
        finally:
            await provider.aclose()

    return asyncio.run(main())


async def until_over(batches: NativeBatches, batch_id: str) -> NativeState:
    """Polls until the batch is no longer running (or 10 s have passed)."""
    deadline = time.monotonic() + 10
    while True:
        state = await batches.poll(batch_id)
        if state.status != "running" or time.monotonic() > deadline:
            return state
        await asyncio.sleep(0.05)


async def collected(batches: NativeBatches, batch_id: str) -> dict[str, NativeResult]:
    return {result.custom_id: result async for result in batches.results(batch_id)}
