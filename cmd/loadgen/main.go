// Command loadgen stresses shardinformer and client-go's SharedIndexInformer
// with the same pod workload and reports throughput, delivery latency, CPU
// and memory side by side, then checks that every cache and handler ended at
// the server's state.
//
// By default it embeds a simulated API server (package apisim) on 127.0.0.1
// with 100k realistic pods in 100 namespaces; both informers list and watch
// it through their own client-go clientsets (HTTP, protobuf decoding,
// reflector), exactly as against a cluster. Then a churn generator writes a
// create:update:delete mix at --churn-rate for --churn-duration; every write
// carries its emission time, so handlers measure end-to-end delivery latency.
//
//	go run ./cmd/loadgen                                  # make run
//	go run ./cmd/loadgen --pods 20000 --churn-rate 0 --churn-events 200000
//	go run ./cmd/loadgen --sequential --out r.json --html r.html
//	go run ./cmd/loadgen --kubeconfig ~/.kube/config --pods 2000 --churn-rate 200
//
// # Side by side or sequential
//
// Side by side (the default) runs both informers at once on one stream: they
// see the same events at the same moments, which makes latency and
// throughput directly comparable, but they compete for the same cores, so a
// hungrier implementation slows the other, and process-wide numbers (RSS,
// peak heap, GC) are shared. CPU is still split per implementation: loadgen
// profiles the CPU and attributes samples by goroutine label (an informer's
// reflector, decoding, connections, shards and handlers inherit its label).
// --sequential runs each implementation alone on a fresh copy of the same
// cluster and the same churn (same seed): every number, RSS and GC included,
// is its own, at the price of twice the run time. The churn is the same
// sequence of writes in both (one writer, same seed); bound it with
// --churn-events for the same length too (a duration bound ends wherever
// the writer got to). For the fairest resource comparison use --sequential;
// for "the same stream at the same time", the default.
//
// # Memory
//
// The defaults hold 100k pods three times: two caches (≈22 KB each decoded)
// and the simulated server, which keeps only encodings (apisim's
// EncodedOnly, so the collector does not scan its ≈1 GiB): expect a live
// heap of ≈6.5 GiB, which GOGC=100 alone would let grow to twice that.
// Unless GOMEMLIMIT is set, loadgen sets a soft memory limit of half the
// machine's memory (reported as host.memory_limit_bytes),
// trading GC CPU for a bounded peak; on a shared or small machine use fewer
// --pods or --sequential.
//
// # Exit status
//
// 0 when every check passed, 1 when a check failed or the run failed, 2 for
// invalid flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(mainErr())
}

func mainErr() int {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	// The first Ctrl-C or SIGTERM cancels the run (and cleans up a real
	// cluster); a second one kills the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	_, err = run(ctx, c, os.Stdout, os.Stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errCheckFailed):
		return 1
	default:
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
}
