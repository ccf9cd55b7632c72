"""Loading the sandbox's media package off the event loop.

The package imports PyAV and Pillow (~150 ms, measured), so it is imported on first use only,
and that first import runs in a worker thread: on the loop it stalled every other request,
`/healthz` included, for as long. Later calls find it in `sys.modules` at no cost.
"""

from __future__ import annotations

import asyncio
import importlib
import sys

MEDIA_PACKAGE = "unigate_sandbox.media"


async def load_media() -> None:
    if MEDIA_PACKAGE not in sys.modules:
        await asyncio.to_thread(importlib.import_module, MEDIA_PACKAGE)
