"""The endpoint table serves one handler per (method, path): a second registration of the same
pair is refused when the table is built, naming both handlers, instead of silently replacing
the first (a shadowed endpoint is code that can never answer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from unigate.app import create_app
from unigate.auth.principal import Principal
from unigate.edge.asgi import Request
from unigate.edge.endpoints import Endpoint, EndpointTable
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
