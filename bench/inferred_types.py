"""Result types learned from real calls, measured on the real servers the tests install.

For every tool of the offline-capable servers (everything, filesystem, memory, sequential
thinking, kubernetes, time, git): does it declare an outputSchema; for the rest, is a type
inferred after one successful call; and how often does the type widen at the 1st, 3rd and
10th sample, with arguments that vary from call to call (strings get the call's number,
numbers grow). Then a script that uses result fields without casts is type-checked and run.

Calls go through a real gateway (policy "never": destructive tools are called too, inside
a temporary directory); the inference is the gateway's own (``ResultShapes``), fed with what
the gateway answered.

    python bench/inferred_types.py [--samples 10]
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env, running_gateway

from toolscript.codegen.module import example_arguments
from toolscript.gateway.inferred import ResultShapes

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "tests" / "servers" / "node_modules" / ".bin"
PYBIN = Path(sys.executable).parent


def servers(directory: Path) -> dict[str, Any]:
    subprocess.run(["git", "init", "-q", str(directory / "repo")], check=True)
    (directory / "files").mkdir()
    (directory / "files" / "a.txt").write_text("hello\n")
    return {
        "everything": {"command": str(NODE / "mcp-server-everything")},
        "filesystem": {
            "command": str(NODE / "mcp-server-filesystem"),
            "args": [str(directory / "files")],
        },
        "memory": {
            "command": str(NODE / "mcp-server-memory"),
            "env": {"MEMORY_FILE_PATH": str(directory / "memory.jsonl")},
        },
        "thinking": {"command": str(NODE / "mcp-server-sequential-thinking")},
        "kubernetes": {"command": str(NODE / "mcp-server-kubernetes")},
        "time": {"command": str(PYBIN / "mcp-server-time")},
        "git": {
            "command": str(PYBIN / "mcp-server-git"),
            "args": ["--repository", str(directory / "repo")],
        },
    }


def varied(value: Any, sample: int, directory: Path) -> Any:
    """Example arguments made different per call (and paths inside the sandbox folders)."""
    if isinstance(value, dict):
        return {key: varied(item, sample, directory) for key, item in value.items()}
    if isinstance(value, list):
        return [varied(item, sample, directory) for item in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value + sample
    if isinstance(value, str):
        return f"{value} {sample}"
    return value


def special(
    server: str, tool: str, arguments: dict[str, Any], directory: Path, sample: int
) -> dict[str, Any]:
    """Arguments the servers accept where the schema's example would not do."""
    files = directory / "files"
    if server == "filesystem":
        for key in ("path", "source"):
            if key in arguments:
                arguments[key] = str(files / ("a.txt" if "file" in tool or key == "source" else ""))
        if "paths" in arguments:
            arguments["paths"] = [str(files / "a.txt")]
        if "destination" in arguments:
            arguments["destination"] = str(files / f"moved-{sample}.txt")
        if tool == "write_file":
            arguments["path"] = str(files / f"w{sample}.txt")
        if tool == "create_directory":
            arguments["path"] = str(files / f"d{sample}")
    if server == "git" and "repo_path" in arguments:
        arguments["repo_path"] = str(directory / "repo")
    if server == "time":
        arguments = {k: ("Europe/Paris" if "timezone" in k else v) for k, v in arguments.items()}
        if "time" in arguments:
            arguments["time"] = f"{10 + sample % 10}:30"
    return arguments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        config = {
            "mcpServers": servers(directory),
            "policy": {"ask": "never"},
            "search": {"semantic": False},
        }
        with running_gateway(directory / "project", config) as url:
            client = httpx.Client(base_url=url + "/", timeout=60)
            rows = []
            for server in config["mcpServers"]:
                tools = client.get(f"servers/{server}/tools").json()
                declared = sum(1 for tool in tools if tool.get("outputSchema"))
                shapes = ResultShapes(None)
                inferred_after_one = called = 0
                widened = {3: 0, 10: 0}
                for tool in tools:
                    if tool.get("outputSchema"):
                        continue
                    qualified = f"{server}__{tool['name']}"
                    example = example_arguments(tool.get("inputSchema") or {}) or {}
                    successes = 0
                    seen: dict[int, Any] = {}  # the type after the 1st, 3rd and 10th result
                    for sample in range(1, args.samples + 1):
                        arguments = special(
                            server,
                            tool["name"],
                            varied(copy.deepcopy(example), sample, directory),
                            directory,
                            sample,
                        )
                        response = client.post(f"tools/{qualified}", json=arguments)
                        if response.status_code != 200:
                            continue
                        successes += 1
                        kind = response.headers.get("x-toolscript-result", "")
                        shapes.observe(qualified, tool, kind, response.json())
                        if successes in (1, 3, 10):
                            seen[successes] = _type_only(shapes.schema_for(qualified))
                    if 1 in seen:
                        called += 1
                        inferred_after_one += bool(seen[1])
                    if 3 in seen:
                        widened[3] += seen[3] != seen[1]
                    if 10 in seen:
                        widened[10] += seen[10] != seen[3]
                rows.append((server, len(tools), declared, called, inferred_after_one, widened))
            check = _script_check(directory / "project", url)
    print(
        f"{'server':12}{'tools':>6}{'schema':>8}{'called':>8}{'typed@1':>9}{'wid@3':>7}{'wid@10':>8}"
    )
    totals = [0, 0, 0, 0, 0, 0]
    for server, count, declared, called, typed, widened in rows:
        print(f"{server:12}{count:6}{declared:8}{called:8}{typed:9}{widened[3]:7}{widened[10]:8}")
        for i, value in enumerate((count, declared, called, typed, widened[3], widened[10])):
            totals[i] += value
    print(
        f"{'all':12}{totals[0]:6}{totals[1]:8}{totals[2]:8}{totals[3]:9}{totals[4]:7}{totals[5]:8}"
    )
    print(
        "schema: tools declaring an outputSchema; called: tools without one that answered at "
        "least once; typed@1: of those, typed after one result; wid@3: types that changed "
        "between the 1st and the 3rd result; wid@10: between the 3rd and the 10th"
    )
    print(f"a script using result fields without casts: {check}")


def _type_only(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The schema without its sample count."""
    return {key: value for key, value in (schema or {}).items() if not key.startswith("x-")}


def _script_check(project: Path, url: str) -> str:
    script = (
        'import { tools } from "toolscript";\n'
        'const now = await tools.time.getCurrentTime({ timezone: "UTC" });\n'
        "const year: string = now.datetime.slice(0, 4);\n"
        "const entries = await tools.memory.readGraph({});\n"
        "return { year, entities: entries.entities.length, dst: now.is_dst };\n"
    )
    env = gateway_env(TOOLSCRIPT_GATEWAY_URL=url)
    time.sleep(1)  # the types build the calls above asked for
    done = subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", script],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode == 0:
        return f"type-checks and runs ({done.stdout.strip()})"
    return f"FAILED (exit {done.returncode}): {done.stderr.strip()[:300]}"


if __name__ == "__main__":
    main()
