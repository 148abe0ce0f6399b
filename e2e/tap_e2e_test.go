//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// counters is what the suite reads of an informer's requests: the shared
// test kit's LW for informers built on a ListerWatcher, an httpTap for
// those a factory builds on a clientset.
type counters interface {
	Lists() int64
	Watches() int64
	WatchLists() int64
	Gone() int64
	Disconnect()
	Reconnect()
}

// httpTap is testkit.LW at the HTTP level, for informers that build their
// own ListerWatcher (the factories): it counts the GET requests for pods —
// lists, watches, watch-list streams — and the 410 answers (a 410 status,
// or a watch stream carrying an Expired Status), and Disconnect closes the
// open watch streams and holds new pod requests until Reconnect or their
// context ends. It is installed with rest.Config.Wrap.
type httpTap struct {
	next                             http.RoundTripper
	lists, watches, watchLists, gone atomic.Int64
	mu                               struct {
		sync.Mutex
		gate chan struct{} // non-nil while disconnected
		open map[*tapBody]bool
	}
}

var _ counters = (*httpTap)(nil)

func (t *httpTap) wrap(rt http.RoundTripper) http.RoundTripper {
	t.next = rt
	return t
}

func (t *httpTap) Lists() int64      { return t.lists.Load() }
func (t *httpTap) Watches() int64    { return t.watches.Load() }
func (t *httpTap) WatchLists() int64 { return t.watchLists.Load() }
func (t *httpTap) Gone() int64       { return t.gone.Load() }

func (t *httpTap) Disconnect() {
	t.mu.Lock()
	if t.mu.gate == nil {
		t.mu.gate = make(chan struct{})
	}
	open := make([]*tapBody, 0, len(t.mu.open))
	for b := range t.mu.open {
		open = append(open, b)
	}
	t.mu.Unlock()
	for _, b := range open {
		b.cut.Store(true) // a clean end of stream, as testkit.LW's Stop gives
		_ = b.Close()
	}
}

func (t *httpTap) Reconnect() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.gate != nil {
		close(t.mu.gate)
		t.mu.gate = nil
	}
}

func (t *httpTap) connected(ctx context.Context) error {
	t.mu.Lock()
	gate := t.mu.gate
	t.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *httpTap) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/pods") {
		return t.next.RoundTrip(req)
	}
	if err := t.connected(req.Context()); err != nil {
		return nil, err
	}
	q := req.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	if watching {
		t.watches.Add(1)
		if q.Get("sendInitialEvents") == "true" {
			t.watchLists.Add(1)
		}
	} else {
		t.lists.Add(1)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusGone {
		t.gone.Add(1)
	}
	if watching && resp.StatusCode == http.StatusOK {
		b := &tapBody{ReadCloser: resp.Body, tap: t}
		t.mu.Lock()
		if t.mu.open == nil {
			t.mu.open = map[*tapBody]bool{}
		}
		t.mu.open[b] = true
		t.mu.Unlock()
		resp.Body = b
	}
	return resp, nil
}

// tapBody is a watch stream's body: it counts one 410 if the stream carries
// a Status whose reason is Expired, and leaves the tap's open set on Close.
// Once Disconnect has cut it, it ends as a stream the server closed does
// (io.EOF), not with the error of a body closed under a read.
type tapBody struct {
	io.ReadCloser
	tap     *httpTap
	cut     atomic.Bool
	tail    []byte // the last bytes read, for a reason split across reads
	counted bool
	once    sync.Once
}

var expired = []byte("Expired")

func (b *tapBody) Read(p []byte) (int, error) {
	if b.cut.Load() {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if b.cut.Load() {
		return 0, io.EOF
	}
	if n > 0 && !b.counted {
		buf := append(b.tail, p[:n]...)
		if bytes.Contains(buf, expired) {
			b.counted = true
			b.tap.gone.Add(1)
		}
		b.tail = append(b.tail[:0], buf[max(0, len(buf)-len(expired)+1):]...)
	}
	return n, err
}

func (b *tapBody) Close() error {
	b.once.Do(func() {
		b.tap.mu.Lock()
		delete(b.tap.mu.open, b)
		b.tap.mu.Unlock()
	})
	return b.ReadCloser.Close()
}
