"""`unigate serve`: check everything up front, migrate once, then become the HTTP server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

import unigate
from unigate.cli.startup import (
    StartupError,
    check_data_dir,
    check_database_url,
    check_log_level,
    check_port,
    check_public_url,
    check_redis,
    check_storage,
    check_tracing,
    create_limits_table,
    debug_wanted,
    report,
    with_database,
)
from unigate.compiled import MODULES, OFF
from unigate.config import ConfigError, GatewayConfig, defaults
from unigate.config_source import ENV_VENDORS, load_config
from unigate.data_dir.owner_only import restrict_umask
from unigate.gateway import read_or_create_admin_key
from unigate.limits.backend import counters_path
from unigate.limits.shared_table import SharedTable
from unigate.providers.base import ProviderContext
from unigate.providers.discovery import discover, provider_lines
from unigate.providers.registry import UnknownProtocol, build_provider
from unigate.settings import Settings

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config file (env UNIGATE_CONFIG).")]


def settings_for(config: Path | None) -> Settings:
    settings = Settings.from_env()
    return settings.with_overrides(config_path=config) if config else settings


def serve(
    config: ConfigOpt = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    # Range checked by hand: typer's own check prints a usage box instead of one error line.
    port: Annotated[int, typer.Option(help="Port to listen on (1-65535).")] = 8000,
    workers: Annotated[int, typer.Option(min=1, envvar="UNIGATE_WORKERS", help="Worker processes.")] = 1,
    server: Annotated[
        str,
        typer.Option(
            envvar="UNIGATE_SERVER",
            help="HTTP server for the app: uvicorn (default) or granian (`pip install granian`).",
        ),
    ] = "uvicorn",
) -> None:
    """Start the gateway."""
    try:
        settings = _prepare(config, host, port, server, workers)
    except Exception as exc:  # every start-up failure ends as one line, the traceback only in debug
        if not isinstance(exc, StartupError):
            exc = StartupError(
                f"unigate could not start: {type(exc).__name__}: {exc}; "
                "run with UNIGATE_LOG_LEVEL=debug for the traceback"
            )
        report(exc, debug_wanted())
    os.environ.update(settings.with_overrides(migrate_on_start=False, workers=workers).to_env())
    # glibc gives each thread that allocates (the SQLite driver's, the DNS resolver's) its own
    # malloc arena; two in all cost a worker ~1 MB less when idle. An operator's value stays.
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    # A server has no use for docstrings or asserts: under -OO no module keeps them, ~3.5 MB
    # less in each worker (docs/architecture.md, "Worker processes"). An operator's
    # PYTHONOPTIMIZE decides instead (0: keep them).
    optimize = [] if os.environ.get("PYTHONOPTIMIZE") else ["-OO"]
    command = [sys.executable, *optimize, "-m", "unigate.cli.launch", server, host, str(port), str(workers)]
    os.execv(sys.executable, command)


def _prepare(config: Path | None, host: str, port: int, server: str, workers: int) -> Settings:
    """Every check that can fail before the server starts, cheapest first; the settings the
    workers get (admin key included)."""
    if server not in ("uvicorn", "granian"):
        raise StartupError(f"--server must be uvicorn or granian, not {server!r}")
    restrict_umask()  # owner-only files from here on, in the workers too (exec keeps it)
    settings = settings_for(config)
    check_log_level(settings)
    check_public_url(settings)
    from unigate.observability.logs import configure_logging

    configure_logging(settings.log_level, settings.log_format)
    check_database_url(settings.database_url)
    check_tracing(settings)
    check_port(host, port)
    check_data_dir(settings.data_dir)
    check_redis(settings.redis_url)
    loaded = _check_config(settings)
    # The workers' shared limit counters start from the database's figures, not from what
    # a previous server's in-flight calls had reserved.
    SharedTable.remove(counters_path(settings.data_dir))
    if workers > 1:
        create_limits_table(settings.data_dir)
    # Metrics start from zero with each serve: its workers write their files from here on.
    shutil.rmtree(settings.metrics_dir, ignore_errors=True)

    async def nothing(_engine: object) -> None:
        return None

    # Migrated once here so several workers do not race on the schema.
    with_database(settings.database_url, nothing)
    if settings.admin_key is None:
        # check_data_dir has warned already if the data dir is open to others.
        admin_key, created = read_or_create_admin_key(settings.data_dir, warn=False)
        if created:
            print(f"Admin key (shown once; also stored in {settings.data_dir / 'admin_key'}):", flush=True)
            print(admin_key, flush=True)
        settings = settings.with_overrides(admin_key=admin_key)
    # Last, once nothing can stop the start: a failed start is its one error line alone.
    _announce_build()
    return settings.with_overrides(listed_models=_announce_providers(settings, loaded))


def _announce_build() -> None:
    """One line: whether the per-request path runs compiled (unigate/compiled.py), and if not,
    why and what builds it."""
    log = logging.getLogger("unigate")
    if unigate.COMPILED_PROBLEM is None:
        log.info("running the per-request path compiled (%d modules)", len(MODULES))
    elif f"{OFF}=0" == unigate.COMPILED_PROBLEM:
        log.info("running every module from source (%s)", unigate.COMPILED_PROBLEM)
    else:
        log.warning("running every module from source, slower: %s", unigate.COMPILED_PROBLEM)


def _check_config(settings: Settings) -> GatewayConfig:
    try:
        config = load_config(settings.config_path, settings.environ)
        context = ProviderContext(data_dir=settings.data_dir)
        for provider in config.providers:
            build_provider(provider, context)
    except (ConfigError, UnknownProtocol) as exc:
        # Without a file, the error already says what to install or to give.
        fix = "; fix the config file (or UNIGATE_CONFIG / --config)" if settings.config_path else ""
        raise StartupError(f"{exc}{fix}") from exc
    check_storage(config.storage, settings.data_dir)
    if not config.models:
        logging.getLogger("unigate.config").warning(
            "config file %s defines no models: the gateway starts, but every model call gets 404; add "
            "`providers` and `models` (docs/configuration.md), or `sandbox: {enabled: true}` for the "
            "offline sandbox's models",
            settings.config_path,
        )
    # A default the file set itself is checked by the config; one left at its built-in value
    # only matters to deployments that serve that family, so it is a note, not an error.
    unbacked = [f"{key}={value}" for key, value, _ in defaults(config) if not config.defines(value)]
    if unbacked:
        logging.getLogger("unigate.config").info(
            "requests that name no model will get 404 for these defaults, which no model defines: "
            "%s (set them in the config, or enable `sandbox`)",
            ", ".join(unbacked),
        )
    return config


def _announce_providers(settings: Settings, config: GatewayConfig) -> dict[str, list[str]]:
    """Done here, before the workers start, so that with several of them each environment
    vendor is asked for its models once and each provider's line printed once: the models
    each vendor listed (without a config file), which the workers are given instead of asking."""
    listed: dict[str, list[str]] = {}
    if settings.config_path is None and any(p.name in ENV_VENDORS for p in config.providers):
        listed = asyncio.run(_discover(config, ProviderContext(data_dir=settings.data_dir)))
        if listed:
            config = load_config(None, settings.environ, listed)
    for line in provider_lines(config):
        logging.getLogger("unigate").info("%s", line)
    return listed


async def _discover(config: GatewayConfig, context: ProviderContext) -> dict[str, list[str]]:
    providers = {p.name: build_provider(p, context) for p in config.providers if p.name in ENV_VENDORS}
    try:
        return await discover(providers)
    finally:
        for provider in providers.values():
            with contextlib.suppress(Exception):
                await provider.aclose()
