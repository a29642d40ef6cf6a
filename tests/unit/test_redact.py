"""Secrets stay out of logs, status and errors: whole, in part, and wherever ${VAR} put them."""

from __future__ import annotations

from pathlib import Path

from toolscript.config import parse_config
from toolscript.redact import redact

SECRET = "ghp_1234567890abcdefXYZ"


def test_whole_secrets_are_hidden() -> None:
    assert redact(f"token {SECRET} rejected", [SECRET]) == "token *** rejected"


def test_the_start_of_a_secret_is_hidden() -> None:
    assert (
        redact(f"using key {SECRET[:8]}... (truncated)", [SECRET]) == "using key ***... (truncated)"
    )
    assert redact(f"key={SECRET[:12]}", [SECRET]) == "key=***"


def test_short_fragments_and_other_text_stay() -> None:
    assert redact(f"{SECRET[:7]} and ordinary text", [SECRET]) == f"{SECRET[:7]} and ordinary text"
    assert redact("on", ["on"]) == "on"


def test_values_expanded_into_args_and_urls_are_secrets() -> None:
    text = """{"mcpServers": {
      "api": {"command": "api-server", "args": ["--token", "${API_TOKEN}", "--mode", "${MODE:-fast}"]},
      "web": {"url": "https://x.example/mcp?key=${WEB_KEY}"}
    }}"""
    config = parse_config(
        text, Path("/p/.toolscript.json"), {"API_TOKEN": SECRET, "WEB_KEY": "web-key-0987654321"}
    )
    api, web = config.servers
    assert SECRET in api.secrets
    assert "fast" not in api.secrets, "a default written in the config is no secret"
    assert "web-key-0987654321" in web.secrets and SECRET not in web.secrets
    assert redact(f"started with --token {SECRET}", api.secrets) == "started with --token ***"
