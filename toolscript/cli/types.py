"""``get-types``: TypeScript declarations and a usage example, as Markdown."""

from __future__ import annotations

import re
from typing import Annotated, Any

from toolscript.cli.client import gateway_client
from toolscript.cli.lazy import typer
from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json
from toolscript.config import Config, load_config
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
    from toolscript.codegen.naming import to_camel_case

    dotted = server.removeprefix("tools.")
    for name in names:
        for spelled in dict.fromkeys((name, to_camel_case(name))):
            if dotted == spelled:
                return name, None
            if dotted.startswith(spelled + ".") and len(dotted) > len(spelled) + 1:
                return name, dotted[len(spelled) + 1 :]
    return server, tool


def get_types(
    server: Annotated[str, typer.Argument(help="Server name, as in list-servers.")],
    tool: Annotated[
        str | None, typer.Argument(help="One tool (MCP name or camelCase); all when omitted.")
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
    """
    loaded = load_config(config)
    server, tool = _one_name(loaded, server, tool)
    loaded.server(server)
    params = {"server": server} | ({"tool": tool} if tool else {})
    with gateway_client(loaded) as client:
        answer: dict[str, Any] = client.get_json("/types", exact=as_json, **params)
    if as_json:
        print_json(answer)
        return
    typer.echo(render_markdown(answer), nl=False)
