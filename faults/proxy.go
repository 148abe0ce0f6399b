package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Start's errors.
var (
	ErrStarted = errors.New("faults: proxy already started")
	ErrClosed  = errors.New("faults: proxy closed")
)

// Proxy is a fault-injecting HTTP proxy on loopback in front of an API
// server. Create it with New, serve with Start, end with Close; its methods
// are safe for concurrent use. It must not be copied.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	rt       http.RoundTripper
	eligible func(method, path, rawQuery string) bool

	seq      atomic.Uint64 // draws made; the next draw's index
	requests atomic.Uint64
	drawn    atomic.Uint64
	vetoed   atomic.Uint64
	injected [numKinds]atomic.Uint64
	handlers sync.WaitGroup // one per request being served

	base       context.Context // cancelled by Close: ends forwarded requests
	cancelBase context.CancelFunc

	mu struct {
		sync.Mutex
		srv       *http.Server
		ln        net.Listener
		serveDone chan struct{}
		closed    bool
		stopped   bool
		stop      chan struct{} // closed by StopFaults; a new one on ResumeFaults
		stoppedAt time.Time
		admitted  [numKinds]int // over the proxy's life, for Max: injected, or drawn and pending in an open response
		last      [numKinds]time.Time
	}
}

// New validates cfg and returns a proxy; it starts nothing.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	u, _, err := rest.DefaultServerUrlFor(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("faults: upstream %q: %w", cfg.Upstream.Host, err)
	}
	rt, err := rest.TransportFor(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("faults: upstream transport: %w", err)
	}
	p := &Proxy{cfg: cfg, upstream: u, rt: rt, eligible: cfg.Eligible}
	if p.eligible == nil {
		p.eligible = func(method, _, _ string) bool { return method == http.MethodGet }
	}
	p.base, p.cancelBase = context.WithCancel(context.Background())
	p.mu.stop = make(chan struct{})
	return p, nil
}

// Start listens on Config.Addr and serves in a goroutine of its own, which
// Close joins. A proxy starts once: ErrStarted after Start, ErrClosed after
// Close.
func (p *Proxy) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return ErrClosed
	}
	if p.mu.srv != nil {
		return ErrStarted
	}
	ln, err := net.Listen("tcp", p.cfg.Addr)
	if err != nil {
		return fmt.Errorf("faults: listen: %w", err)
	}
	p.mu.ln, p.mu.srv, p.mu.serveDone = ln, &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}, make(chan struct{})
	srv, done := p.mu.srv, p.mu.serveDone
	go func() { // the serve goroutine: accepts connections until Close
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return nil
}

// Close stops serving: it closes the listener and every connection, ends
// the forwarded requests and waits until every goroutine the proxy started
// has returned. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	srv, done := p.mu.srv, p.mu.serveDone
	p.mu.closed = true
	p.mu.Unlock()
	p.cancelBase()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	p.handlers.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// URL returns the proxy's base URL ("http://127.0.0.1:port"), or "" before
// Start.
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.ln == nil {
		return ""
	}
	return "http://" + p.mu.ln.Addr().String()
}

// ClientConfig returns a copy of base (nil: an empty config) that reaches
// the upstream server through the proxy: its Host is the proxy's URL, plain
// HTTP, without TLS settings or credentials (the proxy authenticates as
// Config.Upstream). Everything else — content type, rate limits, user
// agent, wrappers, dialer — is base's.
func (p *Proxy) ClientConfig(base *rest.Config) *rest.Config {
	c := &rest.Config{}
	if base != nil {
		c = rest.CopyConfig(base)
	}
	c.Host = p.URL()
	c.TLSClientConfig = rest.TLSClientConfig{}
	c.BearerToken, c.BearerTokenFile, c.Username, c.Password = "", "", "", ""
	c.AuthProvider, c.AuthConfigPersister, c.ExecProvider = nil, nil, nil
	return c
}

// StopFaults stops injecting: no request draws a fault any more, faults
// pending in open streams are dropped and stalls in progress end. It
// returns when it stopped (the first call's time if already stopped).
func (p *Proxy) StopFaults() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.stopped {
		p.mu.stopped, p.mu.stoppedAt = true, time.Now()
		close(p.mu.stop)
	}
	return p.mu.stoppedAt
}

// ResumeFaults undoes StopFaults; the draws go on where they were.
func (p *Proxy) ResumeFaults() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped {
		p.mu.stopped, p.mu.stop = false, make(chan struct{})
	}
}

// Stats is what a proxy has done so far.
type Stats struct {
	Requests uint64 // requests received
	// Drawn: draws that came up with a fault — at requests, and in watch
	// streams as they go (so there can be more than requests).
	Drawn uint64
	// Vetoed: draws a bound (Max, Every) refused.
	Vetoed uint64
	// Injected: faults that happened, by kind. A fault drawn for a
	// response that ended (or for a watch whose framing the proxy does not
	// know) before its byte offset, or dropped by StopFaults, is not
	// counted.
	Injected map[Kind]uint64
	// Stopped: StopFaults was called (and not undone), at StoppedAt.
	Stopped   bool
	StoppedAt time.Time
}

// Total is the number of faults injected.
func (s Stats) Total() uint64 {
	var n uint64
	for _, v := range s.Injected {
		n += v
	}
	return n
}

// ByName returns Injected keyed by kind names (every kind, zeros too).
func (s Stats) ByName() map[string]uint64 {
	out := make(map[string]uint64, numKinds)
	for _, k := range Kinds() {
		out[k.String()] = s.Injected[k]
	}
	return out
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	s := Stats{Requests: p.requests.Load(), Drawn: p.drawn.Load(), Vetoed: p.vetoed.Load(), Injected: map[Kind]uint64{}}
	for _, k := range Kinds() {
		s.Injected[k] = p.injected[k].Load()
	}
	p.mu.Lock()
	s.Stopped, s.StoppedAt = p.mu.stopped, p.mu.stoppedAt
	p.mu.Unlock()
	return s
}

// Config returns the proxy's configuration with defaults applied.
func (p *Proxy) Config() Config { return p.cfg }

// fault is what one request drew: no fault (none), or a kind and a byte
// offset.
type fault struct {
	kind   Kind
	none   bool
	offset int64
}

var noFault = fault{none: true}

// draw is the n-th draw for seed under rules: a pure function of its
// arguments.
func draw(seed int64, n uint64, rules map[Kind]Rule, bytes int64) fault {
	rng := rand.New(rand.NewPCG(uint64(seed), n))
	u := rng.Float64()
	offset := rng.Int64N(bytes)
	acc := 0.0
	for _, k := range Kinds() {
		r, ok := rules[k]
		if !ok || r.P == 0 {
			continue
		}
		acc += r.P
		if u < acc {
			return fault{kind: k, offset: offset}
		}
	}
	return noFault
}

// next makes the next draw, if faults are on and the bounds admit it. A
// draw of a kind allowed refuses is no fault (and no draw in the
// counters): mid-stream draws allow only what can happen mid-stream.
func (p *Proxy) next(allowed func(Kind) bool) (fault, <-chan struct{}) {
	p.mu.Lock()
	stopped, stop := p.mu.stopped, p.mu.stop
	p.mu.Unlock()
	if stopped {
		return noFault, stop
	}
	f := draw(p.cfg.Seed, p.seq.Add(1)-1, p.cfg.Rules, p.cfg.Bytes)
	if f.none || (allowed != nil && !allowed(f.kind)) {
		return noFault, stop
	}
	p.drawn.Add(1)
	r := p.cfg.Rules[f.kind]
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped || (r.Max >= 0 && p.mu.admitted[f.kind] >= r.Max) || (r.Every > 0 && !p.mu.last[f.kind].IsZero() && now.Sub(p.mu.last[f.kind]) < r.Every) {
		p.vetoed.Add(1)
		return noFault, stop
	}
	p.mu.admitted[f.kind]++
	p.mu.last[f.kind] = now
	return f, stop
}

// streamKinds are the faults that can happen in the middle of a watch.
func streamKinds(k Kind) bool { return k == Cut || k == Stall || k == Gone }

// fire reports whether an admitted fault may happen now (faults are not
// stopped), and counts it if so. A fault that does not fire gives its
// place under Max back.
func (p *Proxy) fire(k Kind) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped {
		p.mu.admitted[k]--
		return false
	}
	p.injected[k].Add(1)
	return true
}

// drop gives an admitted fault that cannot happen its place back.
func (p *Proxy) drop(k Kind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.admitted[k]--
}

// isWatch reports whether r asks for a watch: watch=true (or 1), or the
// legacy /api/v1/watch/… and /apis/{group}/{version}/watch/… paths.
func isWatch(r *http.Request) bool {
	if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
		return true
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(seg) > 2 && seg[0] == "api":
		return seg[2] == "watch"
	case len(seg) > 3 && seg[0] == "apis":
		return seg[3] == "watch"
	}
	return false
}

// hopHeaders are not forwarded (RFC 9110 §7.6.1), nor Accept-Encoding: the
// proxy reads and cuts decoded bytes.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Accept-Encoding"}

// ServeHTTP forwards r upstream, injecting the fault it draws. It runs on
// the request's net/http goroutine, which owns the response and the
// upstream body until it returns.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.handlers.Add(1)
	defer p.handlers.Done()
	p.requests.Add(1)
	eligible := p.eligible(r.Method, r.URL.Path, r.URL.RawQuery)
	f, stop := noFault, (<-chan struct{})(nil)
	if eligible {
		f, stop = p.next(nil)
	}
	watching := isWatch(r)
	if !f.none {
		switch {
		case f.kind == InternalError, f.kind == TooManyRequests, f.kind == Gone && !watching:
			if p.fire(f.kind) {
				_ = writeStatus(w, r, faultStatus(f.kind, p.cfg.Rules[f.kind].Duration))
				return
			}
			f = noFault
		}
	}
	rs := &response{p: p, w: w, stop: stop}
	rs.arm(f)
	defer rs.release() // a fault still pending when the response ends did not happen

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(p.base, cancel)()
	rs.ctx = ctx
	out, err := p.upstreamRequest(ctx, r)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	w.WriteHeader(resp.StatusCode)
	rs.flush()
	if info, ok := streamInfo(resp.Header.Get("Content-Type")); watching && resp.StatusCode == http.StatusOK && ok {
		rs.redraw = eligible
		rs.copyWatch(resp.Body, info)
		return
	}
	if !rs.pend.none && rs.pend.kind == Gone {
		rs.release() // a watch in a framing the proxy does not know: passed through
	}
	rs.copyBytes(resp.Body)
}

func (p *Proxy) upstreamRequest(ctx context.Context, r *http.Request) (*http.Request, error) {
	u := *p.upstream
	u.Path = path.Join("/", p.upstream.Path, r.URL.Path)
	if r.URL.Path != "/" && len(r.URL.Path) > 0 && r.URL.Path[len(r.URL.Path)-1] == '/' {
		u.Path += "/"
	}
	u.RawPath, u.RawQuery = "", r.URL.RawQuery
	var body io.Reader
	if r.ContentLength != 0 {
		body = r.Body
	}
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.ContentLength = r.ContentLength
	out.Header = r.Header.Clone()
	for _, k := range hopHeaders {
		out.Header.Del(k)
	}
	return out, nil
}

// badGateway answers a request the proxy could not forward: a 502 Status
// (not a fault: the upstream failed).
func (p *Proxy) badGateway(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	st := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadGateway, Reason: metav1.StatusReasonServiceUnavailable,
		Message: "faults: upstream: " + err.Error()}
	_ = writeStatus(w, r, st)
}
