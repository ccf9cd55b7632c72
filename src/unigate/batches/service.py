"""The batch engine as the routers and the worker's lifespan see it: the store, the runner
and each API's hooks, built once per worker."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence

from unigate.batches.anthropic_kind import AnthropicBatches
from unigate.batches.lines import LineCaller, Render
from unigate.batches.openai_kind import OpenAIBatches
from unigate.batches.runner import BatchRunner
from unigate.batches.store import BatchStore, NewLine
from unigate.edge.endpoint_table import EndpointTable
from unigate.gateway import Gateway


class Batches:
    def __init__(self, gw: Gateway, table: Callable[[], EndpointTable], render: Render) -> None:
        self.gw = gw
        self.store = BatchStore(gw.engine)
        self.openai = OpenAIBatches(self.store, gw.files, lambda: gw.catalog, gw.config.batches.max_lines)
        self.anthropic = AnthropicBatches()
        self.runner = BatchRunner(
            gw, LineCaller(table, render), {"openai": self.openai, "anthropic": self.anthropic}
        )

    async def create(
        self,
        prefix: str,
        key_id: str,
        api: str,
        endpoint: str,
        *,
        expires_at: float,
        lines: Sequence[NewLine] = (),
        input_file_id: str = "",
        metadata: object = None,
    ) -> str:
        """Store a new batch (`validating` when its lines are still to be read, else
        `in_progress`) held by this worker, and start running it."""
        batch_id = prefix + secrets.token_hex(12)
        owner, until = self.runner.lease()
        status = "in_progress" if lines else "validating"
        await self.store.create(
            batch_id, key_id, api, endpoint, status=status, lines=lines, input_file_id=input_file_id,
            metadata=metadata, expires_at=expires_at, owner=owner, lease_until=until,
        )  # fmt: skip
        self.runner.launch(batch_id)
        return batch_id

    async def cancel(self, key_id: str, batch_id: str, api: str) -> bool:
        moved = await self.store.request_cancel(key_id, batch_id, api)
        if moved:
            self.runner.stop_local(batch_id)  # at once here; another worker notices at its next renewal
        return moved
