package wire

import (
	"errors"
	"fmt"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/wire/internal/diet"
)

// ContentType selects the encoding requested from the API server.
type ContentType int

const (
	// Protobuf asks for protobuf where the resource's type has a protobuf
	// encoding (built-in types) and JSON otherwise (unstructured). The
	// default.
	Protobuf ContentType = iota
	// JSON always asks for JSON.
	JSON
	// CBOR asks for CBOR (RFC 8949; watch streams as application/cbor-seq)
	// and takes JSON from servers that do not serve it: Kubernetes serves
	// CBOR with the CBORServingAndStorage feature gate (alpha since 1.32),
	// for built-in and custom resources alike. List bodies are split into
	// items and watch streams into events as with the other encodings, and
	// decoded on the workers by client-go's CBOR decoder; the diet's drop
	// cuts managedFields from the bytes, the rest applies after decoding. A client given to New must decode metav1.Status in
	// CBOR for API errors to keep their type (NewForConfig's does; a
	// clientset's does with client-go's ClientsAllowCBOR gate).
	CBOR
)

// String is the content type's name.
func (t ContentType) String() string {
	switch t {
	case Protobuf:
		return "protobuf"
	case JSON:
		return "json"
	case CBOR:
		return "cbor"
	}
	return fmt.Sprintf("ContentType(%d)", int(t))
}

// DefaultMaxFrameSize bounds a watch frame and a list item: client-go's
// watch decoder refuses larger objects too.
const DefaultMaxFrameSize = 16 << 20

// maxFrameSizeLimit keeps the first byte of a protobuf frame's length below
// every byte a JSON stream can start with (see sniffing in doc.go).
const maxFrameSizeLimit = 128 << 20

// config is what the options set. Zero values mean the defaults.
type config struct {
	workers       int
	window        int
	labelSelector string
	fieldSelector string
	tweak         func(*metav1.ListOptions)
	contentType   ContentType
	maxFrameSize  int
	diet          diet.Config
}

// Option configures a ListerWatcher.
type Option func(*config)

// WithWorkers sets the number of decoder goroutines per list or watch
// (default GOMAXPROCS). With 1, a watch decodes on its reader goroutine and
// a list on the caller's.
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithWindow bounds how many frames or items one list or watch holds in
// flight between the reader and the consumer: read and not yet delivered
// (default 16 per worker). A full window stops the reader, so the TCP
// stream applies backpressure to the server.
func WithWindow(n int) Option { return func(c *config) { c.window = n } }

// WithLabelSelector restricts lists and watches to objects matching sel.
func WithLabelSelector(sel string) Option { return func(c *config) { c.labelSelector = sel } }

// WithFieldSelector restricts lists and watches to objects matching sel.
func WithFieldSelector(sel string) Option { return func(c *config) { c.fieldSelector = sel } }

// WithTweakListOptions edits the options of every list and watch request
// last, like the tweak function of client-go's informer factories.
func WithTweakListOptions(f func(*metav1.ListOptions)) Option {
	return func(c *config) { c.tweak = f }
}

// WithContentType selects the requested encoding (default Protobuf).
func WithContentType(t ContentType) Option { return func(c *config) { c.contentType = t } }

// WithMaxFrameSize bounds the size of a watch frame, a list item and a
// list's metadata (default DefaultMaxFrameSize, at most 128 MiB). A larger
// one ends the list with an error, or the watch with an ERROR event, before
// anything of its size is allocated.
func WithMaxFrameSize(n int) Option { return func(c *config) { c.maxFrameSize = n } }

// WithDropManagedFields removes metadata.managedFields from every object
// while decoding: its bytes are cut out before the object is unmarshalled,
// so it costs neither decoding time nor heap.
func WithDropManagedFields() Option { return func(c *config) { c.diet.DropManagedFields = true } }

// WithInterning makes decoded objects share one copy of each string that
// repeats across objects (namespace, label and annotation keys and values,
// owner references, node, image and container names, and the like; see
// doc.go for the fields and their measured effect). Strings are immutable,
// so sharing them is invisible to users.
func WithInterning() Option {
	return func(c *config) { c.diet.Intern = true }
}

// WithCompaction stores each decoded pod's slices in arrays of exactly
// their length: a decoder appends repeated fields one by one and leaves up
// to half of each array's capacity unused. Pods only.
func WithCompaction() Option { return func(c *config) { c.diet.Compact = true } }

// WithSharing makes pods share one copy of each part that is identical
// across them and holds no map: owner references, finalizers, containers'
// env, envFrom, ports, command, args, probes, lifecycle and security
// contexts, volume sources, tolerations, image pull secrets, the pod's
// security context, host IPs. Replicas of one template share most of their
// spec this way. A protobuf pod also takes the spec and status of its
// previous version when their bytes did not change (the maps in them
// copied), so an update decodes only what changed. Objects from the cache must then not be modified in place
// (client-go's contract too; DeepCopy first): a change to a shared part
// shows in every pod sharing it and races with their readers. That holds
// for an informer's transform too, which client-go lets modify its object
// in place: here only the pod's metadata, and a changed spec or status
// on a copy (doc.go, "Transforms"). Pods only; part of WithDiet.
func WithSharing() Option { return func(c *config) { c.diet.Share = true } }

// WithSharedValues is WithSharing plus the parts that hold maps: resource
// requirements, node selector and affinity. Opt-in, not part of WithDiet:
// a shared map written by two goroutines at once stops the program (fatal
// error: concurrent map writes), so it is only for informers whose
// handlers, transforms and readers never modify cached objects.
func WithSharedValues() Option {
	return func(c *config) { c.diet.Share, c.diet.ShareMaps = true, true }
}

// WithDiet is WithDropManagedFields, WithInterning, WithCompaction and
// WithSharing.
func WithDiet() Option {
	return func(c *config) {
		d := &c.diet
		d.DropManagedFields, d.Intern, d.Compact, d.Share = true, true, true, true
	}
}

// WithoutDiet turns every step of the diet off, WithSharedValues included:
// objects are decoded as client-go decodes them. Options apply in order, so
// it undoes the diet of options before it (a factory's default WithDiet,
// say) and steps after it turn on again.
func WithoutDiet() Option {
	return func(c *config) { c.diet = diet.Config{} }
}

func (c *config) setDefaults() {
	if c.workers == 0 {
		c.workers = runtime.GOMAXPROCS(0)
	}
	if c.window == 0 {
		c.window = 16 * c.workers
	}
	if c.maxFrameSize == 0 {
		c.maxFrameSize = DefaultMaxFrameSize
	}
}

var errInvalidOption = errors.New("wire: invalid option")

func (c *config) validate() error {
	switch {
	case c.workers < 1:
		return fmt.Errorf("%w: workers %d < 1", errInvalidOption, c.workers)
	case c.window < c.workers:
		return fmt.Errorf("%w: window %d smaller than workers %d", errInvalidOption, c.window, c.workers)
	case c.maxFrameSize < 1 || c.maxFrameSize > maxFrameSizeLimit:
		return fmt.Errorf("%w: max frame size %d not in [1, %d]", errInvalidOption, c.maxFrameSize, maxFrameSizeLimit)
	case c.contentType != Protobuf && c.contentType != JSON && c.contentType != CBOR:
		return fmt.Errorf("%w: content type %d", errInvalidOption, c.contentType)
	}
	return nil
}
