"""The body of `POST /admin/keys`, also what `unigate keys create` validates its options
with: strict types (a boolean is neither a number nor a date) and bounds, so nothing stored
can break the gateway or `unigate keys list` later."""

from __future__ import annotations

import datetime as dt
import math
import re
import time
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, ValidationError

from unigate.config import Family

MAX_NAME = 200
MAX_GLOBS = 200
MAX_GLOB = 200
MAX_RPM = 1_000_000
MAX_TPM = 10_000_000_000
MAX_BUDGET = 1e12
# Expiry instants the whole stack can render: up to the end of year 9999, UTC.
LATEST_EXPIRY = dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC).timestamp()
_MAX_EXPIRY_TEXT = 64
_EPOCH_TEXT = re.compile(r"^\d{1,12}(\.\d{1,9})?$")
# Bidirectional overrides and isolates: they make a terminal show another text than stored.
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _printable(value: str) -> str:
    """Refuse control characters (C0/C1, line/paragraph separators, bidi controls)."""
    for ch in value:
        if ch in _BIDI or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            raise ValueError(f"must not contain control characters (found U+{ord(ch):04X})")
    return value


def _text(value: Any) -> Any:
    if isinstance(value, str):
        _printable(value)
    return value


def _name(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be blank")
    return _text(value)


def _number(value: Any, what: str) -> float:
    """An int or float that is a real, finite number (never a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be {what}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError("is out of range") from None
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    return number


def _budget(value: Any) -> float | None:
    if value is None:
        return None
    number = _number(value, "a number")
    if not 0 <= number <= MAX_BUDGET:
        raise ValueError(f"must be between 0 and {MAX_BUDGET:.0e}")
    return number


def _parse_expiry_text(text: str) -> float:
    text = text.strip()
    if len(text) > _MAX_EXPIRY_TEXT:
        raise ValueError(f"is longer than {_MAX_EXPIRY_TEXT} characters")
    if _EPOCH_TEXT.match(text):
        return float(text)
    try:
        if len(text) == 10:  # a bare date is the start of that day, UTC
            day = dt.date.fromisoformat(text)
            return dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC).timestamp()
        moment = dt.datetime.fromisoformat(text)
        return (moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)).timestamp()
    except (ValueError, OverflowError):  # OverflowError: an offset pushing year 1 before 1
        raise ValueError(
            "must be an ISO 8601 date or datetime (e.g. 2030-01-31 or 2030-01-31T18:00:00Z) or epoch seconds"
        ) from None


def _expiry(value: Any) -> float | None:
    """Epoch seconds from epoch seconds, an ISO date (its start, UTC) or an ISO datetime (UTC
    unless it has an offset); within year 9999 and in the future."""
    if value is None:
        return None
    if isinstance(value, str):
        instant = _parse_expiry_text(value)
    else:
        instant = _number(value, "an ISO 8601 date or datetime string or epoch seconds")
    if instant > LATEST_EXPIRY:
        raise ValueError("must be no later than 9999-12-31T23:59:59Z")
    if instant <= time.time():
        raise ValueError("must be in the future")
    return instant


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME, strict=True), BeforeValidator(_name)]
Glob = Annotated[str, Field(min_length=1, max_length=MAX_GLOB, strict=True), BeforeValidator(_text)]


BudgetPeriod = Literal["daily", "monthly", "total"]
Rpm = Annotated[StrictInt | None, Field(ge=1, le=MAX_RPM)]
Tpm = Annotated[StrictInt | None, Field(ge=1, le=MAX_TPM)]
Budget = Annotated[float | None, BeforeValidator(_budget)]
Expiry = Annotated[float | None, BeforeValidator(_expiry)]


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name
    models: list[Glob] = Field(default_factory=list, max_length=MAX_GLOBS)
    families: list[Family] = Field(default_factory=list, max_length=50)
    rpm: Rpm = None
    tpm: Tpm = None
    budget: Budget = None
    budget_period: BudgetPeriod = "total"
    expires_at: Expiry = None


class KeyUpdate(BaseModel):
    """`PATCH /admin/keys/{id}`: only the fields given change; `null` removes a limit, a
    budget or an expiry. Applies to the next request on every worker, no restart."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    models: list[Glob] | None = Field(default=None, max_length=MAX_GLOBS)
    families: list[Family] | None = Field(default=None, max_length=50)
    rpm: Rpm = None
    tpm: Tpm = None
    budget: Budget = None
    budget_period: BudgetPeriod | None = None
    expires_at: Expiry = None

    def changes(self) -> dict[str, Any]:
        given = {name: getattr(self, name) for name in self.model_fields_set}
        for name in ("name", "models", "families", "budget_period"):
            if name in given and given[name] is None:
                raise ValueError(f"{name}: must not be null")
        return given


def validation_message(exc: ValidationError) -> tuple[str, str | None]:
    """One line naming each bad field, and the first field's name (the error's `param`)."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        message = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{loc}: {message.removeprefix('Value error, ')}")
    errors = exc.errors()
    first = str(errors[0]["loc"][0]) if errors and errors[0]["loc"] else None
    return "; ".join(parts), first
