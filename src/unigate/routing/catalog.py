"""Provider instances and model routes built from the config: data, not code. An
OpenAI-compatible vendor is a config row; only its protocol needs an adapter module."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from unigate.auth.principal import Principal
from unigate.config import Family, GatewayConfig, ModelConfig, model_family
from unigate.limits.estimate import Prices
from unigate.providers.base import Provider, Target, Timeouts


@dataclass(frozen=True, slots=True)
class Route:
    provider: Provider
    upstream_model: str | None  # None: the id the client sent
    priority: int
    weight: float
    timeouts: Timeouts

    def key(self, model: str) -> str:
        return f"{self.provider.name}/{self.upstream_model or model}"


@dataclass(frozen=True, slots=True)
class ModelEntry:
    name: str
    routes: tuple[Route, ...]
    price_per_call: float
    is_pattern: bool
    family: Family  # what a family-limited key lists it under
    prices: Prices = field(default_factory=Prices)
    rpm: int | None = None  # across all keys
    tpm: int | None = None
    # The Target of each model id a one-route entry served (Router.plan): kept on the entry, so
    # a reloaded catalog's entries never hand out a Target of the previous providers.
    targets: dict[str, Target] = field(default_factory=dict, compare=False, repr=False)
    batch_discount: float | None = None  # over the answering provider's, for batch lines


class Catalog:
    def __init__(self, config: GatewayConfig, providers: dict[str, Provider]) -> None:
        self.providers = providers
        self._exact: dict[str, ModelEntry] = {}
        self._patterns: list[tuple[re.Pattern[str], ModelEntry]] = []
        for model in config.models:
            entry = _entry(model, providers)
            if entry.is_pattern:
                self._patterns.append((re.compile(fnmatch.translate(model.name)), entry))
            else:
                self._exact.setdefault(model.name, entry)

    def resolve(self, model: str) -> ModelEntry | None:
        entry = self._exact.get(model)
        if entry is not None:
            return entry
        for pattern, candidate in self._patterns:
            if pattern.match(model):
                return candidate
        return None

    def model_names(self) -> list[str]:
        """Concrete model ids (patterns are not listable)."""
        return list(self._exact)

    def listed_for(self, principal: Principal) -> list[str]:
        """The concrete models a key is shown (/v1/models in every client's shape): those its
        model globs allow, of the families it may use."""
        return [
            name
            for name, entry in self._exact.items()
            if principal.may_use_model(name) and principal.may_use_family(entry.family)
        ]

    def unknown_model(self, model: str, principal: Principal) -> str:
        """The 404 message for a model no row matches: the nearest ids this key may use, and
        where to list them all (a refusal, so the listing's cost is paid only here)."""
        import difflib  # a refusal's: its module costs every worker 0.1 MB otherwise

        names = self.listed_for(principal)
        close = difflib.get_close_matches(model, names, 3, 0.6)
        hint = f" Did you mean {' or '.join(repr(n) for n in close)}?" if close else ""
        if not names:
            return f"The model '{model}' does not exist, and this API key may use no model here.{hint}"
        sandbox = (
            " (the offline sandbox's are named sandbox-*)"
            if any(n.startswith("sandbox-") for n in names)
            else ""
        )
        shown = ", ".join(repr(n) for n in names[:4])
        return (
            f"The model '{model}' does not exist.{hint} GET /v1/models lists the models this API key may "
            f"use, e.g. {shown}{sandbox}."
        )

    def target_on(self, provider: Provider, model: str) -> Target:
        """A call of `model` pinned to `provider` (the one that owns a clip or video being
        continued): the model's route there, with its upstream id and timeouts, when it has
        one; else the provider with the model id as it is."""
        entry = self.resolve(model)
        route = next((r for r in entry.routes if r.provider is provider), None) if entry else None
        if route is not None:
            return Target(provider, route.upstream_model or model, route.timeouts, route.key(model))
        return Target(provider, model, provider.timeouts(), f"{provider.name}/{model}")

    def owner(self, model: str) -> str:
        entry = self._exact.get(model)
        return entry.routes[0].provider.name if entry else "unigate"


def _entry(model: ModelConfig, providers: dict[str, Provider]) -> ModelEntry:
    routes = []
    for r in model.routes:
        provider = providers[r.provider]
        base = provider.timeouts()
        timeouts = Timeouts(
            connect=r.connect_timeout or base.connect,
            read=r.read_timeout or base.read,
            total=r.total_timeout or base.total,
        )
        routes.append(Route(provider, r.model, r.priority, r.weight, timeouts))
    routes.sort(key=lambda route: route.priority)
    is_pattern = any(ch in model.name for ch in "*?[")
    prices = Prices(model.input_per_million, model.output_per_million, model.price_per_call)
    return ModelEntry(
        model.name,
        tuple(routes),
        model.price_per_call,
        is_pattern,
        model_family(model),
        prices,
        model.rpm,
        model.tpm,
        batch_discount=model.batch_discount,
    )
