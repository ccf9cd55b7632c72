"""Usage and cost reports from the usage records: grouped by key, model, provider and
endpoint, optionally per time bucket (minute, hour, day; aligned in UTC), within [since,
until). Chat, streams, every other synchronous call and task submits are all usage records
(usage/recorder.py), so a report covers them alike.

`UsageQuery.parse` validates the parameters as the admin API receives them (strings); the
CLI builds its query through the same function, so both accept and refuse the same input.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from unigate.errors import InvalidRequest
from unigate.store.aio import AsyncEngine
from unigate.store.schema import usage_records

# Group name -> the record column and the field it is reported as.
GROUPS = {"key": "key_id", "model": "model", "provider": "provider", "endpoint": "endpoint", "batch": "batch"}
DEFAULT_GROUPS = ("key", "endpoint", "model")  # what /admin/usage always answered
BUCKETS = {"minute": 60, "hour": 3600, "day": 86400}
METRICS = ("requests", "prompt_tokens", "completion_tokens", "cost", "errors", "mean_latency_ms")
PARAMS = ("group_by", "since", "until", "bucket")
_LATEST = 253402300799.0  # 9999-12-31T23:59:59Z: the last instant an ISO 8601 date can name


@dataclass(frozen=True, slots=True)
class UsageQuery:
    group_by: tuple[str, ...] = DEFAULT_GROUPS
    since: float | None = None
    until: float | None = None
    bucket: str | None = None

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> UsageQuery:
        """A query from its parameters (absent ones take their defaults); 400 naming the
        parameter for any value it cannot mean."""
        group_by = DEFAULT_GROUPS if "group_by" not in params else parse_groups(params["group_by"])
        since = parse_instant(params["since"], "since") if "since" in params else None
        until = parse_instant(params["until"], "until") if "until" in params else None
        if since is not None and until is not None and until <= since:
            raise InvalidRequest("'until' must be later than 'since'.", param="until", code="invalid_value")
        bucket = params.get("bucket")
        if bucket is not None and bucket not in BUCKETS:
            raise InvalidRequest(
                f"'bucket' must be one of {', '.join(BUCKETS)}.", param="bucket", code="invalid_value"
            )
        return cls(group_by, since, until, bucket)

    def columns(self) -> list[str]:
        """The fields of each row, in order (also the CSV header)."""
        buckets = ["bucket", "bucket_start"] if self.bucket else []
        return [*(GROUPS[g] for g in self.group_by), *buckets, *METRICS]


def parse_groups(text: str) -> tuple[str, ...]:
    """`key,model` -> ("key", "model"); spaces around names are allowed, a name given twice
    counts once, and an empty value groups nothing (totals)."""
    names = [part.strip(" ") for part in text.split(",")] if text.strip(" ") else []
    for name in names:
        if name not in GROUPS:
            raise InvalidRequest(
                f"'group_by' takes a comma-separated list of {', '.join(GROUPS)}; got {name[:40]!r}.",
                param="group_by",
                code="invalid_value",
            )
    return tuple(dict.fromkeys(names))


def parse_instant(text: str, param: str) -> float:
    """Unix seconds (`1767225600`, `1767225600.5`) or ISO 8601 (`2026-01-01`,
    `2026-01-01T12:00:00Z`, `...+02:00`; UTC when no offset is given)."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = _iso_seconds(value, param)
    if not math.isfinite(seconds) or not 0 <= seconds <= _LATEST:
        raise InvalidRequest(
            f"'{param}' must be a time between 1970 and 9999 (Unix seconds or ISO 8601).",
            param=param,
            code="invalid_value",
        )
    return seconds


def _iso_seconds(value: str, param: str) -> float:
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(
            f"'{param}' must be Unix seconds or an ISO 8601 date or time, e.g. 2026-01-01T00:00:00Z.",
            param=param,
            code="invalid_value",
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


async def run(engine: AsyncEngine, query: UsageQuery) -> list[dict[str, Any]]:
    """The report's rows: per group (and bucket, oldest first) the sums and the mean latency."""
    u = usage_records.c
    groups = [u[GROUPS[g]] for g in query.group_by]
    bucket = _bucket_expr(engine, BUCKETS[query.bucket]) if query.bucket else None
    keys = [*groups, *([bucket] if bucket is not None else [])]
    stmt = sa.select(
        *keys,
        sa.func.sum(u.requests),
        sa.func.sum(u.prompt_tokens),
        sa.func.sum(u.completion_tokens),
        sa.func.sum(u.cost),
        sa.func.sum(sa.case((u.status >= 400, u.requests), else_=0)),
        sa.func.sum(u.latency_ms),
    )
    if keys:
        stmt = stmt.group_by(*keys).order_by(*([bucket] if bucket is not None else []), *groups)
    if query.since is not None:
        stmt = stmt.where(u.created_at >= query.since)
    if query.until is not None:
        stmt = stmt.where(u.created_at < query.until)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    out: list[dict[str, Any]] = []
    for row in rows:
        n = len(groups)
        requests = int(row[len(keys)] or 0)
        if not keys and requests == 0 and row[len(keys) + 3] is None:
            continue  # totals over no records: no row rather than a row of nulls
        record: dict[str, Any] = {GROUPS[g]: row[i] for i, g in enumerate(query.group_by)}
        if bucket is not None:
            start = int(row[n])
            record["bucket"] = dt.datetime.fromtimestamp(start, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            record["bucket_start"] = start
        prompt, completion, cost, errors, latency = row[len(keys) + 1 :]
        record.update(
            requests=requests,
            prompt_tokens=int(prompt or 0),
            completion_tokens=int(completion or 0),
            cost=float(cost or 0.0),
            errors=int(errors or 0),
            mean_latency_ms=round(float(latency or 0.0) / requests, 3) if requests else None,
        )
        out.append(record)
    return out


def _bucket_expr(engine: AsyncEngine, width: int) -> sa.ColumnElement[Any]:
    """The start of a record's bucket in Unix seconds. Unix time has no leap seconds, so
    multiples of the width are minute, hour and day boundaries in UTC."""
    created = usage_records.c.created_at
    # A literal, not a bound parameter: PostgreSQL matches the SELECT expression with the GROUP
    # BY one only when they are the same text, and each bound parameter gets its own number.
    w: sa.ColumnElement[int] = sa.literal_column(str(int(width)))
    if engine.dialect.name == "sqlite":
        # CAST truncates toward zero, the floor for the non-negative times stored here.
        return sa.cast(created / w, sa.Integer) * w
    return sa.cast(sa.func.floor(created / w) * w, sa.BigInteger)


def to_csv(query: UsageQuery, rows: list[dict[str, Any]]) -> bytes:
    """The rows as CSV with a header line. Text cells a spreadsheet would run as a formula
    (model names come from clients) are prefixed with an apostrophe."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    columns = query.columns()
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return out.getvalue().encode()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
