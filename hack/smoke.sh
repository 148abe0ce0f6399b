#!/usr/bin/env bash
# Runs every Makefile target's command at tiny sizes so that no target can rot
# unnoticed (CI runs this after make test and make e2e; `make smoke` runs it by
# hand). Each step prints its name; the first failure stops the script with a
# non-zero exit. Outputs go to a temporary directory, never into the tree.
#
# Covered here: run, soak, bench, profile, upstream (two packages), cluster, clean. Not here: test and e2e
# (CI runs them in full), fuzz (make test runs its script, hack/fuzz.sh),
# cluster-bins (make e2e and make cluster run it), vet and all (part of test).
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
cluster_pid=""
cleanup() {
	if [[ -n "$cluster_pid" ]] && kill -0 "$cluster_pid" 2>/dev/null; then
		kill -INT "$cluster_pid" 2>/dev/null || true
		wait "$cluster_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

step() { echo "== smoke: $*"; }

step "make run (controller scenario, 300 pods, both implementations)"
make run ARGS="--pods 300 --namespaces 3 --churn-duration 1s --churn-rate 200 --out-dir $tmp/loadgen" >"$tmp/run.log" 2>&1 ||
	{ cat "$tmp/run.log"; exit 1; }
ls "$tmp"/loadgen/*/report.json "$tmp"/loadgen/*/report.html >/dev/null

step "make run (replicas scenario, 300 pods, 1 and 2 replicas, shardSelector on and off)"
make run ARGS="--scenario replicas --pods 300 --namespaces 3 --replicas 1,2 --shard-selector both --churn-duration 1s --churn-rate 200 --out-dir $tmp/replicas" \
	>"$tmp/replicas.log" 2>&1 || { cat "$tmp/replicas.log"; exit 1; }
ls "$tmp"/replicas/*/report.json "$tmp"/replicas/*/report.html >/dev/null

step "make soak (500 pods, 20s, both implementations)"
make soak SOAK=20s ARGS="--pods 500 --namespaces 5 --churn-rate 100 --soak-sample-every 2s --soak-warmup 5s --soak-max-slope 1000 --out-dir $tmp/soak" \
	>"$tmp/soak.log" 2>&1 || { cat "$tmp/soak.log"; exit 1; }
ls "$tmp"/soak/*/report.json "$tmp"/soak/*/report.html >/dev/null

step "make bench (200 pods, one count, micro-benchmarks 10ms)"
BENCH_OUT="$tmp/bench" BENCH_COUNT=1 BENCH_OBJECTS=200 BENCH_UPDATES=1000 BENCH_MICRO_TIME=10ms \
	make bench >"$tmp/bench.log" 2>&1 || { tail -50 "$tmp/bench.log"; exit 1; }
for f in raw.txt micro.txt benchstat.txt summary.md; do test -s "$tmp/bench/$f"; done

step "make profile (200 pods, one workload)"
make profile ARGS="-out $tmp/profiles -objects 200 -updates 2000 -rounds 1 -workloads sync,updates -kinds cpu,alloc" \
	>"$tmp/profile.log" 2>&1 || { cat "$tmp/profile.log"; exit 1; }
test -n "$(find "$tmp/profiles" -name '*.pprof' -size +0)"

step "make upstream (staleness and replicaset: kube-controller-manager's stale-controller checks on our factories)"
UPSTREAM_PKGS="staleness replicaset" UPSTREAM_DIR="$tmp/upstream" make upstream >"$tmp/upstream.log" 2>&1 ||
	{ tail -80 "$tmp/upstream.log"; exit 1; }
tail -8 "$tmp/upstream.log"

step "make cluster (start, wait for the kubeconfig, stop)"
make cluster-bins >/dev/null
# Build first so that the wait below times the cluster, not the compiler.
go build -o "$tmp/cluster" ./e2e/cmd/cluster
# make cluster = cluster-bins + this binary; run the binary so the signal reaches it.
"$tmp/cluster" -kubeconfig-out "$tmp/kubeconfig" >"$tmp/cluster.log" 2>&1 &
cluster_pid=$!
for _ in $(seq 120); do
	[[ -s "$tmp/kubeconfig" ]] && break
	kill -0 "$cluster_pid" 2>/dev/null || { cat "$tmp/cluster.log"; exit 1; }
	sleep 1
done
[[ -s "$tmp/kubeconfig" ]] || { echo "no kubeconfig after 120 s"; cat "$tmp/cluster.log"; exit 1; }
kill -INT "$cluster_pid"
wait "$cluster_pid" || { echo "cluster exited with $? on SIGINT"; cat "$tmp/cluster.log"; exit 1; }
cluster_pid=""
[[ ! -e "$tmp/kubeconfig" ]] || { echo "cluster left its kubeconfig behind"; exit 1; }

step "make clean (in a copy of the tracked tree)"
mkdir -p "$tmp/clean"
git ls-files -z | xargs -0 cp --parents -t "$tmp/clean"
mkdir -p "$tmp/clean/bin" && touch "$tmp/clean/bin/x" "$tmp/clean/profiles/cpu.pprof" "$tmp/clean/e2e.log"
make -C "$tmp/clean" clean >/dev/null
[[ ! -e "$tmp/clean/bin" && ! -e "$tmp/clean/profiles/cpu.pprof" && ! -e "$tmp/clean/e2e.log" ]]

echo "== smoke: every target ran"
