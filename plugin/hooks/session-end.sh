#!/usr/bin/env bash
# SessionEnd: stop this session's toolscript gateway (TERM, then KILL). Idempotent; never fails.
input=$(cat)
toolscript_bin=${TOOLSCRIPT_BIN:-toolscript}
if command -v "$toolscript_bin" >/dev/null 2>&1; then
  printf '%s' "$input" | "$toolscript_bin" hook session-end >/dev/null 2>&1
fi
exit 0
