#!/usr/bin/env bash
# SessionStart: start this session's toolscript gateway. Never fails the session.
input=$(cat)
toolscript_bin=${TOOLSCRIPT_BIN:-toolscript}
if ! command -v "$toolscript_bin" >/dev/null 2>&1; then
  echo "toolscript: not installed, so MCP code mode is unavailable this session. Install it as its README says (in a checkout of toolscript: pip install '.[semantic]'), then restart the session."
  exit 0
fi
printf '%s' "$input" | "$toolscript_bin" hook session-start || echo "toolscript: the SessionStart hook failed (exit $?); run 'toolscript gateway start' to see why."
exit 0
