"""A scale-out deployment in miniature for the tests: one PostgreSQL, one Redis, N replicas of
the real `unigate serve` (2 workers each by default) with the same config, database, Redis and
admin key, and Debian's nginx in front as the load balancer (round-robin, keep-alive,
unbuffered for SSE; `scripts/test.sh` installs nginx and redis-server).

    with gateway_cluster(config={...}, env={...}) as c:
        key = c.create_key(name="t", rpm=100)
        http("POST", c.url + "/v1/chat/completions", ...)   # through nginx
        http("GET", c.replica_url(1) + "/readyz")           # one replica directly
        c.kill(0); c.restart(0)                              # SIGKILL a whole replica, start it again
        c.stop_postgres(); c.start_postgres(); c.stop_redis(); c.start_redis()
        c.replica_of(response)      # which replica answered through nginx (its X-Upstream header)
        c.pids(0); c.log_paths; c.logs()   # processes of a replica; every log, and their tails

The schema is migrated once before the replicas start (as docs/scaling.md tells operators to do with
`unigate migrate`), then the replicas and nginx start concurrently: about 7 s on an idle
2-core machine for 3 replicas of 2 workers (nine Python processes import the gateway), more on
a busy one. Share one cluster per test module (a module-scoped fixture).
The nginx proxy settings are deploy/nginx/unigate-proxy.conf itself, included by the generated
config, so the tests exercise the shipped configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support import config_yaml
from tests.support.gateway import ADMIN_KEY, GatewayCalls, GatewayProcess
from tests.support.net import HTTPResult, free_port, http
from tests.support.postgres import Cluster as PostgresCluster
from tests.support.postgres import postgres_cluster
from tests.support.redis import RedisServer, redis_server

NGINX = "/usr/sbin/nginx"
# Added by the harness's nginx (not by deploy/): the replica that answered, for the tests.
UPSTREAM_HEADER = "X-Upstream"
PROXY_SNIPPET = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "unigate-proxy.conf"


class GatewayCluster(GatewayCalls):  # its keys are created through its own `admin`: the balancer
    """The running deployment; built by `gateway_cluster()`."""

    def __init__(
        self,
        workdir: Path,
        postgres: PostgresCluster,
        redis: RedisServer,
        replicas: list[GatewayProcess],
        nginx: Nginx,
    ) -> None:
        self.workdir = workdir
        self.postgres = postgres
        self.redis = redis
        self.replicas = replicas
        self.nginx = nginx

    # -- addresses ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The load balancer's base URL (what clients use)."""
        return self.nginx.url

    @property
    def database_url(self) -> str:
        return self.postgres.url

    @property
    def redis_url(self) -> str:
        return self.redis.url

    def replica_url(self, i: int) -> str:
        return self.replicas[i].base_url

    @property
    def replica_urls(self) -> list[str]:
        return [r.base_url for r in self.replicas]

    @property
    def admin_key(self) -> str:
        return ADMIN_KEY

    # -- logs --------------------------------------------------------------------------------
    @property
    def log_paths(self) -> dict[str, Path]:
        """Every process's log: replica0..N-1, nginx-error, nginx-access, postgres, redis."""
        paths = {f"replica{i}": r.log_path for i, r in enumerate(self.replicas)}
        paths["nginx-error"] = self.nginx.error_log
        paths["nginx-access"] = self.nginx.access_log
        paths["postgres"] = self.postgres.data.parent / "log"
        paths["redis"] = self.redis.workdir / "redis.log"
        return paths

    def logs(self, tail: int = 40) -> str:
        """The end of every log, for an assertion message."""
        parts = []
        for name, path in self.log_paths.items():
            try:
                lines = path.read_text(errors="replace").splitlines()[-tail:]
            except OSError:
                continue
            parts.append(f"--- {name} ({path})\n" + "\n".join(lines))
        return "\n".join(parts)

    # -- faults ------------------------------------------------------------------------------
    def kill(self, i: int) -> None:
        """SIGKILL replica i: its supervisor and every worker at once, as when its machine or
        container dies (killing only the supervisor would leave the workers serving)."""
        proc = self.replicas[i].proc
        if proc is None or proc.poll() is not None:
            return
        for pid in [proc.pid, *_descendants(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(10)

    def stop(self, i: int) -> None:
        """Stop replica i gracefully (SIGTERM)."""
        self.replicas[i].stop()

    def restart(self, i: int, timeout: float = 60) -> None:
        """Start replica i again (after kill or stop) on the same port; back when /readyz is 200."""
        replica = self.replicas[i]
        if replica.proc is not None and replica.proc.poll() is None:
            replica.stop()
        replica.start(timeout)

    def stop_postgres(self) -> None:
        self.postgres.stop()

    def start_postgres(self) -> None:
        self.postgres.start()

    def stop_redis(self) -> None:
        self.redis.stop()

    def start_redis(self) -> None:
        self.redis.start()

    # -- admin -------------------------------------------------------------------------------
    def replica_of(self, response: HTTPResult | Any) -> int:
        """Which replica served a response that came through nginx (its X-Upstream header, the
        last address nginx tried); -1 if none did. Takes an HTTPResult or anything with
        `.headers` (an httpx response, the openai SDK's raw response)."""
        addr = str(response.headers.get(UPSTREAM_HEADER.lower(), "")).split(",")[-1].strip()
        return next((i for i, r in enumerate(self.replicas) if addr == f"127.0.0.1:{r.port}"), -1)

    def pids(self, i: int) -> list[int]:
        """Replica i's processes: its supervisor, then its workers (what a task lease's owner
        starts with: tasks/poller.py names owners `<pid>-<random>`)."""
        proc = self.replicas[i].proc
        if proc is None or proc.poll() is not None:
            return []
        return [proc.pid, *_descendants(proc.pid)]

    def admin(
        self, method: str, path: str, body: dict[str, Any] | None = None, replica: int | None = None
    ) -> HTTPResult:
        """An admin API call through the balancer, or straight to one replica."""
        base = self.url if replica is None else self.replica_url(replica)
        return http(method, base + path, body, {"Authorization": f"Bearer {ADMIN_KEY}"})


class Nginx:
    """Debian's nginx as a foreground child process, on a config generated in `workdir`."""

    def __init__(self, workdir: Path, upstreams: list[str], worker_processes: int = 1) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.error_log = workdir / "error.log"
        self.access_log = workdir / "access.log"
        self.conf = workdir / "nginx.conf"
        self.upstreams = upstreams
        self.worker_processes = worker_processes
        self.proc: subprocess.Popen[bytes] | None = None

    def write_config(self) -> None:
        for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.workdir / "tmp" / name).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            nginx_config(
                self.workdir,
                self.port,
                self.upstreams,
                self.error_log,
                self.access_log,
                worker_processes=self.worker_processes,
            )
        )

    def start(self, timeout: float = 15) -> None:
        if not os.access(NGINX, os.X_OK):
            raise RuntimeError(f"{NGINX} not found: install Debian's nginx (scripts/test.sh does)")
        self.write_config()
        with (self.workdir / "stderr.log").open("ab") as out:
            self.proc = subprocess.Popen(
                [NGINX, "-p", str(self.workdir), "-c", str(self.conf), "-e", str(self.error_log)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.error_log.read_text(errors='replace')[-2000:]}")
            try:
                # nginx answers for itself at /nginx-alive, whatever the replicas' state.
                if http("GET", self.url + "/nginx-alive", timeout=1).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"nginx did not answer within {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # fast shutdown: in-flight requests are cut
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None


def nginx_config(
    prefix: Path,
    port: int,
    upstreams: list[str],
    error_log: Path,
    access_log: Path,
    worker_processes: int = 1,
) -> str:
    """A complete nginx.conf: foreground, every path under `prefix`, the replicas round-robin,
    and the shipped proxy settings (deploy/nginx/unigate-proxy.conf)."""
    tmp = prefix / "tmp"
    # As root, nginx's workers would switch to `nobody`, who cannot write this private temp
    # dir; they run as the current user instead (the directive is only valid for root).
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    servers = "".join(f"    server {u} max_fails=1 fail_timeout=2s;\n" for u in upstreams)
    return f"""{user}daemon off;
master_process on;
worker_processes {worker_processes};
pid {prefix / "nginx.pid"};
error_log {error_log} warn;
events {{
    worker_connections 4096;
}}
http {{
    log_format upstream '$remote_addr [$time_local] "$request" $status $body_bytes_sent '
                        'upstream=$upstream_addr upstream_status=$upstream_status rt=$request_time';
    access_log {access_log} upstream;
    client_body_temp_path {tmp / "client_body"};
    proxy_temp_path {tmp / "proxy"};
    fastcgi_temp_path {tmp / "fastcgi"};
    uwsgi_temp_path {tmp / "uwsgi"};
    scgi_temp_path {tmp / "scgi"};
    upstream unigate {{
{servers}        keepalive 64;
        keepalive_timeout 20s;
    }}
    server {{
        listen 127.0.0.1:{port};
        location = /nginx-alive {{
            return 200 "ok\\n";
        }}
        location / {{
            include {PROXY_SNIPPET};
            add_header {UPSTREAM_HEADER} $upstream_addr always;
        }}
    }}
}}
"""


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc (uvicorn's workers and anything they started)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces; ppid follows it.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def migrate_once(database_url: str) -> None:
    """What `unigate migrate` does, in this process (saves starting a Python for it)."""
    from unigate.store import db

    async def run() -> None:
        engine = db.create_engine(database_url)
        try:
            await db.migrate(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


@contextmanager
def gateway_cluster(
    replicas: int = 3,
    workers: int | list[int] = 2,
    config: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    nginx_workers: int = 1,
    workdir: Path | None = None,
) -> Iterator[GatewayCluster]:
    """Start PostgreSQL, Redis, `replicas` gateways and nginx; stop them all on exit.

    `config` (the YAML config as a dict) and `env` (extra environment) are the same for every
    replica; `workers` too, unless it lists each replica's count (benchmarks compare them).
    UNIGATE_PUBLIC_URL is the balancer's URL unless `env` says otherwise: links the gateway
    hands out must point at the balancer, not at the replica that made them."""
    own_dir = workdir is None
    root = Path(tempfile.mkdtemp(prefix="unigate-cluster-")) if workdir is None else workdir
    try:
        with postgres_cluster() as pg, redis_server() as redis:
            migrate_once(pg.url)
            nginx_dir = root / "nginx"
            nginx_dir.mkdir(exist_ok=True)
            shared_env = {"UNIGATE_DATABASE_URL": pg.url, "UNIGATE_REDIS_URL": redis.url}
            if config is not None:
                config_path = root / "config.yaml"
                config_path.write_text(config_yaml.dump(config))
                shared_env["UNIGATE_CONFIG"] = str(config_path)
            gateways = []
            for i in range(replicas):
                rdir = root / f"replica{i}"
                rdir.mkdir(exist_ok=True)
                count = workers[i] if isinstance(workers, list) else workers
                gateways.append(GatewayProcess(rdir, env=shared_env, workers=count))
            nginx = Nginx(nginx_dir, [f"127.0.0.1:{g.port}" for g in gateways], nginx_workers)
            for g in gateways:
                g.env.setdefault("UNIGATE_PUBLIC_URL", nginx.url)
                g.env.update(env or {})
            cluster = GatewayCluster(root, pg, redis, gateways, nginx)
            try:
                with ThreadPoolExecutor(replicas + 1) as pool:
                    balancer = pool.submit(nginx.start)
                    for future in [pool.submit(g.start, 60) for g in gateways]:
                        future.result()
                    balancer.result()
                yield cluster
            finally:
                nginx.stop()
                with ThreadPoolExecutor(max(replicas, 1)) as pool:
                    list(pool.map(_stop, gateways))
    finally:
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)


def _stop(gateway: GatewayProcess) -> None:
    workers = _descendants(gateway.proc.pid) if gateway.proc is not None else []
    gateway.stop()
    # A worker the supervisor failed to stop must not outlive the harness (checked to still be
    # ours: a pid can be reused once its process is gone).
    for pid in workers:
        with contextlib.suppress(OSError):
            if b"unigate" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
