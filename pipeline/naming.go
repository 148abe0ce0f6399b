package pipeline

import (
	"fmt"
	"strings"

	"k8s.io/client-go/tools/cache"
)

// This file holds the names the pipeline gives informers and handlers, which
// logs, Stats and metrics (through the Observer hooks) carry.

// Name returns the informer's name: WithName's, else "shardinformer <example
// object's Go type>".
func (inf *Informer) Name() string { return inf.name }

// NamedHandler returns handler registered under name: the name an informer
// of this package gives the registration in Stats, logs and Observer hooks
// (promadapter's listener label) instead of the default, the handler's Go
// type without package path or type arguments plus "#<registration number>"
// ("*internal.EventHandler#3"). Register the result with any of the
// informer's methods, also through client-go's interfaces; the informer
// calls handler itself. Names are taken as given: two registrations with
// one name share their metrics. Registered with another informer, the result
// forwards every call to handler.
func NamedHandler(name string, handler cache.ResourceEventHandler) cache.ResourceEventHandler {
	return namedHandler{name: name, ResourceEventHandler: handler}
}

// namedHandler carries a handler's name to newListener.
type namedHandler struct {
	name string
	cache.ResourceEventHandler
}

// handlerName returns the name of the registration with number id, and the
// handler to call: h, or the handler h names.
func handlerName(h cache.ResourceEventHandler, id uint64) (string, cache.ResourceEventHandler) {
	if n, ok := h.(namedHandler); ok && n.ResourceEventHandler != nil {
		return n.name, n.ResourceEventHandler
	}
	t := fmt.Sprintf("%T", h)
	if i := strings.IndexByte(t, '['); i >= 0 {
		t = t[:i] // controller-runtime's handlers: *internal.EventHandler[…150 characters…]
	}
	return fmt.Sprintf("%s#%d", t, id), h
}

// ScopedObserver is an Observer that labels what it records with the
// informer it observes (promadapter's Observer does). New calls ForInformer
// once, with the informer's name, and the informer calls the hooks of the
// Observer it returns; so one ScopedObserver passed to many informers (all
// of a factory's, say) tells them apart.
type ScopedObserver interface {
	Observer
	// ForInformer returns the Observer for the informer named name. It is
	// called by New, on the caller's goroutine.
	ForInformer(name string) Observer
}

// scoped returns the Observer for the informer named name.
func scoped(o Observer, name string) Observer {
	if s, ok := o.(ScopedObserver); ok {
		return s.ForInformer(name)
	}
	return o
}
