"""Stop 68: the MCP face's ``run_script`` took any timeout, where ``execute`` takes at most
``MAX_EXECUTE_TIMEOUT`` seconds: 1e308 made the run's timer fail (``OverflowError`` in its
thread), and the saved script ran with no time limit at all."""

from __future__ import annotations

from toolscript.mcpface.server import _argument_problem
from toolscript.mcpface.tools import MAX_EXECUTE_TIMEOUT


def test_run_script_refuses_a_timeout_past_executes_limit() -> None:
    problem = _argument_problem("run_script", {"name": "job", "timeout": 1e308})
    assert problem is not None and problem.startswith("invalid timeout")
    assert _argument_problem("execute", {"code": "1", "timeout": 1e308}) is not None


def test_run_script_keeps_every_timeout_execute_takes() -> None:
    for timeout in (0.5, 120, MAX_EXECUTE_TIMEOUT):
        assert _argument_problem("run_script", {"name": "job", "timeout": timeout}) is None
