// Package promadapter exposes a pipeline.Informer to Prometheus: Observer
// turns the pipeline's hooks into counters and histograms, Collector reads
// the informer's gauges (queue, ring and overflow depths, cached objects)
// at scrape time. Nothing is registered globally; both go on a
// prometheus.Registerer the caller supplies.
//
// # Usage
//
//	reg := prometheus.NewRegistry()
//	obs, err := promadapter.NewObserver(reg)
//	inf := pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers,
//		pipeline.WithObserver(obs))
//	err = reg.Register(promadapter.NewCollector(inf))
//
// Every series carries an informer label, the informer's name
// (pipeline.WithName; by default its object type). One Observer serves
// every informer of a process: an informer asks it (pipeline.ScopedObserver)
// for an Observer labelled with its name. A second NewObserver on the same
// registry shares the first one's metrics instead of failing. Each informer
// registers its own Collector; informers on one registry need distinct
// names. Handler names (the listener label) are set with
// pipeline.NamedHandler. Do not wrap the registry with a constant informer
// label: it would collide with this one.
//
// # Metrics
//
// Counters and histograms, from the Observer hooks (each also labelled
// informer):
//
//	shardinformer_events_total{shard,type}        notifications produced by a shard's drain goroutine; type is add, update or delete
//	shardinformer_batches_total{shard}            batches applied by a shard
//	shardinformer_batch_keys                      histogram: keys per batch
//	shardinformer_batch_duration_seconds          histogram: time to apply and publish one batch
//	shardinformer_handler_duration_seconds{listener}  histogram (1µs … ~4.5min): one handler call; its _count is the deliveries
//	shardinformer_handler_panics_total{listener}  recovered handler panics
//	shardinformer_overflow_total{listener}        notifications that did not fit the listener's ring
//	shardinformer_coalesced_total{listener}       of those, merged into a notification already waiting for the key
//	shardinformer_listener_coalescing{listener}   gauge: 1 while the listener's overflow is merged per key (Buffer: beyond its budget)
//	shardinformer_coalescing_episodes_total{listener}  times the listener started merging per key
//	shardinformer_relists_total                   full lists applied (the first one included)
//	shardinformer_relist_objects                  gauge: objects in the most recent full list
//	shardinformer_dropped_total                   rejected input: no key, failing transform or index function
//
// Gauges, read from the informer at scrape time by Collector (each also
// labelled informer):
//
//	shardinformer_shard_queue_depth{shard}        keys waiting in the shard's queue
//	shardinformer_shard_objects{shard}            objects in the shard's index partition
//	shardinformer_listener_ring_depth{listener}   notifications waiting in the listener's rings
//	shardinformer_listener_overflow_depth{listener}  notifications kept exactly plus keys merged, in overflow
//	shardinformer_listener_workers{listener}      worker goroutines of the listener
//
// The listener label is the pipeline's listener name, "<handler type>#<n>".
// Label values stay bounded: one per shard and per registered handler.
//
// # Cost
//
// The hooks run on the pipeline's goroutines. HandlerDone, called once per
// handler call, does one lock-free map lookup and one histogram observation
// (tens of nanoseconds); per-label children are created once and cached.
package promadapter
