"""Without a config file, the vendors whose keys are in the environment are providers
(`config.default_config`); at start each is asked which models it serves (`list_models`, one
request, all at once, bounded by `DISCOVERY_SECONDS` so a silent upstream never holds start-up
back), and the answer replaces the vendor's well-known ids. Then one log line per provider
says what it serves."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from unigate.config import GatewayConfig
from unigate.config_source import ENV_VENDORS
from unigate.errors import GatewayError
from unigate.providers.base import Provider, RouteFailed, Timeouts

log = logging.getLogger("unigate.providers")
DISCOVERY_SECONDS = 3.0
SHOWN = 12  # models named per provider line; the rest are counted


async def discover(
    providers: Mapping[str, Provider], seconds: float = DISCOVERY_SECONDS
) -> dict[str, list[str]]:
    """The models each environment vendor's upstream lists, by provider name; a vendor that
    lists none, fails or does not answer in time is left out (it keeps its well-known ids),
    with one warning naming why."""
    vendors = [p for name, p in providers.items() if name in ENV_VENDORS]
    found = await asyncio.gather(*(_listed(p, seconds) for p in vendors))
    return {p.name: ids for p, ids in zip(vendors, found, strict=True) if ids}


async def _listed(provider: Provider, seconds: float) -> list[str]:
    try:
        async with asyncio.timeout(seconds):
            return await provider.list_models(Timeouts(seconds, seconds, seconds))
    except TimeoutError:
        why = f"no answer within {seconds:g} s"
    except (RouteFailed, GatewayError) as exc:
        why = exc.message
    log.warning(
        "provider %s: could not list its models (%s); serving its well-known ones (run "
        "`unigate providers check` for a diagnosis)",
        provider.name,
        why,
    )
    return []


def provider_lines(config: GatewayConfig) -> list[str]:
    """One line per provider: where it is and the models routed to it (globs last)."""
    lines = []
    for p in config.providers:
        routed = [m.name for m in config.models if any(r.provider == p.name for r in m.routes)]
        exact = [n for n in routed if not _is_glob(n)]
        globs = [n for n in routed if _is_glob(n)]
        shown = ", ".join(exact[:SHOWN]) + (f" and {len(exact) - SHOWN} more" if len(exact) > SHOWN else "")
        where = f" at {p.base_url}" if p.base_url else ""
        extra = f"; also any id matching {', '.join(globs)}" if globs else ""
        lines.append(
            f"provider {p.name} ({p.protocol}{where}): {len(exact)} models: {shown or 'none'}{extra}"
        )
    return lines


def _is_glob(name: str) -> bool:
    return any(ch in name for ch in "*?[")  # as the catalog tells patterns from ids
