"""The gateway's metrics: one method per event, each adding to this process's value files
(values.py) in `<data dir>/metrics`, which `GET /metrics` on any worker merges (scrape.py).

    unigate_requests_total{family, model, provider, status}            every request at the edge
    unigate_request_duration_seconds{family, model, provider, status}  its latency (histogram)
    unigate_upstream_errors_total{route, kind}     a route that failed (kind: error, timeout, rate_limited)
    unigate_fallbacks_total{route}                 ... and the next route was tried
    unigate_route_cooldowns_total{route}           a route put in cooldown (per worker)
    unigate_tokens_total{model, provider, type}    input/output tokens of routed calls
    unigate_cost_total{model, provider}            money at the configured prices (calls, task prices)
    unigate_cost_refunded_total{model, provider}   failed tasks' prices given back
    unigate_active_streams                         streams being relayed now (live workers)
    unigate_task_submits_total{family, model, provider, status}
    unigate_webhook_deliveries_total{outcome}      delivered, failed (retried later), abandoned, gone
    unigate_rate_limited_total{family, code}       429s from the key's or model's rate limits
    unigate_budget_exceeded_total{family}          refusals for a spent budget (429, or 402 on music)
    unigate_limit_backend_fallbacks_total          switches of the limits from Redis to the local fallback
    unigate_limit_backend_degraded                 worker processes deciding limits without Redis now

Labels never carry keys or prompts. The model label is the model's name in the config (a glob
for a glob route, not each id a client sent) and each metric keeps at most MAX_SERIES label
sets: past that, new ones are counted under "other", so no client can grow the series
without bound. Each label set's value slots are looked up once and cached by the tuple of
label values, so an event costs a dict lookup and one store per value. A label set the value
file had no room for (a full disk, values.py) is not cached: its values go to a scratch slot
until the file can grow.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Final

from unigate.observability.values import ValueFile

INF: Final = float("inf")
DURATION_BUCKETS: Final = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    INF,
)


def _bucket(seconds: float) -> int:
    """The histogram bucket of `seconds` (`bisect_left` on the bounds, as a loop: compiled, a
    request's latency is found in the first bound or two, without a call into `bisect`)."""
    i = 0
    for bound in DURATION_BUCKETS:
        if seconds <= bound:
            return i
        i += 1
    return i - 1  # no bound holds it (NaN): the last, +Inf


MAX_SERIES: Final = 2000
OTHER: Final = "other"

Labels = tuple[str | int, ...]


def _go_float(bound: float) -> str:
    """A bucket bound as Prometheus writes it (`le="0.005"`, `le="+Inf"`)."""
    return "+Inf" if bound == INF else repr(bound)


class _Metric:
    """One metric in one value file: its samples' keys, and the slots of each label set."""

    def __init__(self, file: ValueFile, name: str, help: str, labels: tuple[str, ...], sample: str) -> None:
        self.file = file
        self.name = name
        self.help = help
        self.labels = labels
        self.sample = sample
        self.children: dict[Labels, int] = {}

    def _key(self, sample: str, values: Labels, extra: dict[str, str] | None = None) -> str:
        labels = {name: str(value) for name, value in zip(self.labels, values, strict=True)}
        if extra:
            labels.update(extra)
        # The layout prometheus_client's collector parses (mmap_dict.mmap_key).
        return json.dumps([self.name, sample, labels, self.help], sort_keys=True)

    def bounded(self, values: Labels) -> Labels:
        """`values`, or the "other" set once the metric has MAX_SERIES label sets."""
        return values if len(self.children) < MAX_SERIES else (OTHER,) * len(self.labels)

    def slot(self, values: Labels) -> int:
        found = self.children.get(values)
        return found if found is not None else self.exact_slot(self.bounded(values))

    def exact_slot(self, values: Labels) -> int:
        """The slot of `values` as given (already bounded by the caller)."""
        found = self.children.get(values)
        if found is None:
            found = self.file.slot(self._key(self.sample, values))
            if found >= 0:  # a SCRATCH slot is asked for again, so it is counted once there is room
                self.children[values] = found
        return found


class _Counter(_Metric):
    def __init__(self, file: ValueFile, name: str, help: str, labels: tuple[str, ...] = ()) -> None:
        super().__init__(file, name, help, labels, name + "_total")

    def inc(self, values: Labels = (), amount: float = 1.0) -> None:
        slot = self.slot(values)  # first: a new slot may grow the file and replace `view`
        self.file.view[slot] += amount


class _Histogram(_Metric):
    """Buckets stored per bucket (not cumulative), as the multiprocess collector expects;
    it adds them up and derives `_count` at scrape time."""

    def __init__(self, file: ValueFile, name: str, help: str, labels: tuple[str, ...]) -> None:
        super().__init__(file, name, help, labels, name + "_sum")

    def slots(self, values: Labels) -> tuple[int, ...]:
        """(sum, bucket 0, bucket 1, ...) of a label set that `bounded` already capped."""
        sum_slot = self.exact_slot(values)
        buckets = tuple(
            self.file.slot(self._key(self.name + "_bucket", values, {"le": _go_float(b)}))
            for b in DURATION_BUCKETS
        )
        return (sum_slot, *buckets)


class Metrics:
    """This process's metrics. Built once per gateway; `close` at shutdown."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory = directory
        # Named by type (how the collector merges them), process id (live gauges of dead
        # processes are dropped by it) and a random part (two gateways in one process).
        tag = f"{os.getpid()}-{secrets.token_hex(4)}"
        counters = self._counters = ValueFile(directory / f"counter_{tag}.db")
        self._histograms = ValueFile(directory / f"histogram_{tag}.db")
        self._gauges = ValueFile(directory / f"gauge_livesum_{tag}.db")
        by_request = ("family", "model", "provider", "status")
        self._requests = _Counter(counters, "unigate_requests", "Requests answered.", by_request)
        self._duration = _Histogram(
            self._histograms, "unigate_request_duration_seconds", "Request latency (streams: until the end).",
            by_request,
        )  # fmt: skip
        # label values -> (requests slot, duration sum slot, bucket slots...)
        self._request_slots: dict[Labels, tuple[int, ...]] = {}
        self._usage_slots: dict[Labels, tuple[int, int, int]] = {}
        self.upstream_errors = _Counter(
            counters, "unigate_upstream_errors", "Upstream attempts that failed.", ("route", "kind")
        )
        self.fallbacks = _Counter(
            counters, "unigate_fallbacks", "Failed routes after which the next route was tried.", ("route",)
        )
        self.cooldowns = _Counter(counters, "unigate_route_cooldowns", "Routes put in cooldown.", ("route",))
        self._tokens = _Counter(
            counters, "unigate_tokens", "Tokens of routed calls.", ("model", "provider", "type")
        )
        self._cost = _Counter(
            counters, "unigate_cost", "Cost at the configured prices.", ("model", "provider")
        )
        self.refunds = _Counter(
            counters, "unigate_cost_refunded", "Prices of failed tasks given back.", ("model", "provider")
        )
        self.task_submits = _Counter(
            counters, "unigate_task_submits", "Task submits.", ("family", "model", "provider", "status")
        )
        self.webhooks = _Counter(
            counters, "unigate_webhook_deliveries", "Webhook delivery attempts by outcome.", ("outcome",)
        )
        self.rate_limited = _Counter(
            counters, "unigate_rate_limited", "Requests refused by a rate limit.", ("family", "code")
        )
        self.budget_exceeded = _Counter(
            counters, "unigate_budget_exceeded", "Requests refused for a spent budget.", ("family",)
        )
        streams = "unigate_active_streams"
        self._streams = _Metric(self._gauges, streams, "Streams being relayed.", (), streams).slot(())
        self._limit_fallbacks = _Counter(
            counters, "unigate_limit_backend_fallbacks", "Limits switched from Redis to the fallback."
        )
        degraded = "unigate_limit_backend_degraded"
        self._degraded = _Metric(
            self._gauges, degraded, "Worker processes deciding limits without Redis.", (), degraded
        ).slot(())

    def request(self, family: str, model: str, provider: str, status: int, seconds: float) -> None:
        """One answered request (the edge, once per request)."""
        key = (family, model, provider, status)
        slots = self._request_slots.get(key)
        if slots is None:
            slots = self._request_child(key)
        self._counters.view[slots[0]] += 1.0
        view = self._histograms.view
        view[slots[1]] += seconds
        view[slots[2 + _bucket(seconds)]] += 1.0

    def _request_child(self, key: Labels) -> tuple[int, ...]:
        bounded = self._requests.bounded(key)
        slots = self._request_slots.get(bounded)
        if slots is None:
            slots = (self._requests.exact_slot(bounded), *self._duration.slots(bounded))
            if min(slots) >= 0:
                self._request_slots[bounded] = slots
        return slots

    def usage(self, model: str, provider: str, tokens_in: int, tokens_out: int, cost: float) -> None:
        """What a routed call used."""
        key = (model, provider)
        slots = self._usage_slots.get(key)
        if slots is None:
            slots = self._usage_child(key)
        view = self._counters.view
        view[slots[0]] += tokens_in
        view[slots[1]] += tokens_out
        view[slots[2]] += cost

    def _usage_child(self, key: Labels) -> tuple[int, int, int]:
        bounded = self._cost.bounded(key)
        slots = self._usage_slots.get(bounded)
        if slots is None:
            slots = (
                self._tokens.exact_slot((*bounded, "input")),
                self._tokens.exact_slot((*bounded, "output")),
                self._cost.exact_slot(bounded),
            )
            if min(slots) >= 0:
                self._usage_slots[bounded] = slots
        return slots

    def upstream_failed(self, route: str, status: int, fell_back: bool) -> None:
        kind = "rate_limited" if status == 429 else "timeout" if status == 504 else "error"
        self.upstream_errors.inc((route, kind))
        if fell_back:
            self.fallbacks.inc((route,))

    def task_submitted(self, family: str, model: str, provider: str, status: int, cost: float) -> None:
        self.task_submits.inc((family, model, provider, status))
        if cost:
            self._cost.inc((model, provider), cost)

    def stream_opened(self) -> None:
        self._gauges.view[self._streams] += 1.0

    def stream_closed(self) -> None:
        self._gauges.view[self._streams] -= 1.0

    def limit_backend_switched(self, down: bool) -> None:
        """The limits lost Redis (down) or have it back."""
        if down:
            self._limit_fallbacks.inc()
        self._gauges.view[self._degraded] += 1.0 if down else -1.0

    def close(self) -> None:
        """Counters stay on disk (a stopped worker's counts still add up); the live gauge goes."""
        self._counters.close()
        self._histograms.close()
        self._gauges.close(remove=True)
