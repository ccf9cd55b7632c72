"""Limits and budgets across replicas, against the real deployment in miniature: 3 replicas
of `unigate serve` (2 workers each) behind nginx on one PostgreSQL and one Redis.

- 3,000 concurrent requests from 16 clients on a 1,000 RPM key, spread over every replica:
  the accepted count is the GCRA allowance (the limit, plus what comes back during the run)
  within 1% of the limit; the same for a 100,000 TPM key (100 tokens a call); a budget
  that covers 1,000 calls (no refill there) admits exactly 1,000, the last few once the
  leases held when the load stopped have lapsed.
- A settlement made on one replica frees the tokens on the others.
- Redis stopped mid-load: the documented behaviour (README "Limits and budgets"): rate limits
  go on per replica, budgeted calls get 503 `limits_unavailable`, one warning line per worker;
  Redis started again: limits exact across the cluster again within seconds (measured).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.cluster import GatewayCluster, gateway_cluster
from tests.support.net import HTTPResult, http
from unigate.limits.redis_lease import LEASE_SHARE, LEASE_TTL

pytestmark = pytest.mark.cluster

CHAT = "/v1/chat/completions"
CLIENTS = 16
PRICE = 0.01  # per call of `priced-chat`: a budget of 10 covers exactly 1,000 calls


def _config() -> dict[str, Any]:
    priced = {"name": "priced-chat", "routes": [{"provider": "sandbox", "model": "sandbox-chat"}]}
    return {"models": [{**priced, "price_per_call": PRICE}], "sandbox": {"enabled": True, "music_seconds": 1}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[GatewayCluster]:
    with gateway_cluster(replicas=3, workers=2, config=_config()) as c:
        yield c


def _chat(
    url: str, key: str, model: str = "sandbox-chat", embed: bool = False, max_tokens: int = 5
) -> HTTPResult:
    messages = [{"role": "user", "content": "hi"}]
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    path = CHAT
    if embed:
        # 100 words: the estimate is the sandbox's own count, so no correction is pending.
        body, path = {"model": "sandbox-embedding", "input": " ".join(["word"] * 100)}, "/v1/embeddings"
    try:
        return http("POST", url + path, body, {"Authorization": f"Bearer {key}"}, timeout=20)
    except OSError as exc:
        return HTTPResult(0, {}, str(exc).encode())


def _hammer(c: GatewayCluster, key: str, n: int, **extra: Any) -> tuple[list[HTTPResult], float]:
    started = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(lambda _: _chat(c.url, key, **extra), range(n)))
    return results, time.monotonic() - started


def _check_allowance(
    what: str, results: list[HTTPResult], seconds: float, limit: int, c: GatewayCluster
) -> None:
    statuses = Counter(r.status for r in results)
    accepted = statuses[200]
    # GCRA: the whole limit at once, then limit/60 a second while the run lasts.
    allowance = limit + seconds * limit / 60
    replicas = Counter(c.replica_of(r) for r in results)
    print(
        f"{what}: {accepted} of {len(results)} accepted in {seconds:.2f} s (allowance {allowance:.1f}: "
        f"{accepted - allowance:+.1f} = {100 * (accepted - allowance) / limit:+.2f}% of the limit); "
        f"statuses {dict(statuses)}; per replica {dict(sorted(replicas.items()))}"
    )
    assert set(statuses) <= {200, 429}, statuses
    assert len([i for i in replicas if i >= 0]) == 3, "the load must reach every replica"
    assert limit <= accepted <= allowance + 1, "never more than the allowance, across 6 workers"
    assert abs(accepted - allowance) <= limit / 100


def test_rpm_exact_across_replicas(cluster: GatewayCluster) -> None:
    key = cluster.create_key(rpm=1000)
    results, seconds = _hammer(cluster, key, 3000)
    _check_allowance("1,000 RPM key, 3 replicas x 2 workers", results, seconds, 1000, cluster)


def test_tpm_exact_across_replicas(cluster: GatewayCluster) -> None:
    key = cluster.create_key(tpm=100_000)
    probe = _chat(cluster.url, cluster.create_key(), embed=True).json()["usage"]
    assert probe["total_tokens"] == 100, probe
    results, seconds = _hammer(cluster, key, 3000, embed=True)
    _check_allowance("100,000 TPM key at 100 tokens a call", results, seconds, 1000, cluster)


def test_budget_exact_across_replicas(cluster: GatewayCluster) -> None:
    """Never a call past the budget; every call it covers is admitted once the leases held
    when the load stopped have lapsed (a worker's unspent slice counts as spent until then:
    at most a slice a worker short meanwhile, `redis_lease.py`)."""
    record = cluster.create_key_record(budget=1000 * PRICE)
    results, seconds = _hammer(cluster, record["key"], 3000, model="priced-chat")
    statuses = Counter(r.status for r in results)
    codes = Counter(r.json()["error"]["code"] for r in results if r.status == 429)
    print(f"budget for 1,000 calls: {statuses[200]} of 3000 accepted in {seconds:.2f} s; {dict(codes)}")
    assert set(statuses) == {200, 429} and set(codes) == {"insufficient_quota"}
    assert 1000 - 6 * LEASE_SHARE * 1000 <= statuses[200] <= 1000  # 3 replicas x 2 workers
    time.sleep(2 * LEASE_TTL + 0.5)  # the leases lapse and their rest is given back
    later, _ = _hammer(cluster, record["key"], 200, model="priced-chat")
    recovered = sum(r.status == 200 for r in later)
    print(f"after the leases lapsed: {recovered} more")
    assert statuses[200] + recovered == 1000


def test_a_settlement_frees_tokens_on_every_replica(cluster: GatewayCluster) -> None:
    key = cluster.create_key(tpm=300)
    first = _chat(cluster.replica_url(0), key, max_tokens=200)
    assert first.status == 200 and int(first.headers["x-ratelimit-remaining-tokens"]) < 100
    used = first.json()["usage"]["total_tokens"]
    time.sleep(0.2)  # the correction rides on the worker's next call, or goes alone after 20 ms
    # Another replica admits a second 200-token reservation: only the real use stayed counted.
    second = _chat(cluster.replica_url(1), key, max_tokens=200)
    assert second.status == 200, (used, second.body)
    time.sleep(0.2)
    used += second.json()["usage"]["total_tokens"]
    left = 300 - used
    # (5 tokens a second flow back meanwhile: margins for a slow machine)
    assert _chat(cluster.replica_url(2), key, max_tokens=left + 20).status == 429
    third = _chat(cluster.replica_url(2), key, max_tokens=left - 5)
    print(f"tpm=300: two 200-token reservations settled to {used} tokens; {left - 5} more on a third replica")
    assert third.status == 200, third.body


def _fresh_limit_admits(c: GatewayCluster, limit: int, n: int) -> int:
    """How many of `n` concurrent calls a new key limited to `limit` RPM gets, spread evenly
    over the replicas (straight to each, round-robin)."""
    key = c.create_key(rpm=limit)
    urls = c.replica_urls
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(lambda i: _chat(urls[i % len(urls)], key), range(n)))
    return sum(r.status == 200 for r in results)


def test_redis_down_mid_load_then_exact_again(cluster: GatewayCluster) -> None:
    rate_key = cluster.create_key(rpm=600)
    budget_key = cluster.create_key(budget=1000.0)
    seen: dict[str, list[tuple[float, int, str]]] = {"rate": [], "budget": []}
    stop = threading.Event()

    def client(kind: str, key: str, model: str) -> None:
        while not stop.is_set():
            res = _chat(cluster.url, key, model=model)
            code = res.json().get("error", {}).get("code", "") if res.status not in (0, 200) else ""
            seen[kind].append((time.monotonic(), res.status, code))

    threads = [threading.Thread(target=client, args=("rate", rate_key, "sandbox-chat")) for _ in range(4)]
    threads += [threading.Thread(target=client, args=("budget", budget_key, "priced-chat")) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        cluster.stop_redis()
        down_at = time.monotonic()
        time.sleep(2.0)
        # While Redis is away, a new key's limit holds per replica: 10 RPM on each of 3.
        during = _fresh_limit_admits(cluster, 10, 60)
        cluster.start_redis()
        up_at, up_wall = time.monotonic(), time.time()
        # Back: a new key's limit is exact across the cluster again. Measured: how long after
        # Redis answers until a whole burst is decided exactly.
        exact_after = None
        attempts = []
        while time.monotonic() - up_at < 20:
            tried = time.monotonic() - up_at
            admitted = _fresh_limit_admits(cluster, 10, 60)
            attempts.append(f"{tried:.2f} s: {admitted}")
            if admitted == 10:
                exact_after = time.monotonic() - up_at  # the end of that burst: an upper bound
                break
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(30)

    def window(kind: str, start: float, end: float) -> Counter[tuple[int, str]]:
        return Counter((s, code) for at, s, code in seen[kind] if start <= at < end)

    # Requests under way when Redis stopped may be decided either way, and a worker spends a
    # lease it took before the outage until the lease lapses (its units were counted as spent in
    # Redis when leased, so the budget still holds); from then on:
    settled = down_at + LEASE_TTL + 0.25
    rate_down = window("rate", settled, up_at)
    budget_down = window("budget", settled, up_at)
    print(f"Redis down {up_at - down_at:.1f} s: rate key {dict(rate_down)}, budget key {dict(budget_down)}")
    print(f"new 10 RPM key, 60 calls over 3 replicas: {during} admitted while Redis was down")
    print(f"limits exact across the cluster again {exact_after} s after Redis was started again ({attempts})")
    assert rate_down[(200, "")] > 0, "rate-limited traffic goes on (per-node limits)"
    assert set(budget_down) == {(503, "limits_unavailable")}, "budgets fail closed"
    assert during == 30, "each replica enforced the 10 RPM on its own"
    assert exact_after is not None and exact_after < 10, cluster.logs()
    budget_after = window("budget", up_at + exact_after, time.monotonic())
    assert budget_after[(200, "")] > 0 and not budget_after[(503, "limits_unavailable")]
    back_after = []
    for name, path in cluster.log_paths.items():
        if name.startswith("replica"):
            text = path.read_text(errors="replace")
            warnings = text.count("Redis unreachable for limits")
            lines = [line for line in text.splitlines() if "for limits" in line]
            assert 1 <= warnings <= 2, lines  # once per worker, never per request
            back = [line for line in lines if "Redis reachable again for limits" in line]
            assert len(back) == warnings, lines
            back_after += [_log_time(line) - up_wall for line in back]
    print(f"each worker back on Redis after: {', '.join(f'{s:.2f}' for s in sorted(back_after))} s")
    assert max(back_after) < 5
    metrics = cluster.admin("GET", "/metrics", replica=0).body.decode()
    assert "unigate_limit_backend_fallbacks_total" in metrics


def _log_time(line: str) -> float:
    """A text log line's timestamp (`2026-11-25 01:37:52,934 INFO ...`, local time)."""
    stamp = time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")
    return time.mktime(stamp) + int(line[20:23]) / 1000
