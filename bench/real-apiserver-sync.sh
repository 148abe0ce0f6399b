#!/usr/bin/env bash
# Issue 11's real kube-apiserver target, reproducibly: the initial sync of
# PODS realistic pods (apisim.NewPod with its status, managedFields written
# by the server) from a local etcd + kube-apiserver, protobuf, each
# implementation alone in its own process, RUNS runs alternating.
# Results: bench/results/real-apiserver-sync.md.
#
#	bench/real-apiserver-sync.sh [OUT_DIR]       # default /tmp/real-apiserver-sync
#
# Environment: PODS (50000), RUNS (3), IMPLS (client-go,shardinformer),
# APISERVER_MEMLIMIT (6GiB), ARGS (more loadgen flags, e.g. "--watchlist off" or "--profile cpu"),
# KUBECONFIG_FILE and SERVER_PIDS (use a cluster that runs already, e.g. one
# from `make cluster`, instead of starting one; SERVER_PIDS are its
# kube-apiserver's and etcd's process ids, comma-separated).
#
# Memory: kube-apiserver's resident set reached 16 GiB with 100k of these
# pods (watch cache, event history, GOGC's headroom) without a limit, which
# on a shared 24 GiB machine pushed everything to the brink of the OOM
# killer; so the cluster runs with GOMEMLIMIT=APISERVER_MEMLIMIT (6GiB),
# which bounds the API server's (and etcd's) heap goal. The default is 50k
# pods; 100k fit with APISERVER_MEMLIMIT=8GiB (API server ≈ 8.1 GB, etcd
# ≈ 2 GB; about 45 minutes in all) and with 12GiB (API server ≈ 12.7 GB,
# etcd 2.4 GB, where it collects half as much: 27-32 CPU-s per sync
# instead of 50-64).
#
# Steps: build loadgen and the cluster command; start the cluster (etcd
# with an 8 GiB quota: 100k pods written twice are ≈1.6 GB before
# compaction); populate once with `loadgen --reuse-pods` (a first run of
# client-go whose figures are discarded; creating 100k pods took 18
# minutes on two cores, where the API server is the bottleneck at ≈100
# pods/s, each pod a create and a status update); then measure, with
# nothing else running on the machine. The pods stay in
# the cluster (namespaces loadgen-keep-…) for later invocations; stopping a
# cluster this script started removes them with it.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-/tmp/real-apiserver-sync}
pods=${PODS:-50000}
runs=${RUNS:-3}
impls=${IMPLS:-client-go,shardinformer}
mkdir -p "$out"

cluster_pid=""
cleanup() {
	if [[ -n "$cluster_pid" ]] && kill -0 "$cluster_pid" 2>/dev/null; then
		kill -INT "$cluster_pid" 2>/dev/null || true
		wait "$cluster_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT

go build -o "$out/loadgen" ./cmd/loadgen
kubeconfig=${KUBECONFIG_FILE:-}
pids=${SERVER_PIDS:-}
if [[ -z "$kubeconfig" ]]; then
	make cluster-bins >/dev/null
	go build -o "$out/cluster" ./e2e/cmd/cluster
	kubeconfig="$out/kubeconfig"
	rm -f "$kubeconfig"
	GOMEMLIMIT=${APISERVER_MEMLIMIT:-6GiB} "$out/cluster" -kubeconfig-out "$kubeconfig" -etcd-arg=--quota-backend-bytes=8589934592 >"$out/cluster.log" 2>&1 &
	cluster_pid=$!
	for _ in $(seq 180); do
		[[ -s "$kubeconfig" ]] && break
		kill -0 "$cluster_pid" 2>/dev/null || { cat "$out/cluster.log"; exit 1; }
		sleep 1
	done
	[[ -s "$kubeconfig" ]] || { echo "no kubeconfig after 180 s"; cat "$out/cluster.log"; exit 1; }
	pids=$(ps -o pid=,comm= --ppid "$cluster_pid" | awk '$2 == "kube-apiserver" || $2 == "etcd" {print $1}' | paste -sd,)
fi
common=(--kubeconfig "$kubeconfig" --reuse-pods --scenario informer --churn-duration 0 --churn-events 0
	--handlers 1 --pods "$pods" --out-dir "$out/results" --progress 10s)
[[ -n "$pids" ]] && common+=(--server-pids "$pids")

echo "== populate (a client-go warm-up run whose figures are discarded)"
# shellcheck disable=SC2086 # ARGS is a list of flags
"$out/loadgen" "${common[@]}" --runs 1 --impl client-go --churn-workers 32 ${ARGS:-} >"$out/populate.log" 2>&1 ||
	{ tail -30 "$out/populate.log"; exit 1; }

echo "== measure: $impls, $runs runs"
# shellcheck disable=SC2086
sh -c 'uptime; "$@"; uptime' sh "$out/loadgen" "${common[@]}" --runs "$runs" --impl "$impls" ${ARGS:-} |
	tee "$out/measure.txt"
