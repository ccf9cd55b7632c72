"""`unigate keys create|list|update|revoke`, on the database of the server they manage."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from unigate.api.admin.key_service import CreatedKey, KeyInputError, KeyService, key_changes, new_key
from unigate.api.admin.key_spec import KeyCreate
from unigate.auth.principal import Principal
from unigate.cli.serve import ConfigOpt, settings_for
from unigate.cli.startup import StartupError, debug_wanted, report, require_extra, with_database
from unigate.settings import Settings
from unigate.store.changes import process_origin
from unigate.store.keys import KeyStore

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from unigate.store.aio import AsyncEngine

keys_app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API keys.")
T = TypeVar("T")
# Command-line spelling of the admin API's fields, for messages.
OPTIONS = {
    "name": "--name",
    "models": "--model",
    "families": "--family",
    "rpm": "--rpm",
    "tpm": "--tpm",
    "budget": "--budget",
    "budget_period": "--budget-period",
}


def database_url(settings: Settings) -> str:
    """The server's database: UNIGATE_DATABASE_URL, else UNIGATE_DATA_DIR, else ./.unigate only
    if a server already created it here (a fresh empty database would hide the real keys)."""
    if not settings.data_location_set and not settings.data_dir.is_dir():
        where = Path.cwd() / settings.data_dir
        raise StartupError(
            f"no unigate data directory here: {where} does not exist and neither UNIGATE_DATABASE_URL "
            "nor UNIGATE_DATA_DIR is set; run this command in the directory where `unigate serve` "
            "runs, or set UNIGATE_DATA_DIR to the server's data directory (UNIGATE_DATABASE_URL to "
            "its PostgreSQL database)"
        )
    sqlite_file = settings.data_dir / "unigate.db"
    if settings.database_url == f"sqlite:///{sqlite_file}" and not sqlite_file.exists():
        print(f"note: no database in {settings.data_dir} yet; creating {sqlite_file}", file=sys.stderr)
    return settings.database_url


def _with_store(config: Path | None, work: Callable[[KeyStore], Awaitable[T]]) -> T:
    settings = settings_for(config)
    if settings.redis_url:
        try:
            require_extra("redis")
        except StartupError as exc:
            report(exc, debug_wanted())

    async def run(engine: AsyncEngine) -> T:
        if not settings.redis_url:
            # Running gateways find the change in the database within half a second.
            return await work(KeyStore(engine, process_origin("cli")))
        from unigate.store.redis import connect  # only when scaled out

        redis = connect(settings.redis_url)
        try:
            return await work(KeyStore(engine, process_origin("cli"), announce=_publisher(redis)))
        finally:
            await redis.aclose()

    try:
        return with_database(database_url(settings), run)
    except StartupError as exc:
        report(exc, debug_wanted())


def _publisher(redis: Redis) -> Callable[[int], Awaitable[None]]:
    """Announces a change to the running gateways through Redis, as the admin API does. When
    Redis cannot take it the change still stands: the gateways read it from the database."""
    from unigate.cluster.channel import RedisChannel
    from unigate.cluster.fanout import SUBSCRIBED_CHECK

    channel, origin = RedisChannel(redis), process_origin("cli")

    async def publish(seq: int) -> None:
        try:
            await channel.publish(seq, origin)
        except Exception as exc:  # RedisError, OSError, TimeoutError
            print(
                f"note: could not tell the running gateways through Redis ({type(exc).__name__}: {exc}); "
                f"they apply the change at their next database check, within {SUBSCRIBED_CHECK:.0f} s",
                file=sys.stderr,
            )

    return publish


def _spec(
    name: str,
    models: list[str],
    families: list[str],
    rpm: int | None,
    budget: float | None,
    expires: str | None,
    tpm: int | None = None,
    budget_period: str = "total",
) -> KeyCreate:
    """The options as the admin API's body, validated by the same service (so `--expires`
    means the same instant in both: a bare date is the start of that day, UTC)."""
    body = {"name": name, "models": models, "families": families, "rpm": rpm, "budget": budget}
    body.update(tpm=tpm, budget_period=budget_period, expires_at=expires)
    try:
        return new_key(body)
    except KeyInputError as exc:
        raise _option_error(exc, expires) from None


def _option_error(exc: KeyInputError, expires: str | None) -> StartupError:
    """The first problem, named by its option."""
    field = exc.field or ""
    if field == "expires_at":
        return StartupError(f"--expires {expires!r} {exc.problem}")
    return StartupError(f"{OPTIONS.get(field, field)}: {exc.problem}")


# Bounds are the key service's (as for the admin API), so a refusal is its one `error:` line.
RpmOpt = Annotated[int | None, typer.Option("--rpm", help="Requests per minute.")]
TpmOpt = Annotated[int | None, typer.Option("--tpm", help="Tokens per minute (text calls).")]
BudgetOpt = Annotated[
    float | None, typer.Option("--budget", help="Money the key may spend per period (model prices), e.g. 25.")
]
PeriodOpt = Annotated[
    str | None,
    typer.Option("--budget-period", help="daily, monthly or total (the default): when --budget resets."),
]


def keys_create(
    name: Annotated[str, typer.Option("--name", help="A label for the key.")],
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Allowed model glob (repeatable).")
    ] = None,
    family: Annotated[list[str] | None, typer.Option("--family", help="Allowed family (repeatable).")] = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    budget: BudgetOpt = None,
    budget_period: PeriodOpt = None,
    expires: Annotated[
        str | None,
        typer.Option(
            "--expires",
            help="Expiry: ISO 8601 datetime (UTC unless it has an offset), or a date = its start, 00:00 UTC.",
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Create a key; the key itself is printed alone on the last line of stdout."""
    try:
        spec = _spec(name, model or [], family or [], rpm, budget, expires, tpm, budget_period or "total")
    except StartupError as exc:
        report(exc, debug_wanted())

    async def work(store: KeyStore) -> CreatedKey:
        return await KeyService(store).create(spec)

    created = _with_store(config, work)
    plain, record = created.plain, created.record
    print(f"id: {record.key_id}")
    print(f"name: {record.name}")
    if record.budget is not None:
        print(f"budget: {record.budget:g} ({record.budget_period})")
    if record.expires_at is not None:
        print(f"expires: {dt.datetime.fromtimestamp(record.expires_at, dt.UTC).isoformat()}")
    print(f"webhook_secret: {record.webhook_secret}")
    print(plain)


def keys_list(config: ConfigOpt = None) -> None:
    """List keys (never the keys themselves)."""

    async def work(store: KeyStore) -> list[Principal]:
        return await store.list_all()

    records = _with_store(config, work)
    table = Table("id", "name", "prefix", "models", "families", "rpm", "tpm", "budget", "expires", "status")
    now = dt.datetime.now(dt.UTC).timestamp()
    for r in records:
        table.add_row(*_row_cells(r, now))
    Console(width=200).print(table)


def _row_cells(r: Principal, now: float) -> list[Text]:
    """One table row, rendered defensively: whatever a row holds (values stored before they
    were validated, edited by hand) shows as text, never as markup, never as a crash."""
    try:
        expired = isinstance(r.expires_at, int | float) and r.expires_at <= now
        status = "revoked" if r.revoked_at else ("expired" if expired else "active")
        cells = [
            r.key_id,
            r.name,
            r.prefix,
            ",".join(map(str, r.models)) or "*",
            ",".join(map(str, r.families)) or "*",
            "-" if r.rpm is None else _number(r.rpm),
            "-" if r.tpm is None else _number(r.tpm),
            "-" if r.budget is None else f"{_number(r.budget)} {r.budget_period}",
            _instant(r.expires_at),
            status,
        ]
    except Exception:  # a listing must show every other key
        cells = [str(r.key_id), "(unreadable)", "", "", "", "", "", "", "", "?"]
    return [Text(_printable(str(c))) for c in cells]


def _instant(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return dt.datetime.fromtimestamp(value, dt.UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            pass  # outside what datetime can show (stored before expiries were bounded)
    return f"invalid ({_number(value)})"


def _number(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return repr(value)[:40]


def _printable(text: str, limit: int = 120) -> str:
    """Control characters escaped (they would move the cursor or recolour the terminal)."""
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text[:limit])
    return shown + ("…" if len(text) > limit else "")


def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (key_...).")], config: ConfigOpt = None
) -> None:
    """Revoke a key; running gateways stop accepting it within a second (UNIGATE_REDIS_URL: the
    same Redis as theirs, to tell them at once)."""

    async def work(store: KeyStore) -> Principal | None:
        return await KeyService(store).revoke(key_id)

    record = _with_store(config, work)
    if record is None:
        print(f"error: no key with id {key_id}", file=sys.stderr)
        raise typer.Exit(1)
    print(f"revoked {key_id}")


def keys_update(
    key_id: Annotated[str, typer.Argument(help="The key id (key_...).")],
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    budget: BudgetOpt = None,
    budget_period: PeriodOpt = None,
    clear: Annotated[
        list[str] | None,
        typer.Option("--clear", help="Remove a limit: rpm, tpm, budget or expires_at (repeatable)."),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Change a key's limits or budget; running gateways apply it within a second."""
    given = {"rpm": rpm, "tpm": tpm, "budget": budget, "budget_period": budget_period}
    body: dict[str, object] = {k: v for k, v in given.items() if v is not None}
    for name in clear or []:
        if name not in ("rpm", "tpm", "budget", "expires_at"):
            report(StartupError(f"--clear {name!r}: one of rpm, tpm, budget, expires_at"), debug_wanted())
        body[name] = None
    try:
        changes = key_changes(body)
    except KeyInputError as exc:
        report(_option_error(exc, None), debug_wanted())

    async def work(store: KeyStore) -> Principal | None:
        return await KeyService(store).update(key_id, changes)

    record = _with_store(config, work)
    if record is None:
        print(f"error: no key with id {key_id}", file=sys.stderr)
        raise typer.Exit(1)
    limits = {"rpm": record.rpm, "tpm": record.tpm, "budget": record.budget}
    shown = ", ".join(f"{k}={'-' if v is None else f'{v:g}'}" for k, v in limits.items())
    print(f"updated {key_id}: {shown} ({record.budget_period})")


keys_app.command("create")(keys_create)
keys_app.command("update")(keys_update)
keys_app.command("list")(keys_list)
keys_app.command("revoke")(keys_revoke)
