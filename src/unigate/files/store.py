"""The `files` rows: inserted with the owner's stored bytes in one transaction, owner-scoped
reads (an expired file is gone to every reader, before the purge removes it), pages in upload
order, deletes that give the bytes back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from unigate.files.model import StoredFile
from unigate.files.table import files
from unigate.store import key_storage
from unigate.store.aio import AsyncEngine


def _file(row: Any) -> StoredFile:
    return StoredFile(
        id=row.id,
        owner=row.key_id,
        purpose=row.purpose,
        filename=row.filename,
        bytes=int(row.bytes),
        created_at=int(row.created_at),
        expires_at=None if row.expires_at is None else int(row.expires_at),
        status=row.status,
    )


def _live(now: float) -> sa.ColumnElement[bool]:
    return sa.or_(files.c.expires_at.is_(None), files.c.expires_at > now)


@dataclass(frozen=True, slots=True)
class Page:
    files: list[StoredFile]
    has_more: bool


class FileStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def insert(self, f: StoredFile, created: float) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(
                files.insert().values(
                    id=f.id,
                    key_id=f.owner,
                    purpose=f.purpose,
                    filename=f.filename,
                    bytes=f.bytes,
                    created_at=created,
                    expires_at=f.expires_at,
                    status=f.status,
                )
            )
            await key_storage.add(conn, {f.owner: f.bytes})

    async def get(self, owner: str, file_id: str, now: float) -> StoredFile | None:
        stmt = files.select().where(files.c.id == file_id, files.c.key_id == owner, _live(now))
        async with self.engine.connect() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else _file(row)

    async def page(
        self,
        owner: str,
        now: float,
        *,
        purpose: str | None,
        after: str | None,
        limit: int,
        newest_first: bool,
    ) -> Page:
        """One page of the owner's live files in upload order, after the file `after` (the
        cursor a previous page ended with; an unknown one is an empty page)."""
        stmt = files.select().where(files.c.key_id == owner, _live(now))
        if purpose is not None:
            stmt = stmt.where(files.c.purpose == purpose)
        order = (
            (files.c.created_at.desc(), files.c.id.desc())
            if newest_first
            else (files.c.created_at.asc(), files.c.id.asc())
        )
        async with self.engine.connect() as conn:
            if after:
                cursor = (
                    await conn.execute(
                        sa.select(files.c.created_at).where(files.c.id == after, files.c.key_id == owner)
                    )
                ).first()
                if cursor is None:
                    return Page([], False)
                mark = sa.tuple_(files.c.created_at, files.c.id)
                edge = sa.tuple_(sa.literal(cursor.created_at), sa.literal(after))
                stmt = stmt.where(mark < edge if newest_first else mark > edge)
            rows = (await conn.execute(stmt.order_by(*order).limit(limit + 1))).all()
        return Page([_file(r) for r in rows[:limit]], len(rows) > limit)

    async def delete(self, owner: str, file_id: str, now: float) -> bool:
        """Remove the owner's live file's row and give its bytes back; False if there is none
        (or another request removed it first)."""
        async with self.engine.begin() as conn:
            size = await conn.scalar(
                sa.delete(files)
                .where(files.c.id == file_id, files.c.key_id == owner, _live(now))
                .returning(files.c.bytes)
            )
            if size is None:
                return False
            await key_storage.add(conn, {owner: -int(size)})
        return True

    async def expired(self, now: float, batch: int) -> list[StoredFile]:
        stmt = files.select().where(files.c.expires_at <= now).order_by(files.c.expires_at).limit(batch)
        async with self.engine.connect() as conn:
            return [_file(r) for r in (await conn.execute(stmt)).all()]

    async def remove(self, found: list[StoredFile]) -> list[StoredFile]:
        """Delete these rows (expired files) and give their bytes back; the ones this call
        removed (a concurrent purge on another worker may have taken some)."""
        removed: list[StoredFile] = []
        async with self.engine.begin() as conn:
            for f in found:
                result = await conn.execute(sa.delete(files).where(files.c.id == f.id))
                if result.rowcount == 1:
                    removed.append(f)
            freed: dict[str, int] = {}
            for f in removed:
                freed[f.owner] = freed.get(f.owner, 0) - f.bytes
            await key_storage.add(conn, freed)
        return removed
