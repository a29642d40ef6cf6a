"""A narrowed module (``GET /runtime/tools.ts?server=``) is rendered once per module
(``gateway/narrowed.py``): a script asking for a server of 2,000 tools in a loop had it
rendered at each request (tens of milliseconds on the event loop each), and every other
run's calls waited behind the renders, seconds apiece."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolscript.errors import NotFoundError
from toolscript.gateway.narrowed import NarrowedModules


class Renderer:
    def __init__(self) -> None:
        self.made: list[str] = []

    def __call__(self, text: str) -> Callable[[], bytes]:
        def render() -> bytes:
            self.made.append(text)
            return text.encode()

        return render


def test_a_narrowed_module_asked_again_is_not_rendered_again() -> None:
    narrowed, renders = NarrowedModules(), Renderer()
    first = narrowed.get("h1", "many", None, renders("many"))
    for _ in range(100):
        assert narrowed.get("h1", "many", None, renders("many")) == first
    assert renders.made == ["many"]
    assert first[0] == b"many" and len(first[1]) == 16


def test_a_new_module_is_rendered_anew() -> None:
    narrowed, renders = NarrowedModules(), Renderer()
    narrowed.get("h1", "many", None, renders("old"))
    assert narrowed.get("h2", "many", None, renders("new"))[0] == b"new"
    assert renders.made == ["old", "new"]


def test_the_least_recently_asked_go_past_the_bound() -> None:
    narrowed, renders = NarrowedModules(kept=2), Renderer()
    narrowed.get("h", "a", None, renders("a"))
    narrowed.get("h", "b", None, renders("b"))
    narrowed.get("h", "a", None, renders("a"))  # kept, asked again
    narrowed.get("h", "b", "t", renders("b.t"))  # "b" goes
    narrowed.get("h", "a", None, renders("a"))
    narrowed.get("h", "b", None, renders("b"))
    assert renders.made == ["a", "b", "b.t", "b"]


def test_what_a_render_raises_is_not_kept() -> None:
    narrowed = NarrowedModules()

    def unknown() -> bytes:
        raise NotFoundError("no server 'nope'")

    for _ in range(2):
        with pytest.raises(NotFoundError):
            narrowed.get("h", "nope", None, unknown)
