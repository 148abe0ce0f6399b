package apisim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/shardinformer/shardinformer/shardselector"
)

// Server is a simulated Kubernetes API server: an in-process, versioned
// object store served over HTTP on loopback with the API server's list,
// watch and get semantics, for pods, configmaps, deployments and the
// custom resource widgets.
//
// All methods are safe for concurrent use. A Server must not be copied.
type Server struct {
	cfg Config
	st  *store
	reg *resourceSet

	stats       counters
	unavailable atomic.Bool

	mu struct {
		sync.Mutex
		started, closed bool
		ln              net.Listener
		srv             *http.Server
	}
	serveDone chan struct{} // closed when the serve goroutine exits
	requests  sync.WaitGroup
	closing   chan struct{} // closed by Close
}

// New validates cfg (after applying defaults) and returns a Server with an
// empty store. It starts nothing; the store may be filled before Start.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	reg := newResourceSet()
	if cfg.EncodedOnly {
		reg.compact()
	}
	return &Server{
		cfg:       cfg,
		st:        newStore(cfg),
		reg:       reg,
		serveDone: make(chan struct{}),
		closing:   make(chan struct{}),
	}, nil
}

// Start listens on cfg.Addr and serves in the background until Close.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return ErrClosed
	}
	if s.mu.started {
		return ErrAlreadyStarted
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("apisim: listen: %w", err)
	}
	s.mu.started = true
	s.mu.ln = ln
	s.mu.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { // goroutine: HTTP accept loop, owned by Server; Close waits for it.
		defer close(s.serveDone)
		_ = s.mu.srv.Serve(ln)
	}()
	return nil
}

// Close stops the server: it closes the listener, ends every watch and
// open connection, and returns once every goroutine the server started has
// exited. The in-process store stays usable. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	srv, started := s.mu.srv, s.mu.started
	s.mu.Unlock()

	close(s.closing)
	for _, w := range s.st.watchers() {
		w.kill(stopClosed)
	}
	if started {
		err := srv.Close()
		<-s.serveDone
		s.requests.Wait()
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

// URL returns the server's base URL ("http://127.0.0.1:port"), or "" before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return ""
	}
	return "http://" + s.mu.ln.Addr().String()
}

// RESTConfig returns a client configuration for this server with client-side
// rate limiting off and compression off. Its ContentType is JSON; set
// ContentType to ContentTypeProtobuf on the returned copy for protobuf.
func (s *Server) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:               s.URL(),
		QPS:                -1,
		Burst:              -1,
		DisableCompression: true,
		UserAgent:          "apisim-client",
		ContentConfig:      rest.ContentConfig{ContentType: ContentTypeJSON},
	}
}

// Create is Pods().Create: it stores a copy of pod as a new object and
// returns the stored version.
func (s *Server) Create(pod *corev1.Pod) (*corev1.Pod, error) { return s.Pods().Create(pod) }

// Update is Pods().Update: it replaces the stored pod with a copy of pod,
// failing with Conflict if pod.ResourceVersion is set and not current.
func (s *Server) Update(pod *corev1.Pod) (*corev1.Pod, error) { return s.Pods().Update(pod) }

// Modify is Pods().Modify: it applies fn to a copy of the current pod
// namespace/name, stores the result and returns its resourceVersion.
func (s *Server) Modify(namespace, name string, fn func(*corev1.Pod)) (uint64, error) {
	return s.Pods().Modify(namespace, name, fn)
}

// Delete is Pods().Delete: it removes the pod and returns its final state,
// stamped with the deletion's resourceVersion.
func (s *Server) Delete(namespace, name string) (*corev1.Pod, error) {
	return s.Pods().Delete(namespace, name)
}

// Load is Pods().Load: it creates pods in order, taking ownership of them.
func (s *Server) Load(pods []*corev1.Pod) error { return s.Pods().Load(pods) }

// Get is Pods().Get: a copy of the current pod namespace/name.
func (s *Server) Get(namespace, name string) (*corev1.Pod, bool) {
	return s.Pods().Get(namespace, name)
}

// List is Pods().List: copies of the current pods in namespace ("" for
// all), in key order.
func (s *Server) List(namespace string) []*corev1.Pod { return s.Pods().List(namespace) }

// Len is Pods().Len: the number of stored pods.
func (s *Server) Len() int { return s.Pods().Len() }

// ResourceVersion returns the store's current resourceVersion: that of the
// newest write of any resource (one counter, like etcd's revision).
func (s *Server) ResourceVersion() uint64 { return s.st.cur.Load().rv }

// Compact drops watch history up to and including rv (at most the current
// version), like etcd compaction: watches from, and exact or paginated
// lists at, older versions fail with 410 Expired.
func (s *Server) Compact(rv uint64) { s.st.compact(rv) }

// DropWatches ends every open watch; clients re-watch from the last
// resourceVersion they saw (fault injection).
func (s *Server) DropWatches() {
	for _, w := range s.st.watchers() {
		w.kill(stopDropped)
	}
}

// SetUnavailable simulates an API server outage. While unavailable, open
// watches are dropped and every resource request fails with 503
// ServiceUnavailable (readyz too), so clients back off and retry; in-process
// writes go on. Use it to make changes a client cannot see until it
// reconnects — e.g. a delete that must surface as a DeletedFinalStateUnknown.
func (s *Server) SetUnavailable(unavailable bool) {
	s.unavailable.Store(unavailable)
	if unavailable {
		s.DropWatches()
	}
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	// Requests counts HTTP requests by verb: "list", "watch", "get",
	// "write" (create, update or delete of a lease), "discovery", "health"
	// and "other" (rejected or unknown).
	Requests map[string]uint64
	// EventsSent counts watch events written (ADDED/MODIFIED/DELETED,
	// including the synthetic ADDED events of initial state); bookmarks
	// and errors are counted separately.
	EventsSent    uint64
	BookmarksSent uint64
	// ErrorEventsSent counts ERROR events (410 Expired, too large RV).
	ErrorEventsSent uint64
	// ObjectsListed counts items returned by LIST responses.
	ObjectsListed uint64
	// WatchesOpen is the number of watches being served now.
	WatchesOpen int64
	// WatchesSlowClosed counts watches closed for falling more than
	// WatchBuffer events behind.
	WatchesSlowClosed uint64
	// BytesSent counts response body bytes of lists, watches and gets.
	BytesSent uint64
	// ResourceVersion and Objects describe the store; Objects counts the
	// objects of every resource.
	ResourceVersion uint64
	Objects         int
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	c := &s.stats
	cur := s.st.cur.Load()
	return Stats{
		Requests: map[string]uint64{
			"list": c.list.Load(), "watch": c.watch.Load(), "get": c.get.Load(), "write": c.write.Load(),
			"discovery": c.discovery.Load(), "health": c.health.Load(), "other": c.other.Load(),
		},
		EventsSent:        c.events.Load(),
		BookmarksSent:     c.bookmarks.Load(),
		ErrorEventsSent:   c.errorEvents.Load(),
		ObjectsListed:     c.listed.Load(),
		WatchesOpen:       c.watchesOpen.Load(),
		WatchesSlowClosed: c.slowClosed.Load(),
		BytesSent:         c.bytes.Load(),
		ResourceVersion:   cur.rv,
		Objects:           cur.tree.Len(),
	}
}

type counters struct {
	list, watch, get, write, discovery, health, other atomic.Uint64
	events, bookmarks, errorEvents, listed            atomic.Uint64
	slowClosed, bytes                                 atomic.Uint64
	watchesOpen                                       atomic.Int64
}

// countingWriter counts bytes written to a response.
type countingWriter struct {
	w io.Writer
	n *atomic.Uint64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(uint64(n))
	return n, err
}

// serveHTTP routes a request. It runs on net/http's connection goroutine.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	s.requests.Add(1)
	s.mu.Unlock()
	defer s.requests.Done()

	path := r.URL.Path
	switch path {
	case "/healthz", "/livez", "/readyz":
		s.stats.health.Add(1)
		if path == "/readyz" && s.unavailable.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return
	}
	if s.serveDiscovery(w, strings.TrimSuffix(path, "/")) {
		s.stats.discovery.Add(1)
		return
	}
	res, ns, name, found := s.parsePath(path)
	if !found {
		s.stats.other.Add(1)
		writeStatus(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: "the server could not find the requested resource",
		}})
		return
	}
	if r.Method != http.MethodGet && res.writable {
		s.serveWrite(w, r, res, ns, name)
		return
	}
	if r.Method != http.MethodGet {
		s.stats.other.Add(1)
		writeStatus(w, r, apierrors.NewMethodNotSupported(res.groupResource(), strings.ToLower(r.Method)))
		return
	}
	if !res.custom && !routeAccepts(r.Header.Get("Accept")) {
		// Built-in resources are routed by go-restful, which refuses an
		// Accept header naming none of the route's media types first.
		s.stats.other.Add(1)
		produces := listProduces
		if name != "" {
			produces = getProduces
		}
		writeStatus(w, r, notAcceptable("406: Not Acceptable\n\nAvailable representations: "+produces))
		return
	}
	fm, ok := negotiate(r.Header.Get("Accept"), res)
	if !ok {
		s.stats.other.Add(1)
		writeStatus(w, r, notAcceptable("only the following media types are accepted: "+
			"application/json, application/yaml, application/vnd.kubernetes.protobuf"))
		return
	}
	if s.unavailable.Load() {
		s.stats.other.Add(1)
		writeStatus(w, r, apierrors.NewServiceUnavailable("apisim: server is unavailable"))
		return
	}
	if name != "" {
		s.stats.get.Add(1)
		s.serveGet(w, r, res, ns, name, fm)
		return
	}
	opts, err := parseListOptions(r.URL.Query(), res)
	if err != nil {
		s.stats.other.Add(1)
		writeStatus(w, r, err)
		return
	}
	f := &filter{res: res, namespace: ns, label: opts.label, field: opts.field}
	if s.cfg.ShardedListAndWatch && opts.shardSelector != "" {
		// As the API server's registry: parsed (and rejected) only with the
		// feature gate on; with it off the parameter is ignored.
		sel, err := shardselector.Parse(opts.shardSelector)
		if err != nil {
			s.stats.other.Add(1)
			writeStatus(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown,
				Message: "invalid shard selector: " + err.Error(),
			}})
			return
		}
		f.shard = &sel
	}
	if opts.watch {
		s.stats.watch.Add(1)
		s.serveWatch(w, r, f, opts, fm)
		return
	}
	s.stats.list.Add(1)
	s.serveList(w, r, f, opts, fm)
}

// parsePath recognises /api/v1/{resource}, /api/v1/namespaces/{ns}/{resource}
// and /api/v1/namespaces/{ns}/{resource}/{name}, and the same under
// /apis/{group}/{version}, for the served resources.
func (s *Server) parsePath(path string) (res *apiResource, ns, name string, ok bool) {
	p := strings.Split(strings.Trim(path, "/"), "/")
	var group, version string
	switch {
	case len(p) >= 3 && p[0] == "api":
		version, p = p[1], p[2:]
	case len(p) >= 4 && p[0] == "apis":
		group, version, p = p[1], p[2], p[3:]
	default:
		return nil, "", "", false
	}
	switch {
	case len(p) == 1:
		res = s.reg.lookup(group, version, p[0])
	case len(p) == 3 && p[0] == "namespaces" && p[1] != "":
		res, ns = s.reg.lookup(group, version, p[2]), p[1]
	case len(p) == 4 && p[0] == "namespaces" && p[1] != "" && p[3] != "":
		res, ns, name = s.reg.lookup(group, version, p[2]), p[1], p[3]
	}
	return res, ns, name, res != nil
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, res *apiResource, ns, name string, fm format) {
	o := s.st.cur.Load().tree.Get(res.key(ns, name))
	if o == nil {
		writeStatus(w, r, apierrors.NewNotFound(res.groupResource(), name))
		return
	}
	if fm.convert == asPartialList {
		err := notAcceptable(fmt.Sprintf(
			"you requested PartialObjectMetadataList, but the requested object is not a list (*%s)", res.internalType))
		if res.custom {
			// An *unstructured.Unstructured passes the API server's list
			// check (it has ListInterface's methods) and fails when its
			// items are walked: a plain error, hence a 500.
			err = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown, Message: "content is not a list"}}
		}
		writeStatus(w, r, err)
		return
	}
	body := o.encoded(fm.view.encoding(fm.ct))
	w.Header().Set("Content-Type", fm.ct.mediaType())
	w.WriteHeader(http.StatusOK)
	f := &frameWriter{ct: fm.ct, v: fm.view, w: countingWriter{w, &s.stats.bytes}}
	_ = f.writeObject(body)
}

// serveDiscovery answers the discovery paths (path without a trailing
// slash) and reports whether path was one.
func (s *Server) serveDiscovery(w http.ResponseWriter, path string) bool {
	var v any
	switch p := strings.Split(strings.TrimPrefix(path, "/"), "/"); {
	case path == "/version":
		v = version.Info{
			Major: "1", Minor: "37", GitVersion: "v1.37.2-apisim", GitTreeState: "clean",
			GoVersion: goruntime.Version(), Compiler: goruntime.Compiler,
			Platform: goruntime.GOOS + "/" + goruntime.GOARCH,
		}
	case path == "/api":
		v = metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: strings.TrimPrefix(s.URL(), "http://")},
			},
		}
	case path == "/apis":
		v = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: s.reg.groups()}
	case len(p) == 2 && p[0] == "api":
		if rl := s.resourceList(schema.GroupVersion{Version: p[1]}); rl != nil {
			v = rl
		}
	case len(p) == 2 && p[0] == "apis":
		for _, g := range s.reg.groups() {
			if g.Name == p[1] {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				v = g
			}
		}
	case len(p) == 3 && p[0] == "apis":
		if rl := s.resourceList(schema.GroupVersion{Group: p[1], Version: p[2]}); rl != nil {
			v = rl
		}
	}
	if v == nil {
		return false
	}
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return true
	}
	w.Header().Set("Content-Type", ContentTypeJSON)
	_, _ = w.Write(b)
	return true
}

// resourceList returns the APIResourceList of gv, or nil if none is served.
func (s *Server) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	rs := s.reg.resources(gv)
	if rs == nil {
		return nil
	}
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
		APIResources: rs,
	}
}

// writeStatus writes err as a metav1.Status response with its HTTP code,
// in the encoding the API server would negotiate for it.
func writeStatus(w http.ResponseWriter, r *http.Request, err error) {
	ct := negotiateStatus(r.Header.Get("Accept"))
	st := toStatus(err)
	if st.Code == http.StatusTooManyRequests || st.Code >= 500 {
		if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
		}
	}
	w.Header().Set("Content-Type", ct.mediaType())
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(encodeObject(st, ct))
	if ct == ctJSON {
		_, _ = w.Write(newline)
	}
}

// toStatus converts err to a Status object with TypeMeta set for encoding.
func toStatus(err error) *metav1.Status {
	var st metav1.Status
	if s, ok := err.(apierrors.APIStatus); ok || errors.As(err, &s) {
		st = s.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	return &st
}
