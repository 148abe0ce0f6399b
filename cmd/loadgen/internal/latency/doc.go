// Package latency is loadgen's latency histogram: log-linear buckets that a
// handler or reconcile worker records into and the report reads from.
//
// A [Histogram] is written by many goroutines (Record is a few atomic adds;
// one histogram per writer avoids cache-line contention) and read by merging:
// [Merge] copies one or more histograms into a plain [Snapshot], whose
// quantiles, mean and buckets the report and the sampler read. A Snapshot
// taken earlier and [Snapshot.Since] give a window (the sampler's latency per
// point). The package knows nothing of the report or of the stacks under test.
//
//	var h latency.Histogram
//	h.Record(d)
//	p99 := latency.Merge(&h).Quantile(0.99)
package latency
