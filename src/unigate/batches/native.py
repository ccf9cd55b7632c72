"""Relaying a whole batch to a vendor's own batch API (OpenAI/Azure `/files` + `/batches`,
Anthropic `/v1/messages/batches`): the interface the batch engine drives and the adapters
implement (`Provider.native_batches()`).

The engine records that a submit is under way, submits every line at once, stores the
upstream id, polls on the task poller's cadence and, once the batch is over (`ended`,
`cancelled`, `expired` and `failed` all may carry results of the lines that ran), maps
`results()` into its own output. A worker taking over a batch whose submit was under way but
whose upstream id was never stored asks `find` first, so a vendor that keeps the batch's
metadata runs it once. Adapters raise the
project's errors (`RouteFailed`, `UpstreamRejected`, mapped by the upstream-status table) with
the provider's secrets scrubbed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

NativeStatus = Literal["running", "ended", "cancelled", "expired", "failed"]
ResultKind = Literal["succeeded", "errored", "canceled", "expired"]


@dataclass(frozen=True, slots=True)
class NativeLine:
    """One request of the batch: the client's `custom_id` and the body in the upstream's format
    (model already mapped to the upstream's id)."""

    custom_id: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NativeState:
    """The upstream batch as its poll reports it. `running` covers every state before the end
    (validating, in progress, finalizing, cancelling); a state an adapter does not know is
    `running` too, so it never ends a batch. `total`/`succeeded`/`errored` are the upstream's
    request counts (`errored` includes lines canceled or expired); `error` says why a `failed`
    batch failed."""

    status: NativeStatus
    total: int
    succeeded: int
    errored: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class NativeResult:
    """One line's outcome. `status_code` is the upstream's HTTP status for the line (200 on
    success, 0 for a line that never ran: canceled or expired); `body` the upstream's answer
    body (a chat completion, an embedding list, a Message; an error body on a refused line);
    `error` `{"code" or "type", "message"}` when it did not succeed; `usage` the tokens as the
    upstream counted them, as `prompt_tokens` and `completion_tokens` (OpenAI's prompt/input
    and completion/output, Anthropic's input and output), both always present."""

    custom_id: str
    status_code: int
    body: dict[str, Any] | None
    error: dict[str, Any] | None
    usage: dict[str, int]
    kind: ResultKind = "succeeded"


class NativeBatches(Protocol):
    """A vendor's batch API for one provider."""

    discount: float  # the vendor's published batch discount (0.5: half the synchronous price)

    async def submit(self, endpoint: str, lines: Sequence[NativeLine], metadata: dict[str, str]) -> str:
        """Create the upstream batch (`endpoint`: OpenAI's `/v1/chat/completions`,
        `/v1/embeddings`, ...; `/v1/messages` for Anthropic); its upstream id."""
        ...

    async def find(self, metadata: dict[str, str], since: float) -> str | None:
        """The id of the upstream batch submitted with `metadata` (every pair present in the
        batch's own), looking at batches created from `since` (Unix seconds) on; None: there is
        none, or the vendor keeps no metadata to tell it by (the caller then submits again)."""
        ...

    async def poll(self, upstream_id: str) -> NativeState: ...

    def results(self, upstream_id: str) -> AsyncIterator[NativeResult]:
        """Every line's outcome, streamed (output lines, then error lines)."""
        ...

    async def cancel(self, upstream_id: str) -> None: ...
