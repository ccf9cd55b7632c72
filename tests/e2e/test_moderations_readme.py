"""The README's "Moderations" example, run as written with the openai SDK against a real
gateway process serving the sandbox."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from tests.support.served import ServedGateway

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_example(sandbox_gateway: ServedGateway) -> None:
    section = README.read_text().split("\n## Moderations\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, re.S)
    key = sandbox_gateway.create_key()
    code = block.replace("http://127.0.0.1:8000", sandbox_gateway.base_url).replace('"ugk_..."', repr(key))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().splitlines() == [
        "True ['harassment', 'harassment/threatening', 'violence']",
        "[False, True]",
    ]
