"""Creating and changing API keys, written once for the admin API (`api/admin/keys.py`) and
`unigate keys` (`cli/keys.py`), so both accept and refuse the same input and store the same
key: the body validated by `key_spec.py`'s models (defaults included), the key and its webhook
secret generated and the change-feed row written by the store in the key's own transaction
(`store/keys.py`), and this process's key cache told when there is one (the admin API's; other
processes learn from the change feed). Each front end only says how it shows a refusal: a 400
naming the field, or an `error:` line naming the option."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from unigate.api.admin.key_spec import KeyCreate, KeyUpdate, validation_message
from unigate.auth.cache import KeyCache
from unigate.auth.principal import Principal
from unigate.store.keys import KeyStore

M = TypeVar("M", bound=BaseModel)


class KeyInputError(ValueError):
    """Input no key can be made or changed with: `message` names each bad field, as in "rpm:
    Input should be less than or equal to 1000000"; `field` is the first one and `problem`
    what is wrong with it."""

    def __init__(self, message: str, field: str | None, problem: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.problem = problem


@dataclass(frozen=True, slots=True)
class CreatedKey:
    plain: str  # shown once: only its hash is stored
    record: Principal


def new_key(body: Mapping[str, Any]) -> KeyCreate:
    """A key's creation body, validated (defaults filled in), before anything is stored."""
    return _validated(KeyCreate, body)


def key_changes(body: Mapping[str, Any]) -> dict[str, Any]:
    """A change body, validated: only the fields given, `null` removing a limit."""
    spec = _validated(KeyUpdate, body)
    try:
        return spec.changes()
    except ValueError as exc:  # a field that may be left out but not set to null
        field, _, problem = str(exc).partition(": ")
        raise KeyInputError(str(exc), field, problem) from None


class KeyService:
    def __init__(self, store: KeyStore, cache: KeyCache | None = None) -> None:
        self.store = store
        self.cache = cache

    async def create(self, spec: KeyCreate) -> CreatedKey:
        plain, record = await self.store.create(
            spec.name,
            spec.models,
            list(spec.families),
            spec.rpm,
            spec.budget,
            spec.expires_at,
            tpm=spec.tpm,
            budget_period=spec.budget_period,
        )
        if self.cache is not None:
            self.cache.forget_misses()  # a lookup of the new key that missed just now is stale
        return CreatedKey(plain, record)

    async def update(self, key_id: str, changes: dict[str, Any]) -> Principal | None:
        """The changed key (None: no such key)."""
        record = await self.store.update(key_id, changes)
        self._changed(record)
        return record

    async def revoke(self, key_id: str) -> Principal | None:
        record = await self.store.revoke(key_id)
        self._changed(record)
        return record

    def _changed(self, record: Principal | None) -> None:
        if record is not None and self.cache is not None:
            self.cache.invalidate(record.key_hash)


def _validated(model: type[M], body: Mapping[str, Any]) -> M:
    try:
        return model.model_validate(dict(body))
    except ValidationError as exc:
        message, field = validation_message(exc)
        problem = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise KeyInputError(message, field, problem) from None
