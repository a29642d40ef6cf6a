"""What declared packages cost an exec: the first run after declaring them, and later ones.

One gateway (a fixture server) with a toolscript cache of its own (a fresh TOOLSCRIPT_HOME:
Deno's package cache starts empty). First a script with no packages (it splits a CSV by
hand) runs: its first run and the p50 of later ones are the baseline. Then the config gains
``"packages": ["npm:csv-parse@^5", "npm:date-fns@^4"]``: the gateway reloads it and its
packages task has Deno fetch and lock them (timed until the module offers them), and a
script importing them runs: its first run (a new script: checked with the packages' types)
and the p50 of later ones. Every run is ``toolscript exec`` as its own process, checked.

    python bench/packages.py [--runs 11]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env, running_gateway

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "servers" / "fixture_server.py"
PACKAGES = ["npm:csv-parse@^5", "npm:date-fns@^4"]

WITHOUT = """import { tools } from "toolscript";
const text = "name,count\\nalpha,1\\nbeta,2\\n";
const [head, ...rows] = text.trim().split("\\n").map((line) => line.split(","));
return { columns: head, rows, tools: Object.keys(tools).length, year: new Date(0).getUTCFullYear() };
"""
WITH = """import { tools } from "toolscript";
import { parse } from "csv-parse/sync";
import { format } from "date-fns";
const [head, ...rows] = parse("name,count\\nalpha,1\\nbeta,2\\n");
return { columns: head, rows, tools: Object.keys(tools).length, year: format(new Date(0), "yyyy") };
"""


def exec_ms(script: Path, url: str, home: Path, cwd: Path) -> float:
    env = gateway_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_GATEWAY_URL=url)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", str(script)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"exec failed:\n{done.stderr}")
    return elapsed


def module_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"{url}/runtime/tools.ts", timeout=30) as answer:
        return str(answer.read().decode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11, help="later runs of each script")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-packages-") as temp:
        root = Path(temp)
        home, project = root / "home", root / "project"
        config = {"mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE)]}}}
        trusted = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_TRUSTED_PATHS": str(root)}
        with running_gateway(project, config, **trusted) as url:
            plain, packaged = project / "plain.ts", project / "packaged.ts"
            plain.write_text(WITHOUT)
            packaged.write_text(WITH)
            base_first = exec_ms(plain, url, home, project)
            base_later = [exec_ms(plain, url, home, project) for _ in range(options.runs)]

            started = time.perf_counter()
            (project / ".toolscript.json").write_text(json.dumps({**config, "packages": PACKAGES}))
            while "toolscript-packages:" not in module_text(url):
                if time.perf_counter() - started > 300:
                    raise SystemExit("the gateway never offered the packages")
                time.sleep(0.05)
            fetch = (time.perf_counter() - started) * 1000
            first = exec_ms(packaged, url, home, project)
            later = [exec_ms(packaged, url, home, project) for _ in range(options.runs)]

    base = statistics.median(base_later)
    rows = [
        ("script without packages", base_first, base),
        ("script importing csv-parse, date-fns", first, statistics.median(later)),
    ]
    print(f"{'':38} {'first ms':>9} {'later p50':>10} {'first/base':>11} {'p50/base':>9}")
    for name, first_ms, p50 in rows:
        print(
            f"{name:38} {first_ms:9.0f} {p50:10.0f} {first_ms / base_first:11.2f} {p50 / base:9.2f}"
        )
    print(
        f"declaring them: the gateway fetched, locked and offered them in {fetch:.0f} ms "
        f"(first exec after declaring: {fetch + first:.0f} ms in all); {options.runs} later runs each"
    )


if __name__ == "__main__":
    main()
