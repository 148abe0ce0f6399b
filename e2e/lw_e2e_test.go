//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/shardinformer/shardinformer/wire"
)

// instrumentedLW wraps a namespaced pod ListerWatcher (client-go's typed
// client or package wire's, see podLW), counts what the reflector asks for
// (LIST, WATCH, WatchList streams), counts 410 Gone answers, and can cut
// the informer off the server: Disconnect stops every open watch and holds
// new LIST/WATCH calls until Reconnect.
type instrumentedLW struct {
	inner cache.ListerWatcherWithContext
	tweak func(*metav1.ListOptions)

	lists      atomic.Int64
	watches    atomic.Int64
	watchLists atomic.Int64 // watches with sendInitialEvents=true
	gone       atomic.Int64 // 410 answers, as errors or watch error events

	mu struct {
		sync.Mutex
		gate   chan struct{} // non-nil while disconnected; closed by Reconnect
		active map[*tappedWatch]struct{}
	}
}

func newInstrumentedLW(inner cache.ListerWatcherWithContext, tweak func(*metav1.ListOptions)) *instrumentedLW {
	lw := &instrumentedLW{inner: inner, tweak: tweak}
	lw.mu.active = map[*tappedWatch]struct{}{}
	return lw
}

func (lw *instrumentedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *instrumentedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *instrumentedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := lw.waitConnected(ctx); err != nil {
		return nil, err
	}
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	lw.lists.Add(1)
	l, err := lw.inner.ListWithContext(ctx, opts)
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		lw.gone.Add(1)
	}
	return l, err
}

func (lw *instrumentedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := lw.waitConnected(ctx); err != nil {
		return nil, err
	}
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	lw.watches.Add(1)
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		lw.watchLists.Add(1)
	}
	w, err := lw.inner.WatchWithContext(ctx, opts)
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			lw.gone.Add(1)
		}
		return nil, err
	}
	tw := &tappedWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{}), lw: lw}
	lw.mu.Lock()
	lw.mu.active[tw] = struct{}{}
	lw.mu.Unlock()
	go tw.loop() // exits on Stop or when the server closes the watch
	return tw, nil
}

// tappedWatch forwards a server watch, counting 410 error events, and
// forgets itself in lw when stopped. Unlike watch.Filter it never blocks
// forever on a consumer that has gone away.
type tappedWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	lw   *instrumentedLW
}

func (w *tappedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *tappedWatch) Stop() {
	w.once.Do(func() {
		w.lw.mu.Lock()
		delete(w.lw.mu.active, w)
		w.lw.mu.Unlock()
		close(w.stop)
		w.in.Stop()
	})
}

func (w *tappedWatch) loop() {
	defer close(w.out)
	for {
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == http.StatusGone {
					w.lw.gone.Add(1)
				}
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}

func (lw *instrumentedLW) waitConnected(ctx context.Context) error {
	lw.mu.Lock()
	gate := lw.mu.gate
	lw.mu.Unlock()
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

// Disconnect stops all open watches and holds new calls until Reconnect.
func (lw *instrumentedLW) Disconnect() {
	lw.mu.Lock()
	if lw.mu.gate == nil {
		lw.mu.gate = make(chan struct{})
	}
	var open []*tappedWatch
	for w := range lw.mu.active {
		open = append(open, w)
	}
	clear(lw.mu.active)
	lw.mu.Unlock()
	for _, w := range open {
		w.Stop()
	}
}

// Reconnect releases calls held by Disconnect.
func (lw *instrumentedLW) Reconnect() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.mu.gate != nil {
		close(lw.mu.gate)
		lw.mu.gate = nil
	}
}

// contentTypeCounter counts responses by media type (protobuf vs JSON) to
// prove which encoding a client actually used.
type contentTypeCounter struct {
	protobuf atomic.Int64
	json     atomic.Int64
	other    atomic.Int64
}

func (c *contentTypeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			ct := resp.Header.Get("Content-Type")
			switch {
			case strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf"):
				c.protobuf.Add(1)
			case strings.HasPrefix(ct, "application/json"):
				c.json.Add(1)
			default:
				c.other.Add(1)
			}
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	mediaJSON     = "application/json"
)

// podLW returns the pod ListerWatcher of one informer in namespace ns:
// client's typed pod client when wireOpts is nil, else package wire's
// ListerWatcher on client's REST client (so on the same transport and
// media-type counter) with wireOpts, asking for media.
func podLW(client kubernetes.Interface, ns, media string, wireOpts []wire.Option) (cache.ListerWatcherWithContext, error) {
	if wireOpts == nil {
		pods := client.CoreV1().Pods(ns)
		return &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pods.Watch(ctx, o)
			},
		}, nil
	}
	if media == mediaJSON {
		wireOpts = append(slices.Clone(wireOpts), wire.WithContentType(wire.JSON))
	}
	return wire.New(client.CoreV1().RESTClient(), wire.Resource{
		GVR:       schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: ns,
		Object:    &corev1.Pod{},
	}, wireOpts...)
}

// informerClient returns a clientset for one informer speaking the given
// media type, without client-side rate limiting, and the counter of the
// media types it received.
func informerClient(base *rest.Config, media string) (kubernetes.Interface, *contentTypeCounter, error) {
	cfg := rest.CopyConfig(base)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.ContentType = media
	if media == mediaProtobuf {
		cfg.AcceptContentTypes = mediaProtobuf + "," + mediaJSON
	} else {
		cfg.AcceptContentTypes = mediaJSON
	}
	ctc := &contentTypeCounter{}
	cfg.Wrap(ctc.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	return cs, ctc, err
}
