"""Token ids back to text. OpenAI's embeddings API takes `input` as arrays of token ids, and
LangChain's `OpenAIEmbeddings` sends them so by default (it splits long texts by tokens), encoded
with cl100k_base, the encoding of OpenAI's embedding models, which tiktoken also falls back to
for a model it does not know. A route whose upstream embeds text only (Gemini's) gets the text
they spell.

The table is OpenAI's published `cl100k_base.tiktoken` (each token's bytes in base64 and its id,
SHA-256 223921b7…), shipped gzipped beside this module and read on first use, never at start-up:
about 100,000 byte strings, a few megabytes, in a worker that meets a token array.
"""

from __future__ import annotations

import base64
import functools
import gzip
from pathlib import Path

from unigate.errors import InvalidRequest

_TABLE = Path(__file__).with_name("vocab") / "cl100k_base.tiktoken.gz"
# cl100k_base's special tokens, which the table does not list.
_SPECIAL = {
    100257: b"<|endoftext|>",
    100258: b"<|fim_prefix|>",
    100259: b"<|fim_middle|>",
    100260: b"<|fim_suffix|>",
    100276: b"<|endofprompt|>",
}


def spelled_by_ids(given: object) -> bool:
    """`input` holds token ids (an array of ids, or of arrays of them)."""
    if not isinstance(given, list) or not given:
        return False
    return all(type(i) is int for i in given) or all(isinstance(i, list) for i in given)


@functools.cache
def table() -> tuple[bytes, ...]:
    """Each id's bytes, by id: read once per process, on first use (~0.1 s; an adapter reads it
    in a thread, off the event loop)."""
    ranked: dict[int, bytes] = dict(_SPECIAL)
    with gzip.open(_TABLE, "rb") as table:
        for line in table:
            token, _, rank = line.partition(b" ")
            ranked[int(rank)] = base64.b64decode(token)
    return tuple(ranked.get(i, b"") for i in range(max(ranked) + 1))


def decode(ids: list[int], param: str) -> str:
    """The text cl100k_base token `ids` spell (bytes that are no UTF-8 read as U+FFFD, as
    tiktoken's decode does); an id the encoding lacks is the client's 400 at `param`."""
    pieces = table()
    for i in ids:
        if type(i) is not int or not 0 <= i < len(pieces) or not pieces[i]:
            raise InvalidRequest(
                f"Invalid value in '{param}': {i!r} is not a token id of cl100k_base.", param=param
            )
    return b"".join(pieces[i] for i in ids).decode("utf-8", errors="replace")
