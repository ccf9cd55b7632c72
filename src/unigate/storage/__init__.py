"""The files the gateway keeps itself, behind one interface (base.py): the data dir's disk
(local.py, the default) or an S3-compatible bucket shared by every replica (s3.py)."""

from __future__ import annotations

from pathlib import Path

from unigate.config import StorageConfig
from unigate.storage.base import Storage, StoredObject, file_key, input_key, keep_image, media_key, record_key
from unigate.storage.local import LocalStorage


def build_storage(config: StorageConfig, data_dir: Path) -> Storage:
    if config.backend == "s3":
        # Imported only here: a single-machine gateway never loads the S3 client.
        from unigate.storage.s3 import S3Storage

        return S3Storage(config)
    return LocalStorage(data_dir)


__all__ = [
    "LocalStorage",
    "Storage",
    "StoredObject",
    "build_storage",
    "file_key",
    "input_key",
    "keep_image",
    "media_key",
    "record_key",
]
