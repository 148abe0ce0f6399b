package wire

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/validation/path"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/wire/internal/diet"
)

// Resource says what a ListerWatcher lists and watches and how it decodes
// it.
type Resource struct {
	// GVR is the resource, e.g. {Version: "v1", Resource: "pods"}.
	GVR schema.GroupVersionResource
	// Namespace restricts the resource to one namespace; "" means all
	// namespaces (and is required for cluster-scoped resources).
	Namespace string
	// Object is an example of the resource's typed object (&corev1.Pod{}):
	// lists come back as the type's list (*corev1.PodList) and objects as
	// the type. Nil decodes into unstructured.Unstructured and
	// unstructured.UnstructuredList, as client-go's dynamic client does: for
	// custom resources or any resource without Go types.
	// &metav1.PartialObjectMetadata{} lists and watches the metadata of any
	// resource, as client-go's metadata client does (doc.go,
	// "Metadata-only objects").
	Object runtime.Object
	// Scheme knows Object's kind and its list kind; nil means client-go's
	// kubernetes/scheme.Scheme. Not used for metadata-only objects.
	Scheme *runtime.Scheme
}

// ListerWatcher lists and watches one resource, decoding responses as they
// stream in on several goroutines (see the package documentation). It
// satisfies client-go's cache.ListerWatcher and
// cache.ListerWatcherWithContext and supports WatchList, so it serves
// client-go's informers and reflectors as well as pipeline's. It is safe for
// concurrent use; every List and Watch is independent.
type ListerWatcher struct {
	client rest.Interface
	res    Resource
	cfg    config
	codec  *codec
	// accept and watchAccept are the Accept headers of lists and watches
	// (they differ for metadata-only objects).
	accept, watchAccept string
	bufs                *sync.Pool // *[]byte frame and item buffers
	// listType is the typed list struct (nil for unstructured).
	listType reflect.Type
	// prefix is the path of the resource's group version below the
	// server's base URL ("/api/v1", "/apis/apps/v1"); path is the
	// collection's ("/api/v1/namespaces/shop/pods").
	prefix, path string
}

var (
	_ cache.ListerWatcher            = (*ListerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)
)

// New returns a ListerWatcher that sends its requests through client, a
// REST client of the API server (for example
// clientset.CoreV1().RESTClient(), or the one under a dynamic or metadata
// client). Requests name the resource's whole path (AbsPath), as the
// dynamic and metadata clients' do, so the client's own group, version and API path do
// not matter; its base URL, throttling, retries, warnings and error
// handling apply. It must be able to decode metav1.Status in the content
// types requested (the clientset's, dynamic and metadata REST clients can).
// New starts nothing.
func New(client rest.Interface, res Resource, opts ...Option) (*ListerWatcher, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", errInvalidOption)
	}
	if res.GVR.Resource == "" || res.GVR.Version == "" {
		return nil, fmt.Errorf("%w: resource %v has no version or resource", errInvalidOption, res.GVR)
	}
	for _, seg := range [...]struct{ what, name string }{{"group", res.GVR.Group}, {"version", res.GVR.Version}, {"resource", res.GVR.Resource}, {"namespace", res.Namespace}} {
		if msgs := path.IsValidPathSegmentName(seg.name); seg.name != "" && len(msgs) > 0 {
			return nil, fmt.Errorf("%w: %s %q: %s", errInvalidOption, seg.what, seg.name, strings.Join(msgs, ", "))
		}
	}
	metadataOnly := isMetadata(res.Object)
	switch {
	case metadataOnly:
		res.Scheme = metainternalversionscheme.Scheme // the metadata client's
	case res.Object != nil && res.Scheme == nil:
		res.Scheme = scheme.Scheme
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if metadataOnly && cfg.contentType == CBOR {
		return nil, fmt.Errorf("%w: CBOR for metadata-only objects (client-go's metadata client asks for protobuf or JSON only)", errInvalidOption)
	}
	c, err := newCodec(res, diet.New(cfg.diet, cfg.workers))
	if err != nil {
		return nil, err
	}
	lw := &ListerWatcher{
		client: client,
		res:    res,
		cfg:    cfg,
		codec:  c,
		accept: runtime.ContentTypeJSON,
		bufs:   &sync.Pool{},
		prefix: groupVersionPath(res.GVR.GroupVersion()),
	}
	lw.path = lw.prefix + "/" + res.GVR.Resource
	if res.Namespace != "" {
		lw.path = lw.prefix + "/namespaces/" + res.Namespace + "/" + res.GVR.Resource
	}
	switch {
	case metadataOnly:
		lw.accept, lw.watchAccept = metadataAccept(cfg.contentType)
	case c.protobuf && cfg.contentType == Protobuf:
		lw.accept = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	case cfg.contentType == CBOR:
		lw.accept = runtime.ContentTypeCBOR + "," + runtime.ContentTypeJSON + ";q=0.9"
	}
	if lw.watchAccept == "" {
		lw.watchAccept = lw.accept
	}
	if c.typed {
		list, err := res.Scheme.New(c.listGVK)
		if err != nil {
			return nil, fmt.Errorf("wire: %w", err)
		}
		lw.listType = reflect.TypeOf(list).Elem()
		items, ok := lw.listType.FieldByName("Items")
		if !ok || items.Type.Kind() != reflect.Slice || items.Type.Elem() != reflect.TypeOf(res.Object).Elem() {
			return nil, fmt.Errorf("wire: %v has no Items of %T", lw.listType, res.Object)
		}
		if lm, ok := lw.listType.FieldByName("ListMeta"); !ok || lm.Type != reflect.TypeFor[metav1.ListMeta]() {
			return nil, fmt.Errorf("wire: %v has no metav1.ListMeta", lw.listType)
		}
	}
	return lw, nil
}

// NewForConfig builds a REST client for res from cfg (its QPS, burst, rate
// limiter, transport and timeout apply) and returns New's ListerWatcher on
// it.
func NewForConfig(cfg *rest.Config, res Resource, opts ...Option) (*ListerWatcher, error) {
	c := rest.CopyConfig(cfg)
	gv := res.GVR.GroupVersion()
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	switch {
	case isMetadata(res.Object):
		c.NegotiatedSerializer = metainternalversionscheme.Codecs.WithoutConversion() // metadata.ConfigFor's
	case res.Object != nil:
		s := res.Scheme
		if s == nil {
			s = scheme.Scheme
		}
		c.NegotiatedSerializer = codecFactory(s).WithoutConversion()
	default:
		c.NegotiatedSerializer = newUnstructuredSerializer()
	}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("wire: %w", err)
	}
	return New(client, res, opts...)
}

// groupVersionPath is gv's path below the server's base URL.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// String describes the ListerWatcher, for pipeline.Stats and logs:
// "wire pods.v1 in shop: protobuf, 2 workers, diet (managedFields dropped,
// interned, compacted, shared)"; the content type is the one requested
// (json for unstructured objects unless CBOR), metadata-only ones say
// "metadata only" first.
func (lw *ListerWatcher) String() string {
	var b strings.Builder
	gvr := lw.res.GVR
	fmt.Fprintf(&b, "wire %s.%s", gvr.Resource, gvr.Version)
	if gvr.Group != "" {
		fmt.Fprintf(&b, ".%s", gvr.Group)
	}
	if lw.res.Namespace != "" {
		fmt.Fprintf(&b, " in %s", lw.res.Namespace)
	}
	b.WriteString(": ")
	if lw.codec.metadata {
		b.WriteString("metadata only, ")
	}
	ct := lw.cfg.contentType
	if ct == Protobuf && !lw.codec.protobuf {
		ct = JSON // what is requested for a type without protobuf
	}
	fmt.Fprintf(&b, "%s, %d workers", ct, lw.cfg.workers)
	return b.String() + lw.cfg.diet.String()
}

// protobufRequested reports whether requests accept protobuf.
func (lw *ListerWatcher) protobufRequested() bool {
	return lw.codec.protobuf && lw.cfg.contentType == Protobuf
}

// cborRequested reports whether requests accept CBOR.
func (lw *ListerWatcher) cborRequested() bool { return lw.cfg.contentType == CBOR }

// IsWatchListSemanticsUnSupported tells client-go's reflector that this
// ListerWatcher supports WatchList (streaming the initial state as watch
// events, ended by the k8s.io/initial-events-end bookmark).
func (lw *ListerWatcher) IsWatchListSemanticsUnSupported() bool { return false }

// request builds the GET of a list (watch false) or a watch with opts as
// the client-go client wire mirrors builds it: a typed clientset's names
// the resource (Resource, with the namespace) and sets a timeout from
// opts.TimeoutSeconds; the dynamic client's (unstructured) and the
// metadata client's give the collection's whole path (AbsPath, so API
// errors name no resource, as theirs do), the metadata client's with the
// timeout on watches only, the dynamic client's with none. The timeout is
// returned too.
func (lw *ListerWatcher) request(opts metav1.ListOptions, watch bool) (*rest.Request, time.Duration) {
	if lw.cfg.labelSelector != "" {
		opts.LabelSelector = lw.cfg.labelSelector
	}
	if lw.cfg.fieldSelector != "" {
		opts.FieldSelector = lw.cfg.fieldSelector
	}
	if lw.cfg.tweak != nil {
		lw.cfg.tweak(&opts)
	}
	clientset := lw.codec.typed && !lw.codec.metadata
	var timeout time.Duration
	if opts.TimeoutSeconds != nil && (clientset || lw.codec.metadata && watch) {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	accept := lw.accept
	if watch {
		accept = lw.watchAccept
	}
	req := lw.client.Get()
	if ns := lw.res.Namespace; clientset {
		req = req.AbsPath(lw.prefix).NamespaceIfScoped(ns, ns != "").Resource(lw.res.GVR.Resource)
	} else {
		req = req.AbsPath(lw.path)
	}
	return req.VersionedParams(&opts, metav1.ParameterCodec).
		Timeout(timeout).
		SetHeader("Accept", accept), timeout
}

// List implements cache.Lister.
func (lw *ListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher.
func (lw *ListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// getBuf returns a buffer of length n.
func (lw *ListerWatcher) getBuf(n int) []byte {
	if p, ok := lw.bufs.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n, max(n, 4<<10))
}

// putBuf returns a buffer to the pool.
func (lw *ListerWatcher) putBuf(b []byte) {
	if cap(b) > 1<<20 {
		return // keep only common sizes
	}
	lw.bufs.Put(&b)
}
