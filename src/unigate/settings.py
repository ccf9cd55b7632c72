"""Process settings: the only place that reads the environment.

Everything else receives a `Settings` instance from `create_app` or the CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

DEFAULT_DATA_DIR = "./.unigate"


@dataclass(frozen=True, slots=True)
class EnvVar:
    """A variable of the environment that unigate (or one of its scripts) reads, declared once
    with what the configuration reference says of it: docs/configuration.md's table is generated
    from `ENVIRONMENT` (unigate/cli/reference.py), and a test checks that every `UNIGATE_*` name
    the code reads is declared here. `names` may be several variables read together; `default`
    is the value used when unset (None: nothing), `shown` words that replace it in the table."""

    names: str
    default: str | None
    meaning: str
    shown: str | None = None


ENVIRONMENT: tuple[EnvVar, ...] = (
    EnvVar(
        "UNIGATE_CONFIG",
        None,
        "YAML config file (same as `--config`); without it the built-in sandbox config is used "
        "(see Keeping the sandbox)",
    ),
    EnvVar(
        "UNIGATE_DATA_DIR",
        DEFAULT_DATA_DIR,
        "data directory (SQLite database, admin key, stored media); `serve` creates it owner-only "
        "(see Data directory), the `keys` commands use the default only where it exists",
    ),
    EnvVar(
        "UNIGATE_DATABASE_URL",
        "sqlite:///$UNIGATE_DATA_DIR/unigate.db",
        "`sqlite:///path` or `postgresql://user:pass@host/db` (needs the `postgres` extra: "
        "[Installing the package](scaling.md#installing-the-package))",
    ),
    EnvVar(
        "UNIGATE_REDIS_URL",
        None,
        "Redis, for several replicas: shared limits, and key changes and config reloads told to every "
        "replica at once (give `unigate keys` the same); see "
        "[Scaling out](scaling.md#scaling-out-postgresql-and-redis). `serve` refuses a value that is "
        "not a Redis URL, and warns (then starts) when Redis does not answer. Needs the `redis` extra",
    ),
    EnvVar(
        "UNIGATE_ADMIN_KEY",
        None,
        "admin API key; when unset one is generated, stored in the data dir and printed once",
        shown="generated",
    ),
    EnvVar("UNIGATE_LOG_LEVEL", "info", "`debug`, `info`, `warning`, `error`"),
    EnvVar(
        "UNIGATE_LOG_FORMAT",
        "text",
        "`text`, or `json` for one JSON object per log line (see [Logs](operations.md#logs))",
    ),
    EnvVar(
        "UNIGATE_ALLOW_PRIVATE_WEBHOOKS",
        "0",
        "`1` lets webhooks and URL uploads reach loopback/private addresses (trusted networks, tests)",
    ),
    EnvVar("UNIGATE_WORKERS", "1", "worker processes of `unigate serve` (same as `--workers`)"),
    EnvVar(
        "UNIGATE_COMPILED",
        "1",
        "`0` runs every module from its Python source instead of the per-request path's compiled "
        "modules (built by `scripts/compile.py`; used only while they match their source, as "
        "`serve`'s start-up line says)",
    ),
    EnvVar(
        "UNIGATE_SERVER",
        "uvicorn",
        "the HTTP server `unigate serve` starts: `uvicorn` or `granian` (same as `--server`)",
    ),
    EnvVar(
        "UNIGATE_PUBLIC_URL",
        None,
        "the gateway's base URL as clients reach it (`https://gw.example.com`), for the links it hands "
        "out; wins over the config file's `public_url` (see Public URL)",
    ),
    EnvVar(
        "UNIGATE_METRICS_TOKEN",
        None,
        "a Bearer token `GET /metrics` accepts besides the admin key (see "
        "[Metrics and tracing](operations.md#metrics-and-tracing))",
    ),
    EnvVar(
        "UNIGATE_HEADER_TIMEOUT",
        "10",
        "seconds a request head may take to arrive (from the connection, or its first byte on a "
        "kept-alive one); then 408 or a close",
    ),
    EnvVar(
        "UNIGATE_BODY_TIMEOUT",
        "60",
        "seconds of silence while a request body arrives before the request is dropped",
    ),
    EnvVar(
        "UNIGATE_MAX_CONNECTIONS",
        "4096",
        "open client connections per worker; at the cap the oldest idle one (or unfinished head) is "
        "closed for the new one",
    ),
    EnvVar(
        "UNIGATE_INSTALL_OCR",
        None,
        "`scripts/start.sh` only, as root without Tesseract: `1` installs it with apt-get, `0` does "
        "not; unset asks at a terminal and otherwise says how",
    ),
    EnvVar(
        "UNIGATE_MIGRATE",
        "1",
        "`0` skips migrations at worker start (`unigate serve` migrates once, then starts its workers "
        "with `0`)",
    ),
    EnvVar(
        "UNIGATE_LISTED_MODELS",
        None,
        "set by `unigate serve` for its workers: the models each vendor key's upstream listed when "
        "serve asked once before starting them (see [Connecting providers](providers.md))",
    ),
    EnvVar(
        "PYTHONOPTIMIZE",
        None,
        "`unigate serve` runs its server under `python -OO` (no docstrings or asserts kept in memory: "
        "~3.5 MB less per worker); set, Python's own variable decides instead (`0` keeps them)",
        shown="`2` under `serve`",
    ),
    EnvVar(
        "MALLOC_ARENA_MAX",
        None,
        "glibc's malloc arenas per worker; `unigate serve` caps them at two (~1 MB less per worker) "
        "unless set",
        shown="`2` under `serve`",
    ),
    EnvVar(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        None,
        "turns tracing on: spans go to `<endpoint>/v1/traces` over OTLP/HTTP "
        "(`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the full URL instead). Needs the `otel` extra",
    ),
    EnvVar(
        "OTEL_SERVICE_NAME",
        "unigate",
        "the spans' `service.name`; the SDK's other `OTEL_*` variables apply as it documents them",
    ),
    EnvVar(
        "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN)",
        None,
        "credentials of the S3 file store (`storage: {backend: s3}`, see "
        "[Storage](scaling.md#storage-files-every-replica-sees)), read by its client as AWS documents "
        "them (a web identity or container role works too); never in the config, never logged",
    ),
)


def env_default(name: str) -> str:
    """The declared default of the variable `name` (for readers outside this module)."""
    found = next(v.default for v in ENVIRONMENT if v.names == name)
    assert found is not None, name
    return found


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path
    database_url: str
    config_path: Path | None
    redis_url: str | None
    admin_key: str | None
    allow_private_webhooks: bool
    log_level: str
    # False in workers started by `unigate serve`, which migrates once before starting them.
    migrate_on_start: bool
    # Provider credentials picked up from the environment when no config file is given.
    env_credentials: Mapping[str, str]
    # True when UNIGATE_DATABASE_URL or UNIGATE_DATA_DIR chose the database, False for the
    # ./.unigate default: `unigate keys` uses the default only where a server already made it.
    data_location_set: bool = False
    # UNIGATE_PUBLIC_URL: the gateway's base URL for links it hands out (checked at start-up;
    # wins over the config file's `public_url`).
    public_url: str | None = None
    # Worker processes of this `serve` (UNIGATE_WORKERS, set by `serve --workers`); 0 when
    # unknown. One worker needs no locking around the limit counters it alone uses.
    workers: int = 0
    # UNIGATE_METRICS_TOKEN: a Bearer token for GET /metrics besides the admin key (a scraper
    # should not hold the admin key).
    metrics_token: str | None = None
    # UNIGATE_LOG_FORMAT: `text` (default) or `json` (one JSON object per line).
    log_format: str = "text"
    # OTLP/HTTP traces endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else
    # OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces); None keeps tracing off and unimported. The
    # SDK reads its other OTEL_* variables (headers, batch delays) itself.
    otel_traces_endpoint: str | None = None
    otel_service_name: str = "unigate"
    # UNIGATE_LISTED_MODELS, set by `unigate serve` for its workers: the models each environment
    # vendor listed when serve asked them once before starting the workers, which also printed
    # the start-up lines once. None (an in-process gateway): each gateway asks and says itself.
    listed_models: Mapping[str, list[str]] | None = None
    # The variables these settings were read from, for what the config file interpolates
    # (`${VAR}`) and the default config's vendor keys; None: the process environment. Kept so
    # that several gateways in one process (an embedding application, the test suite) each
    # read their own.
    environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)

    @property
    def metrics_dir(self) -> Path:
        """Where the workers of one serve keep their metric values (`unigate serve` empties it)."""
        return self.data_dir / "metrics"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = Path(env.get("UNIGATE_DATA_DIR") or DEFAULT_DATA_DIR)
        database_url = env.get("UNIGATE_DATABASE_URL") or f"sqlite:///{data_dir / 'unigate.db'}"
        config = env.get("UNIGATE_CONFIG")
        creds = {
            name: env[name]
            for vendor in ("OPENAI", "ANTHROPIC", "GEMINI")
            for name in (f"{vendor}_API_KEY", f"{vendor}_BASE_URL")
            if env.get(name)
        }
        return cls(
            data_dir=data_dir,
            database_url=database_url,
            config_path=Path(config) if config else None,
            redis_url=env.get("UNIGATE_REDIS_URL") or None,
            admin_key=env.get("UNIGATE_ADMIN_KEY") or None,
            allow_private_webhooks=env.get("UNIGATE_ALLOW_PRIVATE_WEBHOOKS", "") in ("1", "true", "yes"),
            log_level=(env.get("UNIGATE_LOG_LEVEL") or "info").lower(),
            migrate_on_start=env.get("UNIGATE_MIGRATE", "1") not in ("0", "false", "no"),
            env_credentials=creds,
            data_location_set=bool(env.get("UNIGATE_DATABASE_URL") or env.get("UNIGATE_DATA_DIR")),
            public_url=(env.get("UNIGATE_PUBLIC_URL") or "").rstrip("/") or None,
            workers=int(w) if (w := env.get("UNIGATE_WORKERS", "")).isascii() and w.isdigit() else 0,
            metrics_token=env.get("UNIGATE_METRICS_TOKEN") or None,
            log_format=(env.get("UNIGATE_LOG_FORMAT") or "text").lower(),
            otel_traces_endpoint=_traces_endpoint(env),
            otel_service_name=env.get("OTEL_SERVICE_NAME") or "unigate",
            listed_models=_listed_models(env.get("UNIGATE_LISTED_MODELS")),
            environ=None if env is os.environ else dict(env),
        )

    def with_overrides(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_env(self) -> dict[str, str]:
        """Environment that reproduces these settings in a worker process."""
        env = {
            "UNIGATE_DATA_DIR": str(self.data_dir),
            "UNIGATE_DATABASE_URL": self.database_url,
            "UNIGATE_LOG_LEVEL": self.log_level,
            "UNIGATE_ALLOW_PRIVATE_WEBHOOKS": "1" if self.allow_private_webhooks else "0",
            "UNIGATE_MIGRATE": "1" if self.migrate_on_start else "0",
        }
        if self.config_path:
            env["UNIGATE_CONFIG"] = str(self.config_path)
        if self.redis_url:
            env["UNIGATE_REDIS_URL"] = self.redis_url
        if self.admin_key:
            env["UNIGATE_ADMIN_KEY"] = self.admin_key
        if self.public_url:
            env["UNIGATE_PUBLIC_URL"] = self.public_url
        if self.workers:
            env["UNIGATE_WORKERS"] = str(self.workers)
        if self.metrics_token:
            env["UNIGATE_METRICS_TOKEN"] = self.metrics_token
        env["UNIGATE_LOG_FORMAT"] = self.log_format
        if self.listed_models is not None:
            env["UNIGATE_LISTED_MODELS"] = json.dumps(dict(self.listed_models))
        return env


def _listed_models(value: str | None) -> dict[str, list[str]] | None:
    """UNIGATE_LISTED_MODELS as `serve` wrote it; anything else is None (the gateway asks itself)."""
    try:
        found = json.loads(value) if value else None
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    if not all(isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in found.values()):
        return None
    return {str(name): ids for name, ids in found.items()}


def _traces_endpoint(env: Mapping[str, str]) -> str | None:
    """The OTLP/HTTP traces URL as the OpenTelemetry exporter derives it from its variables."""
    if (env.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return None
    if traces := (env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or "").strip():
        return traces
    if base := (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "").strip():
        return base.rstrip("/") + "/v1/traces"
    return None
