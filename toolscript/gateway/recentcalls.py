"""One recent successful call per tool, shown by get-types as an example of real use.

Examples in a tool's definition help a model fill in complex parameters, and few servers
write any; the gateway sees real calls. Per ``server__tool`` it keeps the arguments and
the result of the newest successful call, redacted (``plumbing/redact.redact_value``) and
then trimmed (``trimmed``: lists, objects, strings and the whole cut to
a size), in ``recent-calls.json`` in the project's state directory (0600). A call is noted
on its path as it is and settled (redacted, trimmed) off it, by the gateway's flush each
second or when get-types asks. The types setting that learns result types
(``types.inferResults``, ``gateway start --no-inferred``) switches this off too.

Redacted by a rule a script cannot read a secret through: the arguments lose the values of
keys named like credentials, whatever they hold, and any whole secret (in any spelling), and
are otherwise shown as the script sent them; the result loses the config's secrets, but what
it quotes of the arguments is shown as sent (``redact``'s ``written``). Masking each run of a
secret in the arguments (or in a result echoing them) told the agent which of its script's
guesses were runs of a token: ``github_pat_`` and a few more, then one character per round
trip. A whole token cannot be guessed: one in the arguments came from a result (which
reaches the script whole), and is kept out of the file all the same.

What a server returned is data: get-types shows it inside a comment, escaped by
``codegen/typescript.comment_text`` (``codegen/module.recent_call_comment``).
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from toolscript.plumbing.boundedread import read_state_file
from toolscript.plumbing.cachefiles import set_aside
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.redact import redact_value, redaction_margin, sent_text

__all__ = ["RecentCall", "RecentCalls", "shown", "shrunk", "trimmed"]

log = logging.getLogger("toolscript.recentcalls")

FILE_NAME = "recent-calls.json"
MAX_TOOLS = 500  # tools with a kept call; the oldest go first
MAX_NAME_LENGTH = 256  # characters of server__tool, as for learned result types


class Limits(NamedTuple):
    """How much of a call an example keeps."""

    arguments: int = 1000  # characters of the arguments' JSON
    result: int = 1000  # characters of the result's JSON
    string: int = 200  # characters of any one string
    items: int = 3  # elements of a list
    keys: int = 20  # members of an object
    depth: int = 6  # nesting kept; deeper is "…"


LIMITS = Limits()
MORE = "…"


class RecentCall(NamedTuple):
    """A call as get-types shows it: arguments and result as compact JSON (redacted and
    trimmed), and whether the result was cut."""

    arguments: str
    result: str
    cut: bool
    agents: bool = False  # made by a run of the agent's (``Run.agents``): shown to the agent

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


class RecentCalls:
    """The newest successful call of each tool, by ``server__tool``."""

    def __init__(
        self,
        state_dir: Path | None,
        secrets: Callable[[], Iterable[str]],
        enabled: bool = True,
        limits: Limits = LIMITS,
    ) -> None:
        self.path = state_dir / FILE_NAME if state_dir is not None else None
        self.enabled = enabled
        self.limits = limits
        self._secrets = secrets
        # noted, not yet redacted: arguments and result, each shrunk, whose run made it,
        # the secrets of the config the call was made under, and the arguments whole
        # (what the result may quote of them is shown as sent), and the secrets its run
        # was handed
        self._pending: dict[
            str,
            tuple[tuple[Any, bool], tuple[Any, bool], bool, tuple[str, ...], Any, set[str]],
        ] = {}
        self._lock = threading.Lock()  # noted on the event loop, settled in a thread
        self._settling = threading.Lock()  # settled in more than one thread at a time
        self.dirty = False
        self.version = 0  # counted up at each change of the calls (get-types' kept renders)
        self.calls: dict[str, RecentCall] = self._load() if enabled else {}

    def note(
        self,
        qualified: str,
        arguments: Any,
        result: Any,
        *,
        agents: bool = False,
        secrets: Iterable[str] | None = None,
        received: set[str] | None = None,
    ) -> None:
        """Remember a successful call: on the call's path, only as much of it as could be
        shown is kept (``shrunk``); ``settle`` redacts it, of ``secrets`` (those of the config
        the call was made under) as well as the config's then. ``agents``: a run of the
        agent's made it (``of(..., agents=True)`` shows no other: a person's calls are
        theirs). ``received``: the secrets the run making it was handed (``Run.received``:
        runs of them in its arguments are masked, not shown as written)."""
        if self.enabled and len(qualified) <= MAX_NAME_LENGTH:
            known = tuple(self._secrets() if secrets is None else secrets)
            kept = (
                shrunk(arguments, known, self.limits, self.limits.arguments),
                shrunk(result, known, self.limits, self.limits.result),
                agents,
                known,
                arguments,
                set() if received is None else received,
            )
            with self._lock:
                self._pending[qualified] = kept

    def settle(self) -> None:
        """Redact and trim the calls noted since the last time."""
        with self._settling:
            with self._lock:
                pending, self._pending = self._pending, {}
            if not pending:
                return
            now = tuple(self._secrets())
            for qualified, (arguments, result, agents, noted, sent, received) in pending.items():
                secrets = tuple(dict.fromkeys((*noted, *now)))
                # whole secrets and credential-named keys' values (the module's docstring)
                written = sent_text(sent)
                shown_arguments, _ = shown(
                    arguments,
                    secrets,
                    self.limits,
                    self.limits.arguments,
                    written=written,
                    received=received,
                )
                shown_result, cut = shown(
                    result,
                    secrets,
                    self.limits,
                    self.limits.result,
                    written=written,
                    received=received,
                )
                self.calls.pop(qualified, None)  # the newest last: the oldest are dropped first
                self.calls[qualified] = RecentCall(shown_arguments, shown_result, cut, agents)
            while len(self.calls) > MAX_TOOLS:
                del self.calls[next(iter(self.calls))]
            self.dirty = True
            self.version += 1

    def of(self, qualified: str, *, agents: bool = False) -> RecentCall | None:
        """The newest call of ``qualified`` as get-types shows it (None: none kept).
        ``agents``: asked for the agent, which is shown only a call a run of its own made."""
        if not self.enabled:
            return None
        self.settle()
        call = self.calls.get(qualified)
        return None if call is None or (agents and not call.agents) else call

    def save(self) -> None:
        self.settle()
        if self.path is None or not self.dirty:
            return
        self.dirty = False
        with self._settling:
            kept = {name: call.to_dict() for name, call in self.calls.items()}
        write_private(self.path, json.dumps(kept, separators=(",", ":")))

    def _load(self) -> dict[str, RecentCall]:
        if self.path is None:
            return {}
        try:
            found = json.loads(read_state_file(self.path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError) as exc:
            return self._set_aside(f"unreadable: {exc}")
        if not isinstance(found, dict):
            return self._set_aside(f"a JSON {type(found).__name__}, not an object of calls")
        kept: dict[str, RecentCall] = {}
        for qualified, call in found.items():
            try:
                loaded = RecentCall(**call)
            except TypeError:
                return self._set_aside(f"the entry {qualified[:MAX_NAME_LENGTH]!r} is no call")
            # Kept within today's limits, whatever wrote the file.
            if (
                len(qualified) <= MAX_NAME_LENGTH
                and isinstance(loaded.arguments, str)
                and isinstance(loaded.result, str)
            ):
                kept[qualified] = RecentCall(
                    _cut(loaded.arguments, self.limits.arguments),
                    _cut(loaded.result, self.limits.result),
                    bool(loaded.cut) or len(loaded.result) > self.limits.result,
                    loaded.agents is True,
                )
        return dict(list(kept.items())[-MAX_TOOLS:])

    def _set_aside(self, reason: str) -> dict[str, RecentCall]:
        assert self.path is not None
        try:
            set_aside(self.path, f"{reason}; recent calls are kept again")
        except OSError as exc:
            log.warning("%s is damaged (%s); recent calls are kept again", self.path, exc)
        return {}


def trimmed(
    value: Any, secrets: Iterable[str] = (), limits: Limits = LIMITS, total: int | None = None
) -> tuple[str, bool]:
    """``value`` redacted (``redact_value`` with ``secrets``) as compact JSON within
    ``limits`` (``total`` characters in all), and whether anything was cut: long strings
    end in ``…``, lists keep their first items then ``"… N more"``, objects their first
    members then ``"…": "N more"``. Strings are redacted before they are cut short, so a
    cut never leaves a piece of a secret that the whole would have hidden."""
    known = tuple(secrets)
    return shown(shrunk(value, known, limits, total), known, limits, total)


def shrunk(
    value: Any, secrets: tuple[str, ...], limits: Limits = LIMITS, total: int | None = None
) -> tuple[Any, bool]:
    """As much of ``value`` as ``trimmed`` could show, in work bounded by ``total`` (first
    items, members and levels), with whether anything was left out. Strings keep room
    for any spelling of a secret that starts within what is shown, for ``shown`` to hide."""
    margin = redaction_margin(secrets)
    room = total if total is not None else limits.result
    return _Shrink(limits, room, limits.string + margin).shrink(value, 0)


def shown(
    value: tuple[Any, bool],
    secrets: tuple[str, ...],
    limits: Limits,
    total: int | None = None,
    *,
    written: str = "",
    received: Iterable[str] = (),
) -> tuple[str, bool]:
    """A ``shrunk`` value redacted, its strings cut, as compact JSON of ``total`` at most
    (``written``: what the script sent, its runs of a secret shown as sent: ``redact``'s)."""
    total = total if total is not None else limits.result
    part, cut = value
    masked = redact_value(part, secrets, written=written, received=received)
    kept, cut_strings = _cut_strings(masked, limits.string)
    text = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    if len(text) > total:
        return _cut(text, total), True
    return text, cut or cut_strings


class _Shrink:
    """A value's first items, members and levels, within about ``total`` characters."""

    def __init__(self, limits: Limits, total: int, string: int) -> None:
        self.limits, self.string, self.room, self.cut = limits, string, total, False

    def shrink(self, item: Any, depth: int) -> tuple[Any, bool]:
        return self._shrink(item, depth), self.cut

    def _shrink(self, item: Any, depth: int) -> Any:
        if self.room <= 0 or (
            isinstance(item, dict | list) and item and depth >= self.limits.depth
        ):
            self.cut = True
            return MORE
        if isinstance(item, str):
            self.room -= min(len(item), self.limits.string) + 3
            if len(item) > self.string:
                self.cut = True
                return item[: self.string] + MORE
            return item
        if isinstance(item, list):
            kept = []
            for element in item[: self.limits.items]:
                if self.room <= 0:
                    break
                kept.append(self._shrink(element, depth + 1))
            if len(item) > len(kept):
                self.cut = True
                kept.append(f"{MORE} {len(item) - len(kept)} more")
            return kept
        if isinstance(item, dict):
            kept_members: dict[str, Any] = {}
            for key, member in itertools.islice(item.items(), self.limits.keys):
                if self.room <= 0:
                    break
                self.room -= min(len(str(key)), self.limits.string) + 4
                kept_members[str(key)[: self.string]] = self._shrink(member, depth + 1)
            if len(item) > len(kept_members):
                self.cut = True
                kept_members[MORE] = f"{len(item) - len(kept_members)} more"
            return kept_members
        self.room -= 8
        return item


def _cut_strings(value: Any, limit: int) -> tuple[Any, bool]:
    """``value`` with every string (and key) longer than ``limit`` cut, and whether one was."""
    cut = False

    def walk(item: Any) -> Any:
        nonlocal cut
        if isinstance(item, str):
            if len(item) > limit:
                cut = True
                return item[:limit] + MORE
            return item
        if isinstance(item, list):
            return [walk(element) for element in item]
        if isinstance(item, dict):
            return {walk(key): walk(member) for key, member in item.items()}
        return item

    return walk(value), cut


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + MORE
