"""`/docs` in a real browser (Debian's chromium, driven by Playwright): Swagger UI renders the
description under the page's strict CSP with no violation, and "Try it out" with a key
authorized runs a call against the gateway itself."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.gateway import GatewayProcess

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
# Reported to the console by the page, so a violation fails the test instead of going unseen.
REPORT_CSP = (
    "document.addEventListener('securitypolicyviolation', "
    "e => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI))"
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="needs Debian's chromium"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_swagger_ui_renders_and_tries_a_call(sandbox_gateway: GatewayProcess, browser: Any) -> None:
    key = sandbox_gateway.create_key(name="docs-browser")
    page = browser.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.add_init_script(REPORT_CSP)
    page.goto(sandbox_gateway.base_url + "/docs")
    page.wait_for_selector(".opblock", timeout=30_000)
    assert page.locator(".opblock").count() > 50
    assert "1.0.0" in page.locator(".info .title").inner_text()

    page.click("button.authorize")
    bearer = page.locator(".auth-container").filter(has_text="bearer").first
    bearer.locator("input").fill(key)
    bearer.locator("button.authorize").click()
    page.click("button.btn-done")
    operation = "#operations-text-listModels"
    page.click(f"{operation} .opblock-summary-control")
    page.click(f"{operation} .try-out__btn")
    page.click(f"{operation} .execute")
    status = page.locator(f"{operation} .live-responses-table tbody .response-col_status").first
    status.wait_for(timeout=15_000)
    assert status.inner_text().strip() == "200"
    assert "sandbox-chat" in page.locator(f"{operation} .live-responses-table .microlight").first.inner_text()
    page.close()
    # The browser's own favicon probe is the only failed load; nothing was refused by the CSP.
    assert not [line for line in console if "CSP violation" in line or "Refused" in line], console
