"""Owner-only files and directories for what the gateway keeps on disk: the data directory
holds the SQLite database (API key hashes, webhook secrets, task inputs), the admin key and
the stored media, so nothing in it is for other local users. Directories the gateway creates
are 0700 and files 0600; `unigate serve` also sets the process umask to 077, so files made
elsewhere (SQLite's -wal and -shm, media, journals) are owner-only too. A directory that
already exists with wider permissions is the operator's choice: it gets a warning naming the
fix, never a refusal."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("unigate")

UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600


def restrict_umask() -> None:
    """Everything this process (and the workers it execs) creates: owner-only."""
    os.umask(UMASK)


def private_dir(path: Path, warn: bool = True) -> None:
    """`path` as a directory, created 0700 (parents as `mkdir -p` makes them); an existing one
    open to others is warned about (unless `warn` is False: the caller checks it is usable
    first, so an unusable one gets only its error)."""
    try:
        path.mkdir(mode=DIR_MODE, parents=True)
    except FileExistsError:
        if warn:
            warn_if_open(path)
        return
    path.chmod(DIR_MODE)  # mkdir's mode is filtered by the umask; the mode is meant exactly


def warn_if_open(path: Path) -> None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return  # not there or not readable: the caller's own checks say so
    if path.is_dir() and mode & 0o077:
        log.warning(
            "%s is open to other users (mode %s), but the data directory holds the database and "
            "webhook secrets; run chmod 700 %s",
            path,
            oct(mode),
            path,
        )


def private_file(path: Path) -> None:
    """Create `path` empty and 0600 unless it exists (SQLite then opens it, and makes its -wal
    and -shm files with the same mode)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def write_private(path: Path, text: str) -> None:
    """Write a new file that is 0600 from its first byte (never readable by others between a
    write and a chmod)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    path.chmod(FILE_MODE)
