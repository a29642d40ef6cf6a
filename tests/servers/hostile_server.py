"""An MCP server over stdio (stdlib only) that sends whatever a JSON file tells it to, for
attacks with what a server says (names, descriptions, schemas, results, errors, prompts,
resources, its stderr).

    python hostile_server.py SPEC.json

SPEC holds any of: ``tools`` (the tools/list answer's list, as it is), ``results`` (a tool's
name -> its tools/call result), ``errors`` (a tool's name -> the JSON-RPC error its call
answers), ``prompts`` and ``prompt_results`` (name -> prompts/get result), ``resources``,
``templates`` and ``contents`` (URI -> the contents list resources/read answers),
``init_error`` (the JSON-RPC error initialize answers), ``instructions``, ``server_name``,
``stderr`` (written once, at start), ``exit`` (a status to exit with right after that
stderr), ``flood`` (a tool's name -> how many MB its call writes as one line with no end:
the server goes on answering nothing after it), ``stderr_flood`` (a tool's name -> how many MB
its call writes to stderr before it answers; a tool ``stderr_size`` answers how many bytes the
file its stderr goes to holds), ``raw`` (a tool's name -> the text of its
call's ``result`` as it is sent, a list of strings joined: JSON no encoder here would write,
nested past any parser's depth; ``raw_tools`` likewise the tools/list answer's list), ``endless`` (listing methods, such as ``tools/list``, whose every page names
a next one) and ``storm`` (a file: each tools/list answers one new tool, its time appended to
the file, and is followed by ``notifications/tools/list_changed`` 100 times over, as is
``initialized``), ``notices`` (a count: that many ``notifications/progress`` of no request,
at once after ``initialized``), ``shifts`` (a tool's name -> the spec keys its call sets, such
as a new ``tools``, followed by one ``notifications/tools/list_changed``) and ``bare_initialize``
(true: initialize answers with no ``capabilities`` and a ``serverInfo`` without
``version``, yet the server answers prompts and resources and sends
``notifications/prompts/list_changed`` after a shift), ``refuse`` (methods answered with
JSON-RPC's method not found, as a server without them does). A tool with no result answers
with its own name.

Sizes no spec file should hold are made at start: anywhere in SPEC, ``{"$repeat": TEXT,
"$times": N}`` is TEXT N times over, ``{"$many": VALUE, "$times": N}`` an object of N
members (``p0``, ``p1``, ...) each VALUE, and ``{"$nest": VALUE, "$times": N}`` VALUE as the
one property of N nested object schemas.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def expand(value: Any) -> Any:
    """``value`` with its ``$repeat``, ``$many`` and ``$nest`` placeholders made."""
    if isinstance(value, list):
        return [expand(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "$repeat" in value:
        return str(value["$repeat"]) * int(value["$times"])
    if "$many" in value:
        member = expand(value["$many"])
        return {f"p{i}": member for i in range(int(value["$times"]))}
    if "$nest" in value:
        nested = expand(value["$nest"])
        for _ in range(int(value["$times"])):
            nested = {"type": "object", "properties": {"a": nested}}
        return nested
    return {key: expand(item) for key, item in value.items()}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(spec: dict[str, Any], method: str, params: dict[str, Any]) -> Any:
    result = _answer(spec, method, params)
    if method in spec.get("endless", []):  # one more page, always
        result["nextCursor"] = str(int(params.get("cursor") or 0) + 1)
    return result


def _answer(spec: dict[str, Any], method: str, params: dict[str, Any]) -> Any:
    if method in spec.get("refuse", []):
        raise LookupError({"code": -32601, "message": f"Method not found: {method}"})
    if method == "initialize":
        if "init_error" in spec:
            raise LookupError(spec["init_error"])
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": spec.get("server_name", "hostile"), "version": "1"},
        }
        if "instructions" in spec:
            result["instructions"] = spec["instructions"]
        if spec.get("bare_initialize"):
            del result["capabilities"]
            del result["serverInfo"]["version"]
        return result
    if method == "ping":
        return {}
    if method == "tools/list" and "storm" in spec:
        with open(spec["storm"], "a", encoding="utf-8") as listed:
            listed.write(f"{time.time()}\n")
        return {"tools": [{"name": f"t{time.monotonic_ns()}", "inputSchema": {"type": "object"}}]}
    if method == "tools/list":
        return {"tools": spec.get("tools", [])}
    if method == "tools/call":
        name = params.get("name", "")
        if name in spec.get("errors", {}):
            raise LookupError(spec["errors"][name])
        return spec.get("results", {}).get(name, {"content": [{"type": "text", "text": name}]})
    if method == "prompts/list":
        return {"prompts": spec.get("prompts", [])}
    if method == "prompts/get":
        return spec.get("prompt_results", {}).get(params.get("name", ""), {"messages": []})
    if method == "resources/list":
        return {"resources": spec.get("resources", [])}
    if method == "resources/templates/list":
        return {"resourceTemplates": spec.get("templates", [])}
    if method == "resources/read":
        return {"contents": spec.get("contents", {}).get(params.get("uri", ""), [])}
    raise LookupError({"code": -32601, "message": "not here"})


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec: dict[str, Any] = expand(json.load(handle))
    if "stderr" in spec:
        sys.stderr.write(spec["stderr"])
        sys.stderr.flush()
    if "exit" in spec:
        sys.exit(int(spec["exit"]))
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        storm = "storm" in spec and message.get("method") in (
            "notifications/initialized",
            "tools/list",
        )
        if "id" not in message:
            if storm:
                _storm()
            if message.get("method") == "notifications/initialized":
                for _ in range(int(spec.get("notices", 0))):
                    notice = {"progressToken": "nobody's", "progress": 1}
                    send({"jsonrpc": "2.0", "method": "notifications/progress", "params": notice})
            continue
        flooded = spec.get("flood", {}).get((message.get("params") or {}).get("name"))
        if message.get("method") == "tools/call" and flooded:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"]})[:-1])
            sys.stdout.write(', "result": "')
            block = "x" * (1024 * 1024)
            for _ in range(int(flooded)):
                sys.stdout.write(block)
            sys.stdout.flush()
            sys.stdin.read()  # (never a newline: the line has no end)
            return
        if message.get("method") == "tools/call":
            name = (message.get("params") or {}).get("name")
            for _ in range(int(spec.get("stderr_flood", {}).get(name, 0))):
                sys.stderr.write(("a server's log line\n" * 52429)[: 1024 * 1024])
            sys.stderr.flush()
            if name == "stderr_size":
                size = {"content": [{"type": "text", "text": str(os.fstat(2).st_size)}]}
                send({"jsonrpc": "2.0", "id": message["id"], "result": size})
                continue
        if message.get("method") == "tools/list" and "raw_tools" in spec:
            head = json.dumps({"jsonrpc": "2.0", "id": message["id"]})[:-1]
            sys.stdout.write(head + ', "result": {"tools": ' + "".join(spec["raw_tools"]) + "}}\n")
            sys.stdout.flush()
            continue
        raw = spec.get("raw", {}).get((message.get("params") or {}).get("name"))
        if message.get("method") == "tools/call" and raw is not None:
            head = json.dumps({"jsonrpc": "2.0", "id": message["id"]})[:-1]
            sys.stdout.write(head + ', "result": ' + "".join(raw) + "}\n")
            sys.stdout.flush()
            continue
        try:
            result = answer(spec, str(message.get("method")), message.get("params") or {})
        except LookupError as exc:
            send({"jsonrpc": "2.0", "id": message["id"], "error": exc.args[0]})
            continue
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        if storm:
            _storm()
        shifted = spec.get("shifts", {}).get((message.get("params") or {}).get("name"))
        if message.get("method") == "tools/call" and shifted is not None:
            spec.update(shifted)
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            if spec.get("bare_initialize"):
                send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})


def _storm() -> None:
    for _ in range(100):
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


if __name__ == "__main__":
    main()
