package pipeline

import "time"

// Observer receives the pipeline's hooks. The core never imports a metrics
// library; package promadapter turns these hooks into Prometheus metrics.
//
// Hooks are called on the pipeline's own goroutines (each method says which)
// and must not block: a slow hook slows the pipeline. Embed NopObserver to
// implement only some of them. Gauges (queue and ring depths, cached objects)
// are not pushed; read them with (*Informer).Stats.
type Observer interface {
	// BatchApplied is called after each batch by the goroutine holding the
	// shard's drain role (doc.go): its drain goroutine, or the reflector
	// goroutine or a listener worker applying a batch in its place. Calls for
	// one shard are never concurrent; so for Overflowed and Coalescing(true).
	BatchApplied(shard int, b BatchStats)
	// Overflowed is called by a shard's drain role when notifications for
	// a listener did not fit its ring: n went to overflow, of which merged were
	// folded into a notification already waiting for the same key.
	Overflowed(listener string, n, merged int)
	// Coalescing is called when a listener starts merging its overflow per
	// key (active: under Buffer, its backlog reached the budget; under
	// Coalesce, a ring filled up), by the drain role that found it so,
	// and when it stops (every merged notification has been handed to its
	// workers), by a listener worker. Calls for one listener alternate,
	// starting with true, and are never concurrent.
	Coalescing(listener string, active bool)
	// HandlerDone is called by a listener worker after each handler call.
	HandlerDone(listener string, kind EventKind, d time.Duration)
	// HandlerPanicked is called by a listener worker when a handler panics.
	HandlerPanicked(listener, key string, recovered any)
	// Relisted is called by the reflector goroutine for every full list
	// (the first one included) after it has been queued.
	Relisted(objects int)
	// Dropped is called when input is rejected: an object without a key,
	// a failing transform or index function. The error says which object.
	Dropped(err error)
}

// BatchStats describes one batch applied by a drain goroutine.
type BatchStats struct {
	Keys     int           // keys taken from the queue
	Adds     int           // add notifications produced
	Updates  int           // update notifications produced (resyncs included)
	Deletes  int           // delete notifications produced
	Duration time.Duration // time to apply and publish the batch
}

// EventKind is the kind of a notification.
type EventKind uint8

// Notification kinds.
const (
	KindAdd EventKind = iota
	KindUpdate
	KindDelete
)

func (k EventKind) String() string {
	switch k {
	case KindAdd:
		return "add"
	case KindUpdate:
		return "update"
	case KindDelete:
		return "delete"
	}
	return "unknown"
}

// NopObserver implements Observer and does nothing.
type NopObserver struct{}

func (NopObserver) BatchApplied(int, BatchStats)                 {}
func (NopObserver) Overflowed(string, int, int)                  {}
func (NopObserver) Coalescing(string, bool)                      {}
func (NopObserver) HandlerDone(string, EventKind, time.Duration) {}
func (NopObserver) HandlerPanicked(string, string, any)          {}
func (NopObserver) Relisted(int)                                 {}
func (NopObserver) Dropped(error)                                {}
