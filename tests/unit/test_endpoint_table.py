"""The endpoint table serves one handler per (method, path): a second registration of the same
pair is refused when the table is built, naming both handlers, instead of silently replacing
the first (a shadowed endpoint is code that can never answer)."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import sys
import typing
from pathlib import Path
from typing import Any

import pytest

from unigate.app import create_app
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoint_table import EndpointTable
from unigate.edge.endpoints import Endpoint
from unigate.settings import Settings


async def first(request: Request, principal: Principal) -> None:
    return None


async def second(request: Request, principal: Principal) -> None:
    return None


@pytest.mark.parametrize("path", ["/v1/things", "/v1/things/{thing_id}"])
def test_a_second_registration_of_a_method_and_path_is_refused(path: str) -> None:
    with pytest.raises(ValueError) as refused:
        EndpointTable([Endpoint("GET", path, first), Endpoint("GET", path, second)])
    assert str(refused.value) == (
        f"GET {path} is registered twice: by {__name__}.first and by {__name__}.second"
    )


def test_other_methods_on_one_path_are_separate_endpoints() -> None:
    table = EndpointTable(
        [Endpoint("GET", "/v1/things/{thing_id}", first), Endpoint("DELETE", "/v1/things/{thing_id}", second)]
    )
    assert table.match("DELETE", "/v1/things/7")[0] is table.endpoints()[1]
    assert table.match("POST", "/v1/things/7") == (None, {}, ("DELETE", "GET"))


def test_the_gateways_own_table_registers_each_endpoint_once(tmp_path: Path) -> None:
    # Building the app builds its table, which refuses a pair registered twice (text.py's
    # model listing was registered under the Anthropic module's, which answers all three SDKs).
    app = create_app(Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path)}))
    models = app.table.match("GET", "/v1/models")[0]
    assert models is not None and "AnthropicModelsAPI" in models.handler.__qualname__


def test_key_handlers_get_a_principal_and_the_others_the_request_alone(tmp_path: Path) -> None:
    """The edge calls an API-key endpoint's handler with the request's Principal (never None:
    authentication ran first) and every other endpoint's handler with the request alone."""
    app = create_app(Settings.from_env({"UNIGATE_DATA_DIR": str(tmp_path)}))
    for ep in app.table.endpoints():
        hints = _declared_hints(ep.handler)
        hints.pop("return", None)
        where = f"{ep.method} {ep.path}"
        if ep.auth == "key":
            assert list(hints.values()) == [Request, Principal], (where, hints)
        else:
            assert list(hints.values()) == [Request], (where, hints)


def _declared_hints(handler: Any) -> dict[str, Any]:
    """The handler's annotations as written. A compiled function (src/unigate/compiled.py) keeps
    none at run time, so its module's source is loaded afresh and the same function read there."""
    function = getattr(handler, "__func__", handler)
    if inspect.isfunction(function):
        return typing.get_type_hints(function)
    # A compiled method names no module; its class does.
    name = function.__module__ or type(handler.__self__).__module__
    source = Path(sys.modules[name].__file__ or "").with_suffix("").with_suffix(".py")
    spec = importlib.util.spec_from_file_location(f"_source_{name}", source)
    assert spec is not None and spec.loader is not None, source
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # Its `__name__` is the qualified one (`TextAPI.chat`).
    found: Any = module
    for part in getattr(function, "__qualname__", function.__name__).split("."):
        found = getattr(found, part)
    return typing.get_type_hints(found)


def test_an_endpoints_auth_kind_decides_what_its_handler_is_given() -> None:
    seen: list[tuple[object, ...]] = []

    async def open_handler(request: Request) -> None:
        seen.append((request,))

    async def key_handler(request: Request, principal: Principal) -> None:
        seen.append((request, principal))

    admin = Endpoint("GET", "/admin/things", open_handler, auth="admin")
    keyed = Endpoint("GET", "/v1/things", key_handler)
    request, principal = object(), object()
    asyncio.run(admin.open_handler(request))  # type: ignore[arg-type]
    asyncio.run(keyed.key_handler(request, principal))  # type: ignore[arg-type]
    assert seen == [(request,), (request, principal)]
    with pytest.raises(TypeError):
        asyncio.run(admin.key_handler(request, principal))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        asyncio.run(keyed.open_handler(request))  # type: ignore[arg-type]
