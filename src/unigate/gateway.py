"""The services one gateway process holds, built once from settings and config, and their
start/stop order. Handlers receive this object; nothing lives in module globals."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from unigate.auth.cache import KeyCache
from unigate.cluster.fanout import Fanout
from unigate.config import GatewayConfig
from unigate.config_source import load_config
from unigate.data_dir.owner_only import private_dir, write_private
from unigate.files.expiry import FileExpiry
from unigate.files.service import FileLimits, FileService
from unigate.files.store import FileStore
from unigate.lifecycle import Lifecycle, Step
from unigate.limits.backend import Counters, LocalCounters, counters_path
from unigate.limits.service import Limits
from unigate.observability.metrics import Metrics
from unigate.observability.tracing import Tracing
from unigate.providers.base import Provider, ProviderContext
from unigate.providers.discovery import discover, provider_lines
from unigate.providers.registry import build_provider
from unigate.responses.retention import Retention
from unigate.responses.store import ResponseStore
from unigate.routing.catalog import Catalog
from unigate.routing.engine import Router
from unigate.routing.health import RouteHealth
from unigate.settings import Settings
from unigate.storage import Storage, build_storage
from unigate.store import db
from unigate.store.aio import AsyncEngine
from unigate.store.changes import KEY, ChangeFeed, process_origin
from unigate.store.keys import KeyStore
from unigate.tasks.group_commit import GroupCommit
from unigate.tasks.outbox import OutboxDeliverer
from unigate.tasks.poller import Poller
from unigate.tasks.service import TaskService
from unigate.tasks.shapes import task_shapes
from unigate.tasks.store import TaskStore
from unigate.usage.recorder import UsageRecorder
from unigate.usage.request_log import RequestLog
from unigate.webhooks.fetch import fetch_url
from unigate.webhooks.sender import WebhookSender

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("unigate")


@dataclass
class Gateway:
    settings: Settings
    config: GatewayConfig
    engine: AsyncEngine
    keys: KeyStore
    key_cache: KeyCache
    limits: Limits
    usage: UsageRecorder
    request_log: RequestLog
    providers: dict[str, Provider]
    catalog: Catalog
    router: Router
    admin_key_digest: bytes
    tasks: TaskService
    poller: Poller
    outbox: OutboxDeliverer
    webhook_sender: WebhookSender
    allow_private_webhooks: bool
    provider_context: ProviderContext  # what providers a config reload adds are built with
    metrics: Metrics
    tracing: Tracing | None  # None unless an OTLP endpoint is configured
    metrics_token_digest: bytes | None  # UNIGATE_METRICS_TOKEN's, for GET /metrics
    responses: ResponseStore  # the Responses API's stored responses
    response_retention: Retention
    redis: Redis | None  # UNIGATE_REDIS_URL's client (store/redis.py); None on a single node
    storage: Storage  # the files served under /media/ (storage/: the data dir or a shared bucket)
    fanout: Fanout  # key changes and config reloads, to and from every other worker and replica
    files: FileService  # the Files API's files (files/), in `storage`
    file_expiry: FileExpiry
    # Without a config file: the models each environment vendor listed at start (by provider
    # name, providers/discovery.py), kept so that a reload serves them too.
    listed_models: dict[str, list[str]] = field(default_factory=dict)
    _lifecycle: Lifecycle | None = field(default=None, init=False, repr=False)

    @classmethod
    def build(cls, settings: Settings, config: GatewayConfig | None = None) -> Gateway:
        config = config or load_config(settings.config_path, settings.environ)
        engine = db.create_engine(settings.database_url)
        fanout = Fanout(ChangeFeed(engine), process_origin())
        keys = KeyStore(engine, fanout.origin, announce=fanout.announce)
        key_cache = KeyCache(keys)
        fanout.listen(KEY, lambda change: key_cache.invalidate(change.key_hash))
        allow_private = settings.allow_private_webhooks or config.tasks.allow_private_webhooks
        sender = WebhookSender(allow_private)

        async def fetch_input(url: str, max_bytes: int) -> tuple[bytes, str]:
            return await fetch_url(sender, url, max_bytes)

        storage = build_storage(config.storage, settings.data_dir)
        context = ProviderContext(
            data_dir=settings.data_dir,
            music_seconds=config.sandbox.music_seconds,
            task_seconds=config.sandbox.task_seconds,
            fetch_url=fetch_input,
            storage=storage,
        )
        providers = {p.name: build_provider(p, context) for p in config.providers}
        admin_key = settings.admin_key or read_or_create_admin_key(settings.data_dir)[0]
        metrics = Metrics(settings.metrics_dir)
        endpoint = settings.otel_traces_endpoint
        tracing = Tracing(endpoint, settings.otel_service_name) if endpoint else None
        health = RouteHealth(config.routing.cooldown_after_failures, config.routing.cooldown_seconds)
        router = Router(health, metrics=metrics)
        task_store = TaskStore(engine)
        usage = UsageRecorder(engine, interval=config.usage.flush_seconds)
        local = LocalCounters(counters_path(settings.data_dir), shared=settings.workers != 1)
        counters: Counters = local
        redis = _redis(settings.redis_url)
        gateway: Gateway  # built below; the closures read its config at each use, so reloads apply
        if redis is not None:
            from unigate.limits.redis_counters import RedisCounters  # loaded only when scaled out

            # The local counters become the fallback while Redis is unreachable.
            counters = RedisCounters(redis, local, metrics, lambda: gateway.config.limits.redis_down)
        limits = Limits(counters, usage.spent)
        tasks = TaskService(
            task_store, GroupCommit(task_store), router, config.tasks, task_shapes(), usage, limits, keys.get,
            metrics=metrics, tracing=tracing,
        )  # fmt: skip
        outbox = OutboxDeliverer(task_store, keys, sender, config.tasks.webhook_retry_schedule,
                                 config.tasks.webhook_timeout, metrics=metrics)  # fmt: skip
        responses = ResponseStore(engine)

        def file_limits() -> FileLimits:  # read at each upload, so a config reload applies
            files_config = gateway.config.files
            return FileLimits(
                files_config.max_bytes,
                gateway.config.limits.stored_bytes_per_key,
                files_config.retention_days,
            )

        files = FileService(FileStore(engine), storage, file_limits)
        gateway = cls(
            settings=settings,
            config=config,
            engine=engine,
            keys=keys,
            key_cache=key_cache,
            limits=limits,
            usage=usage,
            request_log=RequestLog(engine, interval=config.usage.flush_seconds),
            providers=providers,
            catalog=Catalog(config, providers),
            router=router,
            admin_key_digest=_digest(admin_key),
            tasks=tasks,
            poller=Poller(tasks, providers, config.tasks),
            outbox=outbox,
            webhook_sender=sender,
            allow_private_webhooks=allow_private,
            provider_context=context,
            metrics=metrics,
            tracing=tracing,
            metrics_token_digest=_digest(settings.metrics_token) if settings.metrics_token else None,
            responses=responses,
            fanout=fanout,
            # Read at each purge, so a config reload applies it.
            response_retention=Retention(responses, lambda: gateway.config.responses.retention_days),
            redis=redis,
            storage=storage,
            files=files,
            file_expiry=FileExpiry(files),
        )
        return gateway

    def apply(
        self, config: GatewayConfig, providers: dict[str, Provider], keep_health: Callable[[str], bool]
    ) -> None:
        """A reloaded config (reload.py), swapped in for new requests in one step: no await
        in between, so no request sees half of it. Requests under way keep the catalog entry,
        and so the providers, they resolved."""
        catalog = Catalog(config, providers)
        self.config, self.providers, self.catalog = config, providers, catalog
        self.poller.use(providers)
        routing = config.routing
        self.router.health.reconfigure(routing.cooldown_after_failures, routing.cooldown_seconds, keep_health)

    def is_admin_key(self, presented: str) -> bool:
        return hmac.compare_digest(_digest(presented), self.admin_key_digest)

    def is_metrics_token(self, presented: str) -> bool:
        """The admin key or the metrics token (both compared in constant time)."""
        digest = _digest(presented)
        token = self.metrics_token_digest
        return hmac.compare_digest(digest, self.admin_key_digest) | (
            token is not None and hmac.compare_digest(digest, token)
        )

    def steps(self) -> list[Step]:
        """Start-up in order; shutdown is the reverse (`Lifecycle`). What `build` made only
        needs closing, so it comes first; the usage recorder starts last so that it stops
        first: its final flush must not wait behind a write lock that a cancelled background
        transaction is still giving back."""
        steps = [
            Step("metrics", stop=_sync(self.metrics.close)),
            Step("storage", stop=self.storage.aclose),
            Step("database", stop=self.engine.dispose),
            Step("migrations", start=self._migrate),
            Step("providers", start=self._start_providers, stop=self._close_providers),
            Step("provider models", start=self._discover_models),
            Step("task store", stop=_sync(self.tasks.store.close)),
            Step("change feed", start=lambda: self.fanout.start(self.redis), stop=self.fanout.stop),
            Step("task writer", start=self.tasks.writer.start, stop=self.tasks.writer.stop),
            Step("response writer", start=self.responses.writer.start, stop=self.responses.close),
            Step("webhook outbox", start=self.outbox.start, stop=self.outbox.stop),
            Step("task poller", start=self.poller.start, stop=self.poller.stop),
            Step(
                "response retention", start=self.response_retention.start, stop=self.response_retention.stop
            ),
            Step("file expiry", start=self.file_expiry.start, stop=self.file_expiry.stop),
            Step("request log", start=self.request_log.start, stop=self.request_log.stop),
            Step("usage recorder", start=self.usage.start, stop=self.usage.stop),
        ]
        if self.redis is not None:
            steps.insert(1, Step("redis", stop=self._close_redis))
        if self.tracing is not None:
            tracing = self.tracing  # exports the spans still queued when it shuts down
            steps.insert(0, Step("tracing", stop=lambda: asyncio.to_thread(tracing.shutdown)))
        return steps

    async def start(self) -> None:
        self._lifecycle = Lifecycle(self.steps(), log)
        await self._lifecycle.start()

    async def stop(self) -> None:
        """Stop what started, in reverse order (all of it when `start` never ran: what `build`
        made is closed either way)."""
        lifecycle = self._lifecycle or Lifecycle(self.steps(), log)
        await lifecycle.stop()

    async def _migrate(self) -> None:
        if self.settings.migrate_on_start:
            await db.migrate(self.engine)

    async def _start_providers(self) -> None:
        started: list[Provider] = []
        try:
            for provider in self.providers.values():
                await provider.start()
                started.append(provider)
        except BaseException:
            for provider in reversed(started):  # this step's own part-way
                with contextlib.suppress(Exception):
                    await provider.aclose()
            raise

    async def _discover_models(self) -> None:
        """Without a config file, the models the environment's vendors list replace their
        well-known ones; then one line per provider says what it serves. Under `unigate serve`
        both were done once before the workers started (settings.listed_models), so that with
        several workers the upstreams are asked, and the lines printed, once."""
        given = self.settings.listed_models
        if self.settings.config_path is None:
            listed = dict(given) if given is not None else await discover(self.providers)
            if listed:
                config = load_config(None, self.settings.environ, listed)
                self.listed_models = listed
                self.apply(config, self.providers, lambda _key: True)
        if given is None:
            for line in provider_lines(self.config):
                log.info("%s", line)

    async def _close_providers(self) -> None:
        """Every provider in use now (a config reload may have replaced those it started
        with); each is closed whatever the others do."""
        failed: BaseException | None = None
        for provider in self.providers.values():
            try:
                await provider.aclose()
            except Exception as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    async def _close_redis(self) -> None:
        assert self.redis is not None
        try:
            await self.limits.counters.flush()  # settlements still queued for Redis
        finally:
            await self.redis.aclose()


def _sync(close: Callable[[], object]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        close()

    return run


def _redis(url: str | None) -> Redis | None:
    if not url:
        return None
    from unigate.store.redis import connect  # imported only when scaled out: a single node never loads it

    return connect(url)


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def read_or_create_admin_key(data_dir: Path, warn: bool = True) -> tuple[str, bool]:
    """The admin key stored in the data dir, created (0600) on first use; `warn`: say if the
    data dir is open to others (False where the caller's own start-up checks said so already).
    Returns (key, created now)."""
    path = data_dir / "admin_key"
    if path.exists():
        return path.read_text().strip(), False
    private_dir(data_dir, warn=warn)
    key = "uga_" + secrets.token_urlsafe(32)
    tmp = path.with_suffix(".tmp")
    write_private(tmp, key + "\n")  # 0600 from the first byte
    try:
        # link() fails if another worker won the race; then its key is the one.
        os.link(tmp, path)
    except FileExistsError:
        tmp.unlink()
        return path.read_text().strip(), False
    tmp.unlink()
    return key, True
