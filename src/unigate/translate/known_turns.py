"""The rules the inbound translators share for a conversation's turns translated lately: a coding
agent (Claude Code, Gemini CLI) resends its whole conversation with every call, two turns longer,
so each translator (anthropic_inbound.py, gemini_inbound.py) looks its turns up by their JSON
(`orjson.dumps`: `1`, `1.0` and `true` are equal in Python and translate apart) under the calling
key's id (one key's translations are never another's) in a `RecentValues` of this process, and
translates only the turns it does not find.

A found turn's chat messages are shared by every call that resends it: canonical requests are
read, never changed, after translation (the top-level request object is each call's own).
"""

from __future__ import annotations

MIN_TURNS = 8  # a shorter conversation is translated at once: cheaper than serialising it to look up
TURNS_BYTES = 2_000_000  # JSON bytes of the turns kept, per translator and process (their chat ~2x)
