// Command loadgen measures client-go's informer stack and shardinformer's
// on the same pod workload and reports, for every figure, both values, their
// ratio (ours/client-go) and a verdict, then checks that every cache, handler
// and reconciler ended at the server's state.
//
// By default it embeds a simulated API server (package apisim) on 127.0.0.1
// with 100k realistic pods in 100 namespaces; each implementation lists and
// watches it through its own client-go clientset (HTTP, protobuf decoding,
// reflector), exactly as against a cluster. A churn writer then creates,
// updates and deletes pods at --churn-rate for --churn-duration; every write
// carries its emission time.
//
//	go run ./cmd/loadgen                                  # make run: the controller scenario
//	go run ./cmd/loadgen --scenario informer --handlers 4 --readers 4
//	go run ./cmd/loadgen --path dynamic --managed-fields --churn-rate 0 --mix 0:1:0
//	go run ./cmd/loadgen --scenario scale --scale-pods 10k,30k,100k
//	go run ./cmd/loadgen --scenario replicas --replicas 1,2,3 --shard-selector both
//	go run ./cmd/loadgen --kubeconfig ~/.kube/config --pods 2000 --churn-rate 200
//
// # Scenarios
//
// controller (the default) is what users of this library run: informer →
// work queue → --workers workers whose reconcile function (the same on both
// stacks) reads the cache (GetByKey of the key, ByIndex of its namespace),
// burns --reconcile-work of CPU in a deterministic loop and, against a real
// cluster, patches the pod's status. Its figures are the time to sync and
// reconcile every object, reconciles/s, the reconcile start latency after a
// change (the change's emission stamp → the start of the reconcile that took
// it), cache freshness (the stamp → the handler's notification, when the
// cache holds the change), CPU and retained heap. informer runs event
// handlers (and cache readers) instead; scale sweeps the controller
// scenario over --scale-pods (on a --path other than typed, the informer
// scenario); replicas runs the controller scenario split
// over 1, 2, 3 (--replicas) controller replica processes, each a
// replicas/runner.Runner with the same reconcile function behind its
// handler, and reports reconciles/s, memory and decoding per replica
// (replicas.go, replica_child.go); soak holds the controller scenario for
// --soak (make soak: 1h) under faults and checks that the live heap,
// goroutines and long-lived structures sampled every minute stay flat
// (soak.go).
//
// # Paths
//
// --path says which user path both implementations are built through, each
// with its own library's entry point (paths.go, buildInformer): typed (the
// default) is the typed informer factory — ours,
// informers.NewSharedInformerFactoryWithOptions with the wire and its diet,
// against client-go's — and its Core().V1().Pods() informer; dynamic the
// dynamic informer factories on a pod-sized custom resource of the
// simulator (pods against a cluster); metadata the metadata informer
// factories on pods; controller-runtime a controller-runtime cache
// (crcache's against cache.New) and its pod informer. The non-typed paths
// run the informer scenario. client-go+wire, the one implementation no
// factory builds, is client-go's informer built by hand on the wire.
//
// Where each stack's parts plug in: buildInformer in paths.go (the
// informer, through its path; listerWatcher in impl.go for the hand-built
// one) and newQueue in impl.go (the work queue) are the only places that
// choose them; reports name the path, the list/watch and the queue.
//
// # Fairness
//
// By default each trial runs one implementation alone in a child process
// (this binary re-executed with an internal flag), driven over stdin and
// stdout (client.go): its process CPU, heap, RSS and GC are its own, and
// the simulated server and churn writer stay in the parent, with every pod
// encoded before the child starts. Trials repeat --runs times, alternating
// the implementations (A B, B A, …), on the same workload and seed; figures
// are medians with min–max. --side-by-side runs the implementations at once
// in this process on one stream instead (same events at the same moments,
// but they compete for cores; CPU is split by goroutine label).
//
// # Output
//
// A summary on stdout (the figures' medians with ratio and verdict, then
// run by run: ours against client-go on the sync and the latency quantiles,
// and how many runs ours is at or below on all of them); report.json
// (layout: report.schema.json, versioned by schema_version) and report.html (rendered from that JSON by an
// embedded script; offline) in a new directory under --out-dir; --profile
// writes pkg/profile profiles there, one directory per implementation
// process, goroutines labelled impl=<name>.
//
// # Faults
//
// --faults puts a fault-injecting proxy (package faults) between the
// implementations' clients and the server, injecting cuts, stalls, 500s,
// 429s and 410s (mid-watch: ERROR events) until the churn ends; the
// report gives the faults by kind and, per implementation, its relists,
// watch restarts and time to converge after the faults stopped (faults.go).
//
// # Memory
//
// Unless GOMEMLIMIT is set, every loadgen process sets a soft memory limit
// of half the machine's memory, trading GC CPU for a bounded peak. At 100k
// pods a client holds ≈2.3 GiB of decoded pods; the parent peaks at ≈0.6
// GiB (the simulated server keeps ≈1 KB a pod: at 1M pods ≈0.9 GiB of
// heap, ≈2.4 GiB of RSS at its peak while populating;
// bench/results/apisim-1m.md). The parent kills an implementation's child
// whose resident set exceeds --child-mem-limit (default: the machine's
// memory less 4 GiB), whose soft limit is then 90% of it; that trial, like
// a child the kernel killed, is reported as "did not fit in N GiB" and the
// run goes on (fit.go).
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
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == protocol.ChildFlag {
		os.Exit(childMain())
	}
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
