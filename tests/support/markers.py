"""The markers that take a test out of the default run, and the guard that keeps the default
run in-process: starting a `unigate serve` process or a service (PostgreSQL, Redis, an S3
server, nginx) from a test that carries none of them is an error naming the marker to add.

`tests/conftest.py` tells the guard which markers the running test has before its fixtures
are set up (a module-scoped fixture is started by the first test that asks for it).
"""

from __future__ import annotations

# Registered in pyproject.toml, deselected by its `addopts`; `scripts/test.sh` runs them all.
SLOW = ("process", "services", "browser", "soak", "cluster", "fuzz", "clients")

_current: set[str] = set()


def running(markers: set[str]) -> None:
    _current.clear()
    _current.update(markers)


def require(marker: str, what: str) -> None:
    """Refuse `what` unless the running test is out of the default run."""
    if not _current.intersection(SLOW):
        raise RuntimeError(
            f"{what} in a test of the default run: mark the test `{marker}` "
            f"(pytest.mark.{marker}), or keep it in-process"
        )
