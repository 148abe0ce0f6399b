package pipeline

import "time"

// Observers returns an Observer that passes every hook to each of obs in
// turn, on the goroutine that calls the hook: metrics and a test's counters,
// say. Nil and NopObserver members are left out; with none left it is a
// NopObserver, with one that Observer itself. It is a ScopedObserver: an
// informer built with it scopes each member that is one (so promadapter's
// metrics keep their informer label behind the fan-out). Its hooks block as
// long as its slowest member's.
func Observers(obs ...Observer) Observer {
	var out observers
	for _, o := range obs {
		switch o := o.(type) {
		case nil, NopObserver:
		case observers:
			out = append(out, o...)
		default:
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return NopObserver{}
	case 1:
		return out[0]
	}
	return out
}

// observers is the fan-out Observers returns; it may be copied.
type observers []Observer

var _ ScopedObserver = observers(nil)

// ForInformer implements ScopedObserver.
func (fan observers) ForInformer(name string) Observer {
	out := make(observers, len(fan))
	for i, o := range fan {
		out[i] = scoped(o, name)
	}
	return out
}

func (fan observers) BatchApplied(shard int, b BatchStats) {
	for _, o := range fan {
		o.BatchApplied(shard, b)
	}
}

func (fan observers) Overflowed(listener string, n, merged int) {
	for _, o := range fan {
		o.Overflowed(listener, n, merged)
	}
}

func (fan observers) Coalescing(listener string, active bool) {
	for _, o := range fan {
		o.Coalescing(listener, active)
	}
}

func (fan observers) HandlerDone(listener string, kind EventKind, d time.Duration) {
	for _, o := range fan {
		o.HandlerDone(listener, kind, d)
	}
}

func (fan observers) HandlerPanicked(listener, key string, recovered any) {
	for _, o := range fan {
		o.HandlerPanicked(listener, key, recovered)
	}
}

func (fan observers) Relisted(objects int) {
	for _, o := range fan {
		o.Relisted(objects)
	}
}

func (fan observers) Dropped(err error) {
	for _, o := range fan {
		o.Dropped(err)
	}
}
