#!/usr/bin/env bash
# PreToolUse (Bash): make Claude Code ask the user before a command approves toolscript calls,
# even where toolscript commands are allowed in general. Without toolscript, decide nothing.
input=$(cat)
toolscript_bin=${TOOLSCRIPT_BIN:-toolscript}
if ! command -v "$toolscript_bin" >/dev/null 2>&1; then
  shopt -s nocasematch  # macOS's file systems ignore case: RUNS.SQLITE is the run log there
  case "$input" in
    *appr*|*runs.sq*|*r?ns.sq*|*/prom*|*unlog*|*RunLog*|*/toolscript/*|*/tool[*?[]*|*%6[fF]*|*sqlite3*.local/state*|*.cache/[*?[]*|*toolscript*mcp*)
      printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "toolscript: this approves tool calls; a person must decide"}}'
      ;;
  esac
  exit 0
fi
printf '%s' "$input" | "$toolscript_bin" hook pre-tool-use
exit 0
