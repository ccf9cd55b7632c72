"""Tools the benchmark drives (nginx, wrk) and the fake upstream: nginx when it can be had,
else the pure-Python server in `fake_upstream.py`.

nginx runs from a private prefix (`-p tmpdir -c conf -e log -g 'daemon off;'`), so no system
configuration, log or pid file is touched, with one worker and every reply a `return 200`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from fake_upstream import ROUTES
from procs import Child, Children, free_port, which

BENCH_DIR = Path(__file__).resolve().parent


def ensure_binary(binary: str, packages: tuple[str, ...]) -> str | None:
    """The path of `binary`, installing the first Debian package that provides it when
    running as root with apt-get; None if it cannot be had."""
    found = which(binary)
    if found or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return found
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=180", "-y", "-q"]
    for attempt in ("install", "update-then-install"):
        if attempt == "update-then-install":
            subprocess.run([*apt, "update"], env=env, capture_output=True, check=False)
        for package in packages:
            print(f"  installing {package} with apt-get ...", flush=True)
            cmd = [*apt, "install", "--no-install-recommends", package]
            if subprocess.run(cmd, env=env, capture_output=True, check=False).returncode == 0:
                found = which(binary)
                if found:
                    return found
    return None


def tool_version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return "?"
    text = (out.stdout + out.stderr).strip().splitlines()
    return text[0] if text else "?"


def _nginx_string(text: str) -> str:
    """A single-quoted nginx string; the replies contain no `$`, which nginx would expand."""
    assert "$" not in text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def nginx_config(tmp: Path, port: int) -> str:
    locations = "\n".join(
        f"        location = {path} {{\n"
        f"            default_type {content_type};\n"
        f"            return 200 {_nginx_string(body)};\n"
        f"        }}"
        for path, (content_type, body) in ROUTES.items()
    )
    temp_paths = "\n".join(
        f"    {kind}_temp_path {tmp / 'nginx' / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "nginx-error.log"} warn;
events {{
    worker_connections 4096;
}}
http {{
    access_log off;
{temp_paths}
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
{locations}
        location / {{
            default_type application/json;
            return 404 '{{"error":{{"message":"not found"}}}}';
        }}
    }}
}}
"""


@dataclass
class Upstream:
    kind: str  # "nginx" or "python"
    version: str
    port: int
    child: Child


def start_upstream(children: Children, tmp: Path) -> Upstream:
    port = free_port()
    nginx = ensure_binary("nginx", ("nginx-light", "nginx"))
    if nginx is not None:
        (tmp / "nginx").mkdir(exist_ok=True)
        conf = tmp / "nginx.conf"
        conf.write_text(nginx_config(tmp, port), encoding="utf-8")
        cmd = [nginx, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "nginx-error.log")]
        child = children.start("nginx", [*cmd, "-g", "daemon off;"], tmp / "nginx.out")
        version = tool_version([nginx, "-v"]).removeprefix("nginx version: ")
        return Upstream("nginx", version, port, child)
    print("  nginx unavailable: using the pure-Python fake upstream (slower)", flush=True)
    cmd = [sys.executable, str(BENCH_DIR / "fake_upstream.py"), "--port", str(port)]
    child = children.start("fake upstream", cmd, tmp / "fake_upstream.out")
    return Upstream("python", "asyncio+httptools", port, child)
