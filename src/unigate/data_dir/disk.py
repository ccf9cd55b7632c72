"""The disk the data directory is on: allocating a file's blocks before it is memory-mapped,
and telling a full or failing disk from a bug.

A store into a page of a mapped file that the filesystem has no block for is not an error the
program can catch: the kernel sends SIGBUS, which kills the process. So every mapped file gets
its blocks first (`allocate`), where a full disk is an ordinary OSError.
"""

from __future__ import annotations

import errno
import os

# The disk is full, over its quota, failing or read-only: it may take writes again later.
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
# posix_fallocate refused by the filesystem itself (C libraries without an emulation).
_UNSUPPORTED = frozenset({errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL})
_ZEROS = bytes(1 << 16)


def allocate(fd: int, offset: int, length: int) -> None:
    """Give the file `fd` real blocks for [offset, offset + length), extending it as needed;
    OSError (ENOSPC: the disk is full) when the filesystem cannot."""
    try:
        os.posix_fallocate(fd, offset, length)
        return
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
    # Zeros written are blocks allocated all the same (glibc's own fallback). Only past the
    # file's end, so no byte in it is overwritten: callers allocate only what they extend by.
    end = offset + length
    offset = max(offset, os.fstat(fd).st_size)
    while offset < end:
        offset += os.pwrite(fd, _ZEROS[: min(len(_ZEROS), end - offset)], offset)


def disk_failed(exc: BaseException) -> bool:
    """Whether `exc`, or the error it was raised from, is a disk refusing a write (full, over
    quota, failing): a condition that passes, not a bug."""
    return any(isinstance(e, OSError) and e.errno in DISK_ERRORS for e in (exc, exc.__cause__))
