"""The README's "Moderations" example, run as written with the openai SDK against a real
gateway process serving the sandbox."""

from __future__ import annotations

import contextlib
import io
import re

from tests.support.readme import section
from tests.support.served import ServedGateway


def test_the_readme_example(sandbox_gateway: ServedGateway) -> None:
    [block] = re.findall(r"```python\n(.*?)```", section("Moderations"), re.S)
    key = sandbox_gateway.create_key()
    code = block.replace("http://127.0.0.1:8000", sandbox_gateway.base_url).replace('"ugk_..."', repr(key))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/text.md", "exec"), {})
    assert out.getvalue().splitlines() == [
        "True ['harassment', 'harassment/threatening', 'violence']",
        "[False, True]",
    ]
