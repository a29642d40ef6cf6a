"""``auth``: sign in to http and sse servers that use OAuth, list and forget sign-ins."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json, print_rows
from toolscript.config import cleartext_host, load_config
from toolscript.errors import ConfigError, ToolscriptError, UsageError

__all__ = ["auth_command"]


def auth_command(
    server: Annotated[
        str | None,
        typer.Argument(help="The configured http or sse server to sign in to.", show_default=False),
    ] = None,
    show: Annotated[
        bool, typer.Option("--list", help="List the servers signed in, and until when.")
    ] = False,
    logout: Annotated[
        bool, typer.Option("--logout", help="Forget SERVER's sign-in (tokens and client).")
    ] = False,
    no_browser: Annotated[
        bool,
        typer.Option("--no-browser", help="Only print the sign-in URL; open no browser."),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=5, max=3600, help="Seconds to wait for the sign-in."),
    ] = 300.0,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sign in to a server that uses OAuth (GitHub's, Sentry's, Linear's, Notion's, ...).

    Opens the browser at the server's sign-in page (and prints its URL, for
    machines without one) and keeps the tokens for your user, outside the
    project, readable only by you. A running gateway picks the server up within
    seconds; it refreshes the tokens itself and never opens a browser.

    Examples:

    \b
        toolscript auth sentry
        toolscript auth linear --no-browser     # print the URL only
        toolscript auth --list
        toolscript auth --logout sentry
    """
    from toolscript.store import tokens

    if show:
        kept = tokens.signed_in()
        if as_json:
            print_json([sign_in.to_dict() | {"url": _shown(sign_in.url)} for sign_in in kept])
            return
        if not kept:
            sys.stderr.write("no server is signed in; sign in with: toolscript auth SERVER\n")
            return
        print_rows(
            ["server", "url", "signed in", "token until", "refresh"],
            [
                [
                    sign_in.server,
                    _shown(sign_in.url),
                    _when(sign_in.signed_in_at),
                    _when(sign_in.expires_at) if sign_in.expires_at else "no expiry",
                    "yes" if sign_in.refreshable else "no",
                ]
                for sign_in in kept
            ],
        )
        return
    if server is None and logout:
        raise UsageError(
            "name the server to sign out of",
            hint="toolscript auth --logout SERVER (--list names them)",
        )
    if server is None:
        raise UsageError("name a server to sign in to", hint="toolscript auth SERVER, or --list")
    if logout and _forget_kept(server, config, as_json):
        return
    configured = load_config(config, require_trust=True).server(server)
    if configured.unset:
        # Expanded as "" the URL (or its client secret) is another: never signed in to.
        names = ", ".join(dict.fromkeys(name for name, _ in configured.unset))
        where = ", ".join(f"${{{name}}} in {at}" for name, at in configured.unset)
        raise ConfigError(
            f"server '{server}' names environment variables not set: {names} ({where})",
            hint=f"export {names.split(', ')[0]} (each named), then run toolscript auth {server}",
        )
    if configured.transport not in ("http", "sse") or configured.url is None:
        raise UsageError(
            f"server '{server}' is a {configured.transport} server: only http and sse servers "
            "sign in with OAuth",
            hint='a local tool file\'s credentials go in its "secrets" (localTools.files)'
            if configured.transport == "local"
            else 'a stdio server takes its credentials from its entry\'s "env" instead, '
            'e.g. "env": {"API_KEY": "${API_KEY}"}, with the variable exported',
        )
    if logout:
        if not tokens.forget(configured.url):
            raise UsageError(
                f"server '{server}' is not signed in",
                hint="`toolscript auth --list` lists the servers signed in",
            )
        _say(as_json, {"server": server, "signed_in": False}, f"signed out of {server}")
        return
    import anyio

    from toolscript.upstream.oauth import sign_in

    host = cleartext_host(configured.url)
    if host:
        sys.stderr.write(
            f"warning: {server}'s URL is http://, not https://: its tokens go to {host} "
            "unencrypted, readable on the network between\n"
        )

    def announce(text: str) -> None:
        sys.stderr.write(text + "\n")

    store = anyio.run(
        lambda: sign_in(configured, open_browser=not no_browser, announce=announce, timeout=timeout)
    )
    done = next((s for s in tokens.signed_in() if s.url == store.url), None)
    until = f" (token until {_when(done.expires_at)})" if done and done.expires_at else ""
    _say(
        as_json,
        done.to_dict() if done else {"server": server, "signed_in": True},
        f"signed in to {server}{until}",
    )


def _forget_kept(name: str, config: str | None, as_json: bool) -> bool:
    """Sign out of a kept sign-in that ``auth --list`` shows but the config does not reach
    (its server taken out of the config, its URL changed, the project gone or not trusted),
    named as listed: by its server name, when one alone has it, or by its URL. Its refresh
    token stayed usable on disk, and nothing but deleting a hashed file removed it. False
    when the config is left to decide (it names ``name``, or nothing kept matches)."""
    from toolscript.store import tokens

    kept = [s for s in tokens.signed_in() if name in (s.server, s.url)]
    if not kept:
        return False
    try:
        if load_config(config, require_trust=True).server(name):
            return False  # the configured server's URL: its own sign-in
    except ToolscriptError:  # no such server here, or no config usable: the kept ones decide
        pass
    if len(kept) > 1:
        raise UsageError(
            f"{len(kept)} sign-ins are kept for a server named {name!r}",
            hint="name the one to forget by its URL: toolscript auth --logout URL "
            "(--list shows each)",
        )
    tokens.forget(kept[0].url)
    _say(
        as_json,
        {"server": kept[0].server, "url": kept[0].url, "signed_in": False},
        f"signed out of {kept[0].server} ({kept[0].url})",
    )
    return True


def _shown(url: str) -> str:
    """A kept sign-in's URL (expanded: a ``${VAR}`` in it holds its value) with a password
    or a credential query parameter in it masked."""
    from toolscript.plumbing.redact import embedded_secrets, redact

    return redact(url, embedded_secrets(url))


def _when(stamp: float | None) -> str:
    return "-" if not stamp else time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _say(as_json: bool, data: dict[str, object], text: str) -> None:
    if as_json:
        print_json(data)
    else:
        sys.stdout.write(text + "\n")
