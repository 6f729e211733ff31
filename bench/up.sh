# up.sh — sourced by the bench scripts that run `kroll up` themselves: stop_up stops
# the one started (its pid in UP_PID) with Ctrl-C as a user would, waits up to 60 s
# for it to shut its cluster down, then kills it; it runs on the script's exit too.
UP_PID=""
stop_up() {
  if [[ -n $UP_PID ]] && kill -0 "$UP_PID" 2>/dev/null; then
    kill -INT "$UP_PID"
    for _ in $(seq 1 120); do kill -0 "$UP_PID" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$UP_PID" 2>/dev/null && kill -KILL "$UP_PID"
    wait "$UP_PID" 2>/dev/null || true
  fi
  UP_PID=""
}
trap stop_up EXIT
