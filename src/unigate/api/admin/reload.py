"""`POST /admin/reload` (admin key): read the config file again and apply it (reload.py), on
this worker at once and on the serve's other workers within a second. Answers what changed,
or 400 `invalid_config` with the file's error while the running configuration stays."""

from __future__ import annotations

from unigate.edge.asgi import Request, send_json
from unigate.edge.endpoints import Endpoint
from unigate.reload import ConfigReloader


def endpoints(reloader: ConfigReloader) -> list[Endpoint]:
    async def reload(request: Request) -> None:
        report = await reloader.reload("POST /admin/reload", announce=True)
        await send_json(request.send, 200, report.as_json())

    return [Endpoint("POST", "/admin/reload", reload, auth="admin")]
