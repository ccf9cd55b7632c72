"""unigate: a unified model gateway. Importing this package has one effect: when its compiled
modules do not match their source (unigate/compiled.py), they are loaded from the source."""

from pathlib import Path as _Path

from unigate.compiled import guard as _guard

__version__ = "1.0.0"
# Why the compiled modules are not in use (None: they are); `unigate serve` logs it.
COMPILED_PROBLEM = _guard(_Path(__file__).parent)
