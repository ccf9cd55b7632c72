"""Hosted tools on translated routes: the config's `hosted_tools` policy, the
`x-unigate-dropped-fields` header and one log line per key and tool.

A hosted tool (run by the vendor: file search, code execution, computer use...) that the
route's upstream has no equivalent for is dropped by default; the answer names it in the
header and the first such call of each key logs it. With `hosted_tools: reject` the route is
refused instead (`Unsupported`: skipped in favour of a route that can run it, a 400 when none
can), as a translated route answered before the setting existed.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from unigate.api.serve import Finish
from unigate.gateway import Gateway
from unigate.providers.base import Reply, Target, Unsupported
from unigate.translate.dropped import Dropped, with_dropped

log = logging.getLogger("unigate.hosted_tools")

MAX_REMEMBERED = 4096  # (key, tool) pairs already logged; the oldest are forgotten past this


class HostedTools:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._logged: OrderedDict[tuple[str, str], None] = OrderedDict()

    @property
    def reject(self) -> bool:
        return self.gw.config.hosted_tools == "reject"

    def check(self, dropped: Dropped) -> None:
        """Refuse a translated route for a hosted tool it would drop, if the policy says so."""
        if dropped.hosted and self.reject:
            raise Unsupported(dropped.refusal(), code="unsupported_tool", param=dropped.hosted[0].param)

    def note(self, key_id: str, target: Target, dropped: Dropped) -> None:
        """Log the hosted tools a translated route dropped, once per key and tool."""
        for tool in dropped.hosted:
            seen = (key_id, tool.name)
            if seen in self._logged:
                self._logged.move_to_end(seen)
                continue
            self._logged[seen] = None
            if len(self._logged) > MAX_REMEMBERED:
                self._logged.popitem(last=False)
            log.warning(
                "hosted tool %s dropped: route %s (%s) has no equivalent; key=%s "
                "(named in x-unigate-dropped-fields; `hosted_tools: reject` refuses it instead)",
                tool.name,
                target.route_key,
                target.provider.protocol,
                key_id,
            )

    def finish(self, fmt: str, key_id: str, dropped: Dropped) -> Finish | None:
        """The last step of a call from a client of format `fmt` (Anthropic, Gemini): an answer
        a translated route gave names what the translation dropped."""
        if not dropped.fields:
            return None

        async def finish(reply: Reply, target: Target) -> Reply:
            if reply.wire != fmt:  # translated, not relayed in the client's own format
                reply.headers = with_dropped(reply.headers, dropped.fields)
                self.note(key_id, target, dropped)
            return reply

        return finish
