"""Running the tasks in-process with doit's loader API, recording what ran and what failed."""

from __future__ import annotations

import io
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from doit.reporter import ConsoleReporter

__all__ = ["PipelineResult", "run_doit"]

log = logging.getLogger("toolscript.pipeline")
_RUN_LOCK = threading.Lock()  # doit's loader and backend are not made for concurrent runs


@dataclass
class PipelineResult:
    code: int
    executed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def run_doit(namespace: dict[str, Any], arguments: list[str]) -> PipelineResult:
    """``doit <arguments>`` over ``namespace`` (task creators and DOIT_CONFIG), quietly."""
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain

    result = PipelineResult(code=0)

    class Recorder(_QuietReporter):
        recorded = result

    namespace["DOIT_CONFIG"]["reporter"] = Recorder
    with _RUN_LOCK:
        main = DoitMain(ModuleTaskLoader(namespace), config_filenames=())
        main.config["GLOBAL"]["outfile"] = io.StringIO()
        result.code = main.run(arguments)
    for failure in result.failures:
        log.error("pipeline: %s", failure.strip())
    return result


class _QuietReporter(ConsoleReporter):  # type: ignore[misc]
    """Prints nothing; notes executed tasks and failures in ``recorded``."""

    recorded: PipelineResult

    def execute_task(self, task: Any) -> None:
        if task.actions:
            self.recorded.executed.append(task.name)

    def add_failure(self, task: Any, fail: Any) -> None:
        self.recorded.failures.append(f"{task.name}: {fail.get_msg()}")

    def runtime_error(self, msg: str) -> None:
        self.recorded.failures.append(msg)

    def skip_uptodate(self, task: Any) -> None:
        pass

    def skip_ignore(self, task: Any) -> None:
        pass

    def complete_run(self) -> None:
        pass
