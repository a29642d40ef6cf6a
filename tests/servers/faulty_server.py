"""An MCP server over stdio (stdlib only) that misbehaves on purpose, the way servers in the wild do.

    python faulty_server.py [--tools FILE] [--hang-initialize] [--garbage] [--storm]
                            [--stubborn] [--exit-after S1,S2,...] [--log FILE]

Tools: ``echo(text)``, ``pid()``, ``crash()`` (writes to stderr and exits in the middle of
the call), ``hang()`` (never answers), ``big(megabytes)`` (one text block that large),
``calls()`` (how many calls this process answered and how many hang, as JSON). ``--tools FILE`` serves that JSON
list of tools as it is instead (calls answer with the tool's name). ``--hang-initialize``
never answers ``initialize``; ``--garbage`` writes lines that are not JSON-RPC to stdout
around every reply; ``--storm`` sends ``notifications/tools/list_changed`` ten times a
second once initialized; ``--stubborn`` ignores SIGTERM and stays when its stdin closes
(only SIGKILL stops it); ``--exit-after S1,S2,...`` exits (code 1) that long after it
listed its tools, as a server crashing on a timer (its Nth start the Nth delay, counted in
``--log``'s file; the last delay for every later start); ``--log FILE`` appends the method of each request it receives,
and ``notified`` for each notification it sends, one a line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

OWN_TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exit in the middle of the call.", "inputSchema": {}},
    {"name": "hang", "description": "Never answer.", "inputSchema": {"type": "object"}},
    {
        "name": "big",
        "description": "Answer with one text block of this many megabytes.",
        "inputSchema": {"type": "object", "properties": {"megabytes": {"type": "number"}}},
    },
    {
        "name": "calls",
        "description": "Calls answered so far, and calls hanging now.",
        "inputSchema": {"type": "object"},
    },
]

_write_lock = threading.Lock()
_answered = 0
_hanging = 0
_log_file: str | None = None


def crash_delay(delays: str) -> float:
    """This process's delay of ``--exit-after A,B,...``: the Nth listed in the log's Nth
    start (the last for every later one)."""
    listed = 0
    if _log_file is not None and os.path.exists(_log_file):
        with open(_log_file, encoding="utf-8") as handle:
            listed = handle.read().split().count("listed")
    each = [float(delay) for delay in delays.split(",")]
    return each[min(listed, len(each) - 1)]


def note(line: str) -> None:
    if _log_file is not None:
        with _write_lock, open(_log_file, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def send(message: dict[str, Any], garbage: bool = False) -> None:
    data = json.dumps(message)
    with _write_lock:
        out = sys.stdout
        if garbage:
            out.write("starting up... this is not JSON\n")
        out.write(data + "\n")
        if garbage:
            out.write("{not json either\n")
        out.flush()


def call(name: str, arguments: dict[str, Any], served_file: bool) -> dict[str, Any]:
    global _answered, _hanging
    if served_file:
        return {"content": [{"type": "text", "text": name}]}
    if name == "echo":
        text = str(arguments.get("text", ""))
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    elif name == "pid":
        result = {"content": [{"type": "text", "text": str(os.getpid())}]}
    elif name == "crash":
        sys.stderr.write("faulty: about to crash\nfaulty: fatal error: the disk is on fire\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "hang":
        _hanging += 1
        while True:
            time.sleep(3600)
    elif name == "big":
        size = int(float(arguments.get("megabytes", 1)) * 1024 * 1024)
        result = {"content": [{"type": "text", "text": "x" * size}]}
    elif name == "calls":
        counts = {"answered": _answered, "hanging": _hanging}
        result = {"content": [{"type": "text", "text": json.dumps(counts)}]}
    else:
        raise KeyError(name)
    _answered += 1
    return result


def storm() -> None:
    while True:
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        note("notified")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools")
    parser.add_argument("--hang-initialize", action="store_true")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--storm", action="store_true")
    parser.add_argument("--stubborn", action="store_true")
    parser.add_argument("--log")
    parser.add_argument("--exit-after")
    options = parser.parse_args()
    global _log_file
    _log_file = options.log
    if options.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tools: Any = OWN_TOOLS
    if options.tools:
        with open(options.tools, encoding="utf-8") as handle:
            tools = json.load(handle)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if method == "notifications/initialized" and options.storm:
            threading.Thread(target=storm, daemon=True).start()
        if "id" not in message:
            continue
        note(str(method))
        if method == "initialize":
            if options.hang_initialize:
                continue
            result: Any = {
                "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "faulty", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
            if options.exit_after is not None:  # connected: a crash that many seconds later
                threading.Timer(crash_delay(options.exit_after), os._exit, (1,)).start()
                note("listed")
        elif method == "ping":
            result = {}
        elif method == "tools/call":
            params = message.get("params") or {}

            def answer(request_id: Any = message["id"], params: dict[str, Any] = params) -> None:
                try:
                    reply = call(
                        params.get("name", ""), params.get("arguments") or {}, bool(options.tools)
                    )
                except KeyError:
                    send(
                        {
                            "jsonrpc": "2.0",
                            "id": request_id,
                            "error": {"code": -32602, "message": "unknown tool"},
                        }
                    )
                    return
                send({"jsonrpc": "2.0", "id": request_id, "result": reply}, options.garbage)

            threading.Thread(target=answer, daemon=True).start()
            continue
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "not here"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": message["id"], "result": result}, options.garbage)
    while options.stubborn:  # stdin closed: stay anyway
        time.sleep(3600)


if __name__ == "__main__":
    main()
