#!/usr/bin/env bash
# Regenerates docs/rollout-timeline.svg, the chart in README's "Rollouts" section: a
# one-machine cluster, a 10-replica Deployment whose pods take 2 s to start, one image
# change, and `kroll rollout timeline`. Run from the repository root: bash docs/timeline.sh
set -euo pipefail
root=$(pwd)
work=$(mktemp -d)
go build -o "$work/kroll" ./cmd/kroll
cd "$work"
./kroll up --port 0 --pod-startup-delay 2s > up.log 2>&1 &
up=$!
trap 'kill $up 2>/dev/null; wait $up 2>/dev/null; rm -rf "$work"' EXIT
until grep -q '^ready' up.log; do sleep 1; kill -0 $up; done
./kroll create deployment web --image=nginx:1.25 --replicas=10
./kroll rollout status deployment/web --timeout=2m
./kroll set image deployment/web nginx=nginx:1.26
./kroll rollout status deployment/web --timeout=2m
./kroll rollout timeline deployment/web -o "$root/docs/rollout-timeline.svg"
