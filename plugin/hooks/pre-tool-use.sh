#!/usr/bin/env bash
# PreToolUse (Bash): make Claude Code ask the user before a command approves toolscript calls,
# even where toolscript commands are allowed in general. Without toolscript, or when it
# fails (a hook that fails decides nothing: the command would run unasked), a few words decide.
input=$(cat)
toolscript_bin=${TOOLSCRIPT_BIN:-toolscript}
if command -v "$toolscript_bin" >/dev/null 2>&1 &&
  decision=$(printf '%s' "$input" | "$toolscript_bin" hook pre-tool-use); then
  [ -n "$decision" ] && printf '%s\n' "$decision"
  exit 0
fi
shopt -s nocasematch  # macOS's file systems ignore case: RUNS.SQLITE is the run log there
case "$input" in
  *appr*|*runs.sq*|*r?ns.sq*|*/prom*|*unlog*|*RunLog*|*/toolscript/*|*/tool[*?[]*|*%6[fF]*|*sqlite3*.local/state*|*.cache/[*?[]*|*toolscript*mcp*)
    printf '%s\n' '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "toolscript: this approves tool calls; a person must decide"}}'
    ;;
esac
exit 0
