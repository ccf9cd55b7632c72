"""Process settings: the only place that reads the environment.

Everything else receives a `Settings` instance from `create_app` or the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

DEFAULT_DATA_DIR = "./.unigate"


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
            workers=int(workers) if (workers := env.get("UNIGATE_WORKERS", "")).isdigit() else 0,
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
        return env
