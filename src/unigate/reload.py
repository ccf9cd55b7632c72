"""Configuration reload: SIGHUP or `POST /admin/reload` reads the YAML file again and swaps in
what it defines for new requests, without dropping the ones under way.

What reloads: providers, models (routes, prices, per-model limits, family), `routing`,
`music` and `media` defaults, `sandbox.enabled`. What the process reads once at start keeps
its running value until a restart (`limits`, `tasks`, `public_url`, the sandbox's timings),
and so do the settings from the environment (they are not in the file). A file that does not
load is refused with its error and the running configuration stays: every way a file can be
bad (too big, not UTF-8, YAML anchors or aliases, nesting too deep, the schema) is a
ConfigError from `config_source.load_config`, so a 400 `invalid_config` on the admin API and one
error line on SIGHUP.

The hot path never locks: `Gateway.apply` replaces the catalog, providers and config
references in one synchronous step, and a request keeps the catalog entry (so the provider
objects) it resolved. A provider whose settings are unchanged is reused with its connections;
one the new file drops or changes is closed once none of its connections is in use, at the
latest after its longest timeout.

SIGHUP reloads every worker of one serve: the supervisor passes it on to each worker
(cli/supervisor.py). `POST /admin/reload` reloads every worker of every replica sharing the
database: the worker it reached appends a reload to the change feed and announces it
(cluster/fanout.py), and each other worker re-reads its own config file within a second.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from unigate.background import Periodic
from unigate.config import ConfigError, GatewayConfig
from unigate.config_source import load_config
from unigate.errors import GatewayError, InvalidRequest
from unigate.providers.base import Provider
from unigate.providers.registry import build_provider
from unigate.store import changes

if TYPE_CHECKING:
    from unigate.gateway import Gateway

log = logging.getLogger("unigate.config")

WATCH_SECONDS = 0.5  # how often dropped providers are looked at
# A dropped provider seen idle this long after the swap is closed: a request that resolved it
# just before may not have taken a connection yet.
SETTLE_SECONDS = 1.0
# Read once at start (handlers, poller, webhook sender, links): applied at the next start.
RESTART_ONLY = (
    "limits",
    "tasks",
    "usage",
    "public_url",
    "sandbox.music_seconds",
    "sandbox.task_seconds",
    "storage",
)
APPLIED = ("routing", "music", "media", "sandbox.enabled", "responses")


@dataclass(frozen=True, slots=True)
class Changes:
    added: list[str]
    removed: list[str]
    changed: list[str]

    @classmethod
    def between(cls, old: Mapping[str, object], new: Mapping[str, object]) -> Changes:
        return cls(
            sorted(set(new) - set(old)),
            sorted(set(old) - set(new)),
            sorted(name for name in set(old) & set(new) if old[name] != new[name]),
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def describe(self, what: str) -> str:
        """`models +new -gone ~repriced`"""
        marked = [f"+{n}" for n in self.added] + [f"-{n}" for n in self.removed]
        return " ".join([what, *marked, *(f"~{n}" for n in self.changed)])

    def as_json(self) -> dict[str, list[str]]:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


@dataclass(frozen=True, slots=True)
class Report:
    """What a reload changed: the admin API's answer and the log line's summary."""

    path: str | None
    providers: Changes
    models: Changes
    settings: list[str]  # other keys that changed and apply now
    restart_required: list[str]  # keys that changed in the file but apply at the next start

    @property
    def changed(self) -> bool:
        return bool(self.providers or self.models or self.settings)

    def summary(self) -> str:
        changes = (("providers", self.providers), ("models", self.models))
        parts = [c.describe(what) for what, c in changes if c]
        if self.settings:
            parts.append("settings " + " ".join(self.settings))
        text = "; ".join(parts) or "no changes"
        if self.restart_required:
            text += f"; changed but applied only at the next start: {', '.join(self.restart_required)}"
        return text

    def as_json(self) -> dict[str, Any]:
        return {
            "object": "config.reload",
            "config": self.path,
            "changed": self.changed,
            "providers": self.providers.as_json(),
            "models": self.models.as_json(),
            "settings": self.settings,
            "restart_required": self.restart_required,
            "summary": self.summary(),
        }


@dataclass(slots=True)
class _Retired:
    provider: Provider
    since: float  # monotonic
    deadline: float


class ConfigReloader:
    """One per worker: reloads on SIGHUP, on the admin API, and when another worker or replica
    was asked to by the admin API (the change feed says so)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self._lock = asyncio.Lock()  # one reload at a time (never taken by requests)
        self._retired: list[_Retired] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._mask: set[int | signal.Signals] = set()
        self._watch = Periodic("config-reload", self._step, WATCH_SECONDS)
        gateway.fanout.listen(changes.CONFIG, self._on_fanout)

    async def start(self) -> None:
        self._install_signal()
        self._watch.start()

    async def stop(self) -> None:
        self._remove_signal()
        await self._watch.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._close_retired(force=True)

    async def reload(self, source: str, announce: bool = False) -> Report:
        """Read the file and apply it, or raise InvalidRequest with its error (the running
        configuration stays). `announce`: tell every other worker of every replica to reload
        its own file too (only after this one loaded: a broken file is not spread)."""
        async with self._lock:
            report = await self._reload()
            log.info("config reloaded (%s, pid %d): %s", source, os.getpid(), report.summary())
        if announce:
            await self.gw.fanout.announce_reload()
        return report

    async def _reload(self) -> Report:
        gw = self.gw
        path = gw.settings.config_path
        try:
            # In a thread: reading and parsing a file of up to 1 MiB takes seconds of CPU in
            # pure-Python YAML, which must not stall the requests this worker is serving.
            new = await asyncio.to_thread(load_config, path, gw.settings.environ, gw.listed_models)
        except ConfigError as exc:
            raise _refused(str(exc)) from None
        applied = _effective(new, gw.config)
        providers, built = await _providers_for(applied, gw)
        try:
            for provider in built:
                await provider.start()
        except Exception as exc:
            await _close(built)
            raise _refused(f"provider could not start: {type(exc).__name__}: {exc}") from None
        old_config, old_providers = gw.config, gw.providers
        report = Report(
            str(path) if path else None,
            Changes.between(_providers(old_config), _providers(applied)),
            Changes.between(_models(old_config), _models(applied)),
            _changed_keys(old_config, applied, APPLIED),
            _changed_keys(old_config, new, RESTART_ONLY),
        )
        gw.apply(applied, providers, _still_routed(applied))
        now = time.monotonic()
        for provider in old_providers.values():
            if providers.get(provider.name) is not provider:
                grace = _longest_timeout(provider, old_config)
                self._retired.append(_Retired(provider, now, now + grace))
        return report

    # -- other workers and replicas --

    def _on_fanout(self, change: changes.Change) -> None:
        self._spawn(self._reload_logged(f"POST /admin/reload at {change.origin}"))

    async def _step(self) -> None:
        await self._close_retired(force=False)

    async def _reload_logged(self, source: str) -> None:
        try:
            await self.reload(source)
        except GatewayError as err:
            log.error("config reload (%s) refused: %s", source, err.message)
        except Exception:
            log.exception("config reload (%s) failed; the previous configuration stays", source)

    # -- SIGHUP --

    def _install_signal(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        except (RuntimeError, ValueError, NotImplementedError, AttributeError):
            # Not the main thread (an embedding application), or no SIGHUP on this platform.
            log.debug("no SIGHUP handler installed: the config reloads through POST /admin/reload")
            return
        self._loop = loop
        # `unigate serve` runs with SIGHUP blocked (cli/launch.py) so that one sent before this
        # handler existed waits instead of killing the worker: delivered from here on.
        self._mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})

    def _remove_signal(self) -> None:
        if self._loop is None:
            return
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)  # blocked again while shutting down
        self._loop.remove_signal_handler(signal.SIGHUP)
        self._loop = None

    def _on_sighup(self) -> None:
        self._spawn(self._reload_logged("SIGHUP"))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- dropped providers --

    async def _close_retired(self, force: bool) -> None:
        now = time.monotonic()
        done = [
            r
            for r in self._retired
            if force or now >= r.deadline or (now - r.since >= SETTLE_SECONDS and r.provider.in_use() == 0)
        ]
        if not done:
            return
        self._retired = [r for r in self._retired if r not in done]
        for r in done:
            if not force and r.provider.in_use():
                log.warning(
                    "provider %s, dropped by a config reload, closed after %.0f s with requests under way",
                    r.provider.name,
                    now - r.since,
                )
        await _close(r.provider for r in done)


def _refused(message: str) -> InvalidRequest:
    # One line (YAML errors span several), and what happens next.
    text = " ".join(message.split())
    return InvalidRequest(f"{text}; the running configuration stays", code="invalid_config")


def _effective(new: GatewayConfig, old: GatewayConfig) -> GatewayConfig:
    """The file's config with what applies only at start kept at its running values, so that
    `gw.config` always says what is in effect."""
    sandbox = new.sandbox.model_copy(
        update={"music_seconds": old.sandbox.music_seconds, "task_seconds": old.sandbox.task_seconds}
    )
    kept = {"limits": old.limits, "tasks": old.tasks, "public_url": old.public_url, "sandbox": sandbox}
    return new.model_copy(update=kept)


async def _providers_for(config: GatewayConfig, gw: Gateway) -> tuple[dict[str, Provider], list[Provider]]:
    """The providers `config` names: the running instance where its settings are unchanged
    (connections kept), a new one otherwise. Returns (all, the new ones)."""
    providers: dict[str, Provider] = {}
    built: list[Provider] = []
    for spec in config.providers:
        current = gw.providers.get(spec.name)
        if current is not None and current.config == spec:
            providers[spec.name] = current
            continue
        try:
            provider = build_provider(spec, gw.provider_context)
        except Exception as exc:  # an unknown protocol, an unreadable CA file, a bad URL
            await _close(built)
            raise _refused(f"config file {gw.settings.config_path}: providers: {exc}") from None
        providers[spec.name] = provider
        built.append(provider)
    return providers, built


def _providers(config: GatewayConfig) -> dict[str, BaseModel]:
    return {p.name: p for p in config.providers}


def _models(config: GatewayConfig) -> dict[str, list[BaseModel]]:
    out: dict[str, list[BaseModel]] = {}
    for model in config.models:
        out.setdefault(model.name, []).append(model)
    return out


def _changed_keys(old: GatewayConfig, new: GatewayConfig, keys: Iterable[str]) -> list[str]:
    """The dotted keys among `keys` (a section stands for each of its own keys) whose value
    differs between the two configs."""
    changed = []
    for key in keys:
        a, b = _lookup(old, key), _lookup(new, key)
        if isinstance(a, BaseModel) and isinstance(b, BaseModel):
            fields = type(a).model_fields
            changed += [f"{key}.{name}" for name in fields if getattr(a, name) != getattr(b, name)]
        elif a != b:
            changed.append(key)
    return changed


def _lookup(config: GatewayConfig, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _still_routed(config: GatewayConfig) -> Callable[[str], bool]:
    """Whether a route key ("provider/upstream model") is one of `config`'s routes: its
    cooldown state survives the reload."""
    fixed: set[str] = set()
    globs: list[tuple[str, str]] = []  # (provider prefix, model glob) of routes sending the id as is
    for model in config.models:
        is_glob = any(ch in model.name for ch in "*?[")
        for route in model.routes:
            if route.model or not is_glob:
                fixed.add(f"{route.provider}/{route.model or model.name}")
            else:
                globs.append((route.provider + "/", model.name))

    def keep(key: str) -> bool:
        return key in fixed or any(
            key.startswith(prefix) and fnmatchcase(key[len(prefix) :], glob) for prefix, glob in globs
        )

    return keep


def _longest_timeout(provider: Provider, config: GatewayConfig) -> float:
    """No request on `provider` outlives this: its own total timeout or a route's longer one."""
    longest = provider.config.total_timeout
    for model in config.models:
        for route in model.routes:
            if route.provider == provider.name and route.total_timeout:
                longest = max(longest, route.total_timeout)
    return longest + SETTLE_SECONDS


async def _close(providers: Iterable[Provider]) -> None:
    for provider in providers:
        try:
            await provider.aclose()
        except Exception:  # one provider's failure to close must not keep the others open
            log.exception("closing provider %s failed", provider.name)
