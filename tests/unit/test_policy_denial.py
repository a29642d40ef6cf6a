"""What a type error says of a tool the policy denies (``sandbox.policy_denial``): a saved
script's errors, as the gateway's check lists them, get it too (``with_denials``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.codegen.naming import denied_name
from toolscript.errors import ExecutionError
from toolscript.execution.command import require_saved
from toolscript.execution.sandbox import policy_denial, with_denials

CONFIG = {"mcpServers": {"my-sums": {"command": "my-sums", "policy": {"wipe_all": "deny"}}}}
BROKEN = (
    "toolscripts/wiper.ts:5:27: TS2339 Property 'wipeAll' does not exist on type "
    "'MySumsTools' (members: add)."
)


def _config(tmp_path: Path) -> str:
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps(CONFIG))
    return str(path)


def test_a_denied_tool_is_found_by_its_servers_namespace_or_type(tmp_path: Path) -> None:
    denial = policy_denial(_config(tmp_path))
    said = f"my-sums.wipe_all is denied by the policy of server 'my-sums' in {tmp_path}"
    for namespace in ("my-sums", "mySums", "MySumsTools"):
        assert (denial(namespace, "wipeAll") or "").startswith(said), namespace
    assert denial("MySumsTools", "add") is None
    assert denial("OtherTools", "wipeAll") is None


def test_a_saved_scripts_errors_name_the_policy(tmp_path: Path) -> None:
    denial = policy_denial(_config(tmp_path))
    other = "toolscripts/wiper.ts:2:1: TS2304 Cannot find name 'x'."
    told = with_denials([BROKEN, other], denial)
    assert told[0].startswith(BROKEN.rstrip(".") + "; my-sums.wipe_all is denied by the policy")
    assert told[1] == other
    listing = {"scripts": [{"name": "wiper", "status": "broken", "errors": [BROKEN]}]}
    with pytest.raises(ExecutionError) as raised:
        require_saved(listing, "wiper", denial)
    assert "(members: add); my-sums.wipe_all is denied by the policy" in raised.value.message


def test_a_denied_tool_is_found_as_scripts_call_it_whatever_rule_denies_it() -> None:
    """A member names a denied tool by its name, by a rule's name as scripts spell it, or by
    its words joined as the server named the tool (a glob rule: no rule is spelled so)."""
    rules = {"wipe_all": "deny", "drop_*": "deny", "purge-*": "deny", "read": "allow"}
    denies = {"wipe_all", "drop_table", "purge-cache", "dropEverything"}.__contains__
    assert denied_name("wipeAll", rules, denies) == "wipe_all"
    assert denied_name("dropTable", rules, denies) == "drop_table"
    assert denied_name("purgeCache", rules, denies) == "purge-cache"
    assert denied_name("dropEverything", rules, denies) == "dropEverything"
    assert denied_name("read", rules, denies) is None
    assert denied_name("readHTTPLog", rules, "read_http_log".__eq__) == "read_http_log"
