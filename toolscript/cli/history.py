"""``runs`` and ``approve``: the project's log of runs, and approving what a run stopped at."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from toolscript.cli.lazy import typer
from toolscript.cli.options import ConfigOption, HeaderOption, JsonOption
from toolscript.cli.output import print_json, print_rows, write_shown
from toolscript.errors import (
    NotFoundError,
    ServerUnavailableError,
    ToolNotFoundError,
    UsageError,
    tool_named,
)

__all__ = ["app", "approve_command"]

app = typer.Typer(
    help="The log of runs: every script run, its tool calls and how it ended.\n\n"
    "Examples:\n\n\b\n"
    "    toolscript runs                      # the last 20 runs (-n, --json, --header)\n"
    "    toolscript runs show 20261124-1015   # one run and its calls (a unique start of its id)\n"
    "    toolscript runs wait RUN_ID          # a background run's output and result\n"
    "    toolscript runs stop RUN_ID",
    invoke_without_command=True,
    no_args_is_help=False,
)


def _runlog(config: str | None) -> Any:
    from toolscript.config import load_config
    from toolscript.plumbing.paths import project_state_dir
    from toolscript.store.runlog import RunLog, runlog_path

    loaded = load_config(config)
    return RunLog(
        runlog_path(project_state_dir(loaded.project_dir)),
        keep=loaded.runs.keep,
        max_bytes=int(loaded.runs.max_megabytes * 1024 * 1024),
        project=loaded.project_dir,
    )


def _kept_output(state_dir: Path, run_id: str) -> Path | None:
    """The file keeping the whole output of ``run_id`` (cut at --max-output), if it is still
    kept (``store/outputs.py`` drops the oldest)."""
    from toolscript.store.outputs import output_file

    kept = output_file(state_dir, run_id)
    return kept if kept.is_file() else None


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "-"


def _iso(stamp: float | None) -> str | None:
    """A time as JSON shows it: ISO 8601 in local time with its offset."""
    if not stamp:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(stamp).astimezone().isoformat(timespec="milliseconds")


def _run_json(run: dict[str, Any]) -> dict[str, Any]:
    """A run as ``--json`` prints it: times in ISO 8601, the script by its display name."""
    shown = dict(run)
    shown.pop("script", None)
    for key in ("started", "ended"):
        shown[key] = _iso(shown.get(key))
    names = shown.get("script_name")
    shown["script_name"] = names[0] if isinstance(names, list) and names else names
    if "calls_made" in shown:
        shown["calls_made"] = [
            {**call, "started": _iso(call.get("started"))} for call in shown["calls_made"]
        ]
    return shown


def _origin(run: dict[str, Any]) -> str:
    """Who started ``run``, on one line: a run registered through the agent's URL says so
    whatever origin it gave (the agent names its own, ``cli`` as a person's exec does)."""
    origin = " ".join(str(run["origin"]).splitlines())
    return f"agent: {origin}" if run.get("by_agent") else origin


def _duration(run: dict[str, Any]) -> str:
    if not run.get("ended"):
        return "-"
    return f"{run['ended'] - run['started']:.1f} s"


@app.callback()
def list_runs(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many runs.")] = 20,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """List the project's recent runs, newest first (`runs show RUN_ID` for one; `runs
    wait RUN_ID` and `runs stop RUN_ID` for a background run).

    Every script run (exec, the plugin, the MCP face) is logged with its tool
    calls, arguments redacted. How many runs are kept: "runs" in the config.

    Examples:

    \b
        toolscript runs
        toolscript runs --json -n 5
        toolscript runs --header | cut -f1,6
        toolscript runs show 20261124-101500-3f9a1c
    """
    if ctx.invoked_subcommand is not None:
        return
    runlog = _runlog(config)
    runs = runlog.recent(limit)
    if as_json:
        project = runlog.project()
        print_json([_run_json(run) | {"project": project} for run in runs])
    if not runs:
        if not as_json:
            write_shown(f"no runs yet in {runlog.project()}: `toolscript exec` logs each one\n")
        _gone_note(runlog)
        return
    if as_json:
        return
    print_rows(
        ["run", "started", "took", "origin", "calls", "status", "exit"],
        [
            [
                run["id"],
                _when(run["started"]),
                _duration(run),
                _origin(run),
                str(run["calls"]),
                run["status"],
                "-" if run["exit"] is None else str(run["exit"]),
            ]
            for run in runs
        ],
        header=header,
        whole=("run", "status"),  # (a state cut to "awaiti…" says nothing)
    )
    # the log lives under the user's state, not in the project: say whose runs these are
    write_shown(f"project: {runlog.project()}\n", sys.stderr)


def _gone_note(runlog: Any) -> None:
    """Where runs of project folders that are gone stayed (a project moved or renamed: its
    log is kept by its folder's path), and how this project keeps them."""
    from toolscript.store.runlog import gone_projects_runs

    here = runlog.path.parent
    gone = gone_projects_runs(here.parent)
    if not gone:
        return
    lines = [
        f"  {one.project}: {one.runs} run{'s' if one.runs != 1 else ''}, the last "
        f"{_when(one.last)}, kept in {one.log.parent}\n"
        for one in gone
    ]
    write_shown(
        "note: runs of project folders that are gone (moved, renamed or deleted) are kept "
        "by their old path:\n"
        + "".join(lines)
        + "to keep them with this project (no gateway running for it): "
        f"`mv {shlex.quote(str(gone[0].log.parent)) if len(gone) == 1 else 'OLD'}/* "
        f"{shlex.quote(str(here))}/`\n",
        sys.stderr,
    )


@app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(help="The run's id (a unique start of it will do).")],
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one run with its tool calls.

    Examples:

    \b
        toolscript runs show 20261124-101500-3f9a1c
        toolscript runs show 20261124-1015 --json
    """
    log = _runlog(config)
    run = log.run(run_id)
    if run is None:
        raise NotFoundError(f"no run {run_id!r} in this project's log", hint="`toolscript runs`")
    kept = _kept_output(log.path.parent, run["id"])
    if as_json:
        print_json(
            _run_json(run) | {"project": log.project(), "output_file": str(kept) if kept else None}
        )
        return
    lines = [
        f"run       {run['id']}",
        f"project   {log.project()}",
        f"origin    {_origin(run)}",
        f"started   {_when(run['started'])}",
        f"took      {_duration(run)}",
        f"status    {run['status']}" + ("" if run["exit"] is None else f" (exit {run['exit']})"),
    ]
    if run.get("resumed_from"):
        lines.append(f"resumed   {run['resumed_from']}")
    if kept is not None:
        lines.append(f"output    cut; the whole of it is kept in {kept}")
    stopped = run.get("stopped")
    if stopped:
        message = str(stopped.get("message") or "at a call waiting for an answer at its prompt")
        call = stopped.get("call")
        if isinstance(call, dict):  # its arguments are shown below, whole
            message = message.split(" Arguments: ", 1)[0]
        lines.append(f"stopped   {message}")
        if stopped.get("hint"):
            lines.append(f"          {stopped['hint']}")
        if isinstance(call, dict):
            lines.extend(_stopped_call(call))
    write_shown("\n".join(lines) + "\n")  # a stopped call's message names its tool
    calls = run["calls_made"]
    if not calls:
        sys.stdout.write("no tool calls\n")
        return
    print_rows(
        ["#", "tool", "arguments", "outcome", "ms", "in", "out"],
        [
            [
                str(call["seq"]),
                tool_named(call["tool"]),
                _short(call["arguments"]),
                call["outcome"] + (f": {call['error'][:80]}" if call.get("error") else ""),
                f"{call['ms']:.1f}",
                str(call["arguments_bytes"]),
                str(call["result_bytes"]),
            ]
            for call in calls
        ],
        names=("tool",),
    )


def _whole_id(config: str | None, run_id: str) -> str:
    """The run a unique start of its id names in the project's log, as `runs show` takes
    one; as given when the log has none yet (a run just registered: the gateway writes the
    log in batches), for the gateway to find among its own runs."""
    found = _runlog(config).run(run_id)
    return str(found["id"]) if found else run_id


def _gateway_of(config: str | None, run_id: str, background_gateway: Any) -> str:
    """The URL of the project's running gateway, for a run of it; a run under way in a
    gateway no other command reaches (an MCP face's own, exec's own) is said to be so:
    `runs wait` and `runs stop` said it was not under way, where the face was running it."""
    from toolscript.errors import UsageError

    try:
        return str(background_gateway(config, None, run_id))
    except UsageError:
        from toolscript.plumbing.processes import identity_alive, read_identity

        run = _runlog(config).run(run_id)
        owner = str((run or {}).get("owner") or "")
        if run is None or run.get("ended") or not identity_alive(owner):
            raise
        named = read_identity(owner)
        pid = f", pid {named[0]}" if named else ""
        if run.get("origin") == "mcp":
            where = f"an MCP face's own gateway (`toolscript mcp`{pid})"
            hint = (
                "its MCP client waits for it (wait_run) or cancels it; a face uses the "
                "project's running gateway when one runs (`toolscript gateway start &` before "
                "the client starts the face), and there `runs wait` and `runs stop` reach its runs"
            )
        else:
            where = f"a gateway of one command's own (`toolscript exec`{pid})"
            hint = "Ctrl-C in its terminal stops it; `toolscript runs show` shows it meanwhile"
        raise UsageError(
            f"run {run_id} is under way in {where}, which no other command reaches",
            hint=hint,
        ) from None


@app.command("wait")
def wait_run(
    run_id: Annotated[
        str, typer.Argument(help="The background run's id (a unique start of it will do).")
    ],
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0,
            help="Give up waiting after this many seconds (the run goes on; exit 3).",
            show_default=False,
        ),
    ] = None,
    offsets: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="STDOUT:STDERR",
            help="Skip the bytes of each stream already shown (a timed-out wait names them).",
            show_default=False,
        ),
    ] = None,
    config: ConfigOption = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print nothing until the wait ends, then one object: run, ended, status, "
            "exit, stdout, stderr (and from, for a run still going).",
        ),
    ] = False,
) -> None:
    """Stream what a background run prints, then end with its result and exit code.

    Examples:

    \b
        toolscript runs wait 20261124-101500-3f9a1c
        toolscript runs wait 20261124-101500-3f9a1c --timeout 100
        toolscript runs wait 20261124-101500-3f9a1c --from 2048:130
        toolscript runs wait 20261124-101500-3f9a1c --json | jq -r .stdout
    """
    from toolscript.execution.background import background_gateway, parse_offsets, wait_background

    start = parse_offsets(offsets)
    run_id = _whole_id(config, run_id)
    url = _gateway_of(config, run_id, background_gateway)

    def logged() -> dict[str, Any] | None:  # how it ended, its gateway gone under the wait
        return _runlog(config).run(run_id)  # type: ignore[no-any-return]

    if not as_json:
        raise typer.Exit(wait_background(url, run_id, timeout, start=start, logged=logged))
    from toolscript.execution.background import collect_background

    code, answer = collect_background(url, run_id, timeout, start=start, logged=logged)
    print_json(answer)
    raise typer.Exit(code)


@app.command("stop")
def stop_run(
    run_id: Annotated[str, typer.Argument(help="The run's id (`toolscript runs` lists them).")],
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop a run under way: a background run's sandbox is killed; any other run (an
    exec's, or one registered and never run) is ended, and its script's further calls are
    refused. The calls it made stay in the log.

    Examples:

    \b
        toolscript runs stop 20261124-101500-3f9a1c
    """
    from toolscript.execution.background import background_gateway, stop_background

    run_id = _whole_id(config, run_id)
    ended = stop_background(_gateway_of(config, run_id, background_gateway), run_id)
    if as_json:
        print_json(ended)
        return
    sys.stdout.write(f"run {ended.get('id', run_id)}: {ended.get('status', 'stopped')}\n")


def _stopped_call(call: dict[str, Any]) -> list[str]:
    """The call a run stopped at, its arguments whole as the run log keeps them (a call
    waiting for approval: up to the gateway's ``APPROVAL_ARGUMENTS``)."""
    from toolscript.store.approvalview import shown_arguments, visible_text

    lines = [f"call      {visible_text(tool_named(str(call.get('tool', ''))))}"]
    if call.get("arguments_whole") is False:
        lines.append(
            f"          its arguments ({call.get('arguments_bytes')} bytes) are more than a run "
            "keeps whole for an approval: TRIMMED below (strings cut, first items kept)"
        )
    view = shown_arguments(call.get("arguments", {}), None)
    lines.append("arguments")
    lines.extend(f"  {line}" for line in view.text.split("\n"))
    return lines


def _approved_call(call: dict[str, Any], run_id: str) -> str:
    """What ``approve RUN_ID`` approved: the tool and its arguments (shortened past
    ``SHOWN_WHOLE``, saying so and where the whole is)."""
    from toolscript.store.approvalview import shortened_notice, shown_arguments, visible_text
    from toolscript.store.outputs import visible_controls

    view = shown_arguments(call.get("arguments", {}))
    text = f"  call: {visible_text(tool_named(str(call.get('tool', ''))))}\n  arguments:\n"
    text += "".join(f"    {line}\n" for line in view.text.split("\n"))
    if view.shortened:
        text += f"  {visible_controls(shortened_notice(view, run_id))}\n"
    return text


def _short(arguments: Any, width: int = 60) -> str:
    import json

    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def approve_command(
    run_id: Annotated[
        str | None,
        typer.Argument(help="Approve the call this run stopped at.", show_default=False),
    ] = None,
    tool: Annotated[
        str | None,
        typer.Option(
            "--tool",
            metavar="SERVER.TOOL",
            help="Approve every call of this tool in this project, from now on.",
            show_default=False,
        ),
    ] = None,
    revoke: Annotated[
        bool,
        typer.Option(
            "--revoke", help="Take a tool's approval back: --revoke SERVER.TOOL (or with --tool)."
        ),
    ] = False,
    show: Annotated[
        bool,
        typer.Option(
            "--list", help="List the runs waiting for an approval, and the approvals on record."
        ),
    ] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """Approve a call that a run stopped at, or a tool for good.

    A script that calls a tool whose policy is "ask" (by default, tools annotated
    destructive) stops before that call with exit 120 and names its run. Approve
    the call, then resume the run: calls it already made are not made again.

    Approving is for people: the Claude Code plugin makes Claude Code ask you
    before it runs this command (a pattern; only the OS stops an agent with a shell).

    Examples:

    \b
        toolscript approve 20261124-101500-3f9a1c      # this call, once
        toolscript exec --resume 20261124-101500-3f9a1c
        toolscript approve --tool github.delete_repo   # this tool, from now on
        toolscript approve --revoke github.delete_repo
        toolscript approve --list
    """
    runlog = _runlog(config)
    if show:
        _list_approvals(runlog, as_json=as_json, header=header)
        return
    if revoke and tool is None and run_id is not None and ("." in run_id or "__" in run_id):
        tool, run_id = run_id, None  # `approve --revoke SERVER.TOOL`: run ids have no dots
    if (run_id is None) == (tool is None):
        raise UsageError(
            "give a RUN_ID or --tool SERVER.TOOL (not both)", hint="toolscript approve --help"
        )
    if tool is not None:
        qualified = _qualified(tool, _spelled_servers(config, runlog, revoke=revoke))
        if revoke:
            if not runlog.revoke_tool(qualified):
                raise UsageError(f"{tool} was not approved", hint="toolscript approve --list")
            _say(as_json, {"revoked": tool}, f"revoked: calls of {tool} ask again\n")
            return
        runlog.approve_tool(qualified, _check_tool_exists(config, qualified))
        _say(as_json, {"approved": tool}, f"approved: every call of {tool} in this project\n")
        return
    if revoke:
        raise UsageError("--revoke takes back a tool approval: give --revoke SERVER.TOOL")
    assert run_id is not None
    stopped_run = runlog.run(run_id)
    _refuse_unshowable(stopped_run)
    _refuse_repointed(config, stopped_run)
    try:
        run = runlog.approve_call(run_id)
    except KeyError:
        raise NotFoundError(
            f"no run {run_id!r} in this project's log", hint="`toolscript runs` lists them"
        ) from None
    except ValueError as exc:
        raise UsageError(
            f"run {run_id} is not waiting for an approval ({exc})",
            hint="`toolscript runs show RUN_ID` shows how it ended",
        ) from None
    call = run["stopped"].get("call") or {}
    recorded = run.get("approval") != "already"
    _say(
        as_json,
        {"approved": run["id"], "call": call, "recorded": recorded},
        f"{'approved' if recorded else 'already approved'}: "
        f"{tool_named(str(call.get('tool', '')))} as run {run['id']} called it:\n"
        f"{_approved_call(call, run['id'])}"
        f"now `toolscript exec --resume {run['id']}` (or run the same script again)\n",
    )


def _list_approvals(runlog: Any, *, as_json: bool, header: bool) -> None:
    """``approve --list``: the calls runs stopped at that wait for a person (scope
    ``waiting``, first), then the approvals on record; how to approve on stderr."""
    waiting = [_waiting(run) for run in runlog.awaiting()]
    approvals = waiting + runlog.approvals()
    if as_json:
        print_json([{**a, "created": _iso(a["created"])} for a in approvals])
        return
    if not approvals:
        sys.stdout.write("no approvals on record, and no run waits for one\n")
        return
    print_rows(
        ["scope", "tool", "run", "approved", "used by"],
        [
            [
                a["scope"],
                tool_named(a["tool"]),
                a["run_id"] or "-",
                "-" if a["scope"] == "waiting" else _when(a["created"]),
                a["used_by"] or "-",
            ]
            for a in approvals
        ],
        header=header,
        whole=("run",),
        names=("tool",),
    )
    for run in waiting:  # a person's commands: the plugin asks before an agent runs them
        write_shown(
            f"run {run['run_id']} waits for approval of {tool_named(run['tool'])}: "
            f"{run['approve_with']}\n",
            sys.stderr,
        )


def _waiting(run: dict[str, Any]) -> dict[str, Any]:
    """A run stopped at a call awaiting approval, as ``approve --list`` shows it."""
    call = (run.get("stopped") or {}).get("call") or {}
    return {
        "scope": "waiting",
        "tool": str(call.get("tool", "")),
        "run_id": run["id"],
        "created": run.get("ended") or run.get("started"),  # when it stopped
        "used_by": "",
        "server": str(call.get("server_identity", "")),
        "approve_with": f"`toolscript approve {run['id']}` (`toolscript runs show {run['id']}` "
        f"shows the call whole), then `toolscript exec --resume {run['id']}`",
    }


def _refuse_unshowable(run: dict[str, Any] | None) -> None:
    """Raise when ``run`` stopped at a call whose arguments were too large to keep whole:
    nobody could see what approving it would let run."""
    call = ((run or {}).get("stopped") or {}).get("call") or {}
    if run is None or run.get("status") != "awaiting_approval":
        return  # approve_call says what is wrong
    if call.get("arguments_whole") is False:
        tool = tool_named(str(call.get("tool", "")))
        raise UsageError(
            f"run {run['id']} stopped at a call of {tool} whose arguments "
            f"({call.get('arguments_bytes')} bytes) are too large to be shown whole, so it "
            "cannot be approved by itself",
            hint="approve the tool for every call with "
            f"`toolscript approve --tool {shlex.quote(tool)}` "
            f"if that is safe, then `toolscript exec --resume {run['id']}`",
        )


def _refuse_repointed(config: str | None, run: dict[str, Any] | None) -> None:
    """Raise when the server entry of the call ``run`` stopped at changed in the config since
    (its command, args, cwd, env, URL or headers): its approval is bound to the server as it was shown, so
    it would not hold, and the resume would ask again. Said before anything is recorded."""
    call = ((run or {}).get("stopped") or {}).get("call") or {}
    given = str(call.get("server_identity") or "")
    if run is None or run.get("status") != "awaiting_approval" or not given:
        return  # approve_call says what is wrong; an unbound call is asked again anyway
    from toolscript.config import IDENTITY_PARTS, load_config
    from toolscript.errors import ServerNotFoundError

    tool = str(call.get("tool", ""))
    server = tool.partition("__")[0]
    try:
        now = load_config(config).server(server).identity
    except ServerNotFoundError:
        now = ""
    if now == given:
        return
    changed = "is no longer in the config" if not now else "changed in the config"
    raise UsageError(
        f"run {run['id']} stopped at a call of {tool_named(tool)} for server {server!r} as "
        f"the config had it then; its entry {changed} since ({IDENTITY_PARTS}), "
        "so approving that call would not approve what runs now: nothing was approved",
        hint=f"`toolscript exec --resume {run['id']}` stops at this call again for the server "
        "as the config has it now; approve that run if it is right",
    )


def _spelled_servers(config: str | None, runlog: Any, *, revoke: bool) -> list[str]:
    """The server names a SERVER.TOOL may begin with: the config's (approve), those of the
    tool approvals on record (revoke, which a server since removed may hold)."""
    if not revoke:
        from toolscript.config import load_config

        return [server.name for server in load_config(config).servers]
    return [
        approval["tool"].partition("__")[0]
        for approval in runlog.approvals()
        if approval["scope"] == "tool"
    ]


def _qualified(tool: str, servers: list[str]) -> str:
    """``server.tool`` (or ``server__tool``) as the gateway names it. A name of ``servers``
    it begins with is read first, the longest: a server's name may hold a dot and a tool's
    "__" (``my.docs.search``, ``github.repo__list``, as messages name them); the first
    separator otherwise."""
    for server in sorted(set(servers), key=len, reverse=True):
        for separator in (".", "__"):
            name = (
                tool[len(server) + len(separator) :] if tool.startswith(server + separator) else ""
            )
            if name:
                return f"{server}__{name}"
    if "__" in tool:
        return tool
    server, dot, name = tool.partition(".")
    if not dot or not server or not name:
        raise UsageError(f"not SERVER.TOOL: {tool!r}", hint="for example github.delete_repo")
    return f"{server}__{name}"


def _check_tool_exists(config: str | None, qualified: str) -> str:
    """Raise unless the project has the tool ``server__tool``: its running gateway says so,
    else the tool lists it fetched (``.toolscript/servers/*.json``); with neither, refuse
    rather than approve a name nothing can check. Returns its server's identity (what an
    approval of it is bound to)."""
    import difflib

    from toolscript.config import load_config
    from toolscript.policy import is_offering

    loaded = load_config(config)
    server, _, name = qualified.partition("__")
    found = loaded.server(server)
    if found.disabled:  # (else "server not found", with close names)
        # Not offered to scripts (no types, no search, list-tools refuses it) and its fetched
        # tools are dropped at the next build: nothing to check a name against, nor to run.
        raise ServerUnavailableError(
            f"server {server!r} is disabled in the config: none of its tools can be approved",
            hint=f'remove "disabled": true from its entry in {loaded.config_file}, then approve '
            "again",
        )
    if is_offering(name):  # resource:URI or prompt:NAME, which the server answers when read
        return found.identity
    names = _tool_names(loaded, server)
    if names is None:
        raise UsageError(
            f"cannot check that {tool_named(qualified)} exists: no gateway runs for this project "
            f"and the tools of {server!r} were never fetched",
            hint="start the gateway (`toolscript gateway start &`), then approve again",
        )
    if name in names:
        return found.identity
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    raise ToolNotFoundError(
        f"server {server!r} has no tool {name!r}",
        suggestions=[f"{server}.{found}" for found in close],
        hint=None if close else f"`toolscript list-tools {server}` lists its tools",
    )


def _tool_names(loaded: Any, server: str) -> list[str] | None:
    """The names of ``server``'s tools: from the running gateway, else from the project's
    cache of fetched tool lists; None when neither knows."""
    import json

    from toolscript.cli.client import GatewayClient, find_gateway_url
    from toolscript.errors import ToolscriptError
    from toolscript.pipeline.artifacts import CacheLayout, read_artifact

    url = find_gateway_url(loaded)
    if url:
        try:
            with GatewayClient(url) as client:
                tools = client.get_json(f"/servers/{server}/tools", exact=True)
            return [str(tool["name"]) for tool in tools]
        except (ToolscriptError, OSError, ValueError, KeyError, TypeError):
            pass  # a gateway that cannot answer: the fetched lists may
    try:
        cached = json.loads(read_artifact(CacheLayout(loaded.cache_dir()).server_tools(server)))
        return [str(tool["name"]) for tool in cached]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _say(as_json: bool, value: dict[str, Any], text: str) -> None:
    if as_json:
        print_json(value)
    else:
        write_shown(text)
