"""A server's schema whose ``$ref`` aliases name one another with no object or array between
(``"loop": {"$ref": "#/$defs/loop"}``, two defs naming each other through a union, a root's
``allOf: [{"$ref": "#"}]``) was rendered as ``type A = A``: TypeScript refuses the module
(TS2456) and every script of every server failed its check. Such a reference is ``unknown``
now; recursion through a member or an element stays typed."""

from __future__ import annotations

from typing import Any

from toolscript.codegen.typescript import TypeContext, render_schema

CYCLES: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "loop": {"$ref": "#/$defs/loop"},
        "p": {"anyOf": [{"$ref": "#/$defs/q"}, {"type": "string"}]},
        "q": {"allOf": [{"$ref": "#/$defs/p"}]},
        "node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}},
        "list": {"type": "array", "items": {"$ref": "#/$defs/list"}},
    },
    "properties": {
        "loop": {"$ref": "#/$defs/loop"},
        "p": {"$ref": "#/$defs/p"},
        "node": {"$ref": "#/$defs/node"},
        "list": {"$ref": "#/$defs/list"},
    },
    "allOf": [{"$ref": "#"}],
}


def _declared(schema: dict[str, Any]) -> dict[str, str]:
    context = TypeContext(prefix="T", root=schema)
    render_schema(schema, context)
    return {
        line.split(" = ", 1)[0].removeprefix("export type "): line.split(" = ", 1)[1]
        for line in context.declarations
    }


def test_aliases_that_name_each_other_directly_become_unknown() -> None:
    declared = _declared(CYCLES)
    assert declared["TLoop"] == "unknown /* circular $ref #/$defs/loop */;"
    assert declared["TQ"] == "unknown /* circular $ref #/$defs/p */;"
    assert declared["TP"] == "TQ | string;"
    assert declared["T_"].endswith("& unknown /* circular $ref # */;")


def test_recursion_through_a_member_or_an_element_stays_typed() -> None:
    declared = _declared(CYCLES)
    assert declared["TNode"] == "{\n  next?: TNode;\n};"
    assert declared["TList"] == "TList[];"
    assert "node?: TNode;" in declared["T_"] and "list?: TList;" in declared["T_"]
