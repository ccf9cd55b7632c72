"""Usage reports (usage/query.py) and the request log (usage/request_log.py) on SQLite and
PostgreSQL: bucket alignment, sums, errors and mean latency; the log's bounds and filters."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import sqlalchemy as sa

from unigate.edge.access_log import finished
from unigate.edge.asgi import Request
from unigate.errors import InvalidRequest
from unigate.store import db
from unigate.store.schema import request_log, usage_records
from unigate.usage.query import UsageQuery, parse_instant, run, to_csv
from unigate.usage.request_log import RequestLog

DAY = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _usage_row(key: str, model: str, at: float, status: int = 200, requests: int = 1) -> dict[str, Any]:
    return {
        "request_id": "",
        "key_id": key,
        "endpoint": "chat",
        "model": model,
        "provider": "p",
        "upstream_model": model,
        "status": status,
        "prompt_tokens": 10 * requests,
        "completion_tokens": 5 * requests,
        "latency_ms": 20.0 * requests,
        "cost": 0.5 * requests,
        "created_at": at,
        "requests": requests,
    }


def test_buckets_sums_errors_and_latency(database_url: str) -> None:
    async def go() -> dict[str, list[dict[str, Any]]]:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        rows = [
            _usage_row("k1", "m1", DAY + 5, requests=3),
            _usage_row("k1", "m1", DAY + 59.9),
            _usage_row("k1", "m2", DAY + 61, status=502),
            _usage_row("k2", "m1", DAY + 3600 + 1, status=429, requests=2),
            _usage_row("k2", "m1", DAY + 86400 + 7),
        ]
        async with engine.begin() as conn:
            await conn.execute(usage_records.insert(), rows)
        out = {
            "minute": await run(engine, UsageQuery(("key",), bucket="minute")),
            "day": await run(engine, UsageQuery(("model",), bucket="day")),
            "total": await run(engine, UsageQuery(())),
            "window": await run(engine, UsageQuery(("key", "model"), since=DAY + 60, until=DAY + 3602)),
            "none": await run(engine, UsageQuery((), since=DAY + 10 * 86400)),
        }
        await engine.dispose()
        return out

    got = asyncio.run(go())
    minute = [(r["key_id"], r["bucket_start"] - DAY, r["requests"], r["errors"]) for r in got["minute"]]
    assert minute == [("k1", 0, 4, 0), ("k1", 60, 1, 1), ("k2", 3600, 2, 2), ("k2", 86400, 1, 0)]
    assert got["minute"][0]["bucket"] == "2026-01-01T00:00:00Z"
    assert got["minute"][0]["mean_latency_ms"] == pytest.approx(20.0)
    day = [(r["bucket"], r["model"], r["requests"]) for r in got["day"]]
    assert day == [("2026-01-01T00:00:00Z", "m1", 6), ("2026-01-01T00:00:00Z", "m2", 1),
                   ("2026-01-02T00:00:00Z", "m1", 1)]  # fmt: skip
    [total] = got["total"]
    assert total == {
        "requests": 8,
        "prompt_tokens": 80,
        "completion_tokens": 40,
        "cost": pytest.approx(4.0),
        "errors": 3,
        "mean_latency_ms": pytest.approx(20.0),
    }
    assert [(r["key_id"], r["model"], r["requests"]) for r in got["window"]] == [
        ("k1", "m2", 1),
        ("k2", "m1", 2),
    ]
    assert got["none"] == []


def test_parameters_and_csv() -> None:
    assert UsageQuery.parse({}).group_by == ("key", "endpoint", "model")
    assert UsageQuery.parse({"group_by": " model , key "}).group_by == ("model", "key")
    assert parse_instant("2026-01-01", "since") == DAY
    assert parse_instant("2026-01-01T02:00:00+02:00", "since") == DAY
    assert parse_instant("1767225600.5", "since") == DAY + 0.5
    for params, param in [
        ({"bucket": "Hour"}, "bucket"),
        ({"until": "0"}, "until"),
        ({"since": "inf"}, "since"),
    ]:
        with pytest.raises(InvalidRequest) as err:
            UsageQuery.parse({"since": "1", **params} if param == "until" else params)
        assert err.value.param == param
    query = UsageQuery(("model",))
    text = to_csv(query, [{"model": "=HYPERLINK(1)", "requests": 1, "cost": 0.5, "mean_latency_ms": None}])
    assert text.decode().splitlines()[1] == "'=HYPERLINK(1),1,,,0.5,,"


def _request(path: str, request_id: str, model: str | None = None) -> Request:
    scope: dict[str, Any] = {"method": "POST", "path": path, "headers": []}
    if model:
        scope["unigate.model"] = model
    return Request(scope, None, None, request_id)  # type: ignore[arg-type]


def test_request_log_keeps_the_newest_and_filters(database_url: str) -> None:
    async def go() -> tuple[int, list[dict[str, Any]], list[dict[str, Any]], int, list[dict[str, Any]]]:
        engine = db.create_engine(database_url)
        await db.migrate(engine)
        log = RequestLog(engine, per_flush=5, max_rows=4, max_age=3600)
        started = time.perf_counter()
        for i in range(8):  # only the newest 5 are kept between two writes
            log.add(
                finished(
                    _request("/v1/chat/completions", f"r{i}", "m"),
                    200 if i % 2 else 503,
                    started,
                    time.perf_counter(),
                    "k1",
                )
            )
        log.add(
            finished(
                _request("/media/0123456789abcdef.png", "media", None), 0, started, time.perf_counter(), None
            )
        )
        written = await log.flush()
        newest = await log.recent(limit=100)
        errors = await log.recent(limit=100, key_id="k1", status=(500, 599))
        async with engine.begin() as conn:  # one row older than max_age
            await conn.execute(
                sa.update(request_log).where(request_log.c.request_id == "r7").values(created_at=1.0)
            )
        await log.prune()
        async with engine.connect() as conn:
            left = (await conn.execute(sa.select(sa.func.count()).select_from(request_log))).scalar_one()
        remaining = await log.recent(limit=100)
        await engine.dispose()
        return written, newest, errors, left, remaining

    written, newest, errors, left, remaining = asyncio.run(go())
    assert written == 5
    assert [r["request_id"] for r in newest] == ["media", "r7", "r6", "r5", "r4"]
    media = newest[0]
    assert media["status"] == 499 and media["key_id"] is None and media["model"] is None
    assert media["path"] == "/media/01234567….png", "media names are capabilities: cut as in the access log"
    assert [r["request_id"] for r in errors] == ["r6", "r4"]
    assert newest[1]["model"] == "m" and newest[1]["latency_ms"] >= 0
    assert left == 3 and "r7" not in [r["request_id"] for r in remaining], remaining
