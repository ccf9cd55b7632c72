"""A small filesystem that tests can fill: a tmpfs mounted in a private mount namespace.

The mount exists only for the process started under `mounted_prefix` (and its children), so
nothing on the host is mounted or filled. Needs root and `unshare` (util-linux); when either
is missing, `require_namespaces` fails the test, since a skipped disk-full test would pass
while proving nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

_MOUNT = 'mount -t tmpfs -o size={size},mode=0700 tmpfs "$0" && {enter}exec "$@"'


def require_namespaces() -> None:
    """Fail, loudly, unless this process can mount a tmpfs in a private mount namespace."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "the disk-full tests need `unshare` (util-linux) on PATH"
    assert os.geteuid() == 0, "the disk-full tests mount a tmpfs and must run as root"
    probe = subprocess.run(
        [unshare, "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert probe.returncode == 0, f"cannot mount a tmpfs in a private mount namespace: {probe.stderr.strip()}"


def mounted_prefix(directory: Path, size: str, enter: bool = False) -> list[str]:
    """A command prefix that mounts a tmpfs of `size` (e.g. "16m") on `directory`, in a mount
    namespace of the command's own, then execs the command (same pid; with `enter`, in that
    directory)."""
    directory.mkdir(parents=True, exist_ok=True)
    mount = _MOUNT.format(size=size, enter='cd "$0" && ' if enter else "")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(directory)]


def inside(pid: int, path: Path) -> Path:
    """`path` as the process `pid` sees it: a file in its private mount, reachable from here."""
    return Path(f"/proc/{pid}/root") / path.relative_to("/")


def fill(directory: Path, name: str = "filler", leave: int = 0) -> Path:
    """Write zeros into `directory/name` until the filesystem has at most `leave` bytes free
    (0: until it refuses even one byte); returns the file."""
    path = directory / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if leave:
            stat = os.statvfs(directory)
            todo = stat.f_bavail * stat.f_frsize - leave
            while todo > 0:
                todo -= os.write(fd, bytes(min(todo, 1 << 20)))
            return path
        chunk = 1 << 20
        while chunk:
            try:
                os.write(fd, bytes(chunk))
            except OSError:
                chunk //= 2
    finally:
        os.close(fd)
    return path


def run_python_on_tiny_disk(code: str, workdir: Path, size: str = "1m") -> subprocess.CompletedProcess[str]:
    """Run `code` in a new interpreter whose working directory is a fresh tmpfs of `size`
    (this repository's modules importable, `tests.support.tiny_disk.fill` available)."""
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    return subprocess.run(
        [*mounted_prefix(workdir, size, enter=True), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
