"""Text that a stream builds from many small pieces: an answer's deltas, a tool call's argument
fragments. The stream translators keep such text in a `Pieces` rather than a growing `str`:
appending to a string held in an attribute or a dict copies the whole string each time
(CPython appends in place only to a local variable), so an answer of 80,000 deltas cost 2.6 s
of the worker's loop, time quadratic in its length."""

from __future__ import annotations


class Pieces:
    """The pieces as they came, joined once when the text is read (`joined`)."""

    __slots__ = ("_pieces", "chars")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self.chars = 0  # the text's length, known without joining it

    def add(self, piece: str) -> None:
        self._pieces.append(piece)
        self.chars += len(piece)

    def joined(self) -> str:
        """The whole text so far, kept joined: reading it again costs nothing. (Reading it after
        every piece would copy it every time: the translators read it for a citation, a
        grounding or the final object, not per chunk.)"""
        pieces = self._pieces
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else ""
