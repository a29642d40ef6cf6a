"""What every test shares: the tests under tests/integration are marked ``integration``.

``pytest -m "not integration"`` runs the fast ones (pure logic, no process started);
``pytest tests/integration`` or ``-m integration`` the ones with real servers, Deno and gateways.
"""

from __future__ import annotations

from pathlib import Path

import pytest

INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION in item.path.resolve().parents:
            item.add_marker(pytest.mark.integration)
