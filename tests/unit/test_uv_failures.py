"""How a tool file's failed `uv run` is said: uv's first line kept, and an index uv could not
reach (an offline machine) answered with what to set."""

from __future__ import annotations

from toolscript.upstream.local import _uv_said, _uv_unreached

# uv 0.13's stderr with an index that refuses connections (UV_INDEX_URL=http://127.0.0.1:9/simple)
UNREACHED = """error: Request failed after 3 retries in 7.3s
  cause: Failed to fetch: http://127.0.0.1:9/simple/pydantic/
  cause: error sending request for url (http://127.0.0.1:9/simple/pydantic/)
  cause: client error (Connect)
  cause: tcp connect error
  cause: Connection refused (os error 111)""".splitlines()


def test_uvs_first_line_is_kept_with_its_last_causes() -> None:
    # The last five lines alone began at "cause: Failed to fetch", losing "Request failed".
    said = _uv_said(UNREACHED)
    assert said[0] == "error: Request failed after 3 retries in 7.3s"
    assert said[1] == "…" and said[-1] == "  cause: Connection refused (os error 111)"
    assert _uv_said(UNREACHED[:3]) == UNREACHED[:3]


def test_an_unreached_index_says_to_go_offline_and_whose_package_it_was() -> None:
    told = _uv_unreached(UNREACHED)
    assert "uv could not reach its package index for pydantic" in told
    assert "pydantic is the tool-file worker's own dependency (pydantic>=2)" in told
    assert "export UV_OFFLINE=1 before `toolscript gateway start`" in told
    theirs = _uv_unreached([line.replace("pydantic", "humanize") for line in UNREACHED])
    assert "for humanize: offline, export UV_OFFLINE=1" in theirs, theirs


def test_a_failure_that_is_no_fetch_adds_nothing() -> None:
    offline = [
        "error: No solution found when resolving `--with` dependencies",
        "  cause: Because humanize was not found in the cache and you require humanize, ...",
    ]
    assert _uv_unreached(offline) == ""
