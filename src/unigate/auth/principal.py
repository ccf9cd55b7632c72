"""What an authenticated key may do. Built once per key and cached; checks are O(1) after warm-up."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field


@dataclass(slots=True)
class Principal:
    key_id: str
    name: str
    key_hash: str
    models: tuple[str, ...]
    families: tuple[str, ...]
    rpm: int | None
    budget: float | None
    expires_at: float | None
    revoked_at: float | None
    created_at: float
    webhook_secret: str
    prefix: str = ""
    tpm: int | None = None
    budget_period: str = "total"  # daily | monthly | total
    _model_re: re.Pattern[str] | None = field(default=None, repr=False)
    _model_ok: dict[str, bool] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.models:
            self._model_re = re.compile("|".join(fnmatch.translate(g) for g in self.models))

    def may_use_model(self, model: str) -> bool:
        ok = self._model_ok.get(model)
        if ok is None:
            ok = self._model_re is None or self._model_re.match(model) is not None
            if len(self._model_ok) < 4096:  # bounded: model names come from clients
                self._model_ok[model] = ok
        return ok

    def may_use_family(self, family: str) -> bool:
        return not self.families or family in self.families

    def public_view(self) -> dict[str, object]:
        """The admin API's view of the key: never the hash, never the key."""
        return {
            "id": self.key_id,
            "name": self.name,
            "prefix": self.prefix,
            "models": list(self.models),
            "families": list(self.families),
            "rpm": self.rpm,
            "tpm": self.tpm,
            "budget": self.budget,
            "budget_period": self.budget_period,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "created_at": self.created_at,
        }
