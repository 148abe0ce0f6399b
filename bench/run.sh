#!/usr/bin/env bash
# Runs the benchmark suite and writes, under $BENCH_OUT (default bench/results):
#   raw.txt        go test -bench output of ./bench (client-go and shardinformer side by side)
#   micro.txt      go test -bench output of the parts (ring, fifo, index)
#   wire.txt       go test -bench output of package wire (decoding against client-go's decoder)
#   benchstat.txt  benchstat -col /impl raw.txt, then benchstat micro.txt
#   summary.md     ratios shardinformer / client-go per workload (for the README)
# Every file starts with the machine, date, Go version and commit.
#
# Knobs (environment):
#   BENCH_COUNT=6         runs of each benchmark (benchstat wants >= 6 for a confidence interval)
#   BENCH_CPU=2           GOMAXPROCS for the runs (the targets are for 2)
#   BENCH_OBJECTS=100000  cached pods; BENCH_UPDATES, BENCH_NAMESPACES, BENCH_CPU_UPDATES,
#                         BENCH_LATENCY_EVENTS, BENCH_RATE, BENCH_STALL_UPDATES, BENCH_STALL_WAIT_MS
#                         are read by bench/bench_test.go (see its top)
#   BENCH_PATTERN=.       -bench pattern for ./bench
#   BENCH_SHARDS, BENCH_RING_CAPACITY  shardinformer tuning (0 = pipeline defaults)
#   BENCH_MICRO=1         also run the micro-benchmarks (0 to skip)
#   BENCH_MICRO_PKGS="./ring/ ./fifo/ ./index/"
#   BENCH_MICRO_TIME=1s   -benchtime of the micro-benchmarks
#   BENCH_WIRE=1          also run package wire's decoding benchmarks (0 to skip)
#   BENCH_DECODE_OBJECTS=10000  pods of BenchmarkDecodeSync (initial sync over HTTP with decoding)
#   BENCH_OUT=bench/results
#
# Run it on a quiet machine: the suite takes roughly 10-15 minutes at the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${BENCH_COUNT:-6}
cpu=${BENCH_CPU:-2}
pattern=${BENCH_PATTERN:-.}
out=${BENCH_OUT:-bench/results}
export BENCH_OBJECTS=${BENCH_OBJECTS:-100000}
# Five updates per cached pod: a timed region of seconds, not of one GC cycle.
export BENCH_UPDATES=${BENCH_UPDATES:-$((5 * BENCH_OBJECTS))}
mkdir -p "$out"

benchstat=$(command -v benchstat || true)
if [[ -z "$benchstat" ]]; then
	gobin=$(go env GOBIN)
	gobin=${gobin:-$(go env GOPATH)/bin}
	if [[ ! -x "$gobin/benchstat" ]]; then
		echo "installing benchstat" >&2
		go install golang.org/x/perf/cmd/benchstat@latest
	fi
	benchstat=$gobin/benchstat
fi

# Configuration lines in benchfmt's "key: value" form, so benchstat keeps them.
header() {
	local dirty=""
	git diff --quiet HEAD -- . ':!bench/results' 2>/dev/null || dirty=" (with uncommitted changes)"
	echo "machine-cores: $(nproc)"
	echo "machine-cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "machine-memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go-version: $(go version | cut -d' ' -f3-)"
	echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$dirty"
	echo "gomaxprocs: $cpu"
	echo "objects: $BENCH_OBJECTS"
	echo "updates: $BENCH_UPDATES"
	echo "command: $*"
	echo
}

status=0
cmd=(go test -run '^$' -bench "$pattern" -benchtime 1x -count "$count" -cpu "$cpu" -timeout 3h ./bench/)
echo "running: ${cmd[*]}" >&2
{ header "${cmd[*]}"; "${cmd[@]}"; } | tee "$out/raw.txt" || {
	status=1
	echo "run.sh: ./bench failed (see $out/raw.txt); summarising what ran" >&2
}

rm -f "$out/micro.txt"
if [[ "${BENCH_MICRO:-1}" != 0 ]]; then
	read -r -a pkgs <<<"${BENCH_MICRO_PKGS:-./ring/ ./fifo/ ./index/}"
	micro=(go test -run '^$' -bench . -benchtime "${BENCH_MICRO_TIME:-1s}" -count "$count" -cpu "$cpu" -timeout 1h "${pkgs[@]}")
	echo "running: ${micro[*]}" >&2
	{ header "${micro[*]}"; "${micro[@]}"; } | tee "$out/micro.txt" || {
		status=1
		echo "run.sh: micro-benchmarks failed (see $out/micro.txt)" >&2
	}
fi

rm -f "$out/wire.txt"
if [[ "${BENCH_WIRE:-1}" != 0 ]]; then
	wire=(go test -run '^$' -bench . -count "$count" -cpu "$cpu" -timeout 1h ./wire/)
	echo "running: ${wire[*]}" >&2
	{ header "${wire[*]}"; "${wire[@]}"; } | tee "$out/wire.txt" || {
		status=1
		echo "run.sh: wire benchmarks failed (see $out/wire.txt)" >&2
	}
fi

{
	header "benchstat -col /impl $out/raw.txt"
	"$benchstat" -col /impl "$out/raw.txt"
	if [[ -f "$out/micro.txt" ]]; then
		echo
		"$benchstat" "$out/micro.txt"
	fi
} > "$out/benchstat.txt"

{
	wiretxt=()
	[[ -f "$out/wire.txt" ]] && wiretxt=("$out/wire.txt")
	header "go run ./bench/summary $out/raw.txt ${wiretxt[*]:-}"
	go run ./bench/summary "$out/raw.txt" "${wiretxt[@]}"
} > "$out/summary.md"
cat "$out/summary.md"
echo "wrote $out/raw.txt $out/benchstat.txt $out/summary.md" >&2
exit "$status"
