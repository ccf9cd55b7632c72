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

from unigate.gateway import Gateway
from unigate.providers.base import Target, Unsupported
from unigate.translate.translation import Dropped

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
