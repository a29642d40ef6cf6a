# toolscript's watchdog (see watchdog.py): reads g<pgid>, s<pgid>, p<pid>, fg<pgid>, fs<pgid>,
# fp<pid> and done on stdin; at end of input without done, kills every group named, stops
# every server's group (a grace, TERM, a grace, KILL) and stops every process.
# A word is only ever compared with patterns: none is evaluated.
number() {  # a pid: digits, no leading zero, not 0 or 1, at most 9 (no kill wraps it)
  case $1 in ''|*[!0-9]*|0*|1|??????????*) return 1 ;; esac
}
without() {
  gone=$1 kept=
  shift
  for n do
    if [ "$n" = "$gone" ]; then gone=; else kept="$kept $n"; fi
  done
}
groups= servers= processes=
while read -r word || [ -n "$word" ]; do
  case $word in
    done) exit 0 ;;
    g*) number "${word#g}" && groups="$groups ${word#g}" ;;
    s*) number "${word#s}" && servers="$servers ${word#s}" ;;
    p*) number "${word#p}" && processes="$processes ${word#p}" ;;
    fg*) number "${word#fg}" && { without "${word#fg}" $groups; groups=$kept; } ;;
    fs*) number "${word#fs}" && { without "${word#fs}" $servers; servers=$kept; } ;;
    fp*) number "${word#fp}" && { without "${word#fp}" $processes; processes=$kept; } ;;
  esac
done
for n in $groups; do kill -s KILL -- "-$n" 2>/dev/null; done
for n in $processes; do kill -s TERM "$n" 2>/dev/null; done
# A server's stdin closed with exec (the spec's polite ask): a second to leave, then TERM
# and half a second, then KILL, each to its whole group.
servers_left() {  # $1 tenths of a second at most, until no server's group is left
  tries=$1
  while [ -n "$servers" ] && [ "$tries" -gt 0 ]; do
    sleep 0.1 2>/dev/null || sleep 1
    tries=$((tries - 1))
    alive=
    for n in $servers; do kill -s 0 -- "-$n" 2>/dev/null && alive="$alive $n"; done
    servers=$alive
  done
}
servers_left 10
for n in $servers; do kill -s TERM -- "-$n" 2>/dev/null; done
servers_left 5
for n in $servers; do kill -s KILL -- "-$n" 2>/dev/null; done
tries=200
while [ -n "$processes" ] && [ "$tries" -gt 0 ]; do
  sleep 0.1 2>/dev/null || sleep 1
  tries=$((tries - 1))
  alive=
  for n in $processes; do kill -s 0 "$n" 2>/dev/null && alive="$alive $n"; done
  processes=$alive
done
for n in $processes; do kill -s KILL "$n" 2>/dev/null; done
exit 0
