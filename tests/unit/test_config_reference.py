"""The configuration reference (docs/configuration.md) is generated from the declarations: every
config key of config.py with its type, default and description, every environment variable of
settings.ENVIRONMENT. The committed page must equal the generated one (a key added or changed
without `bash scripts/docs.sh` fails here), every key must carry a description, every
`UNIGATE_*` variable the code reads must be declared, and the page's example config loads."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from pydantic import BaseModel, Field

from unigate.cli.reference import Undescribed, config_tables, fill, undescribed
from unigate.config import GatewayConfig
from unigate.config_source import load_config
from unigate.settings import ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"


def test_the_committed_page_is_the_generated_one() -> None:
    text = PAGE.read_text()
    assert "<!-- generated: environment -->" in text and "<!-- generated: config keys -->" in text
    assert fill(text) == text, "docs/configuration.md is out of date: run bash scripts/docs.sh"


def test_every_config_key_has_a_description() -> None:
    assert undescribed(GatewayConfig) == []


def test_every_key_of_every_section_is_in_the_page() -> None:
    # Read from the models directly, not through the generator.
    text = PAGE.read_text()
    pending: list[type[BaseModel]] = [GatewayConfig]
    while pending:
        model = pending.pop()
        for name, field in model.model_fields.items():
            nested = [a for a in _args(field.annotation) if issubclass(a, BaseModel)]
            pending.extend(nested)
            assert nested or f"| `{name}` |" in text, f"{model.__name__}.{name} is not in the page"


def _args(annotation: object) -> list[type]:
    found, pending = [], [annotation]
    while pending:
        arg = pending.pop()
        if isinstance(arg, type):
            found.append(arg)
        pending.extend(typing.get_args(arg))
    return found


def test_a_key_declared_with_a_description_appears_without_editing_the_generator() -> None:
    # What a branch adding a section does: the section and its keys appear from their declarations.
    class FilesConfig(BaseModel):
        """Files clients upload."""

        max_bytes: int = Field(default=512 * 1024 * 1024, gt=0, description="largest upload")
        purposes: list[str] = Field(default_factory=lambda: ["batch"], description="accepted purposes")

    class Extended(GatewayConfig):
        files: FilesConfig = Field(default_factory=FilesConfig)

    tables = config_tables(Extended)
    assert "### `files`\n\nFiles clients upload." in tables
    assert "| `max_bytes` | integer, > 0 | `536870912 (512 MiB)` | largest upload |" in tables
    assert "| `purposes` | list of string | `[batch]` | accepted purposes |" in tables


def test_a_key_without_a_description_is_refused_by_name() -> None:
    class Bare(BaseModel):
        """A section."""

        flag: bool = False

    class Extended(GatewayConfig):
        bare: Bare = Field(default_factory=Bare)

    try:
        config_tables(Extended)
    except Undescribed as exc:
        assert "bare.flag" in str(exc) and "Field(description=...)" in str(exc)
    else:
        raise AssertionError("a key without a description was rendered")


def test_every_environment_variable_the_code_reads_is_declared() -> None:
    declared = {name.strip() for var in ENVIRONMENT for name in re.split(r"[,()]", var.names) if name.strip()}
    sources = [*(ROOT / "src").rglob("*.py"), *(ROOT / "packages").rglob("*.py")]
    sources += (ROOT / "scripts").glob("*")
    read: dict[str, str] = {}
    for path in sources:
        if path.is_file() and path.name != "settings.py":
            for name in re.findall(r"\bUNIGATE_[A-Z][A-Z_]*[A-Z]\b", path.read_text(errors="replace")):
                read.setdefault(name, str(path.relative_to(ROOT)))
    settings = (ROOT / "src" / "unigate" / "settings.py").read_text()
    in_settings = set(re.findall(r'env\.get\("(UNIGATE_[A-Z_]+)"', settings))
    undeclared = {name: where for name, where in read.items() if name not in declared}
    assert undeclared == {}, "declare these in settings.ENVIRONMENT"
    assert in_settings - declared == set(), "declare these in settings.ENVIRONMENT"
    unused = {n for n in declared if n.startswith("UNIGATE_")} - set(read) - in_settings
    assert unused == set(), "declared but read nowhere"


def test_the_example_is_a_config_the_gateway_loads(tmp_path: Path) -> None:
    # The page's example as written, read as `--config` reads it.
    match = re.search(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)
    assert match
    path = tmp_path / "gateway.yaml"
    path.write_text(match.group(1))
    config = load_config(path, {"OPENAI_API_KEY": "sk-a", "TOGETHER_API_KEY": "sk-b"})
    assert [p.name for p in config.providers][:2] == ["main-openai", "backup"]
