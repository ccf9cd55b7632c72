"""The admin dashboard in a real browser (Debian's chromium, driven by Playwright; no browser
download): log in with the admin key, create a key in the page, use it through the OpenAI SDK,
find the call in the usage chart and the recent requests, revoke the key in the page and see
the SDK refused. Also: the pages' security headers, no admin key in any HTML, the login form
without a session. Saves a screenshot of each page to a temporary folder, or to the folder
$UNIGATE_SCREENSHOTS names (`UNIGATE_SCREENSHOTS=docs/screenshots` refreshes docs/operations.md's)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.gateway import ADMIN_KEY
from tests.support.net import http
from tests.support.receiver import WebhookReceiver
from tests.support.served import ServedGateway

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Thirteen more chat models (aliases of the sandbox's), for a usage chart with many series.
ALIASES = [f"alias-{i:02d}" for i in range(1, 14)]
CONFIG = {
    "sandbox": {"enabled": True, "music_seconds": 1.5},
    "tasks": {"poll_interval": 0.3, "max_poll_interval": 1.0},
    "providers": [{"name": "sandbox", "protocol": "sandbox"}],
    "models": [{"name": a, "routes": [{"provider": "sandbox", "model": "sandbox-chat"}]} for a in ALIASES],
}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="needs Debian's chromium"),
]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    env = {"UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1"}
    with ServedGateway(tmp_path_factory.mktemp("dashboard"), config=CONFIG, env=env) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_pages_send_strict_security_headers_and_no_secret(gw: ServedGateway) -> None:
    for path in ("/dashboard", "/dashboard/", "/dashboard/app.js", "/dashboard/vendor/preact.mjs"):
        res = http("GET", gw.base_url + path)
        assert res.status == 200, path
        csp = res.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp, csp
        assert "frame-ancestors 'none'" in csp
        assert res.headers["x-content-type-options"] == "nosniff"
        assert res.headers["x-frame-options"] == "DENY"
        assert res.headers["referrer-policy"] == "no-referrer"
        assert "set-cookie" not in res.headers
        assert ADMIN_KEY.encode() not in res.body
    page = http("GET", gw.base_url + "/dashboard").body.decode()
    assert "<script>" not in page and "onclick" not in page.lower(), "no inline script"
    etag = http("GET", gw.base_url + "/dashboard/app.js").headers["etag"]
    assert http("GET", gw.base_url + "/dashboard/app.js", headers={"If-None-Match": etag}).status == 304
    for missing in ("/dashboard/nope.js", "/dashboard/../admin_key", "/dashboard/vendor/../../gateway.py"):
        assert http("GET", gw.base_url + missing).status == 404, missing


@pytest.fixture
def shots_dir(tmp_path: Path) -> Path:
    """Where the screenshots go: never into the repository unless asked to."""
    chosen = os.environ.get("UNIGATE_SCREENSHOTS")
    path = Path(chosen) if chosen else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_dashboard_flow(gw: ServedGateway, browser: Any, shots_dir: Path) -> None:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sent: list[tuple[str, str | None]] = []
    page.on("request", lambda r: sent.append((r.url, r.headers.get("authorization"))))
    shots: list[Path] = []

    def shot(name: str) -> None:
        path = shots_dir / f"dashboard-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        shots.append(path)

    # Without a session: the login form, nothing else.
    page.goto(gw.base_url + "/dashboard")
    page.wait_for_selector("form#login")
    assert page.locator("header nav").count() == 0
    shot("login")
    page.fill("input[name=admin_key]", "not-the-admin-key")
    page.click("form#login button[type=submit]")
    page.wait_for_selector("text=That is not the admin key.")
    problems.clear()  # the browser reports that 401 on the console; it was the point

    # Log in; the key is kept for this tab only, never in the page.
    page.fill("input[name=admin_key]", ADMIN_KEY)
    page.click("form#login button[type=submit]")
    page.wait_for_selector("#nav-keys")
    assert page.evaluate("sessionStorage.getItem('unigate.adminKey')") == ADMIN_KEY
    assert ADMIN_KEY not in page.content()

    # Create a key in the page and read it from there (it is shown once).
    page.fill("#create-key input[name=name]", "dashboard-e2e")
    page.fill("#create-key input[name=rpm]", "600")
    page.fill("#create-key input[name=budget]", "5")
    page.select_option("#create-key select[name=budget_period]", "monthly")
    page.click("#create-key button[type=submit]")
    key = page.inner_text("#new-key").strip()
    assert key.startswith("ugk_"), key
    key_id = gw.admin("GET", "/admin/keys").json()["data"][-1]["id"]
    page.wait_for_selector(f"[data-key-status='{key_id}']")

    # Use it through the OpenAI SDK, and start a task with a webhook for the tasks page.
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    reply = client.chat.completions.create(
        model="sandbox-chat", messages=[{"role": "user", "content": "hello from the dashboard test"}]
    )
    assert reply.choices[0].message.content
    task_id = _music_task(gw, key)
    # A batch's lines, for the usage view's batches table.
    batch = http(
        "POST",
        gw.base_url + "/v1/messages/batches",
        {"requests": [{"custom_id": "one", "params": {"model": "sandbox-chat", "max_tokens": 8,
                                                      "messages": [{"role": "user", "content": "hi"}]}}]},
        {"x-api-key": key},
    ).json()["id"]  # fmt: skip

    # The call is in the usage chart (per key, labelled by the key's name, and per model) ...
    page.click("#nav-usage")
    series = _chart_series(page, "#chart-by-key", "dashboard-e2e")
    assert series["total"] >= 1, series
    by_model = page.evaluate(
        "() => Chart.getChart(document.querySelector('#chart-by-model canvas')).data.datasets"
        ".map(d => [d.label, d.data.reduce((a, b) => a + b, 0)])"
    )
    assert ["sandbox-chat", 1] in by_model or any(m == "sandbox-chat" and n >= 1 for m, n in by_model)
    assert page.locator("#usage-table", has_text=key_id).count() == 1
    page.locator("#usage-batches", has_text=batch).wait_for()
    shot("usage")

    # ... and in the recent requests, with its status, latency, model and key.
    page.click("#nav-requests")
    row = page.locator("#requests-table tbody tr", has_text=key_id).filter(has_text="sandbox-chat").first
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[1].strip() == "200" and float(cells[2].replace(",", "")) >= 0, cells
    assert "POST /v1/chat/completions" in cells[3], cells
    shot("requests")

    # The task, its status and its webhook delivery.
    page.click("#nav-tasks")
    task_row = page.locator("#tasks-table tbody tr", has_text=task_id)
    task_row.filter(has_text="SUCCESS").filter(has_text="delivered").wait_for(timeout=20_000)
    shot("tasks")

    # Providers and routes with their health.
    page.click("#nav-providers")
    page.locator("#routes-table tbody tr", has_text="sandbox-chat").first.wait_for()
    assert page.locator("#providers-table", has_text="sandbox").count() == 1
    assert "healthy" in page.locator("#routes-table").inner_text()
    shot("providers")

    # Revoke the key in the page; the SDK is refused from then on.
    page.click("#nav-keys")
    page.click(f"[data-revoke='{key_id}']")
    page.click(f"[data-confirm-revoke='{key_id}']")
    page.wait_for_selector(f"[data-key-status='{key_id}']:has-text('revoked')")
    assert key not in page.content(), "the new key is shown once, not after leaving the page"
    shot("keys")
    with pytest.raises(openai.AuthenticationError) as refused:
        client.chat.completions.create(model="sandbox-chat", messages=[{"role": "user", "content": "again"}])
    assert refused.value.status_code == 401

    # The admin key only ever left the page as the Authorization header of admin calls.
    for url, auth in sent:
        assert ADMIN_KEY not in url
        assert auth is None or ("/admin/" in url and auth.startswith("Bearer ")), url
    assert context.cookies() == []
    assert not problems, problems  # no script error, no CSP violation

    # Logging out forgets the key.
    page.click("#logout")
    page.wait_for_selector("form#login")
    assert page.evaluate("sessionStorage.getItem('unigate.adminKey')") is None
    context.close()
    for path in shots:
        print(f"screenshot: {path}")


def test_dashboard_layout_at_1280_and_420_px(gw: ServedGateway, browser: Any, tmp_path: Path) -> None:
    """The header's Log out is readable and the header wraps on a phone; a chart of 13 models
    gives each its own colour; the recent requests fit 1,280 px and say why a call failed;
    the browser's /favicon.ico is served and kept out of the request log. Screenshots go to
    `tmp_path` (printed) to be looked at."""
    key = gw.create_key()
    client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)
    for alias in ALIASES:
        client.chat.completions.create(model=alias, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
    icon = http("GET", gw.base_url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml", icon.headers

    for width in (1280, 420):
        context = browser.new_context(viewport={"width": width, "height": 900})
        context.add_init_script(f"sessionStorage.setItem('unigate.adminKey', {ADMIN_KEY!r})")
        page = context.new_page()
        page.goto(gw.base_url + "/dashboard#usage")
        page.wait_for_selector("#chart-by-model canvas")
        page.wait_for_function(
            "n => JSON.parse(document.querySelector('#chart-by-model').dataset.series).length >= n",
            arg=len(ALIASES),
        )
        # Log out is drawn in a colour that is not the bar's.
        colours = page.evaluate(
            "() => [getComputedStyle(document.querySelector('#logout')).color,"
            " getComputedStyle(document.querySelector('header')).backgroundColor]"
        )
        assert colours[0] != colours[1], colours
        box = page.locator("#logout").bounding_box()
        assert box is not None and box["x"] + box["width"] <= width, (width, box)
        # Every model of the chart has a colour of its own.
        fills = page.evaluate(
            "() => Chart.getChart(document.querySelector('#chart-by-model canvas')).data.datasets"
            ".map(d => d.backgroundColor)"
        )
        assert len(fills) >= 13 and len(set(fills)) == len(fills), fills
        overflow = page.evaluate("() => document.documentElement.scrollWidth")
        assert overflow <= width, (width, overflow)
        page.screenshot(path=str(tmp_path / f"usage-{width}.png"), full_page=True)
        page.click("#nav-requests")
        failed = page.locator("#requests-table tbody tr", has_text="no-such-model").first
        failed.wait_for()
        assert "model_not_found" in failed.inner_text()
        assert page.locator("#requests-table", has_text="favicon").count() == 0
        print(f"screenshots: {tmp_path}")
        page.screenshot(path=str(tmp_path / f"requests-{width}.png"), full_page=True)
        overflow = page.evaluate("() => document.documentElement.scrollWidth")
        assert overflow <= width, (width, overflow)  # wide tables scroll inside their card
        if width == 1280:  # the table fits its card: no sideways scrolling
            fits = page.evaluate(
                "() => { const card = document.querySelector('#requests-table').closest('.card');"
                " return [card.scrollWidth, card.clientWidth]; }"
            )
            assert fits[0] <= fits[1], fits
        else:  # the header wrapped onto more lines rather than overflowing
            header = page.evaluate("() => document.querySelector('header').getBoundingClientRect().height")
            assert header > 60, header
        context.close()
    requests = gw.admin("GET", "/admin/requests?limit=200").json()["data"]
    assert not [r for r in requests if r["path"] == "/favicon.ico"]
    print(f"screenshots: {tmp_path}")


def _chart_series(page: Any, chart: str, label: str) -> dict[str, Any]:
    """The chart's series `label` as the page drew it (data-series), once it is there."""
    page.wait_for_function(
        "([sel, label]) => { const el = document.querySelector(sel);"
        " return el && JSON.parse(el.dataset.series).some(s => s.label === label && s.total > 0); }",
        arg=[chart, label],
    )
    drawn = page.evaluate(
        "([sel, label]) => { const c = Chart.getChart(document.querySelector(sel + ' canvas'));"
        " const d = c.data.datasets.find(d => d.label === label);"
        " return {label: d.label, total: d.data.reduce((a, b) => a + b, 0),"
        " buckets: c.data.labels.length}; }",
        [chart, label],
    )
    return dict(drawn)


def _music_task(gw: ServedGateway, key: str) -> str:
    receiver = WebhookReceiver().start()
    try:
        res = http(
            "POST",
            gw.base_url + "/suno/submit/music",
            {"prompt": "a song for the dashboard", "mv": "chirp-v4", "notify_hook": receiver.url},
            {"Authorization": f"Bearer {key}"},
        )
        assert res.status == 200, res.body
        task_id = str(res.json()["data"]["task_id"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            view = gw.admin("GET", f"/admin/tasks/{task_id}").json()
            if view["status"] == "SUCCESS" and all(e["state"] == "delivered" for e in view["events"]):
                return task_id
            time.sleep(0.2)
        raise AssertionError(f"task {task_id} did not finish with its webhooks delivered")
    finally:
        receiver.stop()
