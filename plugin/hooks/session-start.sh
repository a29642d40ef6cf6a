#!/usr/bin/env bash
# SessionStart: start this session's toolscript gateway. Never fails the session.
input=$(cat)
toolscript_bin=${TOOLSCRIPT_BIN:-toolscript}
if ! command -v "$toolscript_bin" >/dev/null 2>&1; then
  echo "toolscript: not installed, so MCP code mode is unavailable this session. Install it as its README says (in a checkout of toolscript: pip install '.[semantic]'), then restart the session."
  exit 0
fi
# stdout goes to the agent as it is; stderr is kept to say why, should the hook fail
{ errors=$(printf '%s' "$input" | "$toolscript_bin" hook session-start 2>&1 >&3 3>&-); status=$?; } 3>&1
if [ "$status" -ne 0 ]; then
  why=$(printf '%s\n' "$errors" | grep -v '^[[:space:]]*$' | tail -n 2 | paste -sd ' ' -)
  echo "toolscript: the SessionStart hook failed (exit $status): ${why:-no message}"
elif [ -n "$errors" ]; then
  printf '%s\n' "$errors" >&2
fi
exit 0
