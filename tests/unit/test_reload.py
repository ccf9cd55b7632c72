"""Config reload in process (reload.py): the swap, what it reports, route health kept for the
routes that remain, unchanged providers reused, dropped ones closed only once idle (or after
their longest timeout), and refusals that leave everything as it was."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import config_yaml
from unigate.errors import InvalidRequest
from unigate.gateway import Gateway
from unigate.reload import SETTLE_SECONDS, ConfigReloader
from unigate.settings import Settings


def _config(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "providers": [
            # pragma: allowlist nextline secret
            {"name": "up", "protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-1"},
            {"name": "old", "protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "total_timeout": 5},
        ],
        "models": [
            {"name": "chat-a", "routes": [{"provider": "up"}], "input_per_million": 1.0},
            {"name": "gpt-*", "routes": [{"provider": "up"}]},
            {"name": "legacy", "routes": [{"provider": "old", "total_timeout": 20}]},
        ],
    }
    return {**base, **changes}


def _run(
    tmp_path: Path, config: dict[str, Any], body: Callable[[Gateway, ConfigReloader, Path], Awaitable[None]]
) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(config_yaml.dump(config))
    settings = Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path / "data"), "UNIGATE_ADMIN_KEY": "uga_t"})
    gw = Gateway.build(settings.with_overrides(config_path=path))

    async def run() -> None:
        try:
            await body(gw, ConfigReloader(gw), path)
        finally:
            await gw.engine.dispose()

    asyncio.run(run())


def test_swap_report_health_and_reuse(tmp_path: Path) -> None:
    async def body(gw: Gateway, reloader: ConfigReloader, path: Path) -> None:
        before = gw.catalog.resolve("chat-a")
        up = gw.providers["up"]
        for key in ("up/chat-a", "up/gpt-4o", "old/legacy", "up/gone-model"):
            gw.router.health.failure(key)
        new = _config(
            providers=[_config()["providers"][0]],  # `old` dropped, `up` unchanged
            models=[
                {"name": "chat-a", "routes": [{"provider": "up"}], "input_per_million": 2.0},
                {"name": "gpt-*", "routes": [{"provider": "up"}]},
                {"name": "chat-b", "routes": [{"provider": "up", "model": "gpt-4o"}]},
            ],
            routing={"cooldown_seconds": 5},
            limits={"max_json_body": 1000},
        )
        path.write_text(config_yaml.dump(new))
        report = await reloader.reload("test")
        assert report.providers.as_json() == {"added": [], "removed": ["old"], "changed": []}
        assert report.models.as_json() == {"added": ["chat-b"], "removed": ["legacy"], "changed": ["chat-a"]}
        assert report.settings == ["routing.cooldown_seconds"]
        assert report.restart_required == ["limits.max_json_body"]
        assert "models +chat-b -legacy ~chat-a" in report.summary()
        assert "applied only at the next start: limits.max_json_body" in report.summary()
        # New requests see the new catalog; one under way keeps its entry, provider and price.
        after = gw.catalog.resolve("chat-a")
        assert after is not None and before is not None and after is not before
        assert after.prices.input_per_million == 2.0 and before.prices.input_per_million == 1.0
        assert gw.providers["up"] is up and after.routes[0].provider is up, "unchanged: reused"
        assert gw.config.limits.max_json_body != 1000, "limits apply at the next start"
        assert gw.config.routing.cooldown_seconds == 5 and gw.poller.providers is gw.providers
        assert set(gw.router.health.snapshot()) == {"up/chat-a", "up/gpt-4o"}

    _run(tmp_path, _config(), body)


def test_a_dropped_provider_is_closed_once_idle_or_after_its_longest_timeout(tmp_path: Path) -> None:
    async def body(gw: Gateway, reloader: ConfigReloader, path: Path) -> None:
        old = gw.providers["old"]
        closed: list[str] = []
        busy = [1]

        async def aclose() -> None:
            closed.append(old.name)

        old.aclose = aclose  # type: ignore[method-assign]
        old.in_use = lambda: busy[0]  # type: ignore[method-assign]
        path.write_text(config_yaml.dump(_config(providers=[_config()["providers"][0]], models=[])))
        await reloader.reload("test")
        [retired] = reloader._retired
        assert retired.provider is old and retired.deadline - retired.since == 20 + SETTLE_SECONDS
        retired.since -= SETTLE_SECONDS
        await reloader._close_retired(force=False)
        assert closed == [], "a request still uses it"
        busy[0] = 0
        await reloader._close_retired(force=False)
        assert closed == ["old"] and reloader._retired == []

        # Busy past the deadline: closed anyway.
        path.write_text(config_yaml.dump(_config(providers=[], models=[])))
        up = gw.providers["up"]
        up.in_use = lambda: 1  # type: ignore[method-assign]
        await reloader.reload("test")
        [retired] = reloader._retired
        retired.deadline = time.monotonic()
        await reloader._close_retired(force=False)
        assert reloader._retired == []

    _run(tmp_path, _config(), body)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("providers: [ {name: up\n", "is not valid YAML"),
        (config_yaml.dump(_config(routin={})), "routin: unknown key"),
        (
            config_yaml.dump(_config(providers=[{"name": "up", "protocol": "carrier-pigeon"}], models=[])),
            "carrier-pigeon",
        ),
        (
            config_yaml.dump(_config(models=[{"name": "x", "routes": [{"provider": "nope"}]}])),
            "unknown provider",
        ),
    ],
)
def test_a_file_that_does_not_load_changes_nothing(tmp_path: Path, text: str, problem: str) -> None:
    async def body(gw: Gateway, reloader: ConfigReloader, path: Path) -> None:
        catalog, providers, config = gw.catalog, gw.providers, gw.config
        path.write_text(text)
        with pytest.raises(InvalidRequest) as refused:
            await reloader.reload("test")
        assert refused.value.code == "invalid_config" and refused.value.status == 400
        assert problem in refused.value.message and "\n" not in refused.value.message
        assert refused.value.message.endswith("; the running configuration stays")
        assert gw.catalog is catalog and gw.providers is providers and gw.config is config
        assert reloader._retired == []

    _run(tmp_path, _config(), body)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"a: &a [x, x]\nb: [*a, *a]\n", "line 1, column 4: anchors (&name) are not allowed"),
        (b"providers: " + b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
        (b"providers: []\n# \xff\n", "is not UTF-8 text: byte 0xff at byte offset 16"),
        (b"#" * (1024 * 1024 + 1), "larger than the 1 MiB (1,048,576 bytes) limit"),
    ],
    ids=["anchors", "deep", "not-utf8", "over-1-mib"],
)
def test_a_hostile_file_is_invalid_config_and_changes_nothing(
    tmp_path: Path, data: bytes, problem: str
) -> None:
    async def body(gw: Gateway, reloader: ConfigReloader, path: Path) -> None:
        config = gw.config
        path.write_bytes(data)
        with pytest.raises(InvalidRequest) as refused:
            await reloader.reload("test")
        assert refused.value.code == "invalid_config" and refused.value.status == 400
        assert problem in refused.value.message and str(path) in refused.value.message
        assert gw.config is config

    _run(tmp_path, _config(), body)


def test_the_file_is_read_and_parsed_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow read (a big file, a slow disk) must not stop the worker's other requests."""
    import unigate.reload as reload_module

    real = reload_module.load_config

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.6)  # what parsing a large file costs, done blocking as parsing is
        return real(*args, **kwargs)

    monkeypatch.setattr(reload_module, "load_config", slow_load)

    async def body(gw: Gateway, reloader: ConfigReloader, path: Path) -> None:
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = time.monotonic()
            while not done.is_set():
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        report = await reloader.reload("test")
        done.set()
        await ticking
        assert report.changed is False
        assert max(gaps) < 0.3, f"the event loop stood still for {max(gaps):.2f} s"

    _run(tmp_path, _config(), body)
