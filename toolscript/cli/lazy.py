"""typer, imported only when a command's options are read, never to run a command.

The commands that only ask the gateway something (search, get-types, list-tools,
list-servers, gateway status, runs) start without typer, which costs more than they do
(about 40 ms of CPU): ``entry.py`` parses their options and calls their functions. Their
modules write ``from toolscript.cli.lazy import typer`` and use it as typer:

- ``typer.Option(...)`` and ``typer.Argument(...)`` are recorded, and made typer's own when
  ``main.py`` registers the command (``resolved``); so are ``typer.Typer(...)`` groups
  (``LazyTyper``, made a typer.Typer by ``real_app``) with their commands and callback;
- ``typer.echo`` writes as click's echo writes, without importing it; ``typer.Exit(code)``
  is a SystemExit, which click and typer's test runner pass on as the exit code;
- any other name (``typer.Context``) is typer's own, imported on first use.
"""

from __future__ import annotations

import re
import sys
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

__all__ = ["Deferred", "LazyTyper", "real_app", "resolved", "typer"]

# click.utils.strip_ansi: what click.echo leaves out of text going anywhere but a terminal.
_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


class Deferred:
    """``typer.Option(...)`` or ``typer.Argument(...)``, made when the command is registered."""

    def __init__(self, kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.kind, self.args, self.kwargs = kind, args, kwargs

    def real(self) -> Any:
        import typer as real

        return getattr(real, self.kind)(*self.args, **self.kwargs)


class LazyTyper:
    """``typer.Typer(...)``: its settings, commands and callback, kept for ``real_app``."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.registered: list[tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any]]] = []

    def _record(self, how: str, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            self.registered.append((how, args, kwargs, function))
            return function

        return register

    def command(self, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        return self._record("command", *args, **kwargs)

    def callback(self, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        return self._record("callback", *args, **kwargs)


def real_app(app: Any) -> Any:
    """The typer.Typer a LazyTyper stands for (a typer.Typer as it is)."""
    if not isinstance(app, LazyTyper):
        return app
    import typer as real

    made = real.Typer(**app.settings)
    for how, args, kwargs, function in app.registered:
        getattr(made, how)(*args, **kwargs)(resolved(function))
    return made


def resolved(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with its annotations evaluated and every Deferred made typer's own, as
    typer reads them to build the command's options (and its --help)."""
    hints = typing.get_type_hints(function, include_extras=True)
    annotations = {}
    for name, hint in hints.items():
        if typing.get_origin(hint) is typing.Annotated:
            base, *metadata = typing.get_args(hint)
            made = [item.real() if isinstance(item, Deferred) else item for item in metadata]
            hint = typing.Annotated[(base, *made)]
        annotations[name] = hint
    function.__annotations__ = annotations
    return function


def _exit(code: int = 0) -> SystemExit:
    return SystemExit(code)


def _echo(message: Any = None, nl: bool = True, err: bool = False) -> None:
    """click.echo for text: a newline after it, ANSI codes left out off a terminal."""
    stream = sys.stderr if err else sys.stdout
    text = "" if message is None else str(message)
    if nl:
        text += "\n"
    if text and not stream.isatty():
        text = _ANSI.sub("", text)
    if text:
        stream.write(text)
    stream.flush()


class _Typer:
    """The ``typer`` these modules see (the module docstring says what it does)."""

    Typer = LazyTyper
    Exit = staticmethod(_exit)
    echo = staticmethod(_echo)

    @staticmethod
    def Option(*args: Any, **kwargs: Any) -> Deferred:
        return Deferred("Option", args, kwargs)

    @staticmethod
    def Argument(*args: Any, **kwargs: Any) -> Deferred:
        return Deferred("Argument", args, kwargs)

    def __getattr__(self, name: str) -> Any:
        import typer as real

        return getattr(real, name)


if TYPE_CHECKING:
    import typer  # what the stand-in stands for, to the type checker
else:
    typer = _Typer()
