"""The token guard in front of the gateway, driven as the ASGI callable it is."""

from __future__ import annotations

import asyncio
from typing import Any

from toolscript.gateway.guard import TokenGuard, agent_token, agent_url, is_agent_url


def _drive(
    scope: dict[str, Any], messages: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    reached: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(TokenGuard(app, "secret", ["127.0.0.1:1"])(scope, receive, send))
    return sent, reached


def test_a_websocket_is_refused_before_the_app() -> None:
    """A websocket scope carries no token check of its own: it never reaches the gateway."""
    scope = {"type": "websocket", "path": "/tools/x", "headers": [(b"host", b"127.0.0.1:1")]}
    sent, reached = _drive(scope, [{"type": "websocket.connect"}])
    assert reached == []
    assert sent == [{"type": "websocket.close", "code": 1008}]


def test_lifespan_still_reaches_the_app() -> None:
    _, reached = _drive({"type": "lifespan"}, [])
    assert reached == ["lifespan"]


def test_http_without_the_token_is_refused() -> None:
    scope = {"type": "http", "path": "/tools/x", "headers": [(b"host", b"127.0.0.1:1")]}
    sent, reached = _drive(scope, [])
    assert reached == []
    assert sent[0]["status"] == 401


def test_http_with_the_token_reaches_the_app() -> None:
    scope = {"type": "http", "path": "/secret/health", "headers": [(b"host", b"127.0.0.1:1")]}
    _, reached = _drive(scope, [])
    assert reached == ["http"]


# -- the agent's token (finding 2 of the attack run, issue 42) -------------------------------


def _as(token: str, method: str, path: str, *, agent: bool = True) -> tuple[int | None, Any]:
    """The status the guard answers (None: the app was reached) and the scope the app saw."""
    seen: list[Any] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": f"/{token}{path}",
        "headers": [(b"host", b"127.0.0.1:1")],
    }
    guard = TokenGuard(
        app, "secret", ["127.0.0.1:1"], lambda t: "run-1" if t == "r" * 33 else None, agent=agent
    )
    asyncio.run(guard(scope, receive, send))
    return (sent[0]["status"] if sent else None), (seen[0] if seen else None)


def test_the_agent_token_is_derived_one_way_and_recognisable() -> None:
    token = agent_token("secret")
    assert token != "secret" and "secret" not in token
    assert token == agent_token("secret") and token != agent_token("secret2")
    assert agent_url("http://127.0.0.1:1/secret") == f"http://127.0.0.1:1/{token}"
    assert is_agent_url(agent_url("http://127.0.0.1:1/secret"))
    assert not is_agent_url("http://127.0.0.1:1/secret")


def test_the_agent_token_runs_scripts_and_reads_tools() -> None:
    agent = agent_token("secret")
    for method, path in [
        ("GET", "/health"),
        ("GET", "/servers"),
        ("GET", "/servers/github/tools"),
        ("GET", "/runtime/tools.ts"),
        ("GET", "/runtime/hash"),
        ("POST", "/runtime/check"),
        ("GET", "/search"),
        ("GET", "/types"),
        ("GET", "/scripts"),
        ("POST", "/scripts"),
        ("POST", "/runs"),
        ("GET", "/runs/20261124-101500-3f9a1c/script"),
        ("POST", "/runs/20261124-101500-3f9a1c/end"),
    ]:
        status, scope = _as(agent, method, path)
        assert status is None, (method, path)
        assert scope["toolscript.credential"] == "agent"
        assert scope["path"] == path


def test_the_agent_token_cannot_answer_prompts_or_reach_anything_else() -> None:
    """The attack: a script given the agent's URL read its own run's prompt and answered it."""
    agent = agent_token("secret")
    for method, path in [
        ("GET", "/runs/20261124-101500-3f9a1c/prompt"),
        ("POST", "/runs/20261124-101500-3f9a1c/prompt"),
        ("POST", "/approvals"),
        ("GET", "/schema"),
        ("GET", "/runtime/../runs/x/prompt"),
        ("GET", "/runs/x/../x/prompt"),
        ("POST", "/health"),
    ]:
        status, _ = _as(agent, method, path)
        assert status == 403, (method, path)


def test_the_owner_token_reaches_prompts_and_a_gateway_without_agents_knows_none() -> None:
    status, scope = _as("secret", "POST", "/runs/x/prompt")
    assert status is None and scope["toolscript.credential"] == "owner"
    status, _ = _as(agent_token("secret"), "GET", "/health", agent=False)
    assert status == 401  # the MCP face's HTTP guard: one token, no agent's


def test_a_run_token_reaches_its_calls_and_module_only() -> None:
    run = "r" * 33
    status, scope = _as(run, "POST", "/tools/a__b")
    assert status is None and scope["toolscript.run"] == "run-1"
    assert scope["toolscript.credential"] == "run"
    assert _as(run, "GET", "/runtime/hash")[0] is None
    for method, path in [("POST", "/runs"), ("GET", "/runs/x/prompt"), ("GET", "/health")]:
        assert _as(run, method, path)[0] == 401


def test_the_agent_token_starts_watches_and_stops_background_runs() -> None:
    agent = agent_token("secret")
    for method, path in [
        ("POST", "/runs/start"),
        ("GET", "/runs/20261124-101500-3f9a1c/output"),
        ("POST", "/runs/20261124-101500-3f9a1c/stop"),
        ("GET", "/runs/20261124-101500-3f9a1c/progress"),
    ]:
        status, scope = _as(agent, method, path)
        assert status is None, (method, path)
        assert scope["toolscript.credential"] == "agent"
    # the agent reports no progress of its own: that is a run's
    assert _as(agent, "POST", "/progress")[0] == 403


def test_a_run_token_reports_its_progress_and_reaches_no_other_run() -> None:
    """A script must never wait on, stop or start a run (its own or another's)."""
    run = "r" * 33
    status, scope = _as(run, "POST", "/progress")
    assert status is None and scope["toolscript.run"] == "run-1"
    for method, path in [
        ("POST", "/runs/start"),
        ("GET", "/runs/x/output"),
        ("POST", "/runs/x/stop"),
        ("GET", "/runs/x/progress"),
        ("POST", "/runs/x/end"),
        ("GET", "/progress"),
        ("POST", "/progress/../runs/x/stop"),
    ]:
        assert _as(run, method, path)[0] == 401, (method, path)


def test_a_run_token_reaches_the_resources_prompts_search_and_describe_its_module_asks() -> None:
    run = "r" * 33
    for method, path in [
        ("GET", "/servers/docs/resources"),
        ("POST", "/servers/docs/resources/read"),
        ("GET", "/servers/docs/prompts"),
        ("POST", "/servers/docs/prompts/get"),
        ("GET", "/runtime/search"),
        ("GET", "/runtime/describe"),
    ]:
        status, scope = _as(run, method, path)
        assert status is None, (method, path)
        assert scope["toolscript.run"] == "run-1"
    for method, path in [
        ("GET", "/search"),  # the owner's and the agent's: a script asks /runtime/search
        ("GET", "/servers/docs/tools"),
        ("POST", "/servers/docs/resources"),
        ("GET", "/servers/docs/resources/../../runs/x/prompt"),
    ]:
        assert _as(run, method, path)[0] == 401, (method, path)


def test_the_agent_token_lists_and_reads_what_servers_offer() -> None:
    agent = agent_token("secret")
    for method, path in [
        ("GET", "/servers/docs/resources"),
        ("POST", "/servers/docs/resources/read"),
        ("GET", "/servers/docs/prompts"),
        ("POST", "/servers/docs/prompts/get"),
        ("GET", "/runtime/describe"),
    ]:
        assert _as(agent, method, path)[0] is None, (method, path)


def test_a_token_spelled_with_escapes_is_refused_on_every_route() -> None:
    """The raw path past a token written %72... no longer lined up with the decoded one: the
    guard let it in and a tool call then answered 404 while other routes worked. A token
    counts only in its own (URL-safe) spelling."""
    sent: list[dict[str, Any]] = []
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request"}

    async def send(message: Any) -> None:
        sent.append(message)

    run = "r" * 33
    guard = TokenGuard(app, "secret", ["127.0.0.1:1"], lambda t: "run-1" if t == run else None)
    for token, spelled in [(run, "%72" + run[1:]), ("secret", "s%65cret")]:
        for method, rest in [("POST", "/tools/a__b"), ("GET", "/runtime/hash")]:
            sent.clear()
            seen.clear()
            scope = {
                "type": "http",
                "method": method,
                "path": f"/{token}{rest}",
                "raw_path": f"/{spelled}{rest}".encode(),
                "headers": [(b"host", b"127.0.0.1:1")],
            }
            asyncio.run(guard(scope, receive, send))
            assert seen == [] and sent[0]["status"] == 401, (spelled, rest)
    # its own spelling still reaches the call, with the raw path the tool name is read from
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/{run}/tools/a__b",
        "raw_path": f"/{run}/tools/a__b".encode(),
        "headers": [(b"host", b"127.0.0.1:1")],
    }
    asyncio.run(guard(scope, receive, send))
    assert seen[0]["raw_path"] == b"/tools/a__b"
