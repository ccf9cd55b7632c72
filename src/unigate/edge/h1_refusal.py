"""What the HTTP/1.1 protocol raises for a response head it refuses to write (h1_head.py). A
module of its own: the compiled h1_head cannot subclass a built-in exception (unigate/compiled.py)."""


class BadHeader(RuntimeError):
    """A response header the protocol refuses to write."""
