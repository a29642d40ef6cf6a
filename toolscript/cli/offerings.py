"""``list-resources``, ``read-resource``, ``list-prompts``, ``get-prompt``: what a server
offers besides tools, from the gateway (reads and gets follow the tool policy)."""

from __future__ import annotations

import base64
import json
import sys
from typing import Annotated, Any
from urllib.parse import quote

from toolscript.cli.client import config_for_the_gateway, for_terminal, gateway_client
from toolscript.cli.lazy import typer
from toolscript.cli.options import ConfigOption, HeaderOption, JsonOption
from toolscript.cli.output import print_json, print_rows, write_shown
from toolscript.errors import UsageError
from toolscript.store.outputs import visible_controls

__all__ = ["get_prompt", "list_prompts", "list_resources", "read_resource"]

ServerArgument = Annotated[str, typer.Argument(help="Server name, as in list-servers.")]


def _path(server: str, rest: str) -> str:
    return f"/servers/{quote(server, safe='')}/{rest}"


def _ask(
    config: str | None, server: str, method: str, rest: str, body: Any = None, *, exact: bool
) -> Any:
    """What the gateway answers; ``exact`` for --json, else ``for_terminal``."""
    loaded, read = config_for_the_gateway(config)
    if read:
        loaded.server(server)  # a clear "server not found" even without a gateway
    with gateway_client(loaded, servers=[server]) as client:
        if method == "GET":
            return client.get_json(_path(server, rest), exact=exact)
        read = client.request("POST", _path(server, rest), json=body).json()
        return read if exact else for_terminal(read)


def list_resources(
    server: ServerArgument,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """List a server's resources and resource templates.

    Examples:

    \b
        toolscript list-resources everything
        toolscript list-resources everything --json | jq -r '.resources[].uri'

    A template's parameters are the names in braces of its URI template: read
    through it with read-resource --template NAME --arg PARAM=VALUE (or fill
    them in and read the URI).
    """
    listed: dict[str, Any] = _ask(config, server, "GET", "resources", exact=as_json)
    if as_json:
        print_json(listed)
        return
    rows = [
        [item.get("uri", ""), item.get("mimeType", ""), item.get("name", "")]
        for item in listed["resources"]
    ] + [
        [item.get("uriTemplate", ""), item.get("mimeType", ""), item.get("name", "")]
        for item in listed["templates"]
    ]
    if not rows:  # say so, rather than print nothing
        sys.stderr.write(
            f"{server} offers no resources (`toolscript list-tools {server}`: its tools)\n"
        )
        if not header:  # a script asking for the header row still gets it
            return
    print_rows(["uri", "mime type", "name"], rows, header=header)


def read_resource(
    server: ServerArgument,
    uri: Annotated[
        str | None,
        typer.Argument(
            help="The resource's URI, as list-resources shows it (or a template's, filled in).",
            show_default=False,
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(
            "--template",
            help="Read through one of the server's resource templates instead (its URI "
            "template or name, as list-resources shows them), filled in by --arg.",
            show_default=False,
        ),
    ] = None,
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            "-a",
            help="A --template parameter as KEY=VALUE (repeat it for each); the value is "
            "percent-encoded into the URI.",
        ),
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read one resource: its text, or its bytes (written as they are when piped).

    Examples:

    \b
        toolscript read-resource everything demo://resource/static/document/features.md
        toolscript read-resource files file:///logo.png > logo.png
        toolscript read-resource everything --template "Dynamic Text Resource" -a resourceId=3
    """
    if (uri is None) == (template is None):
        raise UsageError(
            "read-resource takes a resource's URI or --template, one of them",
            hint=f"`toolscript list-resources {server}` lists its resources and templates",
        )
    if arg and template is None:
        raise UsageError("--arg fills a --template's parameters: give --template too")
    body: dict[str, Any] = (
        {"uri": uri}
        if template is None
        else {"template": template, "params": _key_values(arg or [])}
    )
    read: dict[str, Any] = _ask(config, server, "POST", "resources/read", body, exact=True)
    if as_json:
        print_json(read)
        return
    for item in read.get("contents", []):
        if isinstance(item.get("text"), str):
            text = item["text"]  # as it is into a file (typer.echo drops escapes there)
            write_shown(text if text.endswith("\n") else text + "\n")  # shown, not obeyed
            sys.stdout.flush()
        elif isinstance(item.get("blob"), str):
            data = base64.b64decode(item["blob"])
            if sys.stdout.isatty():  # bytes on a terminal would be obeyed, not shown
                kind = visible_controls(str(item.get("mimeType") or "binary data"))
                typer.echo(
                    f"({len(data)} bytes of {kind}: redirect the output to a file, or use --json)"
                )
            else:
                sys.stdout.buffer.write(data)
                sys.stdout.flush()


def list_prompts(
    server: ServerArgument,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """List a server's prompts and their arguments (a * marks a required one).

    Examples:

    \b
        toolscript list-prompts everything
        toolscript list-prompts everything --json | jq -r '.prompts[].name'
    """
    listed: dict[str, Any] = _ask(config, server, "GET", "prompts", exact=as_json)
    if as_json:
        print_json(listed)
        return
    rows = [
        [
            prompt.get("name", ""),
            " ".join(
                str(argument.get("name", "")) + ("*" if argument.get("required") else "")
                for argument in prompt.get("arguments") or []
            ),
            prompt.get("description") or prompt.get("title") or "",
        ]
        for prompt in listed["prompts"]
    ]
    if not rows:  # say so, rather than print nothing
        sys.stderr.write(
            f"{server} offers no prompts (`toolscript list-tools {server}`: its tools)\n"
        )
        if not header:  # a script asking for the header row still gets it
            return
    print_rows(["prompt", "arguments", "description"], rows, header=header)


def get_prompt(
    server: ServerArgument,
    name: Annotated[str, typer.Argument(help="The prompt's name, as list-prompts shows it.")],
    arg: Annotated[
        list[str] | None,
        typer.Option("--arg", "-a", help="An argument as KEY=VALUE (repeat it for each)."),
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Get a prompt's messages, its arguments filled in.

    Examples:

    \b
        toolscript get-prompt everything args-prompt --arg city=Paris
        toolscript get-prompt everything simple-prompt --json
    """
    arguments = _key_values(arg or [])
    got: dict[str, Any] = _ask(
        config, server, "POST", "prompts/get", {"name": name, "arguments": arguments}, exact=as_json
    )
    if as_json:
        print_json(got)
        return
    for message in got.get("messages", []):
        content = message.get("content") or {}
        text = (
            content["text"]
            if isinstance(content.get("text"), str)
            else json.dumps(content, ensure_ascii=False)
        )
        typer.echo(f"[{message.get('role', '')}]\n{text}")


def _key_values(given: list[str]) -> dict[str, str]:
    """``--arg KEY=VALUE`` options as a mapping (the value may hold ``=``)."""
    pairs: dict[str, str] = {}
    for each in given:
        key, equals, value = each.partition("=")
        if not equals or not key:
            raise UsageError(f"--arg takes KEY=VALUE, not {each!r}")
        pairs[key] = value
    return pairs
