"""A throwaway PostgreSQL cluster for the store tests, started from the Debian binaries
(`.ci/run` installs them). `UNIGATE_TEST_POSTGRES_URL` points at an existing server instead."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support import markers
from tests.support.net import free_port


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _run(cmd: list[str], as_postgres: bool) -> None:
    if as_postgres:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)


@dataclass
class Cluster:
    """A running throwaway cluster: its URL, and a restart (fault tests stop it under load)."""

    url: str
    bindir: Path
    data: Path
    as_postgres: bool

    def stop(self) -> None:
        _run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"], self.as_postgres
        )

    def start(self) -> None:
        log = str(self.data.parent / "log")  # the server's output, never our pipe
        _run([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-w", "-l", log, "start"], self.as_postgres)


@contextmanager
def postgres_server() -> Iterator[str]:
    existing = os.environ.get("UNIGATE_TEST_POSTGRES_URL")
    if existing:
        yield existing
        return
    with postgres_cluster() as cluster:
        yield cluster.url


@contextmanager
def postgres_cluster() -> Iterator[Cluster]:
    markers.require("services", "a PostgreSQL server")
    bindir = _bindir()
    if bindir is None:
        raise RuntimeError(
            "PostgreSQL server binaries not found (apt-get install postgresql), "
            "or set UNIGATE_TEST_POSTGRES_URL"
        )
    as_postgres = os.geteuid() == 0  # initdb refuses to run as root
    root = Path(tempfile.mkdtemp(prefix="unigate-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if as_postgres:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = free_port()
    _run(
        [str(bindir / "initdb"), "-D", str(data), "-U", "unigate", "--auth=trust", "-E", "UTF8"], as_postgres
    )
    # The options go into the cluster's own config, so a restart (pg_ctl start) keeps them.
    with (data / "postgresql.auto.conf").open("a") as conf:
        conf.write(
            f"port = {port}\nunix_socket_directories = '{sock}'\nlisten_addresses = '127.0.0.1'\n"
            "fsync = off\nsynchronous_commit = off\n"
        )
    _run([str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log"), "start"], as_postgres)
    try:
        _run(
            [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "unigate", "unigate"],
            as_postgres,
        )
        yield Cluster(f"postgresql://unigate@127.0.0.1:{port}/unigate", bindir, data, as_postgres)
    finally:
        _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], as_postgres)
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(base: str, name: str) -> str:
    """The URL of an empty database `name` on the server of `base` (dropped first if it
    exists), for a test that needs its own schema."""
    import asyncio

    import asyncpg  # type: ignore[import-untyped]

    async def create() -> None:
        conn = await asyncpg.connect(base)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(create())
    return base.rsplit("/", 1)[0] + "/" + name
