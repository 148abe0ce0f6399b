//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// newInstrumentedLW wraps a namespaced pod ListerWatcher (client-go's typed
// client or package wire's, see podLW) in the shared test kit's LW, which
// counts what the reflector asks for (LIST, WATCH, WatchList streams) and
// the 410 Gone answers, and can cut the informer off the server
// (Disconnect/Reconnect). tweak, if not nil, edits every request's options
// first, as a factory's tweak-list-options would.
func newInstrumentedLW(inner cache.ListerWatcherWithContext, tweak func(*metav1.ListOptions)) *testkit.LW {
	return testkit.NewLW(tweakedLW{inner: inner, tweak: tweak})
}

// tweakedLW applies tweak (if not nil) to the options of every request, and
// adds the context-free methods.
type tweakedLW struct {
	inner cache.ListerWatcherWithContext
	tweak func(*metav1.ListOptions)
}

func (lw tweakedLW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw tweakedLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw tweakedLW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	return lw.inner.ListWithContext(ctx, opts)
}

func (lw tweakedLW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if lw.tweak != nil {
		lw.tweak(&opts)
	}
	return lw.inner.WatchWithContext(ctx, opts)
}

// contentTypeCounter counts responses by media type (protobuf, JSON, CBOR)
// to prove which encoding a client actually used.
type contentTypeCounter struct {
	protobuf atomic.Int64
	json     atomic.Int64
	cbor     atomic.Int64 // application/cbor and application/cbor-seq (watches)
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
			case strings.HasPrefix(ct, "application/cbor"):
				c.cbor.Add(1)
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
	mediaCBOR     = "application/cbor"
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
	switch media {
	case mediaJSON:
		wireOpts = append(slices.Clone(wireOpts), wire.WithContentType(wire.JSON))
	case mediaCBOR:
		wireOpts = append(slices.Clone(wireOpts), wire.WithContentType(wire.CBOR))
	}
	return wire.New(client.CoreV1().RESTClient(), wire.Resource{
		GVR:       schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: ns,
		Object:    &corev1.Pod{},
	}, wireOpts...)
}

// informerClient returns a clientset for one informer speaking the given
// media type, without client-side rate limiting, and the counter of the
// media types it received; wraps are added to its transport.
func informerClient(base *rest.Config, media string, wraps ...transport.WrapperFunc) (kubernetes.Interface, *contentTypeCounter, error) {
	cfg, ctc := informerConfig(base, media, wraps...)
	cs, err := kubernetes.NewForConfig(cfg)
	return cs, ctc, err
}

// informerConfig is informerClient's configuration.
func informerConfig(base *rest.Config, media string, wraps ...transport.WrapperFunc) (*rest.Config, *contentTypeCounter) {
	cfg := rest.CopyConfig(base)
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.ContentType = media
	switch media {
	case mediaProtobuf:
		cfg.AcceptContentTypes = mediaProtobuf + "," + mediaJSON
	case mediaCBOR:
		cfg.AcceptContentTypes = mediaCBOR + "," + mediaJSON + ";q=0.9"
	default:
		cfg.AcceptContentTypes = mediaJSON
	}
	ctc := &contentTypeCounter{}
	cfg.Wrap(ctc.wrap)
	for _, w := range wraps {
		cfg.Wrap(w)
	}
	return cfg, ctc
}
