"""Authentication and permissions against the real server: every 401 and 403 case, revocation
taking effect at once (admin API) and within a second (CLI, another process), the CLI
contract, and no key material in the server log."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

from tests.support.gateway import GatewayProcess
from tests.support.net import http
from tests.support.served import ServedGateway
from tests.support.waits import until

CHAT = {"model": "sandbox-chat", "messages": [{"role": "user", "content": "hello"}]}


def _chat(
    gw: ServedGateway, headers: dict[str, str], body: dict[str, object] | None = None
) -> tuple[int, dict]:
    res = http("POST", gw.base_url + "/v1/chat/completions", body or CHAT, headers)
    return res.status, res.json()


def test_missing_key_is_401(sandbox_gateway: ServedGateway) -> None:
    status, body = _chat(sandbox_gateway, {})
    assert status == 401
    assert body["error"]["type"] == "authentication_error" and body["error"]["code"] == "missing_api_key"


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-key",
        "Bearer ugk_" + "A" * 49,  # right shape, wrong checksum
        "Basic dXNlcjpwYXNz",
        "Bearer ' OR '1'='1",
        "Bearer ",
    ],
)
def test_malformed_key_is_401(sandbox_gateway: ServedGateway, header: str) -> None:
    status, body = _chat(sandbox_gateway, {"Authorization": header})
    assert status == 401
    assert body["error"]["code"] == "invalid_api_key"


def test_unknown_well_formed_key_is_401(sandbox_gateway: ServedGateway) -> None:
    from unigate.auth.keys import generate_key

    status, body = _chat(sandbox_gateway, {"Authorization": f"Bearer {generate_key()}"})
    assert status == 401 and body["error"]["message"] == "Invalid API key."


def test_revoked_key_stops_at_once(sandbox_gateway: ServedGateway) -> None:
    record = sandbox_gateway.create_key_record(name="to-revoke")
    headers = {"Authorization": f"Bearer {record['key']}"}
    assert _chat(sandbox_gateway, headers)[0] == 200
    assert sandbox_gateway.admin("DELETE", f"/admin/keys/{record['id']}").status == 200
    status, body = _chat(sandbox_gateway, headers)
    assert status == 401 and body["error"]["code"] == "revoked_api_key"


def test_expired_key_is_401(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(expires_at=time.time() + 1.0)
    headers = {"Authorization": f"Bearer {key}"}
    assert _chat(sandbox_gateway, headers)[0] == 200

    def refused() -> tuple[int, dict] | None:
        answer = _chat(sandbox_gateway, headers)
        return answer if answer[0] != 200 else None

    status, body = until(refused, "the key to expire", 5)
    assert status == 401 and body["error"]["code"] == "expired_api_key"


def test_model_glob_forbids_other_models_403(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(models=["sandbox-emb*"])
    status, body = _chat(sandbox_gateway, {"Authorization": f"Bearer {key}"})
    assert status == 403 and body["error"]["code"] == "model_not_allowed"
    client = openai.OpenAI(base_url=sandbox_gateway.base_url + "/v1", api_key=key, max_retries=0)
    assert [m.id for m in client.models.list()] == ["sandbox-embedding"]
    assert client.embeddings.create(model="sandbox-embedding", input="ok").data


def test_family_forbidden_403(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(families=["music"])
    status, body = _chat(sandbox_gateway, {"Authorization": f"Bearer {key}"})
    assert status == 403 and body["error"]["code"] == "family_not_allowed"


def test_alternate_header_forms_share_one_path(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(models=["sandbox-embedding"])
    for headers in ({"x-api-key": key}, {"x-goog-api-key": key}):
        assert _chat(sandbox_gateway, headers)[0] == 403, "scope checks apply whatever the header form"


def test_duplicate_authorization_headers_rejected(sandbox_gateway: ServedGateway) -> None:
    import http.client

    key = sandbox_gateway.create_key()
    conn = http.client.HTTPConnection("127.0.0.1", sandbox_gateway.port, timeout=10)
    conn.putrequest("POST", "/v1/chat/completions")
    conn.putheader("Authorization", f"Bearer {key}")
    conn.putheader("Authorization", "Bearer ugk_other")
    conn.putheader("Content-Type", "application/json")
    body = b'{"model":"sandbox-chat","messages":[{"role":"user","content":"x"}]}'
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    try:
        assert conn.getresponse().status == 400
    finally:
        conn.close()


def test_rate_limit_rpm(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key(rpm=3)
    headers = {"Authorization": f"Bearer {key}"}
    statuses = [_chat(sandbox_gateway, headers)[0] for _ in range(5)]
    assert statuses[:3] == [200, 200, 200] and statuses[3:] == [429, 429]
    res = http("POST", sandbox_gateway.base_url + "/v1/chat/completions", CHAT, headers)
    assert res.json()["error"]["type"] == "rate_limit_error" and int(res.headers["retry-after"]) >= 1


def test_admin_api_requires_admin_key(sandbox_gateway: ServedGateway) -> None:
    key = sandbox_gateway.create_key()
    assert http("GET", sandbox_gateway.base_url + "/admin/keys").status == 401
    assert (
        http(
            "GET", sandbox_gateway.base_url + "/admin/keys", headers={"Authorization": f"Bearer {key}"}
        ).status
        == 401
    )
    listing = sandbox_gateway.admin("GET", "/admin/keys").json()["data"]
    assert listing and all("key_hash" not in k and "key" not in k for k in listing)


def test_admin_key_record_has_webhook_secret(sandbox_gateway: ServedGateway) -> None:
    record = sandbox_gateway.create_key_record(name="hooks")
    got = sandbox_gateway.admin("GET", f"/admin/keys/{record['id']}").json()
    assert got["webhook_secret"].startswith("whsec_") and "key" not in got


def test_admin_rejects_bad_key_spec(sandbox_gateway: ServedGateway) -> None:
    res = sandbox_gateway.admin("POST", "/admin/keys", {"name": "x", "families": ["nope"], "colour": "red"})
    assert res.status == 400 and "colour" in res.json()["error"]["message"]


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
def test_cli_keys_create_list_revoke(sandbox_gateway: ServedGateway) -> None:
    created = _cli(
        sandbox_gateway,
        "keys",
        "create",
        "--name",
        "cli-key",
        "--model",
        "sandbox-*",
        "--family",
        "text",
        "--rpm",
        "100",
        "--expires",
        "2099-01-01",
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("ugk_")
    headers = {"Authorization": f"Bearer {key}"}
    assert _chat(sandbox_gateway, headers)[0] == 200, "a key created by the CLI works on the running server"
    listed = _cli(sandbox_gateway, "keys", "list")
    assert "cli-key" in listed.stdout and key not in listed.stdout
    key_id = created.stdout.split("id: ", 1)[1].split()[0]
    revoked = _cli(sandbox_gateway, "keys", "revoke", key_id)
    assert revoked.returncode == 0
    deadline = time.time() + 3
    while time.time() < deadline and _chat(sandbox_gateway, headers)[0] == 200:
        time.sleep(0.1)
    assert _chat(sandbox_gateway, headers)[0] == 401, (
        "a CLI revoke reaches the running server within a second"
    )
    assert _cli(sandbox_gateway, "keys", "revoke", "key_nope").returncode == 1
    assert _cli(sandbox_gateway, "keys", "create", "--name", "x", "--family", "bogus").returncode == 2


@pytest.mark.process  # the whole process's output, start-up included
def test_keys_never_in_log(tmp_path: Path) -> None:
    gw = GatewayProcess(tmp_path, env={"UNIGATE_LOG_LEVEL": "debug"}).start()
    try:
        record = gw.create_key_record(name="secret-check")
        key = record["key"]
        from unigate.auth.keys import hash_key

        headers = {"Authorization": f"Bearer {key}"}
        _chat(gw, headers)
        _chat(gw, headers, {"model": "nope", "messages": []})
        _chat(gw, {"Authorization": f"Bearer {key}x"})
        _chat(gw, {"x-api-key": key[:-1]})
        gw.admin("DELETE", f"/admin/keys/{record['id']}")
        _chat(gw, headers)
    finally:
        gw.stop()  # after the last usage flush
    log = gw.log()
    assert "listening" in log
    for secret in (key, key[4:], hash_key(key), key[:-1], os.environ.get("UNIGATE_ADMIN_KEY", "\0")):
        assert secret not in log
    assert gw.env["UNIGATE_ADMIN_KEY"] not in log
