"""A sample string for a regular expression, for JSON Schema `pattern`s.

Covers the subset schemas use in practice: literals and escapes, `.`, `\\d \\w \\s`,
character classes (ranges, negation), groups with alternation (the first branch is taken),
anchors and lookarounds (skipped), and quantifiers (the minimum count is produced).
Anything else yields None; callers check the sample with `re.search` before using it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

_ESCAPES: Mapping[str, str] = MappingProxyType(
    {"d": "1", "D": "a", "w": "a", "W": "-", "s": " ", "S": "a", "n": "\n", "t": "\t", "r": "\r"}
)
_ANCHOR_ESCAPES = frozenset("bBAZzG")
_CLASS_PICKS = "aA0_- x.@:/1zZ9"  # tried in order against a negated class


class _Unsupported(Exception):
    pass


def sample_for_pattern(pattern: str) -> str | None:
    parser = _Parser(pattern)
    try:
        sample = parser.alternation()
        if parser.i != len(pattern):
            return None  # an unbalanced ")"
    except (_Unsupported, IndexError, ValueError):
        return None
    return sample


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def peek(self) -> str:
        return self.p[self.i] if self.i < len(self.p) else ""

    def take(self) -> str:
        c = self.p[self.i]
        self.i += 1
        return c

    def alternation(self) -> str:
        first = self.sequence()
        while self.peek() == "|":
            self.i += 1
            self.sequence()  # later branches are parsed only to be skipped
        return first

    def sequence(self) -> str:
        out: list[str] = []
        while self.peek() not in ("", "|", ")"):
            atom = self.atom()
            out.append(atom * self.quantifier())
        return "".join(out)

    def atom(self) -> str:
        c = self.take()
        if c in "^$":
            return ""
        if c == ".":
            return "a"
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == "\\":
            return self.escape(in_class=False)
        if c in "*+?{":
            raise _Unsupported(c)
        return c

    def group(self) -> str:
        lookaround = False
        if self.p.startswith("?:", self.i):
            self.i += 2
        elif self.p.startswith(("?=", "?!"), self.i):
            self.i, lookaround = self.i + 2, True
        elif self.p.startswith(("?<=", "?<!"), self.i):
            self.i, lookaround = self.i + 3, True
        elif self.p.startswith(("?P<", "?<"), self.i):
            self.i = self.p.index(">", self.i) + 1
        elif self.peek() == "?":
            raise _Unsupported("inline flags")
        inner = self.alternation()
        if self.take() != ")":
            raise _Unsupported("unclosed group")
        return "" if lookaround else inner

    def escape(self, in_class: bool) -> str:
        c = self.take()
        if c in _ESCAPES:
            return _ESCAPES[c]
        if c in _ANCHOR_ESCAPES and not in_class:
            return ""
        if c.isdigit():
            raise _Unsupported("back reference")
        if c == "u":
            code = self.p[self.i : self.i + 4]
            self.i += 4
            return chr(int(code, 16))
        return c

    def char_class(self) -> str:
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        members: list[tuple[str, str]] = []  # inclusive ranges; class escapes as samples
        first = True
        while first or self.peek() != "]":
            first = False
            c = self.take()
            low = self.escape(in_class=True) if c == "\\" else c
            if self.peek() == "-" and self.p[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                c = self.take()
                high = self.escape(in_class=True) if c == "\\" else c
                members.append((low, high))
            else:
                members.append((low, low))
        self.i += 1  # the closing "]"
        if not negate:
            return members[0][0]
        for pick in _CLASS_PICKS:
            if not any(lo <= pick <= hi for lo, hi in members):
                return pick
        raise _Unsupported("negated class excludes every sample")

    def quantifier(self) -> int:
        c = self.peek()
        if c in ("?", "*"):
            count = 0
        elif c == "+":
            count = 1
        elif c == "{" and self.p.find("}", self.i) > self.i:
            end = self.p.index("}", self.i)
            low = self.p[self.i + 1 : end].split(",")[0].strip()
            if not low.isdigit():
                return 1  # a literal "{", as Python treats it
            self.i = end
            count = int(low)
        else:
            return 1
        self.i += 1
        if self.peek() in ("?", "+"):
            self.i += 1  # lazy / possessive forms repeat the same minimum
        return count
