"""Schemathesis hooks for tests/e2e/test_openapi.py (loaded by the run's config file).

The run authenticates every key operation with one API key. The admin operations that take
a key id (PATCH and DELETE /admin/keys/{key_id}) must never be generated with that key's id:
a revoke, an expiry or a narrowed scope would turn every later call into a 401/403 and hide
what the run is for. The protected id comes from the environment the test sets."""

from __future__ import annotations

import os
from typing import Any

import schemathesis
from schemathesis import Case
from schemathesis.hooks import HookContext

PROTECTED_KEY_ENV = "UNIGATE_SCHEMATHESIS_KEY_ID"


@schemathesis.hook
def filter_case(context: HookContext, case: Case[Any]) -> bool:
    protected = os.environ.get(PROTECTED_KEY_ENV)
    if not protected or not case.path.startswith("/admin/keys/"):
        return True
    return (case.path_parameters or {}).get("key_id") != protected
