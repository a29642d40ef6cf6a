"""Script files named as file managers and people name them run like any other."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import GatewayProcess, toolscript_cli

NAMES = ["report (copy).ts", "a'b$c+d,e@f!g=h;i[j]&k.ts", "notes 2 (café).ts"]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("names")
    started = GatewayProcess({"mcpServers": {}, "search": {"semantic": False}}, directory)
    yield started
    started.stop()


@pytest.mark.parametrize("name", NAMES)
def test_a_script_file_with_any_of_these_characters_runs(
    gateway: GatewayProcess, name: str
) -> None:
    script = gateway.directory / name
    script.write_text("const n: number = 40;\nreturn n + 2\n")
    ran = toolscript_cli("exec", str(script), cwd=gateway.directory)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"


def test_an_error_names_the_script_as_its_user_named_it(gateway: GatewayProcess) -> None:
    script = gateway.directory / "report (copy).ts"
    script.write_text("const n: number = 'x';\nreturn n\n")
    failed = toolscript_cli("exec", str(script), cwd=gateway.directory)
    assert failed.returncode != 0
    assert "report (copy).ts:1" in failed.stderr
