"""What a running gateway has imported after real work: a server connected, a tool called,
a search with typos. Nothing there asks the SDK's packages for a name, so their
``__init__`` files stay unrun (``plumbing/deferredinit.py``), and the SDK's HTTP client
does not come in for stdio servers (``test_process_imports.py`` checks the imports alone)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import clean_env, fixture_server

# The face's gateway, served in a thread of this script's process (``InProcessGateway``),
# so the script can read its ``sys.modules`` after the work.
RUN = """
import json, sys, time
from urllib.parse import urlencode
from urllib.request import Request, urlopen
from toolscript.gateway.inprocess import InProcessGateway

gateway = InProcessGateway(None, None)
gateway.prepare()
gateway.start()
url = gateway.wait_for_url(120)
assert url, gateway.error

def answer(path, body=None):
    request = Request(url + path, data=body, headers={"content-type": "application/json"})
    return json.loads(urlopen(request, timeout=120).read())

called = answer("/tools/fx__plain_text", json.dumps({"text": "hi"}).encode())
found = answer("/search?" + urlencode({"q": "plian txet"}))
gateway.stop(20)
print(json.dumps({
    "called": json.dumps(called),
    "found": json.dumps(found),
    "deferred": [type(sys.modules[name]).__name__ for name in ("mcp", "mcp.client")],
    "imported": sorted(
        name for name in ("mcp.server.mcpserver", "mcp.client.client", "sse_starlette",
                          "cryptography", "httpx2")
        if name in sys.modules
    ),
}))
"""


def test_a_gateway_at_work_keeps_the_sdk_inits_unrun(tmp_path: Path) -> None:
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    done = subprocess.run(
        [sys.executable, "-c", RUN],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert "hi" in report["called"] and "plain_text" in report["found"]
    assert report["deferred"] == ["_DeferredPackage"] * 2
    assert report["imported"] == []
