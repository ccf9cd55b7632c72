"""Short garbage collections in the test process.

The app collects and freezes the heap once it has started (`gc.freeze` in src/unigate/app.py:
never scanned again). In a test process that heap is every test module, SDK and fake (~400k
objects), and the app's freeze takes the tests' own objects with it, which the harness then
had to thaw (a stopped gateway's cycles would never be collected, nor its unclosed resources
reported): every gateway start and every file's end (tests/conftest.py) was a full walk of it,
~0.2 s of CPU each, hundreds of times a run.

Instead the heap as collection left it (imports, the collected tests) is frozen once, before
the first test, and the app's own freeze is left out in this process: a collection walks only
what the tests made since, and everything they make is still collected and reported.
"""

from __future__ import annotations

import gc

import unigate.app


class _AppGc:
    """The `gc` the app sees in the test process: its collection, no freeze."""

    collect = staticmethod(gc.collect)

    @staticmethod
    def freeze() -> None:
        return None


def keep_the_app_from_freezing() -> None:
    unigate.app.gc = _AppGc  # type: ignore[assignment]


def freeze_what_collection_left() -> None:
    gc.collect()
    gc.freeze()
