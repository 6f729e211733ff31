#!/usr/bin/env bash
# takeover-stall.sh — reproduce "a takeover that once stalled" (issue 57, item 6).
#
# Each run:
#   1. starts `kroll up` on a fresh data directory with upstream's workload
#      controllers (--workload-controllers upstream);
#   2. creates Deployment web: 40 replicas, RollingUpdate 25%/25%, pods annotated
#      kroll.dev/startup-delay: 3s (each container takes 3 s to start), and waits
#      until all 40 are available;
#   3. changes its image, waits STOP_AFTER (4 s), and stops kroll up (SIGINT) with
#      upstream's rollout in flight;
#   4. starts kroll up again on the same data directory with kroll's controllers
#      (--workload-controllers kroll) and times how long the in-flight rollout takes
#      to finish (40 updated, 40 available, 40 replicas, generation observed),
#      giving up after LIMIT seconds;
#   5. prints the duration and the wait log's lines (controllers' "Rollout ..." lines
#      at the default verbosity) from <data-dir>/kroll.log.
#
# Usage: bench/takeover-stall.sh [RUNS]   (RUNS 1..10, default 3)
# Environment: KROLL (binary; default: built from this checkout into a temp dir),
#              LIMIT (seconds to wait for the rollout, default 180),
#              STOP_AFTER (seconds between the image change and the stop, default 4),
#              KEEP=1 keeps each run's data directory (its kroll.log) for reading.
# The machine's load is whatever else runs: the issue saw the stall on a loaded 2-core
# machine. Run it under the shared lock of heavy work: flock /tmp/kroll-heavy.lock ...
set -euo pipefail

RUNS=${1:-3}
LIMIT=${LIMIT:-180}
STOP_AFTER=${STOP_AFTER:-4}
if ! [[ $RUNS =~ ^[0-9]+$ ]] || ((RUNS < 1 || RUNS > 10)); then
  echo "RUNS must be 1..10, got $RUNS" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
if [[ -z ${KROLL:-} ]]; then
  KROLL=$(mktemp -d)/kroll
  go build -o "$KROLL" ./cmd/kroll
fi

# stop_up (UP_PID), also on exit.
source bench/up.sh

# start_up DIR CONTROLLERS: runs kroll up in the background, waits for "ready" (2 min).
start_up() {
  local dir=$1 controllers=$2
  : >"$dir/up.out"
  "$KROLL" up --data-dir "$dir" --port 0 --workload-controllers "$controllers" --etcd-unsafe-no-fsync \
    >"$dir/up.out" 2>>"$dir/up.err" &
  UP_PID=$!
  for _ in $(seq 1 240); do
    grep -qx ready "$dir/up.out" && return 0
    kill -0 "$UP_PID" 2>/dev/null || { echo "kroll up exited; stderr:" >&2; tail -20 "$dir/up.err" >&2; return 1; }
    sleep 0.5
  done
  echo "kroll up not ready within 2 min" >&2
  return 1
}

# counts: "replicas updated available observedGeneration generation" of web.
counts() {
  kubectl --kubeconfig "$KC" get deploy web -o \
    jsonpath='{.status.replicas} {.status.updatedReplicas} {.status.availableReplicas} {.status.observedGeneration} {.metadata.generation}'
}
done_rolling() {
  local c
  c=$(counts 2>/dev/null) || return 1
  read -r r u a og g <<<"$c"
  [[ $r == 40 && $u == 40 && $a == 40 && $og == "$g" ]]
}

for run in $(seq 1 "$RUNS"); do
  DIR=$(mktemp -d /tmp/takeover-stall.XXXXXX)
  KC=$DIR/kubeconfig
  start_up "$DIR" upstream
  kubectl --kubeconfig "$KC" apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 40
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata:
      labels: {app: web}
      annotations: {kroll.dev/startup-delay: 3s}
    spec:
      containers: [{name: web, image: "nginx:1.25"}]
EOF
  for _ in $(seq 1 240); do done_rolling && break; sleep 0.5; done
  done_rolling || { echo "run $run: the first rollout did not finish under upstream's controllers" >&2; exit 1; }
  kubectl --kubeconfig "$KC" set image deploy/web web=nginx:1.26 >/dev/null
  sleep "$STOP_AFTER"
  before=$(counts)
  stop_up
  start_up "$DIR" kroll
  start=$(date +%s.%N)
  finished=no
  while :; do
    if done_rolling; then finished=yes; break; fi
    elapsed=$(echo "$(date +%s.%N) - $start" | bc)
    (($(echo "$elapsed > $LIMIT" | bc))) && break
    sleep 0.5
  done
  elapsed=$(echo "$(date +%s.%N) - $start" | bc)
  printf 'run %d: finished=%s after %.1f s (at the stop: replicas updated available obsGen gen = %s; now %s)\n' \
    "$run" "$finished" "$elapsed" "$before" "$(counts)"
  if [[ $finished == no ]]; then
    kubectl --kubeconfig "$KC" get rs,deploy -o wide || true
  fi
  grep -E '"Rollout (waiting|still waiting|no longer waiting)"|Rollout (waiting|still waiting|no longer waiting)' "$DIR/kroll.log" | tail -40 || true
  stop_up
  if [[ -z ${KEEP:-} ]]; then rm -rf "$DIR"; else echo "kept $DIR"; fi
done
