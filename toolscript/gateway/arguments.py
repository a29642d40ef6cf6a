"""A tool's arguments checked against the input schema its server sent, which is untrusted.

The gateway checks arguments before a call to give a script a plain error early; the server
checks them again itself. So whatever in a schema the gateway cannot evaluate safely is left
to the server, never fetched, run or waited on:

- a ``$ref`` resolves inside the schema only: a URL is never fetched, a file never read;
- the server's regular expressions (``pattern``, ``patternProperties`` and the keywords that
  depend on them) are not run: Python's ``re`` can take exponential time on one;
- one check evaluates at most ``MAX_STEPS`` keywords: ``$ref`` lets a small schema name the
  same subschema twice at each of many levels (``allOf: [{$ref: next}, {$ref: next}]``),
  2^levels evaluations; each item or key a keyword goes through (``PER_ELEMENT``) counts
  as one, its schema empty too (``items: {}`` over a million values took 2 s), and each
  pair of items ``uniqueItems`` compares (5,000 objects took a minute);
- a schema that cannot be evaluated (a ``$ref`` loop, a keyword of the wrong type) is not.

Checks run on the gateway's event loop: each of these would stall every run with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is imported by a tool's first call (its check is made then)
    import jsonschema
    from jsonschema.protocols import Validator

__all__ = ["MAX_STEPS", "PER_ELEMENT", "PER_PAIR", "ArgumentCheck"]

MAX_STEPS = 20_000  # keyword evaluations one check may take (a usual call: tens)
# Keywords that go through each item or key of the value they check: one step each.
PER_ELEMENT = frozenset(
    {
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
    }
)
# uniqueItems compares each item with every other (objects cannot be sorted): one step a pair.
PER_PAIR = frozenset({"uniqueItems"})

Keyword = Callable[..., Any]


class _TooCostly(Exception):
    """A check past ``MAX_STEPS``."""


class ArgumentCheck:
    """The check of one tool's arguments against its server's input schema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        import jsonschema
        from referencing import Registry

        self.schema = schema
        self._left = 0
        self._validator: Validator | None = None
        try:  # a "$schema" that is no string (a list) fails here: unhashable
            base = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
        except Exception:
            return
        keywords = {
            name: self._counted(keyword, per_element=name in PER_ELEMENT, per_pair=name in PER_PAIR)
            for name, keyword in base.VALIDATORS.items()
        }
        keywords |= {"pattern": _unchecked, "patternProperties": _unchecked}
        keywords["additionalProperties"] = _beside_no_patterns(keywords["additionalProperties"])
        if "patternProperties" in json.dumps(schema):  # which keys a pattern takes is unknown
            keywords |= {"unevaluatedProperties": _unchecked}
        cls: type[Validator] = jsonschema.validators.extend(base, keywords)  # type: ignore[no-untyped-call]
        self._validator = cls(schema, registry=Registry())  # a Registry that retrieves nothing

    def errors(self, arguments: Any) -> list[jsonschema.ValidationError] | None:
        """What is wrong with ``arguments``; None when the schema cannot be evaluated within
        the bounds above (the server checks them)."""
        if self._validator is None:
            return None
        self._left = MAX_STEPS
        try:
            return list(self._validator.iter_errors(arguments))
        except Exception:  # a loop, a $ref outside the schema, a malformed keyword, _TooCostly
            return None

    def _counted(self, keyword: Keyword, *, per_element: bool, per_pair: bool) -> Keyword:
        def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            size = len(instance) if isinstance(instance, list | dict) else 0
            self._left -= 1 + (size if per_element else 0) + (size * size if per_pair else 0)
            if self._left < 0:
                raise _TooCostly
            return keyword(validator, value, instance, schema)

        return counted


def _beside_no_patterns(keyword: Keyword) -> Keyword:
    """``additionalProperties``, left to the server in an object schema with
    ``patternProperties`` (which keys those take is unknown), checked in every other."""

    def additional(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if "patternProperties" in schema:
            return iter(())
        return keyword(validator, value, instance, schema)

    return additional


def _unchecked(*_: Any) -> Iterator[jsonschema.ValidationError]:
    """A keyword the gateway leaves to the server."""
    return iter(())
