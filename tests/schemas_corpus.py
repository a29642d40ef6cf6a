"""Tricky JSON Schemas, one per feature the TypeScript generator must handle."""

from __future__ import annotations

from typing import Any

TRICKY_TOOLS: list[dict[str, Any]] = [
    {
        "name": "required_and_optional",
        "description": "Ends a comment */ early? Not here.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The */ title", "default": "x"},
                "count": {"type": "integer", "minimum": 1, "examples": [3]},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean", "deprecated": True},
            },
            "required": ["title"],
        },
    },
    {
        "name": "additional_properties",
        "inputSchema": {
            "type": "object",
            "properties": {
                "closed": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": False,
                },
                "open": {"type": "object", "additionalProperties": True},
                "map": {"type": "object", "additionalProperties": {"type": "number"}},
                "mixed": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "additionalProperties": {"type": "integer"},
                },
                "patterns": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
                "empty_closed": {"type": "object", "additionalProperties": False},
            },
        },
    },
    {
        "name": "arrays_and_tuples",
        "inputSchema": {
            "type": "object",
            "properties": {
                "list": {"type": "array", "items": {"type": "string"}},
                "untyped": {"type": "array"},
                "tuple": {
                    "type": "array",
                    "prefixItems": [{"type": "string"}, {"type": "number"}],
                    "items": False,
                },
                "open_tuple": {"type": "array", "prefixItems": [{"type": "string"}], "minItems": 0},
                "old_tuple": {"type": "array", "items": [{"type": "boolean"}, {"type": "string"}]},
                "nested": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": ["string", "null"]}},
                },
                "union_items": {
                    "type": "array",
                    "items": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                },
            },
        },
    },
    {
        "name": "enums_and_consts",
        "inputSchema": {
            "type": "object",
            "properties": {
                "color": {"enum": ["red", "green", 'it\'s "quoted"']},
                "mixed": {"enum": [1, "one", True, None]},
                "kind": {"const": "fixed"},
                "object_const": {"const": {"a": 1}},
            },
            "required": ["color"],
        },
    },
    {
        "name": "unions_and_intersections",
        "inputSchema": {
            "type": "object",
            "properties": {
                "any_of": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "object", "properties": {"x": {"type": "number"}}},
                    ]
                },
                "one_of": {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
                "all_of": {
                    "allOf": [
                        {"$ref": "#/$defs/A"},
                        {"type": "object", "properties": {"extra": {"type": "string"}}},
                    ]
                },
                "nullable_union": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "openapi_nullable": {"type": "string", "nullable": True},
            },
            "$defs": {
                "A": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                "B": {"type": "object", "properties": {"b": {"type": "number"}}},
            },
        },
    },
    {
        "name": "type_arrays",
        "inputSchema": {
            "type": "object",
            "properties": {
                "maybe": {"type": ["string", "null"]},
                "many": {"type": ["string", "number", "boolean", "array", "object"]},
                "weird": {"type": "decimal"},
            },
        },
    },
    {
        "name": "recursive_refs",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tree": {"$ref": "#/$defs/Node"},
                "legacy": {"$ref": "#/definitions/Legacy"},
                "pointer": {"$ref": "#/properties/tree"},
                "missing": {"$ref": "#/$defs/Nope"},
                "remote": {"$ref": "https://example.com/schema.json"},
            },
            "$defs": {
                "Node": {
                    "type": "object",
                    "description": "A tree node",
                    "properties": {
                        "value": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                },
                "Params": {"type": "string", "description": "a def named like the Params type"},
            },
            "definitions": {
                "Legacy": {
                    "type": "object",
                    "properties": {"self": {"$ref": "#/definitions/Legacy"}},
                }
            },
        },
        "outputSchema": {
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        },
    },
    {
        "name": "boolean_schemas",
        "inputSchema": {"type": "object", "properties": {"anything": True, "nothing": False}},
    },
    {"name": "empty_schema", "inputSchema": {}},
    {"name": "no_parameters", "inputSchema": {"type": "object", "properties": {}}},
    {
        "name": "formats",
        "inputSchema": {
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time"},
                "site": {"type": "string", "format": "uri"},
                "who": {"type": "string", "format": "email"},
            },
            "required": ["when", "site", "who"],
        },
    },
    {
        "name": "quoted_property_names",
        "inputSchema": {
            "type": "object",
            "properties": {
                "with-dash": {"type": "string"},
                "with space": {"type": "string"},
                "123start": {"type": "string"},
                "$dollar": {"type": "string"},
                'quote"inside': {"type": "string"},
                "constructor": {"type": "string"},
                "__proto__": {"type": "string"},
            },
            "required": ["with-dash", "__proto__"],
        },
    },
    {
        "name": "not_a_schema",
        "inputSchema": {"type": "object", "properties": {"x": 42, "y": "nope"}},
    },
    {
        "name": "deep",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {
                    "type": "object",
                    "properties": {
                        "b": {
                            "type": "object",
                            "properties": {
                                "c": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {"d": {"type": "string"}},
                                    },
                                }
                            },
                        }
                    },
                }
            },
        },
    },
    {
        "name": "structured_output",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"id": {"type": "integer"}},
                        "required": ["id"],
                    },
                }
            },
            "required": ["items"],
        },
    },
    # Name collisions and reserved words, resolved by the names task.
    {"name": "create_issue", "inputSchema": {"type": "object"}},
    {"name": "createIssue", "inputSchema": {"type": "object"}},
    {"name": "create-issue", "inputSchema": {"type": "object"}},
    {"name": "delete", "inputSchema": {"type": "object"}},
    {"name": "constructor", "inputSchema": {"type": "object"}},
    {"name": "__proto__", "inputSchema": {"type": "object"}},
    {"name": "new", "inputSchema": {"type": "object"}},
    {"name": "123go", "inputSchema": {"type": "object"}},
]
