"""The optional features' packages: each one an extra of the `unigate` distribution, installed
when the deployment uses it and imported only when the configuration asks for it.

A gateway on one machine (SQLite, local files, no tracing) needs none of them, so the default
install leaves them out: PostgreSQL's driver, the Redis client, the OpenTelemetry SDK and
exporter (with protobuf and requests), and the S3 client. `requirements/production.txt` pins
them all for a scaled-out deployment. A setting that needs a missing one stops the start with
one line naming the package and the command that installs it (`require`), instead of an
import error at the first request.
"""

from __future__ import annotations

import importlib.util
from typing import Final, NamedTuple


class Extra(NamedTuple):
    module: str  # the import that tells whether it is installed
    package: str  # its distribution, as pip names it
    wanted_by: str  # the setting that needs it, for the message


# pyproject.toml's [project.optional-dependencies] has the same names.
EXTRAS: Final = {
    "postgres": Extra("asyncpg", "asyncpg", "a postgresql:// UNIGATE_DATABASE_URL"),
    "redis": Extra("redis", "redis", "UNIGATE_REDIS_URL"),
    "otel": Extra(
        "opentelemetry.exporter.otlp.proto.http",
        "opentelemetry-exporter-otlp-proto-http",
        "OTEL_EXPORTER_OTLP_ENDPOINT (tracing)",
    ),
    "s3": Extra("obstore", "obstore", "storage.backend s3"),
}


class MissingExtra(Exception):
    """A setting needs an optional package that is not installed; the message says which
    and how to install it."""


def installed(extra: str) -> bool:
    try:
        return importlib.util.find_spec(EXTRAS[extra].module) is not None
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        return False


def require(extra: str) -> None:
    """Return when `extra`'s package is installed, else raise `MissingExtra`."""
    if not installed(extra):
        need = EXTRAS[extra]
        raise MissingExtra(
            f"{need.wanted_by} needs the {need.package} package, which is not installed: "
            f"pip install 'unigate[{extra}]', or every optional package pinned by hash: "
            "pip install --require-hashes -r requirements/production.txt"
        )
