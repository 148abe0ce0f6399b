package main

import (
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
)

func latencyReport(s latency.Snapshot) report.Latency {
	r := report.Latency{Count: s.N, Mean: s.Mean().Seconds(), P50: s.Quantile(.5).Seconds(), P90: s.Quantile(.9).Seconds(),
		P99: s.Quantile(.99).Seconds(), P999: s.Quantile(.999).Seconds(), Max: time.Duration(s.Max).Seconds(),
		Buckets: []report.Bucket{}}
	for le, c := range s.Buckets() {
		r.Buckets = append(r.Buckets, report.Bucket{Le: float64(le) / 1e9, Count: c})
	}
	return r
}

// result assembles c's figures after the check; deletes are the churn
// writer's delete stamps, joined with the delete notifications.
func (c *client) result(chk report.Check, churnStart, churnEnd time.Time, deletes map[string]int64) report.ImplResult {
	r := report.ImplResult{Impl: c.sp.Impl, Decoder: c.decoder, Diet: c.diet, Queue: c.queue, ListWatch: c.listWatch, Objects: chk.CacheObjects, Check: chk,
		CPUScope: report.CPUScopeProcess, EventsObservedByHandler: []uint64{}}
	r.InitialSyncSeconds = c.syncedAt.Sub(c.startedAt).Seconds()
	r.ReadySeconds = c.readyAt.Sub(c.startedAt).Seconds()
	if r.ReadySeconds > 0 {
		r.InitialObjectsPerSecond = float64(c.sp.Pods) / r.ReadySeconds
	}
	r.EventsObserved, r.EventsObservedByHandler = c.observed()
	var last int64
	if ctl := c.ctl; ctl != nil {
		ctl.deleteRec.join(deletes, &ctl.latency)
		ctl.deletes.join(deletes, &ctl.freshness)
		r.Latency = latencyReport(latency.Merge(c.latencies()...))
		fr := latencyReport(latency.Merge(&ctl.freshness))
		r.Freshness = &fr
		r.Reconciles, r.ChurnReconciles = ctl.reconciles.Load(), ctl.changes.Load()
		r.StatusPatches, r.StatusPatchErrors = ctl.patches.Load(), ctl.patchErrors.Load()
		last = ctl.lastChange.Load()
		if span := time.Unix(0, last).Sub(churnStart).Seconds(); last > 0 && span > 0 {
			r.ReconcilesPerSecond = float64(r.ChurnReconciles) / span
		}
	} else {
		for _, h := range c.handlers {
			h.deletes.join(deletes, &h.lat)
			last = max(last, h.last.Load())
		}
		r.Latency = latencyReport(latency.Merge(c.latencies()...))
		r.Deliveries = c.calls() - uint64(c.sp.Pods)*uint64(len(c.handlers))
		if span := time.Unix(0, last).Sub(churnStart).Seconds(); last > 0 && span > 0 {
			r.EventsPerSecond = float64(r.EventsObserved) / span
			r.DeliveriesPerSecond = float64(r.Deliveries) / span
		}
	}
	if last > 0 {
		r.CatchUpSeconds = max(0, time.Unix(0, last).Sub(churnEnd).Seconds())
	}
	r.Reads = c.reads.Load()
	if c.reqs != nil {
		r.Requests = c.reqs.report()
	}
	if s := churnEnd.Sub(churnStart).Seconds(); s > 0 {
		r.ReadsPerS = float64(r.Reads) / s
	}
	if c.counts != nil {
		v := func(a interface{ Load() uint64 }) *uint64 { x := a.Load(); return &x }
		r.Overflow, r.Coalesced, r.Panics = v(&c.counts.overflow), v(&c.counts.coalesced), v(&c.counts.panics)
		r.Relists, r.Dropped = v(&c.counts.relists), v(&c.counts.dropped)
	}
	return r
}

// newChurnReport is the report of a churn that did c.
func newChurnReport(c target.ChurnCounts) report.Churn {
	r := report.Churn{Seconds: c.Seconds, Creates: c.Creates, Updates: c.Updates, Deletes: c.Deletes, Emitted: c.Emitted(), Failed: c.Failed}
	if r.Seconds > 0 {
		r.Rate = float64(r.Emitted) / r.Seconds
	}
	return r
}
