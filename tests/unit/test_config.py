"""Loading .toolscript.json: discovery, expansion, validation errors with positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.config import load_config
from toolscript.errors import ConfigError, ServerNotFoundError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".toolscript.json"
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ=environ or {})
    assert info.value.exit_code == 2
    return info.value.message


def test_missing_default_file_means_zero_servers(tmp_path: Path) -> None:
    config = load_config(None, cwd=tmp_path)
    assert config.servers == ()
    assert config.path is None


def test_empty_object_means_zero_servers(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "{}"), environ={}).servers == ()


def test_an_empty_file_is_an_error_not_zero_servers(tmp_path: Path) -> None:
    # An editor's save (truncate, then write) passes through an empty file.
    for text in ("", "  \n"):
        message = error_of(tmp_path, text)
        assert message.endswith(".toolscript.json: the config file is empty")


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.json")


def test_default_file_found_in_cwd(tmp_path: Path) -> None:
    write(tmp_path, '{"mcpServers": {"a": {"command": "x"}}}')
    assert [s.name for s in load_config(None, cwd=tmp_path).servers] == ["a"]


def test_type_inference(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        json.dumps(
            {
                "mcpServers": {
                    "local": {"command": "srv", "args": ["--x"]},
                    "remote": {"url": "https://example.com/mcp"},
                    "events": {"type": "sse", "url": "http://127.0.0.1:1/sse"},
                }
            }
        ),
    )
    servers = {s.name: s for s in load_config(path, environ={}).servers}
    assert servers["local"].transport == "stdio"
    assert servers["local"].args == ("--x",)
    assert servers["remote"].transport == "http"
    assert servers["events"].transport == "sse"


def test_optional_fields_and_filters(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        json.dumps(
            {
                "mcpServers": {
                    "s": {
                        "command": "x",
                        "cwd": "sub",
                        "description": "d",
                        "timeout": 5,
                        "disabled": True,
                        "includeTools": ["get_*"],
                        "excludeTools": ["get_secret"],
                    }
                }
            }
        ),
    )
    server = load_config(path, environ={}).servers[0]
    assert server.timeout == 5.0
    assert server.disabled
    assert server.cwd == (tmp_path / "sub").resolve()
    assert server.allows_tool("get_time")
    assert not server.allows_tool("get_secret")
    assert not server.allows_tool("set_time")
    assert load_config(path, environ={}).enabled_servers == ()


def test_env_expansion_everywhere(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        json.dumps(
            {
                "mcpServers": {
                    "s": {
                        "command": "${BIN}",
                        "args": ["--token=${TOKEN}", "${MISSING:-fallback}", "${EMPTY:-d}"],
                        "env": {"KEY": "${SECRET}"},
                    },
                    "h": {
                        "url": "https://${HOST:-example.com}/mcp",
                        "headers": {"A": "B ${TOKEN}"},
                    },
                }
            }
        ),
    )
    config = load_config(
        path, environ={"BIN": "srv", "TOKEN": "t0k", "SECRET": "hush", "EMPTY": ""}
    )
    stdio, http = config.servers
    assert stdio.command == "srv"
    assert stdio.args == ("--token=t0k", "fallback", "d")
    assert dict(stdio.env) == {"KEY": "hush"}
    assert http.url == "https://example.com/mcp"
    assert dict(http.headers) == {"A": "B t0k"}
    assert "hush" not in repr(config)
    assert "B t0k" not in repr(config)


def test_unset_variable_names_variable_path_and_line(tmp_path: Path) -> None:
    text = '{\n  "localTools": {\n    "dir": "${NOPE}"\n  }\n}\n'
    message = error_of(tmp_path, text)
    assert "NOPE" in message
    assert "localTools.dir" in message
    assert ":3:12:" in message


def test_a_server_naming_an_unset_variable_is_not_started_and_the_rest_loads(
    tmp_path: Path,
) -> None:
    """One server's missing token made the whole file an error: no server started, and the
    first variable was named, the next one only once it was set."""
    text = (
        '{\n  "mcpServers": {\n    "s": {\n      "command": "x",\n'
        '      "env": {"K": "${NOPE}", "L": "a${ALSO_NOPE}"}\n    },\n'
        '    "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"A": "Bearer ${NOPE}"}},\n'
        '    "fine": {"command": "y", "env": {"K": "${SET}"}}\n  }\n}\n'
    )
    loaded = load_config(write(tmp_path, text), environ={"SET": "v"})
    s, web, fine = loaded.servers
    assert s.unset == (("NOPE", "env.K"), ("ALSO_NOPE", "env.L"))
    assert web.unset == (("NOPE", "headers.A"),)
    assert fine.unset == () and fine.unset_error() is None and fine.env["K"] == "v"
    error = s.unset_error() or ""
    assert error.startswith("not started: environment variables NOPE, ALSO_NOPE are not set")
    assert "${NOPE} in env.K, ${ALSO_NOPE} in env.L" in error
    assert "export them" in error
    assert [warning.split(": ")[0:2] for warning in loaded.warnings] == [
        [f"{tmp_path / '.toolscript.json'}:5:20", "mcpServers.s"],
        [f"{tmp_path / '.toolscript.json'}:7:63", "mcpServers.web"],
    ]


def test_a_tool_files_secret_naming_an_unset_variable_keeps_that_file_alone_out(
    tmp_path: Path,
) -> None:
    """docs/local-tools.md's own entry (``"secrets": {"API_KEY": "${WEATHER_KEY}"}``) made the
    whole file an error, every server with it, until WEATHER_KEY was exported."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "weather.py").write_text("")
    (tmp_path / "tools" / "plain.py").write_text("")
    text = (
        '{\n  "localTools": {\n    "dir": "tools",\n    "files": {\n'
        '      "weather": {"config": {"units": "metric"}, '
        '"secrets": {"API_KEY": "${WEATHER_KEY}"}}\n    }\n  }\n}\n'
    )
    loaded = load_config(write(tmp_path, text), environ={})
    plain, weather = loaded.servers
    assert plain.unset == () and plain.unset_error() is None
    assert weather.unset == (("WEATHER_KEY", "secrets.API_KEY"),)
    assert dict(weather.settings) == {"units": "metric"}
    assert (weather.unset_error() or "").startswith(
        "not started: environment variable WEATHER_KEY is not set (${WEATHER_KEY} in "
        "secrets.API_KEY)"
    )
    assert [warning.split(": ")[0:2] for warning in loaded.warnings] == [
        [f"{tmp_path / '.toolscript.json'}:5:73", "localTools.files.weather"]
    ]
    kept = load_config(write(tmp_path, text), environ={"WEATHER_KEY": "k"})
    assert dict(kept.servers[1].env) == {"API_KEY": "k"} and kept.servers[1].unset == ()


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n')
    assert "invalid JSON" in message
    assert ":3:" in message


def test_a_trailing_comma_is_named_at_the_comma(tmp_path: Path) -> None:
    # json says "Expecting property name enclosed in double quotes" at the brace after it.
    message = error_of(tmp_path, '{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n')
    assert message.endswith(":3:26: invalid JSON: a comma after the last entry (JSON allows none)")
    message = error_of(tmp_path, '{"mcpServers": {"a": {"command": "x", "args": ["y",\n]}}}')
    assert message.endswith(":1:51: invalid JSON: a comma after the last entry (JSON allows none)")


def test_a_comment_is_named_as_such(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{\n  // my servers\n  "mcpServers": {}\n}\n')
    assert message.endswith(":2:3: invalid JSON: a comment (JSON allows none)")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('\ufeff{"mcpServers": {}}', ":1:1: invalid JSON: a byte order mark starts the file"),
        ("{'mcpServers': {}}", ":1:2: invalid JSON: a single quote (JSON strings take double"),
        ('{"mcpServers": {}}\n{}', ":2:1: invalid JSON: more text after the end of the document"),
    ],
)
def test_syntax_errors_python_words_would_mislead_are_named(
    tmp_path: Path, text: str, said: str
) -> None:
    message = error_of(tmp_path, text)
    assert said in message, message
    assert "utf-8-sig" not in message and "Extra data" not in message


def test_other_syntax_errors_keep_json_s_words(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServers": {"a": {"command": }}}')
    assert message.endswith(":1:34: invalid JSON: Expecting value")


def test_wrong_type(tmp_path: Path) -> None:
    message = error_of(
        tmp_path, '{\n  "mcpServers": {\n    "a": {"command": "x", "args": "no"}\n  }\n}'
    )
    assert ":3:35:" in message
    assert "mcpServers.a.args" in message
    assert "expected array, got string" in message


def test_unknown_server_type(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServers": {"a": {"type": "websocket", "url": "http://x"}}}')
    assert ":1:31:" in message
    assert "mcpServers.a.type" in message
    assert '"stdio", "http", "sse"' in message


def test_missing_command_for_stdio(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServers": {\n  "a": {"type": "stdio"}\n}}')
    assert ":2:8:" in message
    assert "needs 'command'" in message


def test_missing_url_for_http(tmp_path: Path) -> None:
    assert "needs 'url'" in error_of(tmp_path, '{"mcpServers": {"a": {"type": "http"}}}')


def test_neither_command_nor_url(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServers": {"a": {"args": []}}}')
    assert "either 'command'" in message
    assert "mcpServers.a" in message


def test_unknown_key_suggests_close_match(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServers": {"a": {\n  "command": "x",\n  "arsg": []}}}')
    assert ":3:3:" in message
    assert "mcpServers.a.arsg" in message
    assert "did you mean 'args'?" in message


def test_unknown_top_level_key(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServer": {}}')
    assert "did you mean 'mcpServers'?" in message
    assert ":1:2:" in message


def test_every_error_is_reported(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"mcpServers": {"a": {"type": "x", "command": 1}, "b": {}}}')
    assert len(message.splitlines()) >= 3


def test_server_name_with_double_underscore_is_refused(tmp_path: Path) -> None:
    assert "invalid server name" in error_of(tmp_path, '{"mcpServers": {"a__b": {"command": "x"}}}')


def test_server_lookup_suggests_names(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {"github": {"command": "x"}}}')
    with pytest.raises(ServerNotFoundError) as info:
        load_config(path, environ={}).server("githb")
    assert info.value.suggestions == ["github"]


def test_local_tool_files_become_servers(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "weather.py").write_text("def f() -> int:\n    return 1\n")
    (tmp_path / "tools" / "_private.py").write_text("")
    path = write(
        tmp_path,
        json.dumps(
            {
                "localTools": {
                    "dir": "tools",
                    "idleTimeout": 2,
                    "files": {
                        "weather": {"config": {"units": "metric"}, "secrets": {"KEY": "${K}"}}
                    },
                }
            }
        ),
    )
    (server,) = load_config(path, environ={"K": "v4lue"}).servers
    assert server.name == "weather"
    assert server.transport == "local"
    assert server.idle_timeout == 2
    assert dict(server.settings) == {"units": "metric"}
    assert dict(server.env) == {"KEY": "v4lue"}


def test_local_tools_folder_must_exist(tmp_path: Path) -> None:
    message = error_of(tmp_path, '{"localTools": {\n  "dir": "missing"}}')
    assert ":2:10: localTools.dir: not a folder" in message


def test_a_local_tool_file_named_like_a_server_is_left_out_alone(tmp_path: Path) -> None:
    """It stopped every command; now only the file is out, said, and the server serves."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "github.py").write_text("")
    (tmp_path / "tools" / "notes.py").write_text("")
    text = json.dumps({"mcpServers": {"github": {"command": "x"}}, "localTools": {"dir": "tools"}})
    (tmp_path / ".toolscript.json").write_text(text)
    config = load_config(tmp_path / ".toolscript.json", environ={})
    assert [(s.name, s.transport) for s in config.servers] == [
        ("github", "stdio"),
        ("notes", "local"),
    ]
    (said,) = config.left_out
    assert "github.py has the name of the MCP server 'github'" in said
    assert "not loaded; rename the file" in said and said in config.warnings


def test_a_server_name_ending_in_underscore_is_refused(tmp_path: Path) -> None:
    """Server "a_" and tool "b" would be "a___b": the gateway reads server "a", tool "_b"
    (another server's tool, given its calls and shown its examples)."""
    message = error_of(tmp_path, '{"mcpServers": {"a": {"command": "x"}, "a_": {"command": "y"}}}')
    assert 'invalid server name "a_"' in message and "no '_' at its end" in message


def test_a_local_tool_file_ending_in_underscore_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "weather_.py").write_text("def f() -> int:\n    return 1\n")
    (tmp_path / ".toolscript.json").write_text('{"localTools": {"dir": "tools"}}')
    config = load_config(tmp_path / ".toolscript.json", environ={})
    assert config.servers == ()
    (said,) = config.left_out
    assert "weather_.py ends in '_'" in said and "rename the file" in said


def test_a_folder_with_a_nul_in_its_name_is_an_error_at_its_place(tmp_path: Path) -> None:
    """No file system takes a NUL: a config error, not a ValueError out of the loader (which
    a running gateway's reload and the MCP face would meet as a crash)."""
    message = error_of(tmp_path, '{"mcpServers": {"a": {"command": "x", "cwd": "sub\\u0000"}}}')
    assert ":1:46: mcpServers.a.cwd: a folder's name cannot hold a NUL" in message
    message = error_of(tmp_path, '{"localTools": {"dir": "\\u0000"}}')
    assert ":1:24: localTools.dir: a folder's name cannot hold a NUL" in message


def test_a_wrong_type_copied_from_another_clients_config_says_how_to_write_it(
    tmp_path: Path,
) -> None:
    """A number in env, a command and its arguments in one array, args in one string: what
    other clients' configs hold or their docs show. The error said only "expected string,
    got integer" and what the schema is."""
    port = error_of(tmp_path, '{"mcpServers": {"a": {"command": "x", "env": {"PORT": 8080}}}}')
    assert 'mcpServers.a.env.PORT: expected string, got integer (in quotes: "8080")' in port
    flag = error_of(tmp_path, '{"mcpServers": {"a": {"command": "x", "env": {"DEBUG": true}}}}')
    assert '(in quotes: "true")' in flag
    split = error_of(tmp_path, '{"mcpServers": {"a": {"command": ["npx", "-y", "srv"]}}}')
    assert (
        'expected string, got array (the program goes in "command", each argument in "args": '
        '"command": "npx", "args": ["-y", "srv"])'
    ) in split
    joined = error_of(tmp_path, '{"mcpServers": {"a": {"command": "x", "args": "--port 3000"}}}')
    assert (
        'expected array, got string (each argument its own string: "args": ["--port", "3000"])'
        in joined
    )
    one = error_of(tmp_path, '{"import": "cursor"}')
    assert 'import: expected array, got string (a list: ["cursor"])' in one
