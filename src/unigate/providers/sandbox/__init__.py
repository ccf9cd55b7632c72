"""`sandbox` protocol: an offline, deterministic stand-in for text and music upstreams.

It answers chat, completions and embeddings calls in OpenAI's wire format without any
network access: replies are derived from the request (quoting the user, calling the best
matching tool with schema-valid arguments, honouring `max_tokens`, `stop`, `n`,
`response_format` and streaming), so gateway features can be exercised and tested end to
end. Only `id` and `created` vary between identical requests.
"""

from __future__ import annotations

from unigate.config import ProviderConfig
from unigate.providers.base import (
    Provider,
    ProviderContext,
    Reply,
    SubmitResult,
    Target,
    TaskSubmission,
    TextCall,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.sandbox.chat import chat_reply
from unigate.providers.sandbox.completions import completions_reply
from unigate.providers.sandbox.embeddings import embeddings_reply
from unigate.providers.sandbox.jobs import SandboxJobs

PROVIDER_TYPE = "sandbox"


class SandboxProvider(Provider):
    protocol = PROVIDER_TYPE
    capabilities = frozenset({"chat", "completions", "embeddings", "music", "lyrics", "upload"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        self.jobs = SandboxJobs(context.data_dir, context.music_seconds)

    async def chat(self, call: TextCall, target: Target) -> Reply:
        return chat_reply(call)

    async def complete(self, call: TextCall, target: Target) -> Reply:
        return completions_reply(call)

    async def embed(self, call: TextCall, target: Target) -> Reply:
        return embeddings_reply(call)

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        if job.family != "music":
            return await super().submit_task(job, target)
        return await self.jobs.submit(job)

    async def poll_tasks(self, upstream_ids: list[str], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        return await self.jobs.poll(upstream_ids)

    async def aclose(self) -> None:
        self.jobs.journal.close()


__all__ = ["SandboxProvider"]
