"""``gateway start`` and ``gateway status``."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from toolscript.cli.client import (
    URL_VARIABLE,
    GatewayClient,
    config_on_disk,
    enclosing_gateways,
    enclosing_note,
    find_gateway_url,
    public_url,
    served_note,
)
from toolscript.cli.lazy import typer
from toolscript.cli.options import CacheDirOption, ConfigOption, JsonOption
from toolscript.cli.output import print_json, print_rows, tools_cell, write_shown
from toolscript.config import Config, find_config_path, load_config
from toolscript.errors import ConfigError, GatewayError, UsageError

__all__ = ["app"]

app = typer.Typer(
    help="Start the gateway, check on it, or stop it.\n\n"
    "Examples:\n\n\b\n"
    "    toolscript gateway start &           # prints its URL once every server was tried\n"
    "    toolscript gateway status            # exit 0 healthy, 3 a server not connected, 1 not running\n"
    "    toolscript gateway status --json | jq .servers\n"
    "    toolscript gateway stop              # its servers with it",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("start")
def start(
    port: Annotated[
        int,
        typer.Option(
            "--port", "-p", min=0, max=65535, help="Port to listen on; 0 picks a free one."
        ),
    ] = 0,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to bind: a loopback one (127.0.0.1, ::1, localhost); any other "
            "only with --allow-remote.",
        ),
    ] = "127.0.0.1",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Let --host be an address other machines reach. Anyone who sees the "
            "gateway's URL (plain HTTP, its token in the path) can then call every tool.",
        ),
    ] = False,
    connect_timeout: Annotated[
        float,
        typer.Option("--connect-timeout", min=0.1, help="Seconds a server may take to connect."),
    ] = 30.0,
    ready_wait: Annotated[
        float,
        typer.Option(
            "--ready-wait",
            min=0,
            help="Seconds to wait for slow servers before serving the others; "
            "a server still connecting then joins when it is ready. An exec whose script "
            "calls none of them ends the wait sooner.",
        ),
    ] = 10.0,
    max_request_mb: Annotated[
        float,
        typer.Option(
            "--max-request-mb", min=0.001, help="Largest tool-call body accepted (413 above)."
        ),
    ] = 8.0,
    config: ConfigOption = None,
    cache: CacheDirOption = None,
    search_alpha: Annotated[
        float | None,
        typer.Option(
            "--search-alpha",
            min=0,
            max=1,
            help="Semantic weight in search (0-1) [config: search.alpha, 0.5].",
            show_default=False,
        ),
    ] = None,
    search_threshold: Annotated[
        float | None,
        typer.Option(
            "--search-threshold",
            min=0,
            max=1,
            help="Minimum search score (0-1) [config: search.threshold, 0.3].",
            show_default=False,
        ),
    ] = None,
    search_model: Annotated[
        str | None,
        typer.Option(
            "--search-model",
            help="Embedding model: local path or hub name [default: packaged all-MiniLM-L6-v2].",
            show_default=False,
        ),
    ] = None,
    search_device: Annotated[
        str | None,
        typer.Option(
            "--search-device", help="torch device for embeddings [cpu].", show_default=False
        ),
    ] = None,
    search_no_cache: Annotated[
        bool, typer.Option("--search-no-cache", help="Keep embeddings in memory only.")
    ] = False,
    ephemeral: Annotated[
        bool,
        typer.Option(
            "--ephemeral", hidden=True, help="Write no state file, keyword search only (for exec)."
        ),
    ] = False,
    no_warm_checker: Annotated[
        bool,
        typer.Option(
            "--no-warm-checker",
            help="Keep no warm type checker (about 300 MB): exec checks with deno check.",
        ),
    ] = False,
    no_inferred: Annotated[
        bool,
        typer.Option(
            "--no-inferred",
            help="Keep ToolResult for tools without an outputSchema (no result types learned "
            "from real calls).",
        ),
    ] = False,
    no_search_index: Annotated[
        bool,
        typer.Option(
            "--no-search-index",
            hidden=True,
            help="Build no search index (a gateway for one script's calls: exec's).",
        ),
    ] = False,
    no_state: Annotated[
        bool,
        typer.Option(
            "--no-state", hidden=True, help="Write no state file (a gateway `toolscript mcp` owns)."
        ),
    ] = False,
    search_when_idle: Annotated[
        bool,
        typer.Option(
            "--search-when-idle",
            hidden=True,
            help="Start the search model once no run is under way, or at a first search "
            "(the gateway `toolscript mcp` owns).",
        ),
    ] = False,
    stop_with: Annotated[
        str | None,
        typer.Option(
            "--stop-with",
            hidden=True,
            help="PID:START_TIME of a process whose end stops the gateway as SIGTERM does "
            "(the Claude Code that started a session's gateway).",
        ),
    ] = None,
    needs: Annotated[
        str | None,
        typer.Option(
            "--needs",
            hidden=True,
            help="The tools namespaces one script names (exec's): their servers start now, "
            "the others at their first call.",
        ),
    ] = None,
) -> None:
    """Run the gateway until Ctrl+C or SIGTERM.

    Connects every configured server, then prints the gateway URL (token
    included) on stdout; logs go to stderr. A server slower than --ready-wait
    does not hold up the others: it joins when it connects. It listens on
    loopback only: a --host other machines reach is refused unless
    --allow-remote is given.

    Examples:

    \b
        toolscript gateway start
        toolscript gateway start --port 3000 --search-alpha 0.6
    """
    from toolscript.gateway.state import (
        abandon_start,
        already_serving,
        claim_project,
        mark_starting,
    )

    private = ephemeral or no_state  # owned by one process: other commands must not find it
    # (followed once the gateway serves: a SIGTERM before its handlers would kill it with
    # its servers left running)
    follow_owner = None if stop_with is None else _stop_with(stop_with)
    try:
        _refuse_remote(host, allow_remote)
        loaded = load_config(config, require_trust=True)
    except BaseException:
        # The entry point marked the start before reading anything (see entry.py).
        if not private:
            abandon_start()
        raise
    for name, value in (("--search-alpha", search_alpha), ("--search-threshold", search_threshold)):
        if value is not None and not 0 <= value <= 1:
            raise UsageError(f"{name} must be between 0 and 1, got {value}")
    # Commands run right after `gateway start &` wait for this gateway rather than find none:
    # the entry point marked it before its imports; this finds that mark (or makes it).
    if not private and not claim_project(loaded.cache_dir(cache)):
        raise already_serving(loaded.cache_dir(cache))  # one gateway per project
    # The servers start now: their own start overlaps the gateway's imports (the MCP SDK,
    # Litestar), so the URL waits for the slowest of them rather than for both in turn.
    from toolscript.upstream.early import discard, spawn_early

    deferred: set[str] = set()
    if needs is not None:
        from toolscript.codegen.naming import to_camel_case

        named = {name for name in needs.split(",") if name}
        deferred = {s.name for s in loaded.servers if to_camel_case(s.name) not in named}
    early = spawn_early(s for s in loaded.servers if s.name not in deferred)
    try:
        from toolscript.gateway.runner import configure_logging, serve
        from toolscript.search.engine import SearchOptions

        configure_logging()
        chosen = loaded.search
        options = SearchOptions(
            alpha=chosen.alpha if search_alpha is None else search_alpha,
            threshold=chosen.threshold if search_threshold is None else search_threshold,
            model=search_model or chosen.model,
            device=search_device or chosen.device,
            cache=chosen.cache and not search_no_cache,
            # A gateway that lives for one `exec` has no use for the model: keyword search only.
            semantic=chosen.semantic and not ephemeral,
        )
        for name, value in (
            ("--search-alpha", options.alpha),
            ("--search-threshold", options.threshold),
        ):
            if not 0 <= value <= 1:
                raise UsageError(f"{name} must be between 0 and 1, got {value}")
        stale = None if private else mark_starting(loaded.cache_dir(cache))
        try:
            serve(
                loaded,
                search=options,
                host=host,
                port=port,
                cache=loaded.cache_dir(cache),
                write_state=not private,
                connect_timeout=connect_timeout,
                ready_wait=ready_wait,
                max_request_bytes=int(max_request_mb * 1024 * 1024),
                stale=stale,
                # A gateway for one exec has no use for it: that script is checked by deno check.
                warm_checker=not (ephemeral or no_warm_checker),
                infer_results=not no_inferred,
                search_index=not no_search_index,
                early=early,
                deferred=deferred,
                search_when_idle=search_when_idle,
                when_serving=follow_owner,
            )
        finally:
            if not private:
                abandon_start(loaded.cache_dir(cache))
    finally:
        discard(early)  # what no server took (a start that failed before they connected)


def _refuse_remote(host: str, allow_remote: bool) -> None:
    """A ``--host`` other machines reach only with ``--allow-remote``, and then with a
    warning: the gateway speaks plain HTTP, and whoever reads its URL (the token is its
    path) calls every tool and runs scripts as the user."""
    if _loopback(host):
        return
    risk = (
        f"--host {host} is not a loopback address: other machines could reach the gateway, "
        "and anyone who sees its URL (plain HTTP, the token in its path) could call every "
        "tool and run scripts as you"
    )
    if not allow_remote:
        raise UsageError(
            risk,
            hint="keep the loopback default (from another machine, use an SSH tunnel: "
            "`ssh -L PORT:127.0.0.1:PORT HOST`), or pass --allow-remote to accept that risk",
        )
    print(f"toolscript: warning: {risk} (--allow-remote)", file=sys.stderr, flush=True)


def _loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``::ffff:127.0.0.1`` too), or a name whose
    every address is one (a name that does not resolve is left to the bind, which says so;
    "" is no name: the bind takes it for every address)."""
    import ipaddress
    import socket

    def loopback(text: str) -> bool:
        address = ipaddress.ip_address(text)
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        return (mapped or address).is_loopback

    if not host:
        return False
    try:
        return loopback(host.strip("[]"))
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return True
    return all(loopback(str(info[4][0]).partition("%")[0]) for info in found)


def _stop_with(identity: str) -> Callable[[], None]:
    """What stops this gateway as SIGTERM does once the process ``identity`` names has ended
    (read now: a UsageError when it names none), to start once SIGTERM does that (its
    handlers in place): a session's gateway outlives no Claude Code killed before its
    SessionEnd hook ran, even while it starts."""
    import logging
    import os
    import signal

    from toolscript.plumbing.processes import read_identity, when_gone

    named = read_identity(identity)
    if named is None or named[1] is None:
        raise UsageError(f"--stop-with takes PID:START_TIME, got {identity!r}")

    def stop() -> None:
        logging.getLogger("toolscript.gateway").info(
            "process %s (which this gateway serves) ended: stopping", named[0]
        )
        os.kill(os.getpid(), signal.SIGTERM)

    return lambda: when_gone(identity, stop)


@app.command("stop")
def stop(
    config: ConfigOption = None,
    wait: Annotated[
        float,
        typer.Option("--wait", min=0, help="Seconds to wait for it to exit, its servers stopped."),
    ] = 15.0,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Stop the gateway of every project (each `gateway start` of yours), "
            "wherever you run it: before removing toolscript.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Stop this project's gateway (the one `gateway start` runs here), its servers with it.

    Sends it SIGTERM, as Ctrl+C in its terminal does, and waits until it has exited. A
    session's gateway (the Claude Code plugin's) or an MCP client's `toolscript mcp` are
    not this one: their owners stop them. Exit 0 once it stopped or when none runs, 1 when
    it is still stopping after --wait seconds. `--all` stops every project's.

    Examples:

    \b
        toolscript gateway stop
        toolscript gateway stop --wait 60 --json
        toolscript gateway stop --all     # every project's, before uninstalling
    """
    import signal
    import time

    from toolscript.gateway.state import check_serves, read_gateway_state
    from toolscript.plumbing.processes import process_alive, signal_quietly

    if every:
        _stop_all(wait, as_json)
        return

    project = _project_config(config)[0]
    state = read_gateway_state(project.cache_dir())
    pid = state.get("pid") if state else None
    if state is None or not isinstance(pid, int) or not _is_the_gateway(state):
        text = "gateway: not running\n"
        if os.environ.get(URL_VARIABLE, "").strip():
            text = (
                "gateway: this project's own gateway is not running; the one "
                f"{URL_VARIABLE} names is not stopped by this command (a Claude Code "
                "session's stops with the session, a `toolscript mcp`'s with its client)\n"
            )
        sessions = _session_gateways_of(project)
        text += _sessions_text(sessions)
        data: dict[str, Any] = {"running": False, "stopped": False}
        if sessions:
            data["sessions"] = sessions
        _said(as_json, data, text)
        return
    check_serves(state, find_config_path(config))  # `--config other.json`: not its gateway
    signal_quietly(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_alive(pid):
        _said(
            as_json,
            {"running": True, "stopped": False, "pid": pid},
            f"gateway: still stopping after {wait:g} s (pid {pid}); its log says what it "
            f"waits for, and `kill -9 {pid}` ends it at once (servers that ignore their "
            "closed stdin may then be left)\n",
        )
        raise typer.Exit(1)
    _said(
        as_json, {"running": False, "stopped": True, "pid": pid}, f"gateway: stopped (pid {pid})\n"
    )


def _stop_all(wait: float, as_json: bool) -> None:
    """`gateway stop --all`: SIGTERM to every project's gateway of this user, then wait for
    them all; exit 1 when one is still stopping after ``wait`` seconds."""
    import signal
    import time

    from toolscript.gateway.state import all_gateway_states, session_gateways
    from toolscript.plumbing.processes import process_alive, signal_quietly

    running = [state for state in all_gateway_states() if _is_the_gateway(state)]
    for state in running:
        signal_quietly(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + wait
    while any(process_alive(s["pid"]) for s in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    gateways = [
        {"pid": s["pid"], "config": s.get("config"), "stopped": not process_alive(s["pid"])}
        for s in running
    ]
    sessions = [pid for pid, _ in session_gateways()]
    if as_json:
        print_json({"gateways": gateways, "sessions": sessions})
    else:
        for gateway in gateways:
            write_shown(
                f"gateway: stopped (pid {gateway['pid']}) for {gateway['config']}\n"
                if gateway["stopped"]
                else f"gateway: still stopping after {wait:g} s (pid {gateway['pid']}) for "
                f"{gateway['config']}; `kill -9 {gateway['pid']}` ends it at once\n",
                sys.stdout if gateway["stopped"] else sys.stderr,
            )
        if not gateways:
            sys.stderr.write("gateway: none running\n")
        if sessions:
            sys.stderr.write(
                f"note: Claude Code sessions' gateways still run (pid {', '.join(map(str, sessions))}): "
                "each stops with its session\n"
            )
    if not all(gateway["stopped"] for gateway in gateways):
        raise typer.Exit(1)


def _project_config(config: str | None) -> tuple[Config, ConfigError | None]:
    """The project's config, or, when it cannot be loaded, the project's folder alone and why:
    a running gateway serves its last good configuration (and reports the error itself), so
    it is found, checked on and stopped all the same."""
    try:
        return load_config(config), None
    except ConfigError as exc:
        return Config(path=None, project_dir=find_config_path(config).parent), exc


def _is_the_gateway(state: dict[str, Any]) -> bool:
    """Whether the process the state file names is that gateway, not another program given
    its number since: it answers at the file's URL with that pid, or (still starting, with
    no URL yet) started when the file says."""
    from toolscript.plumbing.processes import started_by

    pid, url = state["pid"], state.get("url")
    if url and not state.get("starting"):
        try:
            with GatewayClient(str(url).rstrip("/"), timeout=5) as client:
                health: dict[str, Any] = client.get_json("/health")
        except GatewayError:
            pass
        else:
            return bool((health.get("processes") or {}).get("gateway", {}).get("pid") == pid)
    started = state.get("started")
    return isinstance(started, int | float) and started_by(pid, float(started))


def _said(as_json: bool, data: dict[str, Any], text: str) -> None:
    """``data`` with --json, else ``text``: on stdout once stopped, on stderr otherwise."""
    if as_json:
        print_json(data)
    else:
        (sys.stdout if data.get("stopped") else sys.stderr).write(text)


@app.command("status")
def status(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Say whether the gateway runs, where, and how each server is.

    Finds the gateway from TOOLSCRIPT_GATEWAY_URL, else from the state file
    of this project's gateway. Exit 0 when every server is connected, 3 when
    the gateway runs but a server is not connected or it does not serve the
    config file as it is now (an edit not trusted yet, or one that does not
    load: `config_on_disk` in --json says `untrusted` or `invalid`), 1 when no
    gateway runs.

    Examples:

    \b
        toolscript gateway status
        toolscript gateway status --json | jq '.servers'
    """
    loaded, config_problem = _project_config(config)
    on_disk, untrusted = config_on_disk(loaded, read=config_problem is None)
    url: str | None = None
    try:
        url = find_gateway_url(loaded)  # a gateway still starting is waited for
        with GatewayClient(url, timeout=5) as client:
            health: dict[str, Any] = client.get_json("/health", exact=as_json)
    except GatewayError as exc:
        if config_problem is not None:
            raise config_problem from None
        sessions = _session_gateways_of(loaded)
        enclosing = enclosing_gateways(loaded)
        if as_json:
            print_json(
                {
                    "running": False,
                    "url": public_url(url) if url else None,
                    "error": exc.message,
                    "config": {"path": str(loaded.path) if loaded.path else None},
                    "config_on_disk": on_disk,
                    "sessions": sessions,
                    "enclosing": [str(path) for path in enclosing],
                }
            )
        else:
            own = "this project's own gateway is not running" if sessions else "not running"
            sys.stderr.write(f"gateway: {own} ({exc.message})\n")
            sys.stderr.write(f"config: {loaded.path or 'none (zero servers)'}\n")
            sys.stderr.write(_sessions_text(sessions))
            sys.stderr.write(enclosing_note(enclosing))
            hint = exc.hint
            if hint and "`toolscript gateway status`" in hint:  # this very command: no help
                hint = "start one with `toolscript gateway start`"
                if os.environ.get(URL_VARIABLE, "").strip():
                    hint = f"unset {URL_VARIABLE} to find this project's own gateway, or {hint}"
            if hint:
                sys.stderr.write(f"hint: {hint}\n")
        raise typer.Exit(1) from None
    healthy = health.get("status") == "ok"
    # The agent's URL, never the gateway's own token (which answers approvals): an agent's
    # `env -u TOOLSCRIPT_GATEWAY_URL toolscript gateway status`, asked nothing by the hook,
    # printed the token of the person's own gateway. The agent's URL runs scripts and reads
    # all status does; exec and approve on a terminal find the gateway's token themselves.
    from toolscript.gateway.guard import agent_url, is_agent_url

    url = url if url is None or is_agent_url(url) else agent_url(url)
    # the sessions' own gateways of the project beside this one: their agents use those
    shown_pid = ((health.get("processes") or {}).get("gateway") or {}).get("pid")
    sessions = [found for found in _session_gateways_of(loaded) if found["pid"] != shown_pid]
    if as_json:
        print_json(
            {"running": True, "url": url, **health, "installed": _installed()}
            | {"config_on_disk": on_disk}
            | ({"sessions": sessions} if sessions else {})
        )
    else:
        sys.stdout.write(f"gateway: running at {url} ({health.get('status')})\n")
        sys.stdout.write(_process_line(shown_pid, health.get("uptime")))
        served = (health.get("config") or {}).get("path")
        served = loaded.path if served in (None, "", "None") else served
        project = Path(served).parent if served else loaded.project_dir
        sys.stdout.write(f"project: {project}\n")
        sys.stdout.write(f"config: {served or 'none (zero servers)'}\n")
        search = health.get("search", {})
        sys.stdout.write(
            f"tools: {health.get('tools', 0)}{_last_known_total(health)}; "
            f"search: {search.get('mode', 'none')}"
            + ("" if search.get("ready") else f" ({search.get('reason', 'not ready')})")
            + _checker_line(health.get("checker") or {})
            + "\n"
        )
        rows = []
        for server in health.get("servers", {}).values():
            detail = server.get("error") or ""
            unsaid = [line for line in server.get("stderr", [])[-3:] if line not in detail]
            if unsaid:  # its last words, but for those its error quotes already
                detail += " | stderr: " + " / ".join(unsaid)
            cell = tools_cell(server["tools"], server.get("last_known_tools"))
            rows.append([server["name"], server["state"], cell, detail])
        if rows:
            print_rows(["server", "state", "tools", "error"], rows, names=("server",))
        for problem in (health.get("config") or {}).get("left_out") or []:
            write_shown(f"warning: {problem}\n")  # a tool file's name: said, and only it out
        for warning in health.get("warnings", []):  # a server's words: shown, never obeyed
            write_shown(f"warning: {warning}\n")
        for warning in (health.get("types") or {}).get("warnings", []):
            # two names one identifier: a script calls one of them by another name
            write_shown(f"warning: naming: {warning}\n")
        _print_scripts(health.get("scripts") or {})
        memory = _memory_line(health.get("processes") or {})
        if memory:
            sys.stdout.write(memory + "\n")
        older = _older_code(health)
        if older:
            sys.stdout.write(f"warning: {older}\n")
        config_error = (health.get("config") or {}).get("error")
        if untrusted:  # as list-servers and list-tools say it
            write_shown(served_note(untrusted), sys.stderr)
        elif config_error:
            write_shown(f"config: error, the previous configuration still serves: {config_error}\n")
        sys.stdout.write(_sessions_text(sessions))
    raise typer.Exit(0 if healthy else 3)


@functools.cache
def _installed() -> dict[str, str]:
    """The toolscript installed now: its version and code (as a gateway's /health says its own)."""
    from toolscript import __version__
    from toolscript.plumbing.build import installed_build

    return {"version": __version__, "build": installed_build()}


def _older_code(health: dict[str, Any]) -> str | None:
    """What to say when the gateway runs other code than the toolscript installed now (it
    was started before an upgrade, or by another installation); None when it runs this."""
    running = health.get("toolscript")
    installed = _installed()
    if isinstance(running, dict) and all(running.get(k) == v for k, v in installed.items()):
        return None
    if isinstance(running, dict):
        was = f"toolscript {running.get('version')} (code {running.get('build')})"
    else:
        was = "an older toolscript (one that does not report its version)"
    return (
        f"this gateway runs {was}, not the one installed now, toolscript "
        f"{installed['version']} (code {installed['build']}): restart it to run the new one "
        "(`toolscript gateway stop`, then `toolscript gateway start &`; a Claude Code "
        "session's gateway restarts with its session)"
    )


def _session_gateways_of(config: Config) -> list[dict[str, Any]]:
    """The Claude Code sessions' own gateways (the plugin's, private: no state file names
    them) that serve this project's config: how each is, its URL without its token."""
    from toolscript.gateway.state import session_gateways

    wanted = config.config_file  # as the gateway names it
    found = []
    for pid, url in session_gateways():
        try:
            with GatewayClient(url, timeout=3) as client:
                health: dict[str, Any] = client.get_json("/health")
        except GatewayError:
            continue
        served = (health.get("config") or {}).get("path")
        if not served or Path(served) != wanted:
            continue
        servers = list((health.get("servers") or {}).values())
        found.append(
            {
                "pid": pid,
                "url": public_url(url),
                "status": health.get("status"),
                "servers": len(servers),
                "connected": sum(1 for server in servers if server.get("state") == "connected"),
                "tools": health.get("tools", 0),
                "older_code": _older_code(health) is not None,
            }
        )
    return found


def _sessions_text(sessions: list[dict[str, Any]]) -> str:
    """What ``gateway status`` and ``stop`` say of the sessions' gateways of the project."""
    if not sessions:
        return ""
    lines = [
        f"Claude Code sessions: {len(sessions)} run a gateway of their own for this project "
        "(each session's agent uses its own; it stops with its session):\n"
    ]
    for session in sessions:
        lines.append(
            f"  pid {session['pid']} at {session['url']}: {session['status']}, "
            f"{session['connected']}/{session['servers']} servers connected, "
            f"{session['tools']} tools"
            + (
                " (it runs the toolscript installed before; restart the session for the new one)"
                if session["older_code"]
                else ""
            )
            + "\n"
        )
    return "".join(lines)


def _print_scripts(scripts: dict[str, Any]) -> None:
    """Saved scripts, and every error of those that no longer type-check."""
    saved, broken = scripts.get("saved", 0), scripts.get("broken") or {}
    if not saved:
        return
    sys.stdout.write(
        f"saved scripts: {saved}"
        + (f", {len(broken)} broken (left out of the module; kept on disk)" if broken else "")
        + "\n"
    )
    for name, errors in broken.items():
        sys.stdout.write(f"  {name}:\n" + "".join(f"    {error}\n" for error in errors))
    for warning in scripts.get("warnings") or []:
        sys.stdout.write(f"warning: {warning}\n")


def _process_line(pid: Any, uptime: Any) -> str:
    """The gateway's process and how long it has run, in one line (an older gateway may
    report neither)."""
    parts = [f"pid {pid}"] if isinstance(pid, int) else []
    if isinstance(uptime, int | float):
        minutes, seconds = divmod(int(uptime), 60)
        hours, minutes = divmod(minutes, 60)
        if hours:
            parts.append(f"up {hours} h {minutes} min")
        elif minutes:
            parts.append(f"up {minutes} min {seconds} s")
        else:
            parts.append(f"up {seconds} s")
    return f"process: {', '.join(parts)}\n" if parts else ""


def _memory_line(processes: dict[str, Any]) -> str:
    """toolscript's own processes' memory in one line (an older gateway reports none)."""
    if not processes:
        return ""

    def mb(memory: dict[str, Any] | None) -> str:
        return f"{memory['rss'] / 1e6:.0f} MB" if memory else "-"

    parts = [f"gateway {mb(processes.get('gateway'))}"]
    for worker in processes.get("search") or []:
        kind = "search model" if worker.get("role") == "model" else "search queries"
        parts.append(f"{kind} {mb(worker)}")
    if processes.get("checker"):
        parts.append(f"checker {mb(processes['checker'])}")
    return f"memory: {processes.get('total', 0) / 1e6:.0f} MB ({', '.join(parts)})"


def _checker_line(checker: dict[str, Any]) -> str:
    """The warm type checker in a few words (an older gateway has none to report)."""
    state = checker.get("state")
    if state is None:
        return ""
    if state == "failed":
        return f"; type checks: deno check ({checker.get('error') or 'the warm checker failed'})"
    wording = {"ready": "warm", "starting": "warming up", "off": "deno check"}
    return f"; type checks: {wording.get(state, state)}"


hook_app = typer.Typer(
    help="Claude Code hooks (used by the plugin).", no_args_is_help=True, rich_markup_mode=None
)


@hook_app.command("session-start")
def hook_session_start() -> None:
    """SessionStart: start this session's gateway and export TOOLSCRIPT_GATEWAY_URL."""
    from toolscript.cli.hooks import session_start

    raise typer.Exit(session_start())


@hook_app.command("session-end")
def hook_session_end() -> None:
    """SessionEnd: stop this session's gateway, leaving no process behind."""
    from toolscript.cli.hooks import session_end

    raise typer.Exit(session_end())


@hook_app.command("pre-tool-use")
def hook_pre_tool_use() -> None:
    """PreToolUse: have Claude Code ask the user before a command approves toolscript calls."""
    from toolscript.cli.hooks import pre_tool_use

    raise typer.Exit(pre_tool_use())


def _last_known_total(health: dict[str, Any]) -> str:
    """The tools of servers not connected that their last listing had (what list-tools,
    search and get-types still serve of them), said beside the live count."""
    kept = sum(
        int(server.get("last_known_tools") or 0)
        for server in (health.get("servers") or {}).values()
    )
    return f" (and {kept} last known of servers not connected)" if kept else ""
