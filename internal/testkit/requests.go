package testkit

import (
	"net/http"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
)

// Requests records the requests sent through a rest.Config: "path?query"
// of each, in order. It is safe for concurrent use.
type Requests struct {
	mu   sync.Mutex
	reqs []string
}

// RecordRequests wraps cfg's transport so that every request sent with it
// (by the clients built from it afterwards) is recorded, and returns the
// record.
func RecordRequests(cfg *rest.Config) *Requests {
	r := &Requests{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r.mu.Lock()
			r.reqs = append(r.reqs, req.URL.Path+"?"+req.URL.RawQuery)
			r.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return r
}

// All returns the requests recorded so far.
func (r *Requests) All() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
