"""`unigate serve` and `unigate keys create|list|revoke` (a stable contract: users' scripts rely on it)."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar, get_args

import typer
from rich.console import Console
from rich.table import Table

from unigate.api.admin import Family, expiry_timestamp
from unigate.auth.principal import Principal
from unigate.config import ConfigError, load_config
from unigate.gateway import read_or_create_admin_key
from unigate.providers.base import ProviderContext
from unigate.providers.registry import UnknownProtocol, build_provider
from unigate.settings import Settings
from unigate.store import db
from unigate.store.keys import KeyStore

app = typer.Typer(add_completion=False, no_args_is_help=True, help="unigate: a unified model gateway.")
keys_app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API keys.")
app.add_typer(keys_app, name="keys")
err = Console(stderr=True)
T = TypeVar("T")

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML config file (env UNIGATE_CONFIG).")]


def _settings(config: Path | None) -> Settings:
    settings = Settings.from_env()
    return settings.with_overrides(config_path=config) if config else settings


def _check_config(settings: Settings) -> None:
    try:
        config = load_config(settings.config_path)
        context = ProviderContext(data_dir=settings.data_dir)
        for provider in config.providers:
            build_provider(provider, context)
    except (ConfigError, UnknownProtocol) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, markup=True)
        raise typer.Exit(2) from None


@app.command()
def serve(
    config: ConfigOpt = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    server: Annotated[
        str,
        typer.Option(
            envvar="UNIGATE_SERVER",
            help="HTTP server for the app: uvicorn (default) or granian (`pip install granian`).",
        ),
    ] = "uvicorn",
) -> None:
    """Start the gateway."""
    from unigate.logs import configure_logging

    if server not in ("uvicorn", "granian"):
        err.print(f"[red]error:[/red] --server must be uvicorn or granian, not {server!r}")
        raise typer.Exit(2)
    settings = _settings(config)
    configure_logging(settings.log_level)
    _check_config(settings)
    if settings.admin_key is None:
        admin_key, created = read_or_create_admin_key(settings.data_dir)
        if created:
            print(f"Admin key (shown once; also stored in {settings.data_dir / 'admin_key'}):", flush=True)
            print(admin_key, flush=True)
        settings = settings.with_overrides(admin_key=admin_key)
    # Migrate once here so several workers do not race on the schema, then replace this
    # process with uvicorn: the workers never carry the CLI's or Alembic's imports.
    asyncio.run(_migrate(settings.database_url))
    os.environ.update(settings.with_overrides(migrate_on_start=False).to_env())
    print(
        f"unigate listening on http://{host}:{port} ({workers} worker{'s' if workers > 1 else ''})",
        flush=True,
    )
    os.execv(sys.executable, _server_command(server, host, port, workers))


def _server_command(server: str, host: str, port: int, workers: int) -> list[str]:
    """The server process `serve` becomes: the options both servers share, then each one's own."""
    common = ["--factory", "--host", host, "--port", str(port), "--workers", str(workers)]
    common += ["--loop", "uvloop", "--log-level", "warning"]
    if server == "granian":
        own = ["--interface", "asgi", "--http", "1", "--no-ws"]
    else:
        own = ["--http", "httptools", "--no-access-log", "--timeout-keep-alive", "30", "--lifespan", "on"]
        # Said outright: the app's __call__ returns the request coroutine instead of being one,
        # which uvicorn's auto-detection would take for ASGI 2.
        own += ["--interface", "asgi3"]
    return [sys.executable, "-m", server, *common, *own, "unigate.app:app_factory"]


async def _migrate(url: str) -> None:
    engine = db.create_engine(url)
    try:
        await db.migrate(engine)
    finally:
        await engine.dispose()


async def _with_store(url: str, work: Callable[[KeyStore], Awaitable[T]]) -> T:
    engine = db.create_engine(url)
    try:
        await db.migrate(engine)
        return await work(KeyStore(engine))
    finally:
        await engine.dispose()


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option("--name", help="A label for the key.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Allowed model glob (repeatable).")
    ] = None,
    family: Annotated[list[str] | None, typer.Option("--family", help="Allowed family (repeatable).")] = None,
    rpm: Annotated[int | None, typer.Option("--rpm", min=1, help="Requests per minute.")] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="Expiry date or datetime (ISO 8601, UTC).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Create a key; the key itself is printed alone on the last line of stdout."""
    families = family or []
    allowed = set(get_args(Family))
    bad = [f for f in families if f not in allowed]
    if bad:
        err.print(f"error: unknown family {', '.join(bad)} (known: {', '.join(sorted(allowed))})")
        raise typer.Exit(2)
    expires_at = None
    if expires:
        try:
            parsed = (
                dt.datetime.fromisoformat(expires)
                if "T" in expires or " " in expires
                else dt.date.fromisoformat(expires)
            )
        except ValueError:
            err.print(f"error: --expires {expires!r} is not an ISO 8601 date or datetime")
            raise typer.Exit(2) from None
        expires_at = expiry_timestamp(parsed)
    settings = _settings(config)

    async def work(store: KeyStore) -> tuple[str, Principal]:
        return await store.create(name, model or [], families, rpm, None, expires_at)

    plain, record = asyncio.run(_with_store(settings.database_url, work))
    print(f"id: {record.key_id}")
    print(f"name: {record.name}")
    print(plain)


@keys_app.command("list")
def keys_list(config: ConfigOpt = None) -> None:
    """List keys (never the keys themselves)."""
    settings = _settings(config)

    async def work(store: KeyStore) -> list[Principal]:
        return await store.list_all()

    records = asyncio.run(_with_store(settings.database_url, work))
    table = Table("id", "name", "prefix", "models", "families", "rpm", "expires", "status")
    now = dt.datetime.now(dt.UTC).timestamp()
    for r in records:
        status = (
            "revoked" if r.revoked_at else ("expired" if r.expires_at and r.expires_at <= now else "active")
        )
        expires_s = dt.datetime.fromtimestamp(r.expires_at, dt.UTC).isoformat() if r.expires_at else "-"
        table.add_row(
            r.key_id,
            r.name,
            r.prefix,
            ",".join(r.models) or "*",
            ",".join(r.families) or "*",
            str(r.rpm or "-"),
            expires_s,
            status,
        )
    Console(width=200).print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (key_...).")], config: ConfigOpt = None
) -> None:
    """Revoke a key; running gateways stop accepting it within a second."""
    settings = _settings(config)

    async def work(store: KeyStore) -> Principal | None:
        return await store.revoke(key_id)

    record = asyncio.run(_with_store(settings.database_url, work))
    if record is None:
        err.print(f"error: no key with id {key_id}")
        raise typer.Exit(1)
    print(f"revoked {key_id}")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
