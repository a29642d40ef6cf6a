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

The shape travels in the ``X-Toolscript-Result`` header. A result with
``isError: true`` is not a success: it raises ``ToolCallError`` (HTTP 422).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types

from toolscript.errors import ToolCallError

__all__ = ["RESULT_HEADER", "content_blocks", "tool_result"]

RESULT_HEADER = "X-Toolscript-Result"


def content_blocks(result: mcp_types.CallToolResult) -> list[dict[str, Any]]:
    return [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]


def _text_value(text: str) -> tuple[str, Any]:
    stripped = text.strip()
    # Only objects and arrays are parsed: a scalar such as "007" or "true" stays the text it was.
    if stripped[:1] in ("{", "["):
        try:
            return "json", json.loads(stripped)
        except ValueError:
            pass
    return "text", text


def tool_result(qualified_name: str, result: mcp_types.CallToolResult) -> tuple[str, Any]:
    """``(shape, value)`` for a tool result; raises ToolCallError when ``isError``."""
    if result.is_error:
        blocks = content_blocks(result)
        texts = [block["text"] for block in blocks if block.get("type") == "text"]
        message = "\n".join(texts).strip() or "the tool reported an error without a message"
        raise ToolCallError(f"{qualified_name}: {message}", content=blocks)
    if result.structured_content is not None:
        return "structured", result.structured_content
    content = result.content
    if len(content) == 1 and isinstance(content[0], mcp_types.TextContent):
        return _text_value(content[0].text)  # the common case, without dumping the model
    blocks = content_blocks(result)
    if not blocks:
        return "empty", None
    if all(block.get("type") == "text" for block in blocks):
        values = [_text_value(block.get("text", "")) for block in blocks]
        if len(values) == 1:
            return values[0]
        return "texts", [value for _, value in values]
    return "content", blocks
