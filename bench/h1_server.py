"""The HTTP/1.1 server protocol alone: uvicorn's httptools protocol against the one
`unigate serve` runs (`uvicorn_options()["http"]`), each serving the same raw ASGI app (read the
body, answer a small sized JSON) in one uvloop process, driven by `wrk` on 127.0.0.1 with a POST
body. Prints the server process's CPU time per request (user + system, from /proc/<pid>/stat)
in interleaved rounds, since the machine may be shared. `--other SRC` adds the protocol of
another checkout's `src` directory (an older version, for A/B runs).

    bash bench/python.sh h1_server.py [--rounds 3] [--seconds 5] [--connections 32] [--other SRC]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BODY = (
    b'{"id":"chatcmpl-1","object":"chat.completion",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}'
)


async def app(scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def,type-arg]
    while True:
        message = await receive()
        if not message.get("more_body"):
            break
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))],
        }
    )
    await send({"type": "http.response.body", "body": BODY})


def serve(kind: str, port: int) -> None:
    import uvicorn

    from unigate.cli.launch import bind, uvicorn_options

    http = "httptools" if kind == "uvicorn" else uvicorn_options()["http"]
    config = uvicorn.Config(
        app, loop="uvloop", http=http, ws="none", log_level="warning", access_log=False, lifespan="off"
    )
    uvicorn.Server(config).run(sockets=[bind("127.0.0.1", port)])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(kind: str, src: str | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": src} if src else None
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, str(port)], env=env)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{kind} server did not start")


def measure(kind: str, src: str | None, seconds: int, connections: int) -> tuple[float, float]:
    proc, port = start(kind, src)
    try:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        wrk = ["wrk", "-t1", f"-c{connections}", "-s", str(HERE / "post.lua")]
        subprocess.run([*wrk, "-d1s", url], capture_output=True, check=True)  # warm-up
        before = cpu_seconds(proc.pid)
        out = subprocess.run([*wrk, f"-d{seconds}s", url], capture_output=True, text=True, check=True).stdout
        used = cpu_seconds(proc.pid) - before
        found = re.search(r"(\d+) requests in", out)
        requests = int(found.group(1)) if found else 0
        return used / max(requests, 1) * 1e6, requests / seconds
    finally:
        proc.terminate()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--other", help="another checkout's src directory")
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return
    runs: dict[str, tuple[str, str | None]] = {"uvicorn": ("uvicorn", None), "unigate": ("unigate", None)}
    if args.other:
        runs["other"] = ("unigate", str(Path(args.other).resolve()))
    results: dict[str, list[float]] = {label: [] for label in runs}
    for round_ in range(args.rounds):
        labels = list(runs) if round_ % 2 == 0 else list(reversed(runs))
        for label in labels:
            cpu, rate = measure(*runs[label], args.seconds, args.connections)
            results[label].append(cpu)
            print(f"round {round_ + 1} {label:8} {cpu:6.1f} us CPU/request  {rate:8.0f} req/s", flush=True)
    base = statistics.median(results["uvicorn"])
    for label, values in results.items():
        median = statistics.median(values)
        print(f"median CPU per request, {label:8}: {median:5.1f} us ({median / base:.2f}x uvicorn's)")


if __name__ == "__main__":
    main()
