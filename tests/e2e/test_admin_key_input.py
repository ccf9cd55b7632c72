"""Admin key input is validated like any other input: `POST /admin/keys` and `unigate keys
create` refuse booleans for numbers, out-of-range expiries, budgets and rate limits, control
characters in names, with a 400 (or one `error:` line) naming the field; `unigate keys list`
renders whatever rows a database holds without crashing."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.gateway import ADMIN_KEY
from tests.support.net import http
from tests.support.served import ServedGateway

BAD_BODIES = [
    (b'{"name": "k", "expires_at": true}', "expires_at"),
    (b'{"name": "k", "expires_at": 1e19}', "expires_at"),
    (b'{"name": "k", "expires_at": "' + b"9" * 5000 + b'"}', "expires_at"),
    (b'{"name": "k", "expires_at": 1000}', "expires_at"),
    (b'{"name": "k", "rpm": true}', "rpm"),
    (b'{"name": "k", "rpm": 99999999999}', "rpm"),
    (b'{"name": "k", "budget": true}', "budget"),
    (b'{"name": "k", "budget": 1e300}', "budget"),
    (b'{"name": "k", "budget": -0.5}', "budget"),
    (b'{"name": "k\\u001b[31m"}', "name"),
    (b'{"name": "k", "models": ["' + b"m" * 300 + b'"]}', "models"),
]


@pytest.mark.parametrize(
    ("body", "field"), BAD_BODIES, ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD_BODIES)]
)
def test_admin_refuses_bad_key_values_naming_the_field(
    sandbox_gateway: ServedGateway, body: bytes, field: str
) -> None:
    res = http(
        "POST",
        sandbox_gateway.base_url + "/admin/keys",
        body,
        {"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"},
    )
    assert res.status == 400, res.body
    error = res.json()["error"]
    assert error["param"] == field and error["message"].startswith(field), error
    assert error["type"] == "invalid_request_error"


def _cli(gw: ServedGateway, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unigate", *args],
        env=gw.env,
        cwd=gw.workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.process  # runs the `unigate` CLI
@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("--expires", "1e19", "--expires '1e19'"),
        ("--expires", "99999-01-01", "--expires"),
        ("--expires", "1999-01-01", "must be in the future"),
        ("--budget", "inf", "--budget"),
        ("--budget", "1e300", "--budget"),
        ("--rpm", "99999999999", "--rpm"),
        ("--name", "tab\there", "--name"),
    ],
)
def test_cli_create_validates_like_the_admin_api(
    sandbox_gateway: ServedGateway, option: str, value: str, named: str
) -> None:
    args = ["keys", "create", "--name", "cli"] if option != "--name" else ["keys", "create"]
    proc = _cli(sandbox_gateway, *args, option, value)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.process  # runs the `unigate` CLI
def test_keys_list_survives_any_stored_row(sandbox_gateway: ServedGateway) -> None:
    """Rows written before validation existed (the values the probe got through) or edited by
    hand: the listing shows them, escaped, and every other key."""
    good = sandbox_gateway.create_key_record(name="good-key")
    db = Path(sandbox_gateway.env["UNIGATE_DATA_DIR"]) / "unigate.db"
    rows = [
        ("key_bad1", "[/]\x1b[2Jmarkup", 1e19, True, 1e308, '["gpt-*"]', "[]"),
        ("key_bad2", "nan-expiry", float("nan"), 10**15, None, "not json", '{"a": 1}'),
        ("key_bad3", "text-expiry", "soon", "many", "lots", "[1, 2]", "[]"),
        ("key_bad4", "negative", -1e300, -5, -1.0, "[]", "[]"),
    ]
    with sqlite3.connect(db) as conn:
        for key_id, name, expires, rpm, budget, models, families in rows:
            conn.execute(
                "INSERT INTO api_keys (id, name, key_hash, prefix, models, families, rpm, budget,"
                " expires_at, revoked_at, created_at, webhook_secret)"
                " VALUES (?, ?, ?, 'ugk_x', ?, ?, ?, ?, ?, NULL, ?, 'whsec_x')",
                (key_id, name, key_id + "-hash", models, families, rpm, budget, expires, time.time()),
            )
    listed = _cli(sandbox_gateway, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    for key_id, *_ in rows:
        assert key_id in listed.stdout
    assert good["id"] in listed.stdout and "\x1b" not in listed.stdout
    assert "[/]\\u001b[2Jmarkup" in listed.stdout
    assert "invalid (1e+19)" in listed.stdout
    res = sandbox_gateway.admin("GET", "/admin/keys")
    assert res.status == 200 and good["id"] in res.body.decode()
