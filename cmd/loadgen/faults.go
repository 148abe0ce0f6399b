package main

import (
	"fmt"
	"net/http"
	"path"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/faults"
)

// The fault layer (--faults): the parent puts a faults.Proxy in front of
// the target for each trial, the implementations' clients reach the server
// through it (target.Endpoint.Proxy), and it stops injecting when the churn ends;
// each implementation's time to converge is from then until its check
// passed. The parent's own reads of the server's state and the churn
// writes go to the server directly.

// startFaults starts a fault proxy with c's spec in front of t.
func startFaults(c config, t target.Target) (*faults.Proxy, error) {
	fc := *c.faults
	// Only the implementations' lists and watches of the resource draw
	// faults: discovery (controller-runtime's REST mapper, when the cache
	// is built) and the controller's status writes pass untouched.
	resource := resourceOn(c.path, t.Kind())
	fc.Eligible = func(method, p, _ string) bool { return method == http.MethodGet && path.Base(p) == resource }
	fc.Upstream = t.Upstream()
	p, err := faults.New(fc)
	if err != nil {
		return nil, fmt.Errorf("--faults: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("--faults: %w", err)
	}
	return p, nil
}

func newTrialFaults(p *faults.Proxy, t0 time.Time) *report.TrialFaults {
	s := p.Stats()
	cfg := p.Config()
	tf := &report.TrialFaults{Spec: cfg.String(), Seed: cfg.Seed, Requests: s.Requests, Drawn: s.Drawn, Vetoed: s.Vetoed, Injected: s.ByName()}
	if s.Stopped {
		tf.StoppedAt = s.StoppedAt.Sub(t0).Seconds()
	}
	return tf
}

// requestCounter is the RoundTripper wrapper behind report.ListWatchRequests;
// installed with rest.Config.Wrap, safe for concurrent use.
type requestCounter struct {
	resource                   string // the collection's last path segment: pods or widgets
	next                       http.RoundTripper
	lists, watches, watchLists atomic.Uint64
}

func newRequestCounter(resource string) *requestCounter {
	if resource == "" {
		resource = target.ResourcePods
	}
	return &requestCounter{resource: resource}
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	c.next = rt
	return c
}

func (c *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && path.Base(req.URL.Path) == c.resource {
		q := req.URL.Query()
		switch w := q.Get("watch"); {
		case w == "true" || w == "1":
			c.watches.Add(1)
			if q.Get("sendInitialEvents") == "true" {
				c.watchLists.Add(1)
			}
		case q.Get("continue") == "":
			c.lists.Add(1)
		}
	}
	return c.next.RoundTrip(req)
}

func (c *requestCounter) report() *report.ListWatchRequests {
	r := &report.ListWatchRequests{Lists: c.lists.Load(), Watches: c.watches.Load() - c.watchLists.Load(), WatchLists: c.watchLists.Load()}
	if reads := r.Lists + r.WatchLists; reads > 0 {
		r.Relists = reads - 1
	}
	if w := c.watches.Load(); w > 0 {
		r.WatchRestarts = w - 1
	}
	return r
}
