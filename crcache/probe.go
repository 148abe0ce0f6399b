package crcache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/wire"
)

// errProbed is what a probed request fails with: it was recorded, not sent.
var errProbed = errors.New("crcache: probe request, not sent")

// probeKey marks a context whose requests the probing transport records
// and fails; its value is the *probe recording them.
type probeKey struct{}

// probe records the requests sent with one context. Safe for concurrent
// use (http.Client calls RoundTrip on the caller's goroutine, but a
// ListWatch may hand its context to others).
type probe struct {
	mu   sync.Mutex
	reqs []probed
}

// probed is one recorded request.
type probed struct {
	method string
	url    *url.URL
	accept string
}

func (p *probe) record(req *http.Request) {
	u := *req.URL
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, probed{method: req.Method, url: &u, accept: req.Header.Get("Accept")})
}

func (p *probe) requests() []probed {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reqs)
}

// probingTransport is the transport of the HTTP client New hands
// controller-runtime: a request whose context carries a probe is recorded
// and failed with errProbed without being sent; every other request goes
// to base unchanged. Safe for concurrent use, as base must be.
type probingTransport struct {
	base http.RoundTripper
}

func (t *probingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if p, ok := req.Context().Value(probeKey{}).(*probe); ok {
		p.record(req)
		if req.Body != nil {
			_ = req.Body.Close() // RoundTrip must close the body, also on error
		}
		return nil, errProbed
	}
	return t.base.RoundTrip(req)
}

// WrappedRoundTripper lets client-go's transport introspection
// (utilnet.RoundTripperWrapper) see through it.
func (t *probingTransport) WrappedRoundTripper() http.RoundTripper { return t.base }

// probingClient returns a copy of hc whose transport is probing.
func probingClient(hc *http.Client) *http.Client {
	c := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &probingTransport{base: base}
	return &c
}

// target is what controller-runtime's list/watch of one informer requests,
// read off the probed requests.
type target struct {
	gvr       schema.GroupVersionResource
	namespace string
	// labelSelector and fieldSelector are set on every list and watch.
	labelSelector, fieldSelector string
	// allowBookmarks is set on every watch (cache.Options'
	// EnableWatchBookmarks; controller-runtime overrides the reflector's).
	allowBookmarks bool
	// contentType follows the list's Accept header.
	contentType wire.ContentType
}

// probeTarget calls lw's List and Watch once each with a probing context,
// so that their requests are recorded and not sent, and reads the target
// off them relative to base (the server's URL, whose path is the prefix of
// every request path). An error says why it cannot (for the fallback's
// description).
func probeTarget(lw cache.ListerWatcher, base *url.URL) (target, error) {
	lwc := cache.ToListerWatcherWithContext(lw)
	list, watch := &probe{}, &probe{}
	// The results are errProbed's (or whatever the ListWatch made of it);
	// what matters is what was recorded.
	if obj, err := lwc.ListWithContext(context.WithValue(context.Background(), probeKey{}, list), metav1.ListOptions{}); err == nil && obj != nil {
		return target{}, fmt.Errorf("its list answered without a request (%T)", obj)
	}
	if w, err := lwc.WatchWithContext(context.WithValue(context.Background(), probeKey{}, watch), metav1.ListOptions{}); err == nil && w != nil {
		w.Stop() // an empty watch, say: not a request we could read
	}
	return parseTarget(base, list.requests(), watch.requests())
}

// parseTarget reads the target off the requests of one list and one
// watch. It accepts exactly what controller-runtime's list/watch closures
// send for an informer (internal/informers.go, makeListWatcher): one GET
// of the resource's collection each, the same path, label and field
// selectors on both, watch=true and optionally allowWatchBookmarks on the
// watch, nothing else; anything else is an error, so that a change of
// controller-runtime falls back instead of being misread.
func parseTarget(base *url.URL, list, watch []probed) (target, error) {
	if len(list) != 1 || len(watch) != 1 {
		return target{}, fmt.Errorf("its list and watch sent %d and %d requests, not 1 and 1", len(list), len(watch))
	}
	l, w := list[0], watch[0]
	for _, r := range []probed{l, w} {
		if r.method != http.MethodGet {
			return target{}, fmt.Errorf("it sent a %s, not a GET", r.method)
		}
		if r.url.Scheme != base.Scheme || r.url.Host != base.Host {
			return target{}, fmt.Errorf("it sent a request to %s://%s, not to the configured %s://%s", r.url.Scheme, r.url.Host, base.Scheme, base.Host)
		}
	}
	if l.url.Path != w.url.Path {
		return target{}, fmt.Errorf("its list and watch paths differ (%s, %s)", l.url.Path, w.url.Path)
	}
	t, err := parsePath(strings.TrimSuffix(base.Path, "/"), l.url.Path)
	if err != nil {
		return target{}, err
	}

	lq, wq := l.url.Query(), w.url.Query()
	for _, s := range []struct {
		param string
		value *string
	}{{"labelSelector", &t.labelSelector}, {"fieldSelector", &t.fieldSelector}} {
		if len(lq[s.param]) > 1 {
			return target{}, fmt.Errorf("its list has %d %s parameters", len(lq[s.param]), s.param)
		}
		*s.value = lq.Get(s.param)
		if !slices.Equal(lq[s.param], wq[s.param]) {
			return target{}, fmt.Errorf("its list and watch %ss differ (%q, %q)", s.param, lq[s.param], wq[s.param])
		}
		lq.Del(s.param)
		wq.Del(s.param)
	}
	if v := wq["watch"]; !slices.Equal(v, []string{"true"}) {
		return target{}, fmt.Errorf("its watch has watch=%q", v)
	}
	wq.Del("watch")
	switch v := wq["allowWatchBookmarks"]; {
	case v == nil:
	case slices.Equal(v, []string{"true"}):
		t.allowBookmarks = true
	default:
		return target{}, fmt.Errorf("its watch has allowWatchBookmarks=%q", v)
	}
	wq.Del("allowWatchBookmarks")
	for _, q := range []url.Values{lq, wq} {
		for p := range q {
			return target{}, fmt.Errorf("it sent the parameter %q, which crcache does not know", p)
		}
	}
	t.contentType = contentTypeOf(l.accept)
	return t, nil
}

// parsePath reads the group, version, resource and namespace off the path
// of a collection below prefix (the server URL's path):
// {prefix}/api/{v}[/namespaces/{ns}]/{resource} or
// {prefix}/apis/{g}/{v}[/namespaces/{ns}]/{resource}.
func parsePath(prefix, p string) (target, error) {
	rest, ok := strings.CutPrefix(p, prefix+"/")
	if !ok {
		return target{}, fmt.Errorf("its request path %s is not below the server's %s/", p, prefix)
	}
	seg := strings.Split(rest, "/")
	var t target
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		t.gvr.Version, seg = seg[1], seg[2:]
	case len(seg) >= 4 && seg[0] == "apis" && seg[1] != "":
		t.gvr.Group, t.gvr.Version, seg = seg[1], seg[2], seg[3:]
	default:
		return target{}, fmt.Errorf("its request path %s names no API group version", p)
	}
	switch {
	case len(seg) == 1:
	case len(seg) == 3 && seg[0] == "namespaces" && seg[1] != "":
		t.namespace, seg = seg[1], seg[2:]
	default:
		return target{}, fmt.Errorf("its request path %s is not a collection", p)
	}
	t.gvr.Resource = seg[0]
	if t.gvr.Version == "" || t.gvr.Resource == "" {
		return target{}, fmt.Errorf("its request path %s has an empty segment", p)
	}
	return t, nil
}

// contentTypeOf is the wire's content type for an Accept header: Protobuf
// if it accepts protobuf (for built-in types, and metadata-only objects
// whichever their resource), else CBOR if it accepts CBOR, else JSON — so
// that a config's ContentType (JSON, say) keeps applying.
func contentTypeOf(accept string) wire.ContentType {
	var types []string
	for clause := range strings.SplitSeq(accept, ",") {
		mt, _, _ := strings.Cut(clause, ";")
		types = append(types, strings.TrimSpace(mt))
	}
	switch {
	case slices.Contains(types, runtime.ContentTypeProtobuf):
		return wire.Protobuf
	case slices.Contains(types, runtime.ContentTypeCBOR):
		return wire.CBOR
	}
	return wire.JSON
}
