"""``get-types``: TypeScript declarations and a usage example, as Markdown."""

from __future__ import annotations

import re
from typing import Annotated, Any

from toolscript.cli.client import config_for_the_gateway, gateway_client
from toolscript.cli.lazy import typer
from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json, write_shown
from toolscript.config import Config
from toolscript.store.packages import offered_note

__all__ = ["get_types", "render_markdown"]


def render_markdown(answer: dict[str, Any]) -> str:
    """First block: the types; second: a clean-import example calling each tool."""
    calls = []
    for info, expression in zip(answer["tools"], answer["examples"], strict=True):
        variable = f"{info['function'].lstrip('_') or 'tool'}Result"
        calls.append(f"const {variable} = await {expression};\nconsole.log({variable});")
    example = 'import { tools } from "toolscript";\n\n' + "\n\n".join(calls)
    note = offered_note(answer.get("packages") or [])
    declarations = answer["declarations"] + (f"\n\n{note.rstrip()}" if note else "")
    return _fenced(declarations) + "\n" + _fenced(example)


def _fenced(code: str) -> str:
    """``code`` in a Markdown code block whose fence no backticks in it (a server's
    description, say) can close: longer than the longest run of them."""
    longest = max((len(run) for run in re.findall("`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}typescript\n{code}\n{fence}\n"


def _one_name(loaded: Config, server: str, tool: str | None) -> tuple[str, str | None]:
    """``SERVER [TOOL]`` as given, or one word naming both the way search, approve and
    scripts write them (``time.get_current_time``, ``tools.time.getCurrentTime``)."""
    names = [configured.name for configured in loaded.servers]
    if tool is not None or server in names:
        return server, tool
    from toolscript.codegen.naming import to_camel_case, without_namespace

    spellings = {spelled for name in names for spelled in (name, to_camel_case(name))}
    dotted = without_namespace(server, spellings)
    for name in names:
        for spelled in dict.fromkeys((name, to_camel_case(name))):
            if dotted == spelled:
                return name, None
            if dotted.startswith(spelled + ".") and len(dotted) > len(spelled) + 1:
                return name, dotted[len(spelled) + 1 :]
    return server, tool


def _asked(loaded: Config, server: str, tools: list[str]) -> list[tuple[str, str | None]]:
    """Each ``(server, tool)`` the words name: ``SERVER TOOL...``, or words naming both
    (``fx.fail time.convert_time``); a later word without a dot is a tool of the server
    named before it."""
    asked = [_one_name(loaded, server, None)]
    for word in tools:
        named = _one_name(loaded, word, None) if "." in word else (word, None)
        if named[1] is not None:
            asked.append(named)
        elif asked[-1][1] is None and len(asked) == 1:
            asked[0] = (asked[0][0], word)  # SERVER TOOL
        else:
            asked.append((asked[-1][0], word))
    return list(dict.fromkeys(asked))


def get_types(
    server: Annotated[str, typer.Argument(help="Server name, as in list-servers.")],
    tools: Annotated[
        list[str] | None,
        typer.Argument(help="Tools (MCP name or camelCase); all the server's when omitted."),
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print TypeScript types and a usage example for a server's tools.

    Markdown: the first code block holds the declarations (parameter and result
    types, method signatures), the second a ready-to-run example.

    Examples:

    \b
        toolscript get-types time
        toolscript get-types github create_issue
        toolscript get-types github.create_issue     # as approve and search name it
        toolscript get-types github create_issue add_issue_comment   # several at once
    """
    loaded, read = config_for_the_gateway(config)
    asked = _asked(loaded, server, tools or [])
    for name, _ in asked:
        if read:
            loaded.server(name)
    if len(asked) == 1:
        server, tool = asked[0]
        params = {"server": server} | ({"tool": tool} if tool else {})
    else:
        # the gateway's qualified names (server__tool; a server name alone: all its tools)
        from toolscript.codegen.naming import check_type_names

        qualified = [f"{name}__{tool}" if tool else name for name, tool in asked]
        check_type_names(qualified)
        params = {"names": ",".join(qualified)}
    with gateway_client(loaded, servers=[name for name, _ in asked]) as client:
        answer: dict[str, Any] = client.get_json("/types", exact=as_json, **params)
    if as_json:
        print_json(answer)
        return
    write_shown(render_markdown(answer))  # a server's descriptions: shown, never obeyed
