"""Secret scanning of the repository (detect-secrets): every finding in a tracked file must be
in .secrets.baseline, where the test fixtures' fake keys are recorded after review. A new
finding fails with its file, line and kind; if it is a fake, record it with
`.venv/bin/detect-secrets scan --baseline .secrets.baseline`, else remove the secret."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from detect_secrets import SecretsCollection
from detect_secrets.settings import transient_settings

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / ".secrets.baseline"
VENDOR = "src/unigate/web/vendor/"


def test_no_unreviewed_secret_in_the_repository() -> None:
    baseline = json.loads(BASELINE.read_text())
    allowed = {(name, s["hashed_secret"]) for name, found in baseline["results"].items() for s in found}
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    # Vendored front-end libraries are third-party builds pinned by their registry hash
    # (scripts/vendor-assets.sh); their minified code is all high-entropy strings.
    tracked = [
        f
        for f in files
        if f and f != ".secrets.baseline" and not f.startswith(VENDOR) and (ROOT / f).is_file()
    ]
    collection = SecretsCollection(root=str(ROOT))
    # The baseline's own plugin and filter settings, so the two scans agree.
    with transient_settings(
        {"plugins_used": baseline["plugins_used"], "filters_used": baseline["filters_used"]}
    ):
        collection.scan_files(*tracked)
    new = [
        f"{name}:{secret.line_number} ({secret.type})"
        for name, secrets in collection.data.items()
        for secret in secrets
        if (name, secret.secret_hash) not in allowed
    ]
    assert len(tracked) > 100, "the scan saw the repository"
    assert not new, "unreviewed secrets: " + ", ".join(sorted(new))
