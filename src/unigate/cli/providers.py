"""`unigate providers check`: one cheap request through each configured provider, each
failure explained with its fix (providers/check.py); exit code 1 when one failed."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

import typer

from unigate.cli.serve import ConfigOpt, settings_for
from unigate.cli.startup import StartupError, debug_wanted, report
from unigate.config import ConfigError
from unigate.config_source import load_config
from unigate.providers.base import Provider, ProviderContext
from unigate.providers.check import CHECK_SECONDS, Check, check_all
from unigate.providers.registry import UnknownProtocol, build_provider

providers_app = typer.Typer(no_args_is_help=True, help="Check the configured providers.")


@providers_app.command("check")
def check(
    config: ConfigOpt = None,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds each provider may take.")] = CHECK_SECONDS,
) -> None:
    """Send one cheap request (its model list) through each provider and say what failed."""
    settings = settings_for(config)
    try:
        loaded = load_config(settings.config_path, settings.environ)
        context = ProviderContext(data_dir=settings.data_dir)
        providers = [build_provider(p, context) for p in loaded.providers]
    except (ConfigError, UnknownProtocol) as exc:
        report(StartupError(str(exc)), debug_wanted())
    results = asyncio.run(_run(providers, timeout))
    for result in results:
        print(result.line(), flush=True)
    if any(r.ok is False for r in results):
        raise typer.Exit(1)


async def _run(providers: list[Provider], timeout: float) -> list[Check]:
    try:
        return await check_all(providers, timeout)
    finally:
        for provider in providers:
            with contextlib.suppress(Exception):
                await provider.aclose()
