"""Fixtures unit tests share. A module with a fixture of the same name uses its own.

- ``home`` and ``repo`` (the `import` key: test_other_clients.py, and the attacks on it in
  test_import_attacks.py): a user's home of the test's own, with no client's or
  toolscript's settings of the machine leaking in, and a repository in it as the working
  directory.
- ``gateway`` and ``client`` (the background-run routes: test_background_routes.py, and the
  attacks on them in test_background_attacks.py): a gateway of no servers in this process,
  and Litestar's test client of its app, one of each for a module.
- ``projects`` (kept outputs: test_attacks_stop66_outputs.py, test_attacks_stop67_outputs.py):
  a folder of projects' state whose kept outputs share a budget of 1 MB.
- ``project`` (the CLI run in a project: test_approve_tools.py, test_approve_repointed.py,
  test_leftovers15.py, test_cli_minors.py, each with ``pytestmark =
  pytest.mark.usefixtures("project")``): the test's folder as the working directory, its
  home, and toolscript's settings of its own (none of the machine's); the module's
  ``PROJECT_CONFIG``, when it has one, written there as ``.toolscript.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # (imported by the fixtures that use them: not for every unit test)
    from litestar.testing import TestClient

    from toolscript.gateway.core import Gateway


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in (
        "XDG_CONFIG_HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "APPDATA",
        "TOOLSCRIPT_CONFIG",
        "TOOLSCRIPT_TRUSTED_PATHS",
        "TOOLSCRIPT_GATEWAY_URL",
        "TOOLSCRIPT_CACHE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "toolscript-home"))
    monkeypatch.setenv("TOOLSCRIPT_CONFIG_HOME", str(tmp_path / "trust"))
    return home


@pytest.fixture
def repo(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = home / "code" / "repo"
    repo.mkdir(parents=True)
    monkeypatch.chdir(repo)
    return repo


@pytest.fixture(scope="module")
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Gateway:
    from toolscript.config import Config, SearchConfig
    from toolscript.gateway.core import Gateway

    tmp_path = tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2])
    config = Config(path=None, project_dir=tmp_path, servers=())
    return Gateway(
        config, cache=tmp_path / "cache", search=SearchConfig(semantic=False, cache=False)
    )


@pytest.fixture(scope="module")
def client(gateway: Gateway) -> Iterator[TestClient[Any]]:
    from litestar.testing import TestClient

    from toolscript.gateway.app import build_app

    with TestClient(app=build_app(gateway)) as test_client:
        yield test_client


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLSCRIPT_KEPT_OUTPUT_MB", "1")
    folder = tmp_path / "projects"
    folder.mkdir()
    return folder


@pytest.fixture
def project(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("TOOLSCRIPT_GATEWAY_URL", "TOOLSCRIPT_CONFIG", "TOOLSCRIPT_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # the search for a config stops here
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLSCRIPT_CONFIG_HOME", str(tmp_path / "config-home"))
    config = getattr(request.module, "PROJECT_CONFIG", None)
    if config is not None:
        (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    return tmp_path
