"""The gateway's routes as Litestar controllers, one per part of the API (see ``app.py``).

Each handler takes the ``Gateway`` as the dependency ``gateway`` (``build_app`` provides
it) and its JSON body typed (``bodies.py``). A new route is a method on the controller of
its path, or a new controller added to ``CONTROLLERS``; a route the agent's URL may reach
is also listed in ``guard.AGENT_ROUTES``.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio.to_thread
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from toolscript.codegen.module import recent_call_comment, render_declarations, render_module
from toolscript.errors import NotFoundError, UsageError
from toolscript.gateway import offerings
from toolscript.gateway.bodies import (
    BackgroundStart,
    CheckRequest,
    ProgressReport,
    PromptAnswer,
    PromptGet,
    ResourceRead,
    RunEnd,
    RunRequest,
    ScriptToSave,
)
from toolscript.gateway.core import LISTED_CHANGE_WAIT, SEPARATOR, Gateway, split_tool_name
from toolscript.gateway.guard import AGENT, CREDENTIAL_SCOPE_KEY, RUN_SCOPE_KEY, agent_refused
from toolscript.gateway.results import RESULT_HEADER
from toolscript.gateway.toolcall import call_tool_bytes, requested_tool, unless_disconnected
from toolscript.search.engine import MODES, readings
from toolscript.search.needs import is_implied
from toolscript.search.parameters import check_query_length
from toolscript.store.outputs import visible_controls
from toolscript.store.runlog import unique_start
from toolscript.store.savedscripts import MAX_RUN_SCRIPT_BYTES, require_script_size
from toolscript.upstream.base import ServerState

__all__ = [
    "CONTROLLERS",
    "DiscoveryController",
    "OfferingsController",
    "ProgressController",
    "RunsController",
    "RuntimeController",
    "ScriptsController",
    "ServersController",
    "ToolsController",
]

_JSON = "application/json"


def _by_agent(request: Request[Any, Any, Any]) -> bool:
    return request.scope.get(CREDENTIAL_SCOPE_KEY) == AGENT


class ServersController(Controller):
    """The gateway's state: its health and its servers with their tools."""

    @get("/health", sync_to_thread=False)
    def health(self, gateway: NamedDependency[Gateway]) -> dict[str, Any]:
        """Overall state, per-server state, tool counts and search readiness."""
        return gateway.health()

    @get("/servers", sync_to_thread=False)
    def servers(self, gateway: NamedDependency[Gateway]) -> list[dict[str, Any]]:
        """Every configured server with its live state (and the tool count of its last
        listing when it lists none now)."""
        return [gateway.server_status(up) for up in gateway.upstreams.values()]

    @get("/servers/{server:str}/tools")
    async def server_tools(
        self, gateway: NamedDependency[Gateway], server: FromPath[str]
    ) -> list[dict[str, Any]]:
        """A server's tools with their input and output schemas and annotations (made in a
        worker thread, kept until the catalogue changes: ``gateway/narrowed.py``)."""
        return await anyio.to_thread.run_sync(gateway.server_tools, server)


class ToolsController(Controller):
    """Tool calls, when ``app.ToolCallFastPath`` is not in front (Litestar's test client)."""

    path = "/tools"

    @post("/{name:path}", status_code=200)
    async def call_tool(
        self, gateway: NamedDependency[Gateway], request: Request[Any, Any, Any]
    ) -> Response[bytes]:
        """Call ``server__tool`` with the JSON body as arguments (see ``results.py``)."""
        name = requested_tool(request.scope)
        run_id: Any = request.scope.get(RUN_SCOPE_KEY)
        status, shape, payload = await call_tool_bytes(
            gateway, name, await request.body(), run_id if isinstance(run_id, str) else None
        )
        headers = {RESULT_HEADER: shape} if shape else {}
        return Response(content=payload, status_code=status, media_type=_JSON, headers=headers)


class RunsController(Controller):
    """Runs: registered by exec and the MCP face, prompted, ended; background runs
    started, watched and stopped; progress read."""

    path = "/runs"

    @post("/", status_code=200)
    async def register_run(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        data: JSONBody[RunRequest | None] = None,
    ) -> dict[str, Any]:
        """Register a run; ``{"id", "token", "resumed_from", "limits", "gateway"}`` out. The script gets the
        gateway's URL with the token in place of the gateway's own."""
        body = data or RunRequest()
        require_script_size(body.script, "the script")
        if body.interactive and _by_agent(request):
            # An interactive run's prompts are answered with the owner token: a run the agent
            # registers stops at a call that needs approval, for a person to approve.
            raise agent_refused()
        run = await gateway.register_run(
            script_hash=body.script_hash,
            origin=body.origin or "http",
            interactive=body.interactive,
            max_calls=body.max_calls,
            resume=body.resume or None,
            script=body.script,
            script_name=body.script_name,
            client_pid=body.pid,
            by_agent=_by_agent(request),  # bounded apart: it never refuses the owner's runs
            limits={
                "timeout": body.timeout,
                "memory_mb": body.memory_mb,
                "max_output": body.max_output,
            },
        )
        return {
            "id": run.id,
            "token": run.token,
            "resumed_from": run.resumed_from or None,
            # what exec enforces: those it gave, else the resumed run's (absent: its defaults)
            "limits": run.limits | {"max_calls": run.max_calls},
            # its process (``process_identity``): exec's progress watcher tells by it a
            # gateway gone from one that cut a connection (``ProgressWatcher``)
            "gateway": gateway.runs.owner,
        }

    @get("/{run_id:str}/prompt")
    async def run_prompt(
        self, gateway: NamedDependency[Gateway], run_id: FromPath[str], wait: FromQuery[float] = 0.0
    ) -> dict[str, Any]:
        """The call of an interactive run that waits for the user's answer (``wait``: seconds
        to wait for one); ``{"prompt": call or null, "ended": bool}``."""
        call = await gateway.runs.wait_prompt(run_id, max(0.0, min(wait, 60.0)))
        return {"prompt": call, "ended": gateway.runs.get(run_id).ended}

    @post("/{run_id:str}/prompt", status_code=200)
    async def answer_prompt(
        self, gateway: NamedDependency[Gateway], run_id: FromPath[str], data: JSONBody[PromptAnswer]
    ) -> dict[str, Any]:
        """``{"seq", "answer": "yes" | "no" | "always" | "stop"}`` (a server's question:
        ``"accept"`` with ``"content"``, ``"decline"`` or ``"cancel"``); ``{"answered": bool}``."""
        answered = gateway.runs.answer(run_id, data.seq, str(data.answer), data.content)
        return {"answered": answered}

    @get("/{run_id:str}/script")
    async def run_script(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        run_id: FromPath[str],
    ) -> dict[str, str]:
        """The script of a run that stopped for approval (what ``exec --resume`` runs);
        through the agent's URL, of the agent's own runs alone."""
        return await gateway.runs.stopped_script(run_id, by_agent=_by_agent(request))

    @post("/{run_id:str}/end", status_code=200)
    async def end_run(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        run_id: FromPath[str],
        data: JSONBody[RunEnd | None] = None,
    ) -> dict[str, Any]:
        """``{"exit": code}`` in; the run's status, the error it stopped with and its calls.
        Through the agent's URL, only the agent's own runs, as ``stop``: ending an
        interactive run would answer a person's open prompt, and ending any other of the
        owner's would stop it as ``stop`` may not (and answer with its calls)."""
        run = gateway.runs.get(run_id)
        if _by_agent(request) and (run.interactive or not run.by_agent):
            raise agent_refused()
        run = await gateway.runs.end(run_id, (data or RunEnd()).exit)
        return run.ended_answer() | {"calls": gateway.runs.trace(run)}

    @post("/start", status_code=200)
    async def start_background_run(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        data: JSONBody[BackgroundStart],
    ) -> dict[str, Any]:
        """Run a script in the background (``gateway/background.py``); ``{"run": id}``."""
        require_script_size(data.script, "the script")
        run = await gateway.background.start(data, by_agent=_by_agent(request))
        return {"run": run.id}

    @get("/{run_id:str}/output")
    async def background_output(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        run_id: FromPath[str],
        stdout: FromQuery[int] = 0,
        stderr: FromQuery[int] = 0,
        wait: FromQuery[float] = 0.0,
    ) -> dict[str, Any]:
        """What a background run printed from these offsets (base64), waiting up to
        ``wait`` s for more; ``result`` once it ended. Through the agent's URL, only the
        agent's own runs: a person's output is theirs."""
        run_id = _whole_run_id(gateway, run_id)
        if _by_agent(request) and not gateway.background.by_agent(run_id):
            raise agent_refused()
        return await gateway.background.output(run_id, stdout, stderr, wait)

    @post("/{run_id:str}/stop", status_code=200)
    async def stop_run(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        run_id: FromPath[str],
    ) -> dict[str, Any]:
        """Stop a run under way; how it ended. A background run's sandbox is stopped; any
        other run (an exec's, or one registered and never run) is ended now, and its token
        reaches nothing after (exec and the MCP face, watching its progress, stop its
        script). Through the
        agent's URL, only the agent's own runs of the kind."""
        run_id = _whole_run_id(gateway, run_id)
        if gateway.background.holds(run_id):
            return await gateway.background.stop(run_id)
        try:
            run = gateway.runs.get(run_id)
        except NotFoundError:
            raise NotFoundError(
                f"no run {run_id!r} under way in this gateway",
                hint="`toolscript runs` lists the runs; one that ended (or ran under another "
                "gateway) is in `toolscript runs show RUN_ID`",
            ) from None
        if _by_agent(request) and (run.interactive or not run.by_agent):
            raise agent_refused()  # the owner's run, or a person's open prompt
        if not run.ended:
            run.cancelled = True
            await gateway.runs.end(run_id, None)
        return {"id": run.id, "status": run.status}

    @get("/{run_id:str}/progress")
    async def run_progress(
        self,
        gateway: NamedDependency[Gateway],
        run_id: FromPath[str],
        after: FromQuery[int] = 0,
        wait: FromQuery[float] = 0.0,
    ) -> dict[str, Any]:
        """A run's progress reports from number ``after`` on (``wait``: seconds to wait for
        one); ``{"progress": [...], "next", "ended"}``. The agent's URL reads any run's: a
        person's background run is watched through it by its own runner."""
        return await gateway.runs.wait_progress(run_id, max(0, after), max(0.0, wait))


class ProgressController(Controller):
    """A run's own script says how far it is (the run's token reaches this, nothing else
    of the runs)."""

    path = "/progress"

    @post("/", status_code=200)
    async def report_progress(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        data: JSONBody[ProgressReport],
    ) -> dict[str, bool]:
        """The calling run's ``progress(message, fraction)``."""
        run_id = request.scope.get(RUN_SCOPE_KEY)
        if not isinstance(run_id, str):
            raise UsageError("progress is reported by a run's script, with its own URL")
        gateway.runs.report_progress(gateway.runs.get(run_id), data.message, data.fraction)
        return {"reported": True}


class RuntimeController(Controller):
    """What a script's run needs: the generated module, its hash, saved scripts, a check."""

    path = "/runtime"

    @get("/tools.ts")
    async def runtime_module(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        server: FromQuery[str | None] = None,
        tool: FromQuery[str | None] = None,
    ) -> Response[bytes]:
        """The generated TypeScript client; ``?server=`` and ``&tool=`` narrow it (rendered
        once per module, in a worker thread: ``gateway/narrowed.py``)."""
        if server is None and tool is None:
            content = gateway.artifacts.module
            etag = gateway.artifacts.module_hash
        else:
            render = functools.partial(_render_narrowed, gateway, server, tool)
            content, etag = await anyio.to_thread.run_sync(
                gateway.narrowed.get, gateway.artifacts.module_hash, server, tool, render
            )
        quoted = f'"{etag}"'
        if request.headers.get("if-none-match") == quoted:
            return Response(content=b"", status_code=304, headers={"ETag": quoted})
        return Response(
            content=content,
            media_type="application/typescript; charset=utf-8",
            headers={"ETag": quoted, "Cache-Control": "no-cache"},
        )

    @get("/hash")
    async def runtime_hash(self, gateway: NamedDependency[Gateway]) -> dict[str, str]:
        """The content hash of the whole module (what ``exec`` uses as ``_t``), once it holds
        the servers' tool lists as they are (``Gateway.module_hash_built``)."""
        return {"hash": await gateway.module_hash_built()}

    @get("/scripts.json", sync_to_thread=False)
    def runtime_scripts(self, gateway: NamedDependency[Gateway]) -> dict[str, Any]:
        """The sources of the saved scripts the module offers, with the module's hash."""
        return {"hash": gateway.artifacts.module_hash, "scripts": gateway.script_sources()}

    @post("/check", status_code=200)
    async def runtime_check(
        self, gateway: NamedDependency[Gateway], data: JSONBody[CheckRequest]
    ) -> dict[str, str]:
        """The warm checker's verdict on a script exec prepared: ``{"status": "passed" |
        "failed" | "unavailable", "output"}`` (on "unavailable", exec checks with deno check)."""
        if len(data.code.encode("utf-8", "surrogatepass")) > MAX_RUN_SCRIPT_BYTES:
            # exec refuses such a script before it asks; checked here, the gateway's own
            # deno lsp would hold it (an agent's shell reaches this route)
            return {"status": "unavailable", "output": "the script is over the run limit"}
        return await gateway.check_script(data.code, data.path, data.module, data.hash)

    @get("/describe", sync_to_thread=False)
    def describe(
        self, gateway: NamedDependency[Gateway], server: FromQuery[str], tool: FromQuery[str]
    ) -> dict[str, Any]:
        """One tool (a script's ``describe``): how to call it, its JSON Schemas, its
        TypeScript."""
        return offerings.describe(gateway, server, tool)


class OfferingsController(Controller):
    """What servers offer besides tools: resources, resource templates and prompts (reads
    and gets of a run are its calls: checked by the policy, logged; see ``offerings.py``)."""

    path = "/servers/{server:str}"

    @get("/resources")
    async def server_resources(
        self, gateway: NamedDependency[Gateway], server: FromPath[str]
    ) -> dict[str, Any]:
        """A server's resources and resource templates (each with its ``parameters``)."""
        return await offerings.list_resources(gateway, server)

    @get("/prompts")
    async def server_prompts(
        self, gateway: NamedDependency[Gateway], server: FromPath[str]
    ) -> dict[str, Any]:
        """A server's prompts with their arguments."""
        return await offerings.list_prompts(gateway, server)

    @post("/resources/read", status_code=200)
    async def read_resource(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        server: FromPath[str],
        data: JSONBody[ResourceRead],
    ) -> Response[bytes]:
        """``{"uri"}`` (or ``{"template", "params"}``) in; ``{"contents": [{uri, mimeType?,
        text | blob}]}`` out."""
        size = len(await request.body())
        uri = data.uri
        if data.template:
            uri = await offerings.template_uri(gateway, server, data.template, data.params)
        read = offerings.read_resource(gateway, server, uri, _run_of(request), size)
        return _answer(await unless_disconnected(read, request.receive))

    @post("/prompts/get", status_code=200)
    async def get_prompt(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        server: FromPath[str],
        data: JSONBody[PromptGet],
    ) -> Response[bytes]:
        """``{"name", "arguments"?}`` in; ``{"description"?, "messages"}`` out."""
        size = len(await request.body())
        got = offerings.get_prompt(
            gateway, server, data.name, data.arguments, _run_of(request), size
        )
        return _answer(await unless_disconnected(got, request.receive))


def _render_narrowed(gateway: Gateway, server: str | None, tool: str | None) -> bytes:
    return render_module(gateway.fragments(server, tool)).encode()


def _whole_run_id(gateway: Gateway, run_id: str) -> str:
    """The run of this gateway a unique start of its id names (``runs wait 20261124-1015``
    right after the run started, before the run log the CLI reads first has it); as given
    when none of its runs starts so (the route then says it knows no such run)."""
    return unique_start(run_id, [*gateway.background.ids(), *gateway.runs.ids()]) or run_id


def _run_of(request: Request[Any, Any, Any]) -> str | None:
    """The id of the run whose token made ``request`` (None: the owner's or agent's)."""
    run_id = request.scope.get(RUN_SCOPE_KEY)
    return run_id if isinstance(run_id, str) else None


def _answer(answered: tuple[int, str, bytes] | None) -> Response[bytes]:
    """A read's or a get's answer; None: the caller went away and it was cancelled (the
    server told so), an answer nobody reads."""
    if answered is None:
        return Response(content=b"", status_code=499)
    status, shape, payload = answered
    headers = {RESULT_HEADER: shape} if shape else {}
    return Response(content=payload, status_code=status, media_type=_JSON, headers=headers)


class ScriptsController(Controller):
    """The project's saved scripts."""

    path = "/scripts"

    @get("/", sync_to_thread=False)
    def saved_scripts(self, gateway: NamedDependency[Gateway]) -> dict[str, Any]:
        """Every saved script: its signature, description, and errors when it is broken."""
        return gateway.scripts_listing()

    @post("/", status_code=201)
    async def save_script(
        self, gateway: NamedDependency[Gateway], data: JSONBody[ScriptToSave]
    ) -> dict[str, Any]:
        """Save a script in the project's toolscripts/ folder when it type-checks."""
        return await gateway.save_script(data.name, data.code, data.description, data.force)


_CALLS: dict[str, dict[tuple[str, str], str]] = {}


def _calls(gateway: Gateway) -> dict[tuple[str, str], str]:
    """``(server, tool)`` -> ``tools.namespace.function``, for the module being served."""
    digest = gateway.artifacts.module_hash
    found = _CALLS.get(digest)
    if found is None:
        found = {
            (f.server, f.tool): f"tools.{f.namespace}.{f.function}"
            for f in gateway.artifacts.fragments
        }
        _CALLS.clear()
        _CALLS[digest] = found
    return found


def _search_tools(
    gateway: Gateway,
    q: str,
    limit: int,
    threshold: float | None,
    server: str | None,
    mode: str,
    explain: bool,
    split: bool,
) -> dict[str, Any]:
    """``GET /search``'s tools, ranked (blocking: run in a worker thread)."""
    answer = gateway.search.explain(
        q,
        limit=limit,
        threshold=threshold,
        server=server,
        mode=mode,
        split=split,
    )
    hits, used, needs = answer.hits, answer.mode, answer.needs
    calls = _calls(gateway)
    calls.update(gateway.script_calls())
    return {
        "query": q,
        "mode": used,
        "needs": needs,
        # the needs the request implies (a file to write, a place's coordinates), by index
        "implied": [number for number, need in enumerate(needs) if is_implied(need)],
        # nothing matched well (no tool close to the request in meaning, whatever word
        # it shares): the hits are only the nearest tools (each says so too, for search()).
        # None: not known, keywords alone cannot tell (bench/NOTES.md, `weak_cosine`)
        "weak": any(hit.weak for hit in hits) if used != "keyword" else None,
        "hits": [
            hit.to_dict()
            | {"call": calls.get((hit.server, hit.tool))}
            | ({"explain": hit.explanation(needs)} if explain else {})
            for hit in hits
        ],
        # where search is, as this answer was ranked: a keyword answer says why, as it
        # was then (the model may be back by now)
        "search": gateway.search.status(answer),
    } | (  # what keyword search and the model read of the request and of each need
        {"readings": readings(q, needs, used)} if explain else {}
    )


class DiscoveryController(Controller):
    """Finding tools: ranked search and the types of chosen tools (get-types)."""

    @get(["/search", "/runtime/search"])  # the second: a script's search() (its run's token)
    async def search(
        self,
        gateway: NamedDependency[Gateway],
        q: FromQuery[str],
        limit: FromQuery[int] = 10,
        threshold: FromQuery[float | None] = None,
        server: FromQuery[str | None] = None,
        mode: FromQuery[str] = "hybrid",
        explain: FromQuery[bool] = False,
        split: FromQuery[bool] = True,
        kind: FromQuery[str] = "tool",
    ) -> dict[str, Any]:
        """Ranked tools for a query; keyword-only until the embedding model is ready.
        ``explain``: each hit's keyword and semantic parts and the need it answers;
        ``split=false`` ranks the request whole; ``kind``: resource, prompt, or all (tools, then the others)."""
        check_query_length(q)
        if server is not None:
            with anyio.move_on_after(LISTED_CHANGE_WAIT):  # (an edit adding it, saved now)
                await gateway.edits_applied()
            gateway.upstream(server)
        if mode not in MODES:
            raise UsageError(f"unknown search mode {mode!r}; one of {', '.join(MODES)}")
        if kind not in offerings.KINDS:
            raise UsageError(f"unknown kind {kind!r}; one of {', '.join(offerings.KINDS)}")
        limit = max(1, min(limit, 100))
        gateway.search_wanted()
        if server is not None:  # one a config edit added a moment ago, still connecting
            await gateway.connecting_waited(server)
        # a server the config watch added, connected (list-servers says so) and its build
        # under way: searched now, its tools were not found yet
        unbuilt = await gateway.listed_changes_built()
        found = (
            []
            if kind == "tool"
            else await offerings.search_offerings(gateway, q, kind, limit, server)
        )
        if threshold is not None:  # asked for: resources and prompts are held to it too
            found = [hit for hit in found if hit["score"] >= threshold]
        if kind in ("resource", "prompt"):
            return {
                "query": q,
                "mode": "keyword",
                "needs": [q],
                "implied": [],
                "weak": False,
                "hits": found,
                "search": gateway.search.status(),
            }
        ranked = functools.partial(
            _search_tools, gateway, q, limit, threshold, server, mode, explain, split
        )
        answer = await anyio.to_thread.run_sync(ranked)
        answer["hits"].extend(found)
        if unbuilt is not None:
            answer["unbuilt"] = unbuilt
        unsearched = gateway.unsearched(server)
        if unsearched:  # a server still connecting: its tools may be the answer
            answer["unsearched"] = unsearched
        return answer

    @get("/types")
    async def types(
        self,
        gateway: NamedDependency[Gateway],
        request: Request[Any, Any, Any],
        server: FromQuery[str | None] = None,
        tool: FromQuery[str | None] = None,
        names: FromQuery[str | None] = None,
        agent: FromQuery[bool] = False,
    ) -> dict[str, Any]:
        """Declarations and usage examples for get-types (``names``: server__tool or a whole
        server, comma-separated). A recent call shown to the agent (its URL, or ``agent``:
        the MCP face asking for it) is one its own runs made: a person's are theirs. Made
        in a worker thread, kept until the catalogue or the recent calls change
        (``gateway/narrowed.py``)."""
        if not names and server is None:
            raise UsageError("give ?server=NAME (and &tool=NAME), or ?names=server__tool,...")
        await gateway.listed_changes_built()  # as search: the build of a list just changed
        answer = functools.partial(
            _types_answer, gateway, server, tool, names, agent or _by_agent(request)
        )
        return await anyio.to_thread.run_sync(answer)


def _types_answer(
    gateway: Gateway, server: str | None, tool: str | None, names: str | None, for_agent: bool
) -> dict[str, Any]:
    """get-types' answer, as kept for this catalogue and these recent calls."""
    gateway.recent.settle()
    generation = (gateway.catalogue, gateway.recent.version)
    render = functools.partial(_render_types, gateway, server, tool, names, for_agent)
    answer = gateway.type_answers.get(generation, (server, tool, names, for_agent), render)
    # Said at each answer (a server's state is no part of what is kept): types of a server
    # not connected now are those of its last listing.
    marks = [
        _last_listing_mark(gateway, name)
        for name in dict.fromkeys(str(one["server"]) for one in answer["tools"])
    ]
    if not any(marks):
        return answer
    said = "\n".join(mark for mark in marks if mark)
    return answer | {"declarations": f"{said}\n\n{answer['declarations']}"}


def _last_listing_mark(gateway: Gateway, server: str) -> str | None:
    """A comment saying ``server``'s types come from its last listing when it is not
    connected now (its error on one line, cut: what a server sent), else None."""
    upstream = gateway.upstreams.get(server)
    if upstream is None or upstream.state in (ServerState.CONNECTED, ServerState.DISABLED):
        return None
    error = " ".join(visible_controls(upstream.error or "").split())
    why = f" ({error[:160]}{'…' if len(error) > 160 else ''})" if error else ""
    return (
        f"// {server} is {upstream.state}{why}: its types below are from its last listing, "
        "and a call of one fails until it connects"
    )


def _render_types(
    gateway: Gateway, server: str | None, tool: str | None, names: str | None, for_agent: bool
) -> dict[str, Any]:
    whole: list[str] = []  # servers asked for entirely: their prompts and templates too
    if names:
        asked = [qualified.strip() for qualified in names.split(",") if qualified.strip()]
        fragments = [
            fragment
            for qualified in asked
            for fragment in (
                gateway.fragments(*split_tool_name(qualified))
                if SEPARATOR in qualified
                else gateway.fragments(qualified)
            )
        ]
        whole = [qualified for qualified in asked if SEPARATOR not in qualified]
    else:
        fragments = gateway.fragments(server, tool)
        whole = [server] if server is not None and tool is None else []
    namespaces = offerings.namespaces_of(gateway) if whole else {}
    offered = {
        namespaces[name]: gateway.artifacts.offered[name]
        for name in dict.fromkeys(whole)
        if name in namespaces and gateway.artifacts.offered.get(name)
    }
    recent = [gateway.recent.of(f.qualified, agents=for_agent) for f in fragments]
    notes = {
        fragment.qualified: recent_call_comment(fragment, call.arguments, call.result, call.cut)
        for fragment, call in zip(fragments, recent, strict=True)
        if call is not None
    }
    return {
        "declarations": render_declarations(fragments, notes, offered),
        "examples": [fragment.example for fragment in fragments],
        # one recent successful call of each tool (redacted, trimmed; None: none kept)
        "recent": [call.to_dict() if call is not None else None for call in recent],
        "tools": [
            {
                "server": f.server,
                "tool": f.tool,
                "namespace": f.namespace,
                "function": f.function,
            }
            for f in fragments
        ],
        "hash": gateway.artifacts.module_hash,
        "packages": gateway.artifacts.packages,
    }


CONTROLLERS: tuple[type[Controller], ...] = (
    ServersController,
    ToolsController,
    RunsController,
    ProgressController,
    RuntimeController,
    ScriptsController,
    DiscoveryController,
    OfferingsController,
)
