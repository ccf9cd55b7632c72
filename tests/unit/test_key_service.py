"""Keys are created and changed by one service (`api/admin/key_service.py`) behind both the
admin API and `unigate keys`: the same input is accepted or refused by both, for the same
field, and an accepted one stores the same key."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from unigate.api.admin.key_service import KeyInputError, KeyService, key_changes, new_key
from unigate.cli.keys import OPTIONS, _spec, keys_app
from unigate.cli.startup import StartupError
from unigate.store import db
from unigate.store.keys import KeyStore

# (command-line options as _spec takes them, the field a refusal names or None)
INPUTS: list[tuple[dict[str, Any], str | None]] = [
    ({"name": "ok", "models": ["gpt-*"], "families": ["text"], "rpm": 60}, None),
    ({"name": "ok", "budget": 2.5, "budget_period": "monthly", "tpm": 1000}, None),
    ({"name": "ok", "expires": "2099-01-31"}, None),
    ({"name": "ok", "rpm": 0}, "rpm"),
    ({"name": "ok", "tpm": 0}, "tpm"),
    ({"name": "ok", "rpm": 10**12}, "rpm"),
    ({"name": "ok", "families": ["bogus"]}, "families"),
    ({"name": "ok", "budget": -1.0}, "budget"),
    ({"name": "ok", "budget": float("inf")}, "budget"),
    ({"name": "ok", "budget_period": "weekly"}, "budget_period"),
    ({"name": "ok", "expires": "1999-01-01"}, "expires_at"),
    ({"name": "ok", "expires": "soon"}, "expires_at"),
    ({"name": "   "}, "name"),
    ({"name": "tab\there"}, "name"),
    ({"name": "ok", "models": ["m" * 300]}, "models"),
]


def _cli_spec(options: dict[str, Any]) -> Any:
    return _spec(
        options["name"],
        options.get("models", []),
        options.get("families", []),
        options.get("rpm"),
        options.get("budget"),
        options.get("expires"),
        options.get("tpm"),
        options.get("budget_period", "total"),
    )


def _admin_body(options: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in options.items() if k != "expires"}
    if "expires" in options:
        body["expires_at"] = options["expires"]
    return body


@pytest.mark.parametrize(("options", "field"), INPUTS, ids=[str(i) for i in range(len(INPUTS))])
def test_admin_api_and_cli_accept_and_refuse_the_same_input(
    options: dict[str, Any], field: str | None
) -> None:
    if field is None:
        assert _cli_spec(options) == new_key(_admin_body(options))
        return
    with pytest.raises(KeyInputError) as admin:
        new_key(_admin_body(options))
    assert admin.value.field == field and admin.value.message.startswith(field)
    with pytest.raises(StartupError) as cli:
        _cli_spec(options)
    named = "--expires" if field == "expires_at" else OPTIONS[field]
    assert str(cli.value).startswith(named) and admin.value.problem in str(cli.value)


def test_the_cli_refuses_with_the_services_one_line() -> None:
    """A bound the service checks is the CLI's one `error:` line too, not an option parser's
    usage box (which once answered `--rpm 0`)."""
    result = CliRunner().invoke(keys_app, ["create", "--name", "x", "--rpm", "0"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --rpm: Input should be greater than or equal to 1"
    ], result.stderr


def test_both_store_the_same_key_with_its_secrets_and_a_change_feed_row(tmp_path: Path) -> None:
    async def main() -> None:
        engine = db.create_engine(f"sqlite:///{tmp_path / 'keys.db'}")
        await db.migrate(engine)
        announced: list[int] = []

        async def announce(seq: int) -> None:
            announced.append(seq)

        service = KeyService(KeyStore(engine, "test", announce=announce))
        options = {"name": "same", "models": ["gpt-*"], "families": ["text"], "rpm": 60, "budget": 3.0}
        made = [await service.create(spec) for spec in (_cli_spec(options), new_key(_admin_body(options)))]
        views = [{**m.record.public_view(), "id": "", "created_at": 0, "prefix": ""} for m in made]
        assert views[0] == views[1]
        assert all(m.plain.startswith("ugk_") and m.record.webhook_secret for m in made)
        assert made[0].plain != made[1].plain and len(announced) == 2  # each in the change feed
        changed = await service.update(made[0].record.key_id, key_changes({"rpm": None, "tpm": 5}))
        assert changed is not None and (changed.rpm, changed.tpm) == (None, 5)
        with pytest.raises(KeyInputError) as refused:
            key_changes({"name": None})
        assert refused.value.field == "name"
        await engine.dispose()

    asyncio.run(main())
