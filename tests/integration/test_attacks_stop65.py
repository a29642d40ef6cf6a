"""Stop 65's attacks, each made for real (a real gateway, its real local tools).

Got through, fixed:

- a script holding 45 calls of a slow internal tool at once (one that waits on a web API,
  say): they ran in anyio's default threads, 40 in all, which the gateway's own work shares
  (the run log, approval checks, a new run's registration), so every other run waited as
  long as the calls did. A tool file's calls have 16 threads of their own now.
- (``tests/unit/test_attacks_stop65_trust.py``) a config, or a file it imports, swapped for
  an agent's and back around the trust check started the agent's servers untrusted, and
  ``toolscript trust`` could trust a file other than the one it showed.
- (``tests/unit/test_attacks_stop65_names.py``) a server's tool ``admin.delete`` was shown
  ``gh.admin.delete`` beside a server ``gh.admin``: the approval question named another
  server's tool, and its ``approve --tool`` command approved that one for good.

Held: tool names that are ``__proto__``, ``constructor`` or keywords, and names that
collide once camel-cased (``codegen/naming.py``); run and gateway tokens after a run's end
or a gateway's restart, or from another project's gateway (random per run and per start).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.helpers import running_gateway

SLOW_TOOL = '''"""A tool as slow as the test wants."""

import os
import time
import uuid
from pathlib import Path


def wait_for(path: str, started: str) -> str:
    """Note the call in the folder ``started``, then answer once ``path`` exists."""
    (Path(started) / uuid.uuid4().hex).touch()
    while not os.path.exists(path):
        time.sleep(0.02)
    return "done"
'''


def test_a_scripts_slow_internal_calls_hold_up_no_other_run(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "slow.py").write_text(SLOW_TOOL)
    config = {"localTools": {"dir": "tools", "timeout": 120}}
    release, started = tmp_path / "release", tmp_path / "started"
    started.mkdir()
    arguments = {"path": str(release), "started": str(started)}
    with running_gateway(config, tmp_path) as gateway, ThreadPoolExecutor(45) as pool:
        calls = [pool.submit(gateway.call, "slow__wait_for", arguments) for _ in range(45)]
        try:
            # every thread the tool's calls may take is taken: 16 now, 40 before
            while len(list(started.iterdir())) < 16:
                assert not any(call.done() for call in calls)
                time.sleep(0.05)
            # A person's run is registered meanwhile (its log looked up in a thread).
            registered = httpx.post(
                f"{gateway.url}/runs", json={"script_hash": "a-person's-script"}, timeout=20
            )
            assert registered.status_code == 200, registered.text
        finally:
            release.touch()
        answers = [call.result(timeout=60) for call in calls]
    assert [answer.json() for answer in answers] == ["done"] * 45  # the rest waited their turn
