"""What an agent's context holds with five real servers connected directly, and through
`toolscript mcp`: tool definitions, the reads of three whole tasks, and the reads of
doing each task a second time with the script saved the first time (save_script, then
search_tools + run_script) against writing it again.

The github, atlassian, sentry and playwright definitions of ../shared/toolcorpus are
served by bench/search/corpus_server.py (real stdio MCP servers answering tools/call
with canned results of realistic size, written below); filesystem is the real
@modelcontextprotocol/server-filesystem. Everything goes through the `mcp` SDK's
client, as an MCP client would. Tokens: Claude's tokenizer (@anthropic-ai/tokenizer,
from tests/servers/node_modules), else bytes/4. The figures are byte counts: the same
on every run (no medians needed); --runs times the tasks too.

    python bench/context_budget.py            # the three tables
    python bench/context_budget.py --types    # bytes per tool of JSON and of declarations only
    python bench/context_budget.py --first-hour   # an agent's first mistakes, real servers

--first-hour measures, on the real time, memory and filesystem servers, what an agent with a
shell reads (steps and bytes) for the moves that went wrong in its first hour: the types of
two tools at once, a first script guessing a parameter and a result field, "read a file"
where one tool is deprecated, and a script returning 8,000 records through the MCP face.
Run it on two checkouts to compare them.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from corpus import ROOT, corpus_dir
from harness import gateway_env, running_gateway
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CORPUS_SERVER = Path(__file__).resolve().parent / "search" / "corpus_server.py"
NODE = ROOT / "tests" / "servers" / "node_modules"
CORPUS_FILES = {
    "github": "github.json",
    "atlassian": "atlassian.json",
    "sentry": "sentry.json",
    "playwright": "playwright-mcp.json",
}
TARGET_LIST, TARGET_TASK = 0.02, 0.10


# -- canned results, shaped like the real servers' ------------------------------------
def _user(login: str, number: int) -> dict[str, Any]:
    api = f"https://api.github.com/users/{login}"
    return {
        "login": login,
        "id": number,
        "node_id": f"MDQ6VXNlcj{number}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{number}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"https://github.com/{login}",
        **{
            f"{name}_url": f"{api}/{name}"
            for name in (
                "followers",
                "following",
                "gists",
                "starred",
                "subscriptions",
                "organizations",
                "repos",
                "events",
                "received_events",
            )
        },
        "type": "User",
        "site_admin": False,
    }


def _repository(owner: str, name: str) -> dict[str, Any]:
    api = f"https://api.github.com/repos/{owner}/{name}"
    parts = [
        "forks",
        "keys",
        "collaborators",
        "teams",
        "hooks",
        "issue_events",
        "events",
        "assignees",
        "branches",
        "tags",
        "blobs",
        "git_tags",
        "git_refs",
        "trees",
        "statuses",
        "languages",
        "stargazers",
        "contributors",
        "subscribers",
        "subscription",
        "commits",
        "git_commits",
        "comments",
        "issue_comment",
        "contents",
        "compare",
        "merges",
        "archive",
        "downloads",
        "issues",
        "pulls",
        "milestones",
        "notifications",
        "labels",
        "releases",
        "deployments",
    ]
    return {
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": name,
        "full_name": f"{owner}/{name}",
        "owner": _user(owner, 583231),
        "private": False,
        "html_url": f"https://github.com/{owner}/{name}",
        "description": "The service behind the shop",
        "fork": False,
        "url": api,
        **{f"{part}_url": f"{api}/{part}" for part in parts},
        "created_at": "2023-01-26T19:01:12Z",
        "updated_at": "2026-11-20T08:14:43Z",
        "pushed_at": "2026-11-22T17:31:02Z",
        "default_branch": "main",
        "visibility": "private",
    }


def _pull_request() -> dict[str, Any]:
    repository = _repository("acme", "shop")
    branch = {"label": "acme:", "user": _user("acme", 583231), "repo": repository}
    return {
        "url": "https://api.github.com/repos/acme/shop/pulls/1347",
        "id": 1934012831,
        "number": 1347,
        "state": "open",
        "title": "Log-in with passkeys",
        "user": _user("dana", 1032),
        "body": "Adds passkey sign-in behind the feature flag.",
        "html_url": "https://github.com/acme/shop/pull/1347",
        "created_at": "2026-11-23T09:12:44Z",
        "head": {
            **branch,
            "ref": "feature/login",
            "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
        },
        "base": {**branch, "ref": "main", "sha": "9a1c1e1f1b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b"},
        "draft": False,
        "merged": False,
        "mergeable_state": "unknown",
        "requested_reviewers": [_user("lee", 2044)],
    }


def _issue(number: int, title: str) -> dict[str, Any]:
    return {
        "url": f"https://api.github.com/repos/acme/shop/issues/{number}",
        "repository_url": "https://api.github.com/repos/acme/shop",
        "html_url": f"https://github.com/acme/shop/issues/{number}",
        "id": 2011000000 + number,
        "number": number,
        "title": title,
        "user": _user("dana", 1032),
        "labels": [],
        "state": "open",
        "assignees": [],
        "comments": 0,
        "created_at": "2026-11-23T09:20:01Z",
        "body": "(summary of the errors)",
    }


def _sentry_issues(count: int) -> str:
    rows = []
    for number in range(count):
        rows.append(
            f"## {number + 1}. **TypeError: Cannot read properties of undefined (reading 'id')**\n\n"
            f"- **Issue ID**: SHOP-{4210 + number}\n- **Status**: unresolved\n"
            f"- **First seen**: 2026-11-{10 + number % 9}T08:{10 + number}:00Z\n"
            f"- **Last seen**: 2026-11-23T07:{10 + number}:00Z\n- **Occurrences**: {120 - number * 7}\n"
            f"- **Users affected**: {40 - number}\n- **Culprit**: checkout/cart.ts in applyCoupon\n"
            f"- **URL**: https://acme.sentry.io/issues/{6000000 + number}/\n"
        )
    return "# Issues in **acme/shop**\n\n" + "\n".join(rows) + "\n# Using this information\n..."


def _page_snapshot() -> str:
    items = "\n".join(
        f'    - listitem [ref=e{20 + n}]:\n      - link "Product {n}" [ref=e{120 + n}]:\n'
        f'        - /url: /products/{n}\n      - text: "${10 + n}.99"'
        for n in range(60)
    )
    return (
        "### Ran Playwright code\n```js\nawait page.goto('https://shop.example.com/');\n```\n"
        "### Page state\n- Page URL: https://shop.example.com/\n- Page Title: Shop\n"
        "- Page Snapshot:\n```yaml\n- generic [ref=e2]:\n  - banner [ref=e3]:\n"
        '    - link "Home" [ref=e4]\n  - main [ref=e5]:\n  - list [ref=e6]:\n' + items + "\n```"
    )


def _text(value: Any) -> dict[str, Any]:
    body = value if isinstance(value, str) else json.dumps(value, indent=2)
    return {"content": [{"type": "text", "text": body}]}


def canned_results() -> dict[str, dict[str, dict[str, Any]]]:
    """Per server, per tool: the tools/call result its server gives."""
    png = base64.b64encode(bytes(range(256)) * 240).decode()  # a 60 KB screenshot
    return {
        "github": {
            "create_pull_request": _text(_pull_request()),
            "create_issue": _text(_issue(1348, "Checkout errors in the last day")),
        },
        "atlassian": {
            "jira_add_comment": _text(
                {
                    "success": True,
                    "comment": {
                        "id": "10521",
                        "body": "PR: https://github.com/acme/shop/pull/1347",
                        "created": "2026-11-23T09:13:02.000+0000",
                        "author": {"display_name": "Dana", "name": "dana", "active": True},
                    },
                }
            )
        },
        "sentry": {"search_issues": _text(_sentry_issues(25))},
        "playwright": {
            "browser_navigate": _text(_page_snapshot()),
            "browser_take_screenshot": {
                "content": [
                    {"type": "text", "text": "### Result\nSaved the screenshot as shop.png"},
                    {"type": "image", "data": png, "mimeType": "image/png"},
                ]
            },
        },
    }


TASKS = [
    {
        "task": "open a PR for branch X and link it in Jira issue Y",
        "searches": [("create a pull request", None), ("add a comment to a jira issue", None)],
        "types": ["github.create_pull_request", "atlassian.jira_add_comment"],
        "code": """import { tools } from "toolscript";
const pr = (await tools.github.createPullRequest({
  owner: "acme", repo: "shop", title: "Log-in with passkeys", head: "feature/login", base: "main",
})) as { html_url: string; number: number };
await tools.atlassian.jiraAddComment({ issue_key: "SHOP-88", body: `PR: ${pr.html_url}` });
return { pr: pr.number, url: pr.html_url };
""",
    },
    {
        "task": "collect the last 5 Sentry errors of project P and file one GitHub issue summarizing them",
        "searches": [("search sentry issues", "sentry"), ("create a github issue", "github")],
        "types": ["sentry.search_issues", "github.create_issue"],
        "code": """import { tools } from "toolscript";
const found = String(await tools.sentry.searchIssues({
  organizationSlug: "acme", projectSlugOrId: "shop", query: "is:unresolved", sort: "date", limit: 5,
}));
const errors = found.split("\\n## ").slice(1, 6).map((part) => {
  const title = part.split("\\n")[0].replace(/^\\d+\\. /, "").replaceAll("*", "");
  const id = /Issue ID\\*\\*: (\\S+)/.exec(part)?.[1];
  return `- ${id}: ${title}`;
});
const issue = (await tools.github.createIssue({
  owner: "acme", repo: "shop", title: "Checkout errors in the last day", body: errors.join("\\n"),
})) as { html_url: string };
return { filed: issue.html_url, errors: errors.length };
""",
    },
    {
        "task": "take a screenshot of page U and save it to file F",
        "searches": [("open a web page in the browser", None), ("take a screenshot", None)],
        "types": ["playwright.browser_navigate", "playwright.browser_take_screenshot"],
        "code": """import { tools } from "toolscript";
await tools.playwright.browserNavigate({ url: "https://shop.example.com/" });
const shot = await tools.playwright.browserTakeScreenshot({
  type: "png", filename: "shop.png", fullPage: true, scale: "css",
});
const blocks = Array.isArray(shot) ? shot : [shot];
return blocks
  .map((b) => (b && typeof b === "object" && !Array.isArray(b) && "text" in b ? String(b.text) : ""))
  .join("");
""",
    },
]


# -- measuring ----------------------------------------------------------------------
def count_tokens(texts: list[str]) -> tuple[list[int], str]:
    """Claude's tokenizer when installed, else bytes/4."""
    if (NODE / "@anthropic-ai" / "tokenizer").is_dir() and shutil.which("node"):
        script = (
            'const {countTokens}=require("@anthropic-ai/tokenizer");let s="";'
            "process.stdin.on('data',d=>s+=d).on('end',()=>"
            "console.log(JSON.stringify(JSON.parse(s).map(countTokens))))"
        )
        done = subprocess.run(
            ["node", "-e", script],
            input=json.dumps(texts),
            capture_output=True,
            text=True,
            cwd=NODE.parent,
            check=True,
        )
        return json.loads(done.stdout), "Claude tokenizer (@anthropic-ai/tokenizer)"
    return [len(text.encode()) // 4 for text in texts], "bytes/4"


def config(directory: Path) -> dict[str, Any]:
    results = canned_results()
    servers: dict[str, Any] = {}
    for name, file in CORPUS_FILES.items():
        responses = directory / f"{name}-results.json"
        responses.write_text(json.dumps(results.get(name, {})))
        servers[name] = {
            "command": sys.executable,
            "args": [str(CORPUS_SERVER), str(corpus_dir() / file), str(responses)],
        }
    files = directory / "files"
    files.mkdir(exist_ok=True)
    servers["filesystem"] = {
        "command": str(NODE / ".bin" / "mcp-server-filesystem"),
        "args": [str(files)],
    }
    return {"mcpServers": servers}


def _size(text: str) -> int:
    return len(text.encode())


async def direct_definitions(
    servers: dict[str, Any],
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per server: each tool as a client puts it in context (name, description, inputSchema),
    and each tool's whole definition as the types are made from it (outputSchema and
    annotations too, where it has them)."""
    listed: dict[str, list[str]] = {}
    whole: dict[str, list[str]] = {}
    for name, entry in servers.items():
        parameters = StdioServerParameters(command=entry["command"], args=entry["args"])
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
        listed[name] = [
            json.dumps(
                {"name": t.name, "description": t.description or "", "inputSchema": t.input_schema}
            )
            for t in tools
        ]
        whole[name] = [
            json.dumps(
                {
                    "name": t.name,
                    "description": t.description or "",
                    "inputSchema": t.input_schema,
                    **({"outputSchema": t.output_schema} if t.output_schema else {}),
                    **(
                        {"annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)}
                        if t.annotations
                        else {}
                    ),
                }
            )
            for t in tools
        ]
    return listed, whole


def _text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def through_face(directory: Path, runs: int) -> dict[str, Any]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(directory / ".toolscript.json")],
        cwd=str(directory),
        # the bench wrote this config itself: trusted without touching the user's trust records
        env=gateway_env(TOOLSCRIPT_TRUSTED_PATHS=str(directory)),
    )
    measured: dict[str, Any] = {"tasks": []}
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        tools = (await session.list_tools()).tools
        measured["list"] = [
            json.dumps(t.model_dump(by_alias=True, exclude_none=True, mode="json")) for t in tools
        ]
        measured["instructions"] = initialized.instructions or ""
        for _ in range(100):  # until every server is connected
            servers = await session.call_tool("list_servers", {})
            rows = servers.structured_content["servers"]
            if rows and all(row["state"] == "connected" for row in rows):
                break
            await anyio.sleep(0.2)
        measured["servers"] = {row["name"]: row["tools"] for row in rows}
        for _ in range(600):  # and until search is hybrid, as it is after the first minute
            probe = await session.call_tool("search_tools", {"query": "ready"})
            if "keyword search only" not in _text_of(probe):
                break
            await anyio.sleep(0.5)
        types = {}
        for name in measured["servers"]:
            answer = await session.call_tool("get_types", {"tools": [name]})
            types[name] = _text_of(answer)
        measured["types"] = types
        for task in TASKS:
            reads: dict[str, list[str]] = {"search": [], "types": [], "output": []}
            for query, server in task["searches"]:
                arguments = {"query": query, **({"server": server} if server else {})}
                found = await session.call_tool("search_tools", arguments)
                reads["search"].append(_text_of(found))
                wanted = [
                    n for n in task["types"] if n.split(".")[0] == (server or n.split(".")[0])
                ]
                hits = {f"{h['server']}.{h['tool']}" for h in found.structured_content["hits"]}
                if not hits & set(wanted):
                    print(f"warning: {query!r} did not find any of {wanted}", file=sys.stderr)
            answer = await session.call_tool("get_types", {"tools": task["types"]})
            reads["types"].append(_text_of(answer))
            seconds = []
            for _ in range(runs):
                started = time.perf_counter()
                ran = await session.call_tool("execute", {"code": task["code"]})
                seconds.append(time.perf_counter() - started)
                if ran.is_error:
                    raise SystemExit(f"task {task['task']!r} failed:\n{_text_of(ran)}")
            reads["code"] = [task["code"]]
            reads["output"].append(_text_of(ran))
            again = await _again_with_saved_script(session, task, len(measured["tasks"]) + 1)
            measured["tasks"].append(
                {**task, "reads": reads, "again": again, "seconds": statistics.median(seconds)}
            )
    return measured


def as_saved_script(code: str, name: str) -> str:
    """A task's script as a saved script: its body in a default-exported function."""
    imports = [line for line in code.splitlines() if line.startswith("import ")]
    body = [line for line in code.splitlines() if not line.startswith("import ")]
    inner = "\n".join(f"  {line}" if line else "" for line in body)
    return "\n".join(imports) + (
        f"\n\nexport default async function {name}(_input: Record<string, never>) {{\n{inner}\n}}\n"
    )


async def _again_with_saved_script(
    session: ClientSession, task: dict[str, Any], number: int
) -> dict[str, Any]:
    """Save the task's script, then do the task again as a later session would: search for
    it in the task's words, run the saved script. What the agent reads and writes."""
    name = f"task{number}"
    saved = await session.call_tool(
        "save_script",
        {
            "name": name,
            "code": as_saved_script(task["code"], name),
            "description": task["task"],
            "force": True,
        },
    )
    if saved.is_error:
        raise SystemExit(f"saving {name} failed:\n{_text_of(saved)}")
    found = await session.call_tool("search_tools", {"query": task["task"]})
    hits = [f"{h['server']}.{h['tool']}" for h in found.structured_content["hits"]]
    rank = hits.index(f"script.{name}") + 1 if f"script.{name}" in hits else None
    call = {"name": name, "input": {}}
    ran = await session.call_tool("run_script", call)
    if ran.is_error:
        raise SystemExit(f"running {name} failed:\n{_text_of(ran)}")
    return {
        "search": _text_of(found),
        "call": json.dumps(call),
        "output": _text_of(ran),
        "rank": rank,
    }


def raw_result_bytes(task: dict[str, Any]) -> int:
    """What the task's tool results would put in context if each call came back to the model."""
    results = canned_results()
    total = 0
    for name in task["types"]:
        server, tool = name.split(".")
        total += _size(json.dumps(results[server][tool]))
    return total


def table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows, strict=True)]
    for row in [headers, *rows]:
        print("  ".join(str(cell).rjust(width) for cell, width in zip(row, widths, strict=True)))
    print()


# -- an agent's first hour ----------------------------------------------------------
GUESSED_NAMES = """import { tools } from "toolscript";
const now = await tools.time.getCurrentTime({ tz: "Asia/Tokyo" });
return now.time;
"""
EIGHT_THOUSAND = "return Array.from({ length: 8000 }, (_, i) => ({ id: i, name: `item ${i}` }));"


def _agent(directory: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", *args],
        cwd=directory,
        env=gateway_env(**env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _read(ran: Any) -> int:
    """Bytes the agent reads of a command: what it printed on both streams."""
    return len(ran.stdout.encode()) + len(ran.stderr.encode())


async def _face_answer(directory: Path, env: dict[str, str], code: str) -> str:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp"],
        cwd=str(directory),
        env=gateway_env(**env),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return _text_of(await session.call_tool("execute", {"code": code}))


def first_hour() -> None:
    """Steps and bytes of the first hour's moves (see the module's docstring)."""
    directory = Path(tempfile.mkdtemp(prefix="first-hour-"))
    data = directory / "data"
    data.mkdir()
    config = {
        "mcpServers": {
            "time": {"command": str(Path(sys.executable).parent / "mcp-server-time")},
            "memory": {"command": str(NODE / ".bin" / "mcp-server-memory")},
            "fs": {"command": str(NODE / ".bin" / "mcp-server-filesystem"), "args": [str(data)]},
        }
    }
    env = {"TOOLSCRIPT_HOME": str(directory / "home"), "TOOLSCRIPT_TRUSTED_PATHS": str(directory)}
    rows = []
    try:
        with running_gateway(directory, config, **env):
            for _ in range(600):  # search hybrid, as after the first minute
                probe = _agent(directory, env, "search", "ready", "--json").stdout
                if json.loads(probe or "{}").get("mode") == "hybrid":
                    break
                time.sleep(0.5)
            # the types of the two tools a script will chain
            both = _agent(
                directory, env, "get-types", "memory", "create_entities", "create_relations"
            )
            steps, read = 1, _read(both)
            if both.returncode != 0:  # one tool a call: two calls more
                for tool in ("create_entities", "create_relations"):
                    steps, read = (
                        steps + 1,
                        read + _read(_agent(directory, env, "get-types", "memory", tool)),
                    )
            rows.append(["types of two tools (memory)", str(steps), str(read), ""])
            # a first script guessing a parameter and a result field
            wrong = _agent(directory, env, "exec", "-", stdin=GUESSED_NAMES)
            steps, read = 1, _read(wrong)
            told = "(members:" in wrong.stderr
            if not told:  # the agent reads the types to learn the names
                steps, read = (
                    2,
                    read + _read(_agent(directory, env, "get-types", "time", "get_current_time")),
                )
            rows.append(
                [
                    "a guessed parameter and field",
                    str(steps),
                    str(read),
                    "members in the error" if told else "",
                ]
            )
            # "read a file": the first hit is the tool the agent reads the types of
            found = json.loads(
                _agent(directory, env, "search", "read a file", "-n", "5", "--json").stdout
            )
            order = [hit["tool"] for hit in found["hits"]]
            rows.append(
                [
                    "search 'read a file' (fs)",
                    "1",
                    str(
                        len(
                            _agent(
                                directory, env, "search", "read a file", "-n", "5"
                            ).stdout.encode()
                        )
                    ),
                    f"first: {order[0]}",
                ]
            )
            # a script returning 8,000 records, through the MCP face
            answer = anyio.run(_face_answer, directory, env, EIGHT_THOUSAND)
            cut = "cap" in answer.split("\n", 1)[0]
            rows.append(
                [
                    "8,000 records through the face",
                    "1",
                    str(len(answer.encode())),
                    "cut, whole as a resource" if cut else "whole",
                ]
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("An agent's first hour on the time, memory and filesystem servers")
    table(["move", "steps", "bytes read", "note"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="execute runs per task (timing)")
    parser.add_argument("--types", action="store_true", help="only bytes per tool of types")
    parser.add_argument(
        "--first-hour", action="store_true", help="only an agent's first mistakes, real servers"
    )
    options = parser.parse_args()
    if options.first_hour:
        first_hour()
        return
    directory = Path(tempfile.mkdtemp(prefix="context-budget-"))
    try:
        chosen = config(directory)
        (directory / ".toolscript.json").write_text(json.dumps(chosen))
        direct, whole = anyio.run(direct_definitions, chosen["mcpServers"])
        face = anyio.run(through_face, directory, max(1, options.runs))
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    print("Bytes per tool: each tool's JSON definition vs its declarations from get_types")
    rows, json_total, types_total, count = [], 0, 0, 0
    for name, tools in whole.items():
        json_bytes = sum(_size(tool) for tool in tools)
        types_bytes = _size(face["types"][name])
        rows.append(
            [
                name,
                str(len(tools)),
                str(json_bytes // len(tools)),
                str(types_bytes // len(tools)),
                f"{types_bytes / json_bytes:.2f}",
            ]
        )
        json_total, types_total, count = (
            json_total + json_bytes,
            types_total + types_bytes,
            count + len(tools),
        )
    rows.append(
        [
            "all",
            str(count),
            str(json_total // count),
            str(types_total // count),
            f"{types_total / json_total:.2f}",
        ]
    )
    table(["server", "tools", "JSON/tool", "types/tool", "ratio"], rows)
    if options.types:
        return

    direct_texts = [tool for tools in direct.values() for tool in tools]
    face_texts = [*face["list"], face["instructions"]]
    task_texts = [
        [text for part in ("search", "types", "output") for text in task["reads"][part]]
        for task in face["tasks"]
    ]
    counts, estimator = count_tokens(
        ["\n".join(direct_texts), "\n".join(face_texts), *("\n".join(t) for t in task_texts)]
    )
    direct_bytes = sum(_size(text) for text in direct_texts)
    face_bytes = sum(_size(text) for text in face_texts)
    print(f"Context at connection (tokens: {estimator})")
    table(
        ["client connects to", "tools", "bytes", "tokens", "share of direct", "target"],
        [
            [
                "the five servers directly",
                str(len(direct_texts)),
                str(direct_bytes),
                str(counts[0]),
                "100%",
                "",
            ],
            [
                "toolscript mcp",
                str(len(face["list"])),
                str(face_bytes),
                str(counts[1]),
                f"{face_bytes / direct_bytes:.2%}",
                f"<= {TARGET_LIST:.0%}: {'met' if face_bytes <= TARGET_LIST * direct_bytes else 'MISSED'}",
            ],
        ],
    )
    print("Reads of three tasks through toolscript mcp (searches + types + script output)")
    rows = []
    for task, texts, tokens in zip(face["tasks"], task_texts, counts[2:], strict=True):
        reads = task["reads"]
        total = sum(_size(text) for text in texts)
        rows.append(
            [
                task["task"][:44],
                str(sum(map(_size, reads["search"]))),
                str(sum(map(_size, reads["types"]))),
                str(sum(map(_size, reads["output"]))),
                str(total),
                str(tokens),
                f"{total / direct_bytes:.2%}",
                "met" if total <= TARGET_TASK * direct_bytes else "MISSED",
                str(raw_result_bytes(task)),
                f"{task['seconds']:.2f}",
            ]
        )
    table(
        [
            "task",
            "search",
            "types",
            "output",
            "bytes",
            "tokens",
            "of direct",
            "<=10%",
            "raw results",
            "exec s",
        ],
        rows,
    )
    print(
        "raw results: the bytes of the same tool results, had each call come back to the model;"
        " exec s: median seconds of execute (type check included) over --runs runs"
    )
    print()
    print("The same task a second time: written again vs the script saved the first time")
    rows = []
    for task in face["tasks"]:
        reads, again = task["reads"], task["again"]
        rewrite = sum(
            _size(text) for part in ("search", "types", "code", "output") for text in reads[part]
        )
        reuse = sum(_size(again[part]) for part in ("search", "call", "output"))
        rows.append(
            [
                task["task"][:44],
                str(rewrite),
                str(reuse),
                f"{reuse / rewrite:.2f}",
                str(again["rank"] or "not found"),
            ]
        )
    table(["task", "write again", "saved script", "ratio", "script's rank"], rows)
    print(
        "write again: searches + types + the script the agent writes + its output; saved "
        "script: one search in the task's words + the run_script call + its output"
    )


if __name__ == "__main__":
    main()
