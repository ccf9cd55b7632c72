"""`sandbox` protocol: an offline, deterministic stand-in for every family's upstream.

It answers chat, completions, embeddings and moderations calls in OpenAI's wire format (replies derived
from the request: quoting the user, calling the best matching tool with schema-valid
arguments, honouring `max_tokens`, `stop`, `n`, `response_format` and streaming), music
tasks, and audio and image calls with real media (media_calls.py), all without network
access, so gateway features can be exercised and tested end to end. Only `id` and `created`
vary between identical text requests.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

from unigate.config import ProviderConfig
from unigate.errors import GatewayError
from unigate.providers.base import (
    MEDIA_OPS,
    MediaCall,
    Provider,
    ProviderContext,
    Reply,
    SubmitResult,
    Target,
    TaskRef,
    TaskSubmission,
    TextCall,
    Timeouts,
    UpstreamTask,
)
from unigate.providers.same_format import ClientRequest
from unigate.storage import LocalStorage, media_key
from unigate_sandbox.chat import chat_reply
from unigate_sandbox.completions import completions_reply
from unigate_sandbox.compose import generates_values
from unigate_sandbox.embeddings import embeddings_reply, is_heavy
from unigate_sandbox.gemini_image import gemini_image_reply
from unigate_sandbox.jobs import SandboxJobs
from unigate_sandbox.kinds import sandbox_kinds
from unigate_sandbox.media_calls import SandboxMedia
from unigate_sandbox.media_loader import load_media
from unigate_sandbox.model_kinds import MEDIA_KINDS, check_kind, task_kind
from unigate_sandbox.models import PROTOCOL
from unigate_sandbox.moderation import moderation_reply
from unigate_sandbox.tasks import SandboxTasks

# What the sandbox's audio, image and video need (the `sandbox` extra); text and music do not.
MEDIA_MODULES = ("av", "PIL")


class MediaNotInstalled(GatewayError):
    status, type, code = 501, "server_error", "sandbox_media_not_installed"


class SandboxProvider(Provider):
    protocol = PROTOCOL
    capabilities = (
        frozenset({"chat", "completions", "embeddings", "moderations", "music", "lyrics", "upload"})
        | MEDIA_OPS
    )
    # Gemini requests for image output are answered natively (the canonical chat form has no
    # image output); other Gemini requests go through the canonical form like everywhere else.
    native_formats = frozenset({"gemini-image"})

    def __init__(self, config: ProviderConfig, context: ProviderContext) -> None:
        super().__init__(config, context)
        # The gateway's file store; a context built without one (checks, unit tests) keeps
        # files in the data dir, as the local store does.
        self.storage = context.storage or LocalStorage(context.data_dir)
        self.jobs = SandboxJobs(context.data_dir, context.music_seconds, self.storage)
        self.tasks = SandboxTasks(
            context.data_dir, context.task_seconds, context.fetch_url, sandbox_kinds(), self.storage
        )
        self.media_calls = SandboxMedia(self.storage)
        # Checked once: a production install without the extra still starts and serves text.
        self.missing_media = [m for m in MEDIA_MODULES if importlib.util.find_spec(m) is None]

    def _require_media(self) -> None:
        if self.missing_media:
            raise MediaNotInstalled(
                "The sandbox's audio, image and video need the 'sandbox' extra "
                f"(missing: {', '.join(self.missing_media)}): pip install 'unigate[sandbox]' "
                "(scripts/start.sh installs it)."
            )

    async def media(self, call: MediaCall, target: Target) -> Reply:
        check_kind(target.upstream_model, MEDIA_KINDS.get(call.op))
        self._require_media()
        await load_media()
        return await self.media_calls.answer(call)

    async def native(
        self, payload: dict[str, Any], target: Target, stream: bool, client: ClientRequest | None = None
    ) -> Reply:
        check_kind(target.upstream_model, "image")  # Gemini calls asking for image output
        self._require_media()
        await load_media()
        return await gemini_image_reply(payload, target.upstream_model, stream)

    async def chat(self, call: TextCall, target: Target) -> Reply:
        check_kind(target.upstream_model, "chat")
        if generates_values(call.payload):  # schema-driven values: up to ~0.1 s of work
            return await asyncio.to_thread(chat_reply, call)
        return chat_reply(call)

    async def complete(self, call: TextCall, target: Target) -> Reply:
        check_kind(target.upstream_model, "chat")
        return completions_reply(call)

    async def embed(self, call: TextCall, target: Target) -> Reply:
        check_kind(target.upstream_model, "embedding")
        if is_heavy(call):  # thousands of vectors: keep the event loop serving others
            return await asyncio.to_thread(embeddings_reply, call)
        return embeddings_reply(call)

    async def moderate(self, call: TextCall, target: Target) -> Reply:
        check_kind(target.upstream_model, "moderation")
        images = [p for p in call.payload["input"] if isinstance(p, dict) and p.get("type") == "image_url"]
        if images and "PIL" in self.missing_media:
            self._require_media()  # images are scored on their pixels
        return await moderation_reply(call, call.model, self.context.fetch_url)

    async def submit_task(self, job: TaskSubmission, target: Target) -> SubmitResult:
        check_kind(target.upstream_model, task_kind(job.family, job.action))
        if job.family == "music":
            return await self.jobs.submit(job)
        self._require_media()
        await load_media()
        return await self.tasks.submit(job)

    async def poll_tasks(self, refs: list[TaskRef], timeouts: Timeouts) -> dict[str, UpstreamTask]:
        music = [r.upstream_id for r in refs if r.upstream_id.startswith("sbx_")]
        states = await self.jobs.poll(music) if music else {}
        others = [r for r in refs if not r.upstream_id.startswith("sbx_")]
        if others:
            states.update(await self.tasks.poll(others))
        return states

    async def delete_task(self, ref: TaskRef, timeouts: Timeouts) -> None:
        """A deleted job's files go with it."""
        await self.storage.delete_prefix(media_key(ref.upstream_id))

    async def aclose(self) -> None:
        self.jobs.journal.close()
        self.tasks.journal.close()


__all__ = ["SandboxProvider"]
