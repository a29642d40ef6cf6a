"""What every test shares: the tests under tests/integration are marked ``integration``,
and the longest modules run first.

``pytest -m "not integration"`` runs the fast ones (pure logic, no process started);
``pytest tests/integration`` or ``-m integration`` the ones with real servers, Deno and gateways.

With workers (pytest-xdist: the README's ``pytest -q -n auto``), each worker runs whole
modules, so a module's gateway starts once, handed out in the order below (the longest first,
the short ones fill the gaps at the end); ``-n auto`` is one worker more than the machine has
cores, as the integration tests spend much of their time waiting on the processes they start.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
INTEGRATION = TESTS / "integration"

# The configs the tests write count as trusted, as the user's own are once `toolscript trust`
# ran; the tests of trust itself take this away (TOOLSCRIPT_TRUSTED_PATHS="").
os.environ["TOOLSCRIPT_TRUSTED_PATHS"] = os.pathsep.join([tempfile.gettempdir(), str(TESTS.parent)])

# What toolscript keeps for its user (runs, sign-ins, the result marker) goes to a state
# folder of the tests', not the real user's: one for every worker and run, as the user's is
# (a gateway one worker started may serve another's), in the temporary folder. A test that
# wants a home of its own still sets TOOLSCRIPT_HOME (the caches stay the user's: models, Deno).
os.environ["XDG_STATE_HOME"] = str(
    Path(tempfile.gettempdir()) / f"toolscript-tests-state-{os.getuid()}"
)

# The integration modules that take longest (a run's --durations, summed by module), longest
# first; any other module follows them in the usual order, the unit tests last.
LONGEST_FIRST = (
    "test_search.py",
    "test_policy.py",
    "test_first_hour.py",
    "test_faults.py",
    "test_mcp_face.py",
    "test_plugin.py",
    "test_exec.py",
    "test_warm_checker.py",
    "test_pipeline.py",
    "test_oauth.py",
    "test_hardening.py",
    "test_gateway.py",
    "test_saved_scripts.py",
    "test_local_tools.py",
    "test_cli_gateway.py",
    "test_inferred.py",
    "test_sandbox.py",
    "test_real_servers.py",
    "test_runtime_module.py",
)


def _rank(item: pytest.Item) -> tuple[int, int]:
    path = item.path.resolve()
    if INTEGRATION not in path.parents:
        return (2, 0)
    if path.name in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(path.name))
    return (1, 0)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m "not integration"`` does not import the integration modules (seconds) to deselect them."""
    if " ".join(config.option.markexpr.split()) != "not integration":
        return None
    path = collection_path.resolve()
    return True if path == INTEGRATION or INTEGRATION in path.parents else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION in item.path.resolve().parents:
            item.add_marker(pytest.mark.integration)
    items.sort(key=_rank)  # stable: each module's tests keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and config.option.dist in ("no", "load"):
        config.option.dist = "loadfile"  # whole modules to a worker
        config.option.loadscopereorder = False  # in the order LONGEST_FIRST gives
