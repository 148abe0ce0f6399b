#!/usr/bin/env bash
# Runs the integration tests of kube-controller-manager's controllers from
# k8s.io/kubernetes (test/integration/<pkg>) twice: as published (client-go's
# informer factories: the baseline) and with only the import paths of the
# three factory packages swapped for ours. Prints, per package, tests run,
# passed on each side, and the tests that pass on client-go's factories but
# fail on ours; exits 1 when ours passes fewer, 2 when a baseline cannot be
# built or run. Nothing of Kubernetes' code enters the repository: the
# scratch module lives in UPSTREAM_DIR. See hack/upstream/README.md.
#
# Usage: hack/upstream.sh [-pkgs "replicaset job"] [-run REGEX] [-retries N]
#
# Environment (flags win):
#   UPSTREAM_PKGS     test/integration packages (default below)
#   UPSTREAM_RUN      -run filter for both sides (default: all tests)
#   UPSTREAM_RETRIES  reruns of each side's failed tests (default 1)
#   UPSTREAM_TIMEOUT  per test binary run (default 60m)
#   UPSTREAM_HELPERS  1 (default): also swap the factories in k8s.io/kubernetes
#                     test helper packages the tests import (test/integration/util
#                     builds a metadata factory in CreateGCController); 0: only
#                     the test packages' own imports
#   UPSTREAM_DIR      scratch directory (default ${TMPDIR:-/tmp}/shardinformer-upstream)
#   UPSTREAM_KUBE_VERSION  k8s.io/kubernetes version (default: v1.<minor>.<patch>
#                     of the client-go the root module requires)
#   UPSTREAM_BUILDFLAGS    extra `go test -c` flags (e.g. -race)
#   UPSTREAM_P        go build parallelism, -p (default 1: the machine is shared)
#   UPSTREAM_SIDES    "baseline ours" (default); one side (ours after a fix) keeps
#                     the other side's earlier results to compare against
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

default_pkgs="replicaset deployment daemonset statefulset job cronjob garbagecollector namespace endpointslice podgc disruption"
pkgs="${UPSTREAM_PKGS:-$default_pkgs}"
run_filter="${UPSTREAM_RUN:-}"
retries="${UPSTREAM_RETRIES:-1}"
timeout="${UPSTREAM_TIMEOUT:-60m}"
helpers="${UPSTREAM_HELPERS:-1}"
work="${UPSTREAM_DIR:-${TMPDIR:-/tmp}/shardinformer-upstream}"
buildflags="${UPSTREAM_BUILDFLAGS:-}"
par="${UPSTREAM_P:-1}"
run_sides="${UPSTREAM_SIDES:-baseline ours}"

while [[ $# -gt 0 ]]; do
	case "$1" in
	-pkgs) pkgs="$2"; shift 2 ;;
	-run) run_filter="$2"; shift 2 ;;
	-retries) retries="$2"; shift 2 ;;
	-timeout) timeout="$2"; shift 2 ;;
	-h | -help | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "upstream: unknown argument $1 (see -help)" >&2; exit 2 ;;
	esac
done
pkgs="${pkgs//,/ }"

case "$work" in
"$root" | "$root"/*) echo "upstream: UPSTREAM_DIR must be outside the repository ($root)" >&2; exit 2 ;;
esac

self_module="github.com/shardinformer/shardinformer"
scratch_module="upstream.shardinformer.test"
# The three factory packages, client-go's → ours. Only these exact import
# paths are swapped; sub-packages (k8s.io/client-go/informers/core/v1, …) stay.
swaps=(
	"k8s.io/client-go/informers|${self_module}/informers"
	"k8s.io/client-go/metadata/metadatainformer|${self_module}/informers/metadatainformer"
	"k8s.io/client-go/dynamic/dynamicinformer|${self_module}/informers/dynamicinformer"
)

client_go="$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "${root}/go.mod")"
staging_version="${client_go}"
kube_version="${UPSTREAM_KUBE_VERSION:-v1.${client_go#v0.}}"
if [[ -n "${UPSTREAM_KUBE_VERSION:-}" ]]; then
	staging_version="v0.${UPSTREAM_KUBE_VERSION#v1.}"
fi

say() { echo "== upstream: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# --- etcd: the integration framework looks it up on PATH ---------------------
if [[ ! -x "${root}/bin/etcd" ]]; then
	say "bin/etcd missing: building it (make cluster-bins)"
	bash "${root}/hack/build-cluster-bins.sh" etcd
fi
export PATH="${root}/bin:${PATH}"
# An unreachable URL: the framework then starts a private etcd per test
# binary (on a unix socket) instead of reusing whatever listens on :2379.
export KUBE_INTEGRATION_ETCD_URL="http://127.0.0.1:1"

# --- the scratch module -------------------------------------------------------
mod="${work}/mod"
results="${work}/results"
bins="${work}/bin"
mkdir -p "${mod}" "${results}" "${bins}"

say "k8s.io/kubernetes ${kube_version}, staging ${staging_version}, ours at ${root}; scratch ${work}"
kube_dir="$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${kube_version}" | awk -F'"' '$2 == "Dir" { print $4 }')"
[[ -d "${kube_dir}/test/integration" ]] || { echo "upstream: no test/integration in k8s.io/kubernetes@${kube_version}" >&2; exit 2; }

# Every staging module k8s.io/kubernetes requires, from its own go.mod: the
# ones it replaces with ./staging/src/… and also requires (sample-cli-plugin
# and sample-controller are replaced but neither required nor published).
mapfile -t staging < <(awk '
	/^replace \(/ { r = 1; next } r && /^\)/ { r = 0 }
	r && $3 ~ /^\.\/staging\// { repl[$1] = 1 }
	/^require \(/ { q = 1; next } q && /^\)/ { q = 0 }
	q && $2 == "v0.0.0" { req[$1] = 1 }
	END { for (m in repl) if (m in req) print m }' "${kube_dir}/go.mod" | sort)
say "${#staging[@]} staging modules replaced by ${staging_version}"

rm -rf "${mod}/baseline" "${mod}/ours"
{
	echo "// Generated by hack/upstream.sh; scratch, never committed."
	echo "module ${scratch_module}"
	echo
	echo "go $(awk '$1 == "go" { print $2; exit }' "${root}/go.mod")"
	echo
	echo "require ("
	echo "	k8s.io/kubernetes ${kube_version}"
	echo "	${self_module} v0.0.0"
	echo ")"
	echo
	echo "replace ("
	echo "	${self_module} => ${root}"
	for m in "${staging[@]}"; do echo "	${m} => ${m} ${staging_version}"; done
	echo ")"
} >"${mod}/go.mod"
# Keep go.sum from earlier runs: tidy only adds what is missing.
touch "${mod}/go.sum"

swap_imports() { # dir
	local s from to
	for s in "${swaps[@]}"; do
		from="${s%%|*}" to="${s#*|}"
		find "$1" -name '*.go' -exec sed -i "s#\"${from}\"#\"${to}\"#g" {} +
	done
}

helper_pkgs=() # k8s.io/kubernetes/test/… packages copied for ours
for p in ${pkgs}; do
	src="${kube_dir}/test/integration/${p}"
	[[ -d "${src}" ]] || { echo "upstream: no package test/integration/${p} in k8s.io/kubernetes@${kube_version}" >&2; exit 2; }
	for side in baseline ours; do
		mkdir -p "${mod}/${side}"
		cp -r "${src}" "${mod}/${side}/${p}"
		chmod -R u+w "${mod}/${side}/${p}"
	done
	swap_imports "${mod}/ours/${p}"
	if [[ "${helpers}" == 1 ]]; then
		# Helper packages of k8s.io/kubernetes' test tree the package imports
		# whose own (non-test) files import a factory package.
		for imp in $(grep -ho '"k8s.io/kubernetes/test/[^"]*"' "${src}"/*.go | tr -d '"' | sort -u); do
			hdir="${kube_dir}/${imp#k8s.io/kubernetes/}"
			pat="$(printf '"%s"\\|' "${swaps[@]%%|*}")"
			if ls "${hdir}"/*.go 2>/dev/null | grep -v '_test\.go$' | xargs -r grep -l "${pat%\\|}" >/dev/null; then
				[[ " ${helper_pkgs[*]} " == *" ${imp} "* ]] || helper_pkgs+=("${imp}")
			fi
		done
	fi
done
for imp in "${helper_pkgs[@]}"; do
	rel="${imp#k8s.io/kubernetes/}"
	dst="${mod}/ours/helpers/${rel}"
	mkdir -p "${dst}"
	find "${kube_dir}/${rel}" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cp {} "${dst}/" \;
	chmod -R u+w "${dst}"
	swap_imports "${dst}"
	find "${mod}/ours" -name '*.go' -exec sed -i "s#\"${imp}\"#\"${scratch_module}/ours/helpers/${rel}\"#g" {} +
	say "helper ${imp} copied for ours with the factories swapped"
done

say "go mod tidy -e (downloads on the first run)"
t0="$(now)"
(cd "${mod}" && GOFLAGS="-mod=mod ${GOFLAGS:-}" go mod tidy -e) >"${work}/tidy.log" 2>&1 || {
	tail -30 "${work}/tidy.log" >&2
	exit 2
}
say "tidy: $(since "$t0")s"

# The summarizer is stdlib-only: built outside any module, so that a root
# go.mod being edited cannot stop it.
(cd "${work}" && GOFLAGS= GO111MODULE=on go build -o "${bins}/summarize" "${root}/hack/upstream/summarize.go")
summarize() { "${bins}/summarize" "$@"; }

# --- build and run, one package and one side at a time -------------------------
run_binary() { # pkg side out.json [extra -test.run]
	local p="$1" side="$2" out="$3" runre="${4:-${run_filter}}" tmp
	# Short: etcd listens on a unix socket under TMPDIR, and a socket path
	# has at most 107 bytes.
	tmp="$(mktemp -d "${TMPDIR:-/tmp}/up.XXXXXX")"
	local args=(-test.v=test2json -test.timeout="${timeout}" -test.count=1)
	[[ -n "${runre}" ]] && args+=(-test.run="${runre}")
	# A test binary runs in its package's directory, as go test runs it.
	(cd "${mod}/${side}/${p}" && TMPDIR="${tmp}" go tool test2json -t -p "${p}" \
		"${bins}/${side}-${p}.test" "${args[@]}") >"${out}" 2>"${out%.json}.stderr" || true
	rm -rf "${tmp}"
}

for p in ${pkgs}; do
	dir="${results}/${p}"
	mkdir -p "${dir}"
	touch "${dir}/times.txt"
	for side in ${run_sides}; do
		# Only this side's earlier results go: with UPSTREAM_SIDES=ours the
		# baseline's stay to compare against.
		rm -f "${dir}/${side}".*
		sed -i "/^${side} /d" "${dir}/times.txt"
		say "${p} (${side}): go test -c"
		t0="$(now)"
		rc=0
		(cd "${mod}" && GOFLAGS="-mod=mod ${GOFLAGS:-}" go test -c -p "${par}" ${buildflags} \
			-o "${bins}/${side}-${p}.test" "./${side}/${p}") >"${dir}/${side}.build.log" 2>&1 || rc=$?
		echo "${rc}" >"${dir}/${side}.build.rc"
		echo "${side} compile $(since "$t0")" >>"${dir}/times.txt"
		if [[ "${rc}" != 0 ]]; then
			say "${p} (${side}): does not compile (${dir}/${side}.build.log)"
			head -20 "${dir}/${side}.build.log" >&2
			continue
		fi
		if [[ "${side}" == ours ]] && ! (cd "${mod}" && GOFLAGS="-mod=mod ${GOFLAGS:-}" go list -test -deps "./ours/${p}") |
			grep "^${self_module}/informers" >/dev/null; then
			echo "upstream: ours/${p} does not import our factories: the swap reached nothing" >&2
			exit 2
		fi
		say "${p} (${side}): running${run_filter:+ -run ${run_filter}}"
		t0="$(now)"
		run_binary "${p}" "${side}" "${dir}/${side}.json"
		echo "${side} run $(since "$t0")" >>"${dir}/times.txt"
		for ((i = 1; i <= retries; i++)); do
			mapfile -t failed < <(summarize -failed "${dir}/${side}.json")
			[[ ${#failed[@]} -gt 0 ]] || break
			if [[ $i -gt 1 ]]; then
				mapfile -t failed < <(summarize -failed "${dir}/${side}.retry$((i - 1)).json")
				[[ ${#failed[@]} -gt 0 ]] || break
			fi
			re="^($(
				IFS='|'
				echo "${failed[*]}"
			))\$"
			say "${p} (${side}): rerun ${i} of ${#failed[@]} failed: ${failed[*]}"
			t0="$(now)"
			run_binary "${p}" "${side}" "${dir}/${side}.retry${i}.json" "${re}"
			echo "${side} retry $(since "$t0")" >>"${dir}/times.txt"
		done
		rm -f "${bins}/${side}-${p}.test" # ~200 MB each
	done
	summarize -results "${results}" -pkgs "${p}" >&2 || true
done

say "summary (k8s.io/kubernetes ${kube_version}; times in seconds, client-go's / ours)"
summarize -results "${results}" -pkgs "${pkgs}"
