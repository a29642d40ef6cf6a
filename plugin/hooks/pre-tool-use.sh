#!/usr/bin/env bash
# PreToolUse (Bash): make Claude Code ask the user before a command approves toolscript calls,
# even where toolscript commands are allowed in general. Without toolscript, decide nothing.
input=$(cat)
toolscript_bin=${TOOLSCRIPT_BIN:-toolscript}
if ! command -v "$toolscript_bin" >/dev/null 2>&1; then
  case "$input" in
    *approv*|*runs.sq*|*/prompt*|*unlog*|*RunLog*|*/toolscript/*)
      printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "toolscript: this approves tool calls; a person must decide"}}'
      ;;
  esac
  exit 0
fi
printf '%s' "$input" | "$toolscript_bin" hook pre-tool-use
exit 0
