"""Config files written by tests: YAML without anchors. PyYAML's dumper writes an anchor and
an alias for an object used twice (the same headers dict on two providers), and the gateway
refuses aliases in a config file (an alias bomb would expand without bound)."""

from __future__ import annotations

from typing import Any

import yaml


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(config: Any) -> str:
    return yaml.dump(config, Dumper=_NoAliases)
