"""The result contract: how a tool's CallToolResult becomes the gateway's JSON answer.

=============  ===============================================  ==========================
shape          when                                             body (HTTP 200)
=============  ===============================================  ==========================
``structured`` the result has ``structuredContent``             that value
``json``       one text block whose text is a JSON object/array the parsed value
``text``       one text block, anything else                    the text, as a JSON string
``texts``      several text blocks and nothing else             a list of those values
``content``    images, audio, resources, or a mix               the content blocks
``empty``      no content at all                                ``null``
=============  ===============================================  ==========================

The shape travels in the ``X-Toolscript-Result`` header. Results arrive as JSON
(``content``, ``structuredContent``, ``isError``), whatever the transport. A result with
``isError: true`` is not a success: it raises ``ToolCallError`` (HTTP 422).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolscript.errors import ToolCallError, tool_named

__all__ = ["RESULT_HEADER", "tool_result"]

RESULT_HEADER = "X-Toolscript-Result"


def _text_value(text: str) -> tuple[str, Any]:
    stripped = text.strip()
    # Only objects and arrays are parsed: a scalar such as "007" or "true" stays the text it was.
    if stripped[:1] in ("{", "["):
        try:
            return "json", json.loads(stripped)
        except (ValueError, RecursionError):  # nested past Python's limit: the text it was
            pass
    return "text", text


def tool_result(qualified_name: str, result: Mapping[str, Any]) -> tuple[str, Any]:
    """``(shape, value)`` for a CallToolResult as JSON; raises ToolCallError when ``isError``."""
    blocks: list[dict[str, Any]] = list(result.get("content") or [])
    if result.get("isError"):
        texts = [block["text"] for block in blocks if block.get("type") == "text"]
        message = "\n".join(texts).strip() or "the tool reported an error without a message"
        raise ToolCallError(f"{tool_named(qualified_name)}: {message}", content=blocks)
    if result.get("structuredContent") is not None:
        return "structured", result["structuredContent"]
    if not blocks:
        return "empty", None
    if all(block.get("type") == "text" for block in blocks):
        values = [_text_value(block.get("text", "")) for block in blocks]
        if len(values) == 1:
            return values[0]
        return "texts", [value for _, value in values]
    return "content", blocks
