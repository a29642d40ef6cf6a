"""Stop 78: a server's question whose form no person fills in is refused to the server, never
held as a prompt (tests/integration/test_attacks_stop78.py asks one of a real server)."""

from __future__ import annotations

from toolscript.upstream.limits import FORM_FIELDS, FORM_LIMIT, form_refused


def _form(fields: int, title: str = "a field") -> dict[str, object]:
    properties = {f"f{i}": {"type": "string", "title": title} for i in range(fields)}
    return {"type": "object", "properties": properties}


def test_a_form_a_person_fills_in_is_asked() -> None:
    assert form_refused(_form(FORM_FIELDS)) is None
    assert form_refused({"type": "object"}) is None


def test_a_form_of_too_many_fields_or_characters_is_refused() -> None:
    assert "200,000 fields" in (form_refused(_form(200_000)) or "")
    assert "characters as JSON" in (form_refused(_form(1, "x" * FORM_LIMIT)) or "")
