#!/usr/bin/env bash
# prometheus-cost.sh — what `kroll up --prometheus` costs at rest with 1,000 scraped
# pods (issue 64's "Cost"), against `kroll up` without it.
#
# For each MODE (plain, then prometheus), on a fresh data directory:
#   1. starts `kroll up` (10 nodes of 110 pods, etcd without fsync), with
#      --prometheus in the second mode (it scrapes every 15 s);
#   2. creates Deployment web: 1,000 replicas of app:1, annotated
#      prometheus.io/scrape: "true" and prometheus.io/port: "8080" (each pod serves the
#      model's synthetic request counts and latency histogram), and waits until all
#      1,000 are available; with Prometheus, also until it has 1,000 pod targets up;
#   3. lets it settle SETTLE seconds (default 60), then measures kroll up's process
#      over WINDOW seconds (default 120): CPU (user + system time over the window, in
#      cores) and resident memory (VmRSS at the window's end, and its peak VmHWM);
#   4. with Prometheus, also prints the series in its TSDB and the samples a scrape
#      round appends (all targets, and the pods').
# Everything runs in one process (API server, etcd, scheduler, controllers, nodes,
# Prometheus): the difference between the two modes is Prometheus' cost.
#
# Usage: bench/prometheus-cost.sh   (under the shared lock of heavy work:
#        flock /tmp/kroll-heavy.lock bench/prometheus-cost.sh)
# Environment: KROLL (binary; default: built from this checkout into a temp dir),
#              SETTLE, WINDOW (seconds), REPLICAS (default 1000), KEEP=1 keeps the
#              data directories.
set -euo pipefail

SETTLE=${SETTLE:-60}
WINDOW=${WINDOW:-120}
REPLICAS=${REPLICAS:-1000}
cd "$(dirname "$0")/.."
if [[ -z ${KROLL:-} ]]; then
  KROLL=$(mktemp -d)/kroll
  go build -o "$KROLL" ./cmd/kroll
fi
TICK=$(getconf CLK_TCK)

# stop_up (UP_PID), also on exit.
source bench/up.sh

# cpu_ticks: user + system clock ticks of kroll up so far (/proc/PID/stat fields 14, 15).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$UP_PID/stat"; }
# mem KEY: a VmRSS/VmHWM line of kroll up, in MiB.
mem() { awk -v k="$1:" '$1 == k {printf "%.0f", $2 / 1024}' "/proc/$UP_PID/status"; }
# query Q: the first value of Prometheus' answer to instant query Q.
query() {
  curl -s "$PROM/api/v1/query" --data-urlencode "query=$1" |
    sed -n 's/.*"value":\[[0-9.]*,"\([^"]*\)"\].*/\1/p'
}

for MODE in plain prometheus; do
  DIR=$(mktemp -d /tmp/prometheus-cost.XXXXXX)
  KC=$DIR/kubeconfig
  flags=()
  [[ $MODE == prometheus ]] && flags=(--prometheus --prometheus-port 0)
  "$KROLL" up --data-dir "$DIR" --port 0 --nodes 10 --etcd-unsafe-no-fsync "${flags[@]}" >"$DIR/up.out" 2>"$DIR/up.err" &
  UP_PID=$!
  for _ in $(seq 1 240); do
    grep -qx ready "$DIR/up.out" && break
    kill -0 "$UP_PID" 2>/dev/null || { echo "kroll up exited; stderr:" >&2; tail -20 "$DIR/up.err" >&2; exit 1; }
    sleep 0.5
  done
  grep -qx ready "$DIR/up.out" || { echo "kroll up not ready within 2 min" >&2; exit 1; }
  PROM=$(sed -n 's/^Prometheus: //p' "$DIR/up.out")
  kubectl --kubeconfig "$KC" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: $REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "8080"}
    spec:
      containers: [{name: app, image: "app:1", ports: [{containerPort: 8080}]}]
EOF
  began=$(date +%s)
  kubectl --kubeconfig "$KC" rollout status deploy/web --timeout=15m >/dev/null
  echo "$MODE: $REPLICAS pods available after $(($(date +%s) - began)) s"
  if [[ $MODE == prometheus ]]; then
    for _ in $(seq 1 120); do
      up=$(query 'count(up{job="kubernetes-pods"} == 1)')
      [[ $up == "$REPLICAS" ]] && break
      sleep 5
    done
    echo "$MODE: ${up:-0} pod targets up after $(($(date +%s) - began)) s"
  fi
  sleep "$SETTLE"
  t0=$(cpu_ticks)
  sleep "$WINDOW"
  t1=$(cpu_ticks)
  rss=$(mem VmRSS) hwm=$(mem VmHWM)
  printf '%s: at rest over %d s: CPU %.2f cores; RSS %s MiB (peak %s MiB)\n' \
    "$MODE" "$WINDOW" "$(echo "($t1 - $t0) / $TICK / $WINDOW" | bc -l)" "$rss" "$hwm"
  if [[ $MODE == prometheus ]]; then
    printf '%s: %s series in the TSDB; %s samples a scrape round (pods: %s), every 15 s\n' \
      "$MODE" "$(query 'count({__name__=~".+"})')" "$(query 'sum(scrape_samples_scraped)')" \
      "$(query 'sum(scrape_samples_scraped{job="kubernetes-pods"})')"
  fi
  stop_up
  if [[ -z ${KEEP:-} ]]; then rm -rf "$DIR"; else echo "kept $DIR"; fi
done
