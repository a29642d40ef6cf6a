"""Secrets stay out of logs, status and errors: whole, in part, and wherever ${VAR} put them."""

from __future__ import annotations

from pathlib import Path

from toolscript.config import parse_config
from toolscript.plumbing.redact import redact, redact_value

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


def test_every_encoding_and_long_run_of_a_secret_is_hidden() -> None:
    import base64
    import json
    from urllib.parse import quote

    secret = 'ghp_"Abc/123+def=456&xyz789'
    crash = " | ".join(
        [
            json.dumps({"token": secret}),
            quote(secret, safe=""),
            base64.b64encode(secret.encode()).decode(),
            base64.b64encode(b"user:" + secret.encode()).decode(),  # Basic auth
            secret[-12:],
            secret[5:17],
        ]
    )
    shown = redact(crash, [secret])
    for form in (secret, json.dumps(secret)[1:-1], quote(secret, safe=""), secret[-12:]):
        assert form not in shown
    assert base64.b64encode(secret.encode()).decode()[2:-2] not in shown
    assert secret[5:17] not in shown and secret[-9:] not in shown


def test_words_of_a_header_value_are_hidden_alone() -> None:
    token = "tok_live_9f8e7d6c5b4a"
    assert redact(f"401 for token {token}", [f"Bearer {token}"]) == "401 for token ***"


def test_values_are_secrets_for_what_they_are_not_for_being_configured() -> None:
    """An env path is no secret: arguments sharing its start are shown as they are (what a
    person approves is what runs); a token, named or shaped so, is hidden everywhere."""
    text = """{"mcpServers": {"memory": {
      "command": "mcp-memory", "args": ["--data", "${HOME}/data", "${RANDOM_ID}"],
      "env": {"MEMORY_FILE_PATH": "/tmp/p/data/memory.jsonl", "API_KEY": "plain-words-key",
              "OTHER": "ghp_0123456789abcdefABCDEF", "MODE": "fast"},
      "headers": {}
    }, "web": {"url": "https://user:pa55w0rd-xyz@x.example/mcp?api_key=qk-123&page=2"}}}"""
    config = parse_config(
        text,
        Path("/p/.toolscript.json"),
        {"HOME": "/home/me", "RANDOM_ID": "Zx81Lk29Qp03Wm57Tn64"},
    )
    memory, web = config.servers
    assert "/tmp/p/data/memory.jsonl" not in memory.secrets and "fast" not in memory.secrets
    assert "/home/me" not in memory.secrets
    assert {"plain-words-key", "ghp_0123456789abcdefABCDEF", "Zx81Lk29Qp03Wm57Tn64"} <= set(
        memory.secrets
    )
    assert {"pa55w0rd-xyz", "qk-123"} <= set(web.secrets) and "2" not in web.secrets
    arguments = {"path": "/tmp/p/data/tokyo.txt", "note": "note: /var/tmp is shared"}
    assert redact_value(arguments, config.secrets) == arguments
    assert redact("/tmp/p/data/cities.csv", config.secrets) == "/tmp/p/data/cities.csv"


def test_local_tool_secrets_are_secrets_whatever_their_names() -> None:
    import json

    text = json.dumps({"localTools": {"dir": ".", "files": {"t": {"secrets": {"X": "plain"}}}}})
    folder = Path(__file__).parent / "data" / "local_secrets"
    folder.mkdir(exist_ok=True)
    (folder / "t.py").write_text("")
    try:
        (tool,) = parse_config(text, folder / ".toolscript.json", {}).servers
    finally:
        (folder / "t.py").unlink()
        folder.rmdir()
    assert tool.secrets == ("plain",)


def test_expanded_targets_and_descriptions_are_shown_as_written() -> None:
    text = """{"mcpServers": {
      "gh": {"url": "https://x.example/mcp?t=${GITHUB_TOKEN}", "description": "for ${GITHUB_TOKEN}"},
      "api": {"command": "api-server", "args": ["--token", "${API_TOKEN}"]}
    }}"""
    config = parse_config(
        text, Path("/p/.toolscript.json"), {"GITHUB_TOKEN": SECRET, "API_TOKEN": "a-" + SECRET}
    )
    gh, api = config.servers
    assert gh.summary()["target"] == "https://x.example/mcp?t=${GITHUB_TOKEN}"
    assert gh.description == "for ${GITHUB_TOKEN}"
    assert api.summary()["target"] == "api-server --token ${API_TOKEN}"
    assert SECRET not in str([gh.summary(), api.summary()])
    assert gh.url is not None and SECRET in gh.url, "what runs is expanded"
