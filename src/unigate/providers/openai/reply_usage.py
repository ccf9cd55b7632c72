"""The token counts of a complete OpenAI-format JSON reply, read without parsing the body: its
`usage` object is the last one in the reply, and its counters are plain integers. A scan for
two keys, in a compiled module: on a served chat call the two regular expressions it replaces
were the costliest line of the relay."""

from __future__ import annotations

from typing import Final

from unigate.usage.recorder import Usage

# Final: compiled, each is a constant in the code, not a lookup in the module's namespace.
_ZERO: Final = 48  # "0"
_NINE: Final = 57  # "9"
_COLON: Final = 58  # ":"
_SPACE: Final = 32  # " "


def body_usage(data: bytes) -> Usage:
    """`prompt_tokens` and `completion_tokens` of the reply's last `usage` (0 when absent)."""
    usage = Usage()
    at = data.rfind(b'"usage"')
    if at >= 0:
        usage.prompt_tokens = _counter(data, b'"prompt_tokens"', at)
        usage.completion_tokens = _counter(data, b'"completion_tokens"', at)
    return usage


def _counter(data: bytes, key: bytes, start: int) -> int:
    """The integer after the first `key` at or after `start` whose value is one (`"key" : 12`)."""
    end = len(data)
    at = data.find(key, start)
    while at >= 0:
        i = at + len(key)
        while i < end and _space(data[i]):
            i += 1
        if i < end and data[i] == _COLON:
            i += 1
            while i < end and _space(data[i]):
                i += 1
            value = 0
            first = i
            while i < end and _ZERO <= data[i] <= _NINE:
                value = value * 10 + data[i] - _ZERO
                i += 1
            if i > first:
                return value
        at = data.find(key, at + 1)
    return 0


def _space(byte: int) -> bool:
    """What the scan skips around the colon: the space and the controls from tab to carriage
    return (JSON allows four of them there; the regular expressions this scan replaced skipped
    all of them)."""
    return byte == _SPACE or 9 <= byte <= 13
