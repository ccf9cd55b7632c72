"""Turn the measurements into the JSON summary and the printed tables, and judge them
against the performance targets (docs/architecture.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ttfb import Sample
from wrk import WrkResult

TARGETS = ("direct", "bare", "unigate")
LABELS = {"direct": "direct upstream", "bare": "bare proxy", "unigate": "unigate"}
PHASES = ("idle", "warm", "loaded")

# The performance targets (docs/architecture.md), every one of them checked by each run.
MIN_THROUGHPUT_RATIO = 1.5  # at 64 connections, the median of the interleaved rounds' ratios
MAX_OWN_US = 11.0  # unigate's own layers per request, in process (bench/overhead.py)
LOW_CONNECTIONS = 8  # the latency targets' load
MAX_ADDED_P50_US = 200.0  # over the upstream alone, at LOW_CONNECTIONS
MAX_ADDED_P99_US = 1000.0
MAX_ADDED_TTFB_US = 500.0  # streaming time to first byte, median
MAX_IDLE_RSS_MB = 60.0  # VmRSS per worker, before any load
# Growth between the end of warm-up and the end of the load, in % of the warmed size: the
# soak's target (bench/soak.py holds it over 10 minutes), here over the benchmark's few.
MAX_RSS_GROWTH_PCT = 5.0

# runs[level][target]; rss[process][phase] = {pid: KiB}
Runs = dict[str, dict[str, WrkResult]]
Rss = dict[str, dict[str, dict[int, int]]]


@dataclass(frozen=True)
class Check:
    name: str
    value: float
    limit: float
    unit: str
    higher_is_better: bool = False

    @property
    def ok(self) -> bool:
        return self.value >= self.limit if self.higher_is_better else self.value <= self.limit

    def line(self) -> str:
        sign = ">=" if self.higher_is_better else "<="
        mark = "PASS" if self.ok else "FAIL"
        value = f"{_shown(self.value, self.limit)}{self.unit}"
        return f"  [{mark}] {self.name}: {value} (target {sign} {self.limit:g}{self.unit})"


def _shown(value: float, limit: float) -> str:
    """`value` to two decimals, or three when two would round it onto `limit` (a ratio of
    1.497 shown as "1.50" beside FAIL reads as a wrong verdict)."""
    shown = f"{value:.2f}"
    return f"{value:.3f}" if shown == f"{limit:.2f}" and value != limit else shown


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def ttfb_stats(samples: Sequence[Sample]) -> dict[str, float]:
    first = [s.ttfb_us for s in samples]
    total = [s.total_us for s in samples]
    return {
        "count": len(samples),
        "p50_us": percentile(first, 50),
        "p99_us": percentile(first, 99),
        "total_p50_us": percentile(total, 50),
        "total_p99_us": percentile(total, 99),
    }


def _mb(kib: int | None) -> float:
    return kib / 1024 if kib is not None else math.nan


def rss_table(rss: Rss) -> dict[str, dict[str, Any]]:
    """Per process: per-phase MB of each worker, the largest worker, and growth after warm-up."""
    out: dict[str, dict[str, Any]] = {}
    for process, phases in rss.items():
        per_phase = {
            p: {str(pid): round(_mb(kb), 1) for pid, kb in phases.get(p, {}).items()} for p in PHASES
        }
        largest = {p: max(per_phase[p].values(), default=math.nan) for p in PHASES}
        growth = largest["loaded"] - largest["warm"]
        out[process] = {
            "workers_mb": per_phase,
            "max_worker_mb": largest,
            "growth_after_warmup_mb": round(growth, 1),
            "growth_after_warmup_pct": round(100 * growth / largest["warm"], 1),
        }
    return out


def checks(
    runs: Runs,
    ttfb: dict[str, dict[str, float]],
    memory: dict[str, dict[str, Any]],
    ratio: float,
    own_us: float,
) -> list[Check]:
    """Every performance target, in the order docs/architecture.md lists them."""
    low, high = runs["low"], runs["high"]
    gw_mem = memory["unigate"]
    c_low = low["unigate"].connections
    return [
        Check(
            f"throughput vs bare proxy at c{high['unigate'].connections} (median of the rounds)",
            ratio,
            MIN_THROUGHPUT_RATIO,
            "x",
            higher_is_better=True,
        ),
        Check("own cost per request, in process (bench/overhead.py)", own_us, MAX_OWN_US, " us"),
        Check(
            f"added median latency at c{c_low}",
            low["unigate"].p50_us - low["direct"].p50_us,
            MAX_ADDED_P50_US,
            " us",
        ),
        Check(
            f"added p99 latency at c{c_low}",
            low["unigate"].p99_us - low["direct"].p99_us,
            MAX_ADDED_P99_US,
            " us",
        ),
        Check(
            "added streaming TTFB (median)",
            ttfb["unigate"]["p50_us"] - ttfb["direct"]["p50_us"],
            MAX_ADDED_TTFB_US,
            " us",
        ),
        Check("RSS per worker idle (VmRSS)", gw_mem["max_worker_mb"]["idle"], MAX_IDLE_RSS_MB, " MB"),
        Check(
            "RSS growth under load, after warm-up",
            gw_mem["growth_after_warmup_pct"],
            MAX_RSS_GROWTH_PCT,
            "%",
        ),
    ]


def summarize(
    meta: dict[str, Any],
    runs: Runs,
    samples: dict[str, list[Sample]],
    rss: Rss,
    translated: dict[str, list[Sample]],
) -> tuple[dict[str, Any], list[Check]]:
    """The JSON summary, and the checks against the performance targets (docs/architecture.md)."""
    ttfb = {t: ttfb_stats(samples[t]) for t in TARGETS}
    through = ttfb["unigate"]
    ttfb_translated = {}
    for fmt, fmt_samples in translated.items():
        stats = ttfb_stats(fmt_samples)
        stats["added_p50_vs_passthrough_us"] = stats["p50_us"] - through["p50_us"]
        stats["added_p99_vs_passthrough_us"] = stats["p99_us"] - through["p99_us"]
        ttfb_translated[fmt] = stats
    memory = rss_table(rss)
    results = checks(runs, ttfb, memory, meta["ratio_median"], meta["own_cost_us"])
    levels: dict[str, Any] = {}
    for level, by_target in runs.items():
        direct, bare = by_target["direct"], by_target["bare"]
        levels[level] = {
            t: {
                **r.to_json(),
                "added_p50_us": r.p50_us - direct.p50_us,
                "added_p99_us": r.p99_us - direct.p99_us,
                "over_bare_p50_us": r.p50_us - bare.p50_us,
                "over_bare_p99_us": r.p99_us - bare.p99_us,
                "ratio_vs_bare": r.rps / bare.rps,
            }
            for t, r in by_target.items()
        }
    for t in TARGETS:
        for base in ("direct", "bare"):
            for q in ("p50", "p99"):
                ttfb[t][f"added_{q}_vs_{base}_us"] = ttfb[t][f"{q}_us"] - ttfb[base][f"{q}_us"]
    summary = {
        "meta": meta,
        "load": levels,
        "ttfb": ttfb,
        "ttfb_translated": ttfb_translated,
        "rss": memory,
        "checks": [
            {"name": c.name, "value": c.value, "limit": c.limit, "unit": c.unit.strip(), "ok": c.ok}
            for c in results
        ],
        "verdict": "PASS" if all(c.ok for c in results) else "FAIL",
    }
    return summary, results


def _ms(us: float) -> str:
    return f"{us / 1000:.3f}"


def _table(header: str) -> None:
    print(header)
    print("-" * len(header))


def _print_load(summary: dict[str, Any]) -> None:
    meta = summary["meta"]
    print(f"== Throughput and latency: wrk POST {meta['chat_path']}, {meta['duration_s']:g} s per run ==")
    _table(
        f"{'load':<10} {'target':<16} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'+p50 ms':>8} "
        f"{'+p99 ms':>8} {'x bare':>7} {'CPU us/req':>10} {'errors':>6}"
    )
    for by_target in summary["load"].values():
        for t in TARGETS:
            r = by_target[t]
            load = f"t{r['threads']} c{r['connections']}" if t == "direct" else ""
            added = ("-", "-") if t == "direct" else (_ms(r["added_p50_us"]), _ms(r["added_p99_us"]))
            print(
                f"{load:<10} {LABELS[t]:<16} {r['rps']:>9,.0f} {_ms(r['p50_us']):>8} {_ms(r['p99_us']):>8} "
                f"{added[0]:>8} {added[1]:>8} {r['ratio_vs_bare']:>7.2f} {r['server_cpu_us']:>10.0f} "
                f"{r['failed']:>6}"
            )
    print("(+p50/+p99: added vs direct upstream; x bare: throughput vs the bare proxy;")
    print(" CPU us/req: CPU time of the server's own process(es) per request, the upstream's excluded;")
    print(" wrk corrects for coordinated omission: one stall of S ms at low load also counts the requests")
    print(" that would have been sent during it, so rare event-loop stalls show up in p99)")
    for level in summary["load"].values():
        gw = level["unigate"]
        print(
            f"unigate over the bare proxy at c{gw['connections']}: "
            f"+{_ms(gw['over_bare_p50_us'])} ms p50, +{_ms(gw['over_bare_p99_us'])} ms p99"
        )


def _print_ttfb(summary: dict[str, Any]) -> None:
    print(f"== Streaming time to first body byte: {summary['meta']['ttfb_requests']} sequential requests ==")
    _table(
        f"{'target':<16} {'p50 ms':>8} {'p99 ms':>8} {'+p50 vs direct':>15} {'+p99 vs direct':>15} "
        f"{'+p50 vs bare':>13} {'+p99 vs bare':>13}"
    )
    for t in TARGETS:
        s = summary["ttfb"][t]
        keys = ("p50_vs_direct", "p99_vs_direct", "p50_vs_bare", "p99_vs_bare")
        # Nothing is "added" relative to itself, nor for the baseline.
        shown = ["-" if t == "direct" or k.endswith(f"_{t}") else _ms(s[f"added_{k}_us"]) for k in keys]
        print(
            f"{LABELS[t]:<16} {_ms(s['p50_us']):>8} {_ms(s['p99_us']):>8} {shown[0]:>15} {shown[1]:>15} "
            f"{shown[2]:>13} {shown[3]:>13}"
        )


def _print_translated(summary: dict[str, Any]) -> None:
    print("== Translated vs pass-through stream, unigate, same OpenAI upstream: time to first body byte ==")
    _table(f"{'client format':<16} {'p50 ms':>8} {'p99 ms':>8} {'+p50 vs pass-through':>21} {'+p99':>8}")
    s = summary["ttfb"]["unigate"]
    print(f"{'openai (as is)':<16} {_ms(s['p50_us']):>8} {_ms(s['p99_us']):>8} {'-':>21} {'-':>8}")
    for fmt, s in summary["ttfb_translated"].items():
        print(
            f"{fmt:<16} {_ms(s['p50_us']):>8} {_ms(s['p99_us']):>8} "
            f"{_ms(s['added_p50_vs_passthrough_us']):>21} {_ms(s['added_p99_vs_passthrough_us']):>8}"
        )


def _print_rss(summary: dict[str, Any]) -> None:
    print("== Resident memory (VmRSS of the largest worker process, MB) ==")
    _table(
        f"{'server':<16} {'workers':>7} {'idle':>7} {'warmed':>7} {'loaded':>7} {'growth':>7} {'growth %':>8}"
    )
    for process, m in summary["rss"].items():
        worst = m["max_worker_mb"]
        print(
            f"{LABELS.get(process, process):<16} {len(m['workers_mb']['loaded']):>7} {worst['idle']:>7.1f} "
            f"{worst['warm']:>7.1f} {worst['loaded']:>7.1f} {m['growth_after_warmup_mb']:>+7.1f} "
            f"{m['growth_after_warmup_pct']:>+8.1f}"
        )
    print(
        "(idle: before any load; warmed: after the warm-up; loaded: after every run; growth: loaded - warmed)"
    )
    for process, sizes in summary["meta"].get("idle_pss", {}).items():
        line = f"{LABELS.get(process, process)}, idle: largest worker PSS {sizes['worker_pss_mb']:.1f} MB"
        if "supervisor_rss_mb" in sizes:
            rss, pss = sizes["supervisor_rss_mb"], sizes["supervisor_pss_mb"]
            line += f"; supervisor RSS {rss:.1f} MB, PSS {pss:.1f} MB"
        print(line)
    print("(the target is VmRSS, which counts shared pages in every process mapping them; PSS divides them)")


def _print_own_cost(summary: dict[str, Any]) -> None:
    meta = summary["meta"]
    print(f"== unigate's own cost in process (bench/overhead.py, {meta['own_cost_requests']:,} requests) ==")
    print(f"{meta['own_cost_us']:.1f} us/request over the raw ASGI floor (no sockets, no upstream)")
    agent = meta.get("agent_call")
    if agent:  # not a target: what the limits cost the calls coding agents send
        print(
            f"a coding agent's call ({agent['body_kb']:.0f} KB, its conversation resent growing, "
            f"/v1/messages): {agent['limited_us']:.1f} us with the limited key, "
            f"{agent['free_us']:.1f} without limits"
        )


def print_report(summary: dict[str, Any], results: list[Check]) -> None:
    meta = summary["meta"]
    print()
    print(
        f"unigate {meta['git']} | {meta['cpus']} CPUs | Python {meta['python']} | "
        f"upstream {meta['upstream']} | {meta['wrk']} | unigate workers: {meta['unigate_workers']} | "
        f"limits: {meta.get('unigate_limits', 'local')}"
    )
    if "python_build" in meta:
        print(f"interpreter: {meta['python_build']}")
    print(
        f"usage accounting: {meta['usage_recorded']:,} requests recorded by unigate, "
        f"{meta['usage_answered']:,} answers counted by the clients"
    )
    if meta["other_load_cores"] >= 0.15:
        print(
            f"NOTE: other processes on this machine used ~{meta['other_load_cores']:.2f} of "
            f"{meta['cpus']} cores during the run; absolute numbers are depressed and noisier."
        )
    ratios = ", ".join(f"{r:.2f}" for r in meta["ratio_per_round"])
    median = _shown(meta["ratio_median"], MIN_THROUGHPUT_RATIO)
    print(f"throughput vs bare proxy per round: {ratios} (median {median})")
    for section in (_print_load, _print_ttfb, _print_translated, _print_rss, _print_own_cost):
        print()
        section(summary)
    print()
    print("== performance targets ==")
    for check in results:
        print(check.line())
    passed = sum(c.ok for c in results)
    print(f"VERDICT: {summary['verdict']} ({passed}/{len(results)} targets met)")
