# toolscript's watchdog (see watchdog.py): reads g<pgid>, s<pgid>, p<pid> (each may end
# with @<its start>), fg<pgid>, fs<pgid>, fp<pid> and done on stdin; at end of input without
# done, kills every group named, stops every server's group (a grace, TERM, a grace, KILL)
# and stops every process, each only while its pid (a group's leader) is still the process
# named: one that ended may have given its number to another since.
# A word is only ever compared with patterns: none is evaluated.
number() {  # a pid: digits, no leading zero, not 0 or 1, at most 9 (no kill wraps it)
  case $1 in ''|*[!0-9]*|0*|1|??????????*) return 1 ;; esac
}
entry() {  # <pid>, or <pid>@<start> (in whole seconds after this watchdog's, - before): in $entry
  entry=$1
  case $1 in *@*)
    case ${1#*@} in -*) since=${1#*@-} ;; *) since=${1#*@} ;; esac
    case $since in ''|*[!0-9]*|0?*|??????????*) return 1 ;; esac
  esac
  number "${1%%@*}"
}
without() {
  gone=$1 kept=
  shift
  for n do
    if [ "${n%%@*}" = "$gone" ]; then gone=; else kept="$kept $n"; fi
  done
}
seconds() {  # ps's elapsed time, [[dd-]hh:]mm:ss, as seconds in $total
  rest=$1 total=0 days=0
  case $rest in ''|*[!0-9:-]*) return 1 ;; esac
  case $rest in *-*) days=${rest%%-*} rest=${rest#*-} ;; esac
  # A process started this very second may be given a wrapped, enormous age (procps took a
  # start a moment after the uptime it read: "441077234-00:18:40" for the watchdog itself, so
  # its own child was spared): taken as none, which it is.
  case $days in ?????*) total=0; return 0 ;; esac
  days=${days#0}
  saved=$IFS
  IFS=:
  set -- $rest
  IFS=$saved
  for part do
    part=${part#0}  # (a leading zero is octal to $((...)))
    total=$((total * 60 + ${part:-0}))
  done
  total=$((total + ${days:-0} * 86400))
}
same() {  # $1 pid, $2 its start (as entry's): whether $1 is still the process started then,
  # give or take 3 s (ps says whole seconds); yes where ps does not say (none here: by number)
  pid=$1 start=$2 mine= theirs=
  # One ps reads both ages, this watchdog's and $1's: "pid etime" lines, in no set order
  # (-p takes a comma-separated list on Linux and macOS alike, as POSIX has it)
  set -- $(ps -o pid= -o etime= -p "$$,$pid" 2>/dev/null)
  while [ $# -ge 2 ]; do
    case $1 in "$$") mine=$2 ;; "$pid") theirs=$2 ;; esac
    shift 2
  done
  seconds "$mine" || return 0
  mine=$total
  # No process has that number: a group's members left keep it theirs (no process group's
  # id is reused while the group lives), and a process alone is gone (its signal finds none)
  seconds "$theirs" || return 0
  off=$((mine - total - ($start)))
  [ "$off" -ge -3 ] && [ "$off" -le 3 ]
}
still_named() {  # the pid of each entry still the process it named, in $named
  named=
  for n do
    case $n in *@*) same "${n%%@*}" "${n#*@}" || continue ;; esac
    named="$named ${n%%@*}"
  done
}
groups= servers= processes=
while read -r word || [ -n "$word" ]; do
  case $word in
    done) exit 0 ;;
    g*) entry "${word#g}" && groups="$groups $entry" ;;
    s*) entry "${word#s}" && servers="$servers $entry" ;;
    p*) entry "${word#p}" && processes="$processes $entry" ;;
    fg*) number "${word#fg}" && { without "${word#fg}" $groups; groups=$kept; } ;;
    fs*) number "${word#fs}" && { without "${word#fs}" $servers; servers=$kept; } ;;
    fp*) number "${word#fp}" && { without "${word#fp}" $processes; processes=$kept; } ;;
  esac
done
still_named $groups
groups=$named
still_named $servers
servers=$named
still_named $processes
processes=$named
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
