"""A spare sandbox: a Deno process spawned ahead of its script, for exactly one script.

Deno's own start (V8, the runtime, reading the import map) is most of what a run costs once
a gateway runs; a spare pays it while the run is registered and its script checked, or
between two runs of the MCP face. Its permissions are fixed at its spawn and are the
sandbox's own (``sandbox._command``: the gateway's host only, the one variable, no files,
no subprocesses), plus reading what the script imports: its own copy (at a path of this
spare's private ``DENO_DIR`` that holds nothing until the script comes), the module and the
saved scripts beside it. The script is imported by a specifier Deno cannot see ahead, so
these are read at its import, whenever the script comes; only the module is loaded ahead.

Until then the spare runs only ``BOOT`` (below), which loads the module (whose top level
only defines what it exports) and waits on its stdin. The run's URL
(its token) is handed in on stdin with the script: the spare holds no token before it, and
stdin is closed at once (a script reads nothing from it, as from /dev/null). The script is
then imported: one spare serves exactly one script, and is never reused. A spare whose
parent goes away sees its stdin end and exits without running anything.

A spare is only for a script that needs no ``--check`` (the warm checker passed it, or it
passed before, or ``--no-check``): it runs with ``--no-check``; anything else gets a fresh
Deno as before. It is spawned for one gateway host, module, memory limit and the
packages the module offers (``key``; with packages, the same npm flags, import-map entries and
per-lock npm set as ``sandbox.run_toolscript`` gives a fresh Deno); a run that differs in
any of these (packages declared, changed or locked anew since the spawn) discards it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from toolscript.errors import ExecutionError
from toolscript.execution.sandbox import REFUSED_FILE_URL, SANDBOX_FOLDER, Limits, _command, _read
from toolscript.execution.sandbox import _close_web_storage as close_web_storage
from toolscript.plumbing.denobinary import deno_environment, forget_emitted, run_deno_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.processes import signal_quietly, tether, untether
from toolscript.store.packages import Packages, import_entries, npm_set, packages_beside

__all__ = ["BOOT", "Spare", "spare_key"]

SPARE_SCRIPT = "script.ts"  # the script's copy, inside the spare's own DENO_DIR

# The spare's main module: warm what the script's first call needs, read the hand-over
# (until stdin ends), set the run's URL, import the script. Nothing of the script's runs
# before it; an empty hand-over runs nothing. The warm-up loads the module the script
# imports as "toolscript" (toolscript's own generated code, which reads the run's URL at
# its first request, not at its import): the script's import finds it parsed and run
# (measured: 5 ms of each run for a one-server module, more with more tools). No request is
# made ahead: the module's tool calls speak HTTP on a socket of their own (a first one costs
# about 2 ms of CPU, where Deno's fetch warmed ahead cost 8 of every spare's). The script
# does not wait for it. Once the script's work is done (its top level, timers, requests),
# the process ends at once with its exit code: Deno's own teardown after `unload` took 2-3
# ms before the face saw the end of each run (1 with `Deno.exit`, measured). The listener
# is put last again at each `beforeunload` (a script may put one off, then add `unload`
# listeners), so the script's own `unload` listeners run first (not seen: one added at the
# last `beforeunload` by a `beforeunload` listener the script added after its top level).
BOOT = """\
(async () => {
  try {
    await import("toolscript");
  } catch {
    // only a warm-up: the script's own import says what is wrong
  }
})();
const parts: Uint8Array[] = [];
for await (const part of Deno.stdin.readable) parts.push(part);
const text = new TextDecoder().decode(await new Blob(parts).arrayBuffer());
if (text.trim()) {
  Deno.env.set("TOOLSCRIPT_GATEWAY_URL", JSON.parse(text).url);
  const script: string = %s;
  await import(script);
  const end = () => Deno.exit();
  addEventListener("beforeunload", () => {
    removeEventListener("unload", end);
    addEventListener("unload", end);
  });
}
"""


def spare_key(
    gateway_url: str,
    module: Path,
    memory_mb: int,
    packages: Packages | None = None,
) -> tuple[Any, ...]:
    """What a spare was spawned for: a run that differs in any of these needs another (the
    packages the module offers, as ``sandbox.run_toolscript`` reads them, included; read
    now when not given)."""
    return (
        urlsplit(gateway_url).netloc,
        str(module),
        memory_mb,
        _packages_key(packages if packages is not None else packages_beside(module)),
    )


def _packages_key(packages: Packages | None) -> tuple[Any, ...] | None:
    """The packages, their lock's path and its text (the npm set is built from that text)."""
    if packages is None:
        return None
    lock = hashlib.sha256(_read(packages.lock).encode()).hexdigest()
    return (packages.packages, str(packages.lock), lock)


class Spare:
    """One Deno process waiting for one script (see the module's docstring); what
    ``sandbox.run_toolscript`` takes as its ``spare``."""

    def __init__(
        self,
        gateway_url: str,
        module: Path,
        memory_mb: int,
        *,
        tidy_later: bool = False,
    ) -> None:
        """``tidy_later``: its DENO_DIR is removed by a thread after its run, not before the
        run's answer (the MCP face, which lives on: removing the files Deno just wrote took
        12-80 ms on a busy disk); a process that exits meanwhile leaves it to the next run's
        ``run_deno_dir``, which removes the folders of processes gone."""
        from toolscript.plumbing.denobinary import deno_cache_dir
        from toolscript.plumbing.paths import user_cache_dir
        from toolscript.store.savedscripts import module_imports

        packages = packages_beside(module)
        self.key = spare_key(gateway_url, module, memory_mb, packages)
        self.used = False
        self.tidy_later = tidy_later
        self._stack = contextlib.ExitStack()
        try:
            close_web_storage(deno_cache_dir())
            npm = npm_set(deno_cache_dir(), _read(packages.lock)) if packages else None
            deno_dir = self._stack.enter_context(
                run_deno_dir(packages=packages is not None, npm=npm)
            )
            close_web_storage(deno_dir)
            self.script_path = deno_dir / SPARE_SCRIPT
            self._stack.callback(forget_emitted, self.script_path)
            boot = write_private(deno_dir / "boot.ts", BOOT % json.dumps(self.script_path.as_uri()))
            imports = {
                "toolscript": module.as_uri(),
                "file:///": REFUSED_FILE_URL,
                boot.as_uri(): boot.as_uri(),
                self.script_path.as_uri(): self.script_path.as_uri(),
                module.as_uri(): module.as_uri(),
            }
            saved = module_imports(module)
            imports.update(saved)
            if packages is not None:
                imports.update(import_entries(packages.packages))
            map_path = write_private(
                user_cache_dir() / "run" / f"importmap-spare-{deno_dir.name}.json",
                json.dumps({"imports": imports}),
            )
            self._stack.callback(map_path.unlink, missing_ok=True)
            readable = [self.script_path, module]
            readable += [Path(unquote(urlsplit(url).path)) for url in saved.values()]
            if any("," in str(path) for path in readable):  # Deno's list separator
                raise ExecutionError("a path holds a comma: no spare sandbox")
            command = _command(
                boot,
                gateway_url,
                map_path,
                False,
                Limits(memory_mb=memory_mb),
                packages=packages,
                # What the script imports, read when it does: nothing it could not import.
                readable=readable,
            )
            env = {"NO_COLOR": "1"} | deno_environment(deno_dir)
            self.process = subprocess.Popen(
                command,
                cwd=SANDBOX_FOLDER,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            self._stack.close()
            raise
        tether(self.process.pid, group=True)  # (killed at once should its program die)

    def fits(self, gateway_url: str, module: Path, memory_mb: int) -> bool:
        """Whether this spare can run a script of that run (and is still waiting for one)."""
        return (
            not self.used
            and self.process.poll() is None
            and self.key == spare_key(gateway_url, module, memory_mb)
        )

    def hand_over(self, code: str, script_url: str) -> subprocess.Popen[bytes]:
        """Give the spare its one script and the run's URL; the process now runs it."""
        assert not self.used, "a spare serves one script"
        self.used = True
        write_private(self.script_path, code)
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # it died: the run reports its exit
            self.process.stdin.write(json.dumps({"url": script_url}).encode())
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        return self.process

    def discard(self) -> None:
        """Stop it unused (or after its run): its process, then its DENO_DIR and map."""
        self.used = True
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()  # an empty hand-over: it exits by itself
        signal_quietly(self.process.pid, signal.SIGKILL, group=True)  # nothing of value runs
        self.process.wait()
        untether(self.process.pid, group=True)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._stack.close()

    def close(self) -> None:
        """Remove its DENO_DIR and import map (its process has ended); with ``tidy_later``,
        a thread does after its run."""
        if self.process.poll() is not None:
            untether(self.process.pid, group=True)
        if self.tidy_later and self.used and self.process.poll() is not None:
            threading.Thread(target=self._stack.close, daemon=True, name="spare tidy").start()
            return
        self._stack.close()
