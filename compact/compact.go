package compact

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/internal/delta"
	"github.com/shardinformer/shardinformer/wire"
)

// Config configures a Codec.
type Config struct {
	// Decoded bounds the decoded objects the codec keeps for its readers, the
	// most recently decoded or encoded ones (at least 2 are kept). 0 means
	// DefaultDecoded; a negative value is an error.
	Decoded int
}

// DefaultDecoded is Config.Decoded's default.
const DefaultDecoded = 4096

// Object is the stored form of one object version: its key, resource version
// and encoding, the encoding as a delta against the first encoding of its
// template. It is immutable; DeepCopyObject returns the same Object. It is a
// runtime.Object and a metav1.Object (name, namespace, resourceVersion only;
// meta.go) so that key functions and resource-version reads work on it as on
// the object; nothing else of the object is readable without Codec.Decode.
type Object struct {
	readOnlyMeta           // with meta.go's methods, a metav1.Object
	keyRV        string    // key + "\x00" + resourceVersion: one allocation
	t            *template // the object's template
	// data is nil when the object's encoding is its template's reference;
	// else a delta against it (first byte dataDelta) or the whole encoding,
	// where no delta is smaller (dataWhole).
	data []byte
}

// The first byte of Object.data.
const (
	dataDelta = 'd'
	dataWhole = 'w'
)

var _ kruntime.Object = (*Object)(nil)

// Key returns the object's key (namespace/name, or name).
func (o *Object) Key() string { k, _, _ := strings.Cut(o.keyRV, "\x00"); return k }

// ResourceVersion returns the object's resource version.
func (o *Object) ResourceVersion() string { _, rv, _ := strings.Cut(o.keyRV, "\x00"); return rv }

// Size returns the bytes the object's encoding takes in it (its delta, or 0
// when it is its template's reference, which its template holds; one more
// for the kind of bytes).
func (o *Object) Size() int { return len(o.data) }

// GetObjectKind implements runtime.Object: the type of the decoded object.
func (o *Object) GetObjectKind() schema.ObjectKind {
	if gvk := o.t.gvk; !gvk.Empty() {
		return &metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	}
	return schema.EmptyObjectKind
}

// DeepCopyObject implements runtime.Object. An Object is immutable: it
// returns o.
func (o *Object) DeepCopyObject() kruntime.Object { return o }

// template is what the objects of one template (a namespace's objects of one
// generateName, or of one controller) share: the first encoding of one of
// them, their reference, and their type.
type template struct {
	gvk  schema.GroupVersionKind // the objects' TypeMeta, where the encoding does not hold it
	data []byte                  // the reference encoding
	ref  atomic.Pointer[delta.Ref]
	once sync.Once
}

// delta returns t's reference, building its index on first use: a template
// with one object never needs it.
func (t *template) delta() *delta.Ref {
	t.once.Do(func() { t.ref.Store(delta.NewRef(t.data)) })
	return t.ref.Load()
}

// Codec turns objects of one type into Objects and back; an index.Codec.
// Safe for concurrent use.
type Codec struct {
	typ    reflect.Type
	format format
	cache  decodedCache

	mu struct {
		sync.Mutex
		templates map[string]weak.Pointer[template]
	}
	stats struct {
		encoded, unencoded, decoded, hits, bytes atomic.Int64
	}
}

// format encodes and decodes one type.
type format interface {
	// append appends obj's encoding to dst.
	append(dst []byte, obj kruntime.Object) ([]byte, error)
	// decode decodes data (which it must not retain).
	decode(data []byte) (kruntime.Object, error)
	// typed: the encoding does not hold the TypeMeta.
	typed() bool
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("compact: invalid configuration")

// New returns a codec for objects of example's type: protobuf for the types
// with generated protobuf code (every built-in Kubernetes type,
// PartialObjectMetadata), JSON for unstructured objects and any other type.
func New(example kruntime.Object, cfg Config) (*Codec, error) {
	if example == nil {
		return nil, fmt.Errorf("%w: nil example object", ErrConfig)
	}
	if cfg.Decoded < 0 {
		return nil, fmt.Errorf("%w: Decoded %d must not be negative", ErrConfig, cfg.Decoded)
	}
	typ := reflect.TypeOf(example)
	if typ.Kind() != reflect.Pointer {
		return nil, fmt.Errorf("%w: example %T is not a pointer", ErrConfig, example)
	}
	c := &Codec{typ: typ}
	switch example.(type) {
	case *unstructured.Unstructured:
		c.format = unstructuredJSON{}
	default:
		if _, ok := example.(protoMessage); ok {
			c.format = protoFormat{typ: typ.Elem()}
		} else {
			c.format = jsonFormat{typ: typ.Elem()}
		}
	}
	c.cache.init(cmp.Or(cfg.Decoded, DefaultDecoded))
	c.mu.templates = make(map[string]weak.Pointer[template])
	return c, nil
}

var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// Encode returns obj's stored form: an *Object for an object of the codec's
// type, anything else (a tombstone, an object of another type, one that does
// not encode) as it is, so no object is lost; Stats counts those. An Object
// is returned as it is (Encode is idempotent, as transforms must be). Encode
// never fails; its error result is for index.Codec and cache.TransformFunc.
func (c *Codec) Encode(obj any) (any, error) {
	switch obj.(type) {
	case *Object, cache.DeletedFinalStateUnknown: // a tombstone is never stored
		return obj, nil
	}
	ro, ok := obj.(kruntime.Object)
	if !ok || reflect.TypeOf(obj) != c.typ {
		c.stats.unencoded.Add(1)
		return obj, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		c.stats.unencoded.Add(1)
		return obj, nil
	}
	key := m.GetName() // cache.MetaNamespaceKeyFunc's key, without a second meta.Accessor
	if ns := m.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	bp := scratch.Get().(*[]byte)
	defer scratch.Put(bp)
	raw, err := c.format.append((*bp)[:0], ro)
	*bp = raw[:0]
	if err != nil {
		c.stats.unencoded.Add(1)
		return obj, nil
	}
	var gvk schema.GroupVersionKind
	if c.format.typed() {
		gvk = ro.GetObjectKind().GroupVersionKind()
	}
	t, fresh := c.template(templateKey(m, gvk), gvk, raw)
	o := &Object{keyRV: key + "\x00" + m.GetResourceVersion(), t: t}
	if !fresh {
		dp := scratch.Get().(*[]byte)
		d := t.delta().Encode(append((*dp)[:0], dataDelta), raw)
		if len(d) <= len(raw) {
			o.data = bytes.Clone(d)
		} else {
			o.data = append(append(make([]byte, 0, 1+len(raw)), dataWhole), raw...)
		}
		*dp = d[:0]
		scratch.Put(dp)
	}
	c.stats.encoded.Add(1)
	c.stats.bytes.Add(int64(len(o.data)))
	// The object itself is o's decoded form: the index functions and the
	// handlers that get o soon need not decode it.
	c.cache.put(o, ro)
	return o, nil
}

// templateKey names the template of an object: its namespace and
// generateName, or the uid of its controller, or its namespace alone; and
// its type where the encoding does not hold it.
func templateKey(m metav1.Object, gvk schema.GroupVersionKind) string {
	tail := m.GetGenerateName()
	if tail == "" {
		if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
			tail = "\x00" + string(ref.UID)
		}
	}
	return gvk.String() + "\x00" + m.GetNamespace() + "\x00" + tail
}

// template returns the live template named key, or makes raw the reference
// of a new one (fresh). Templates live while an object refers to them: the
// codec holds them weakly.
func (c *Codec) template(key string, gvk schema.GroupVersionKind, raw []byte) (t *template, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t = c.mu.templates[key].Value(); t != nil && t.gvk == gvk {
		return t, false
	}
	t = &template{gvk: gvk, data: bytes.Clone(raw)}
	wp := weak.Make(t)
	c.mu.templates[key] = wp
	runtime.AddCleanup(t, func(key string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.mu.templates[key] == wp {
			delete(c.mu.templates, key)
		}
	}, key)
	return t, true
}

// Decode returns the object an *Object stores, from the decoded objects it
// keeps or decoded anew; the decoded object is shared by every reader and
// must not be modified (as with any cached object). A
// cache.DeletedFinalStateUnknown is returned with its object decoded;
// anything else as it is.
func (c *Codec) Decode(stored any) (any, error) {
	switch o := stored.(type) {
	case *Object:
		return c.decode(o)
	case cache.DeletedFinalStateUnknown:
		if inner, ok := o.Obj.(*Object); ok {
			obj, err := c.decode(inner)
			if err != nil {
				return nil, err
			}
			o.Obj = obj
		}
		return o, nil
	}
	return stored, nil
}

func (c *Codec) decode(o *Object) (kruntime.Object, error) { return c.decodeLike(o, nil) }

// DecodeLike returns what Decode(stored) returns, decoding it, where it
// is not among the decoded objects kept, like the object that like (an
// *Object of the same key, usually the next version) stores: the parts
// whose encodings are equal are shared, not decoded again (for pods,
// wire.UnmarshalPodLike: the spec and the status). It is for the old
// object of an update, decoded right after the new one; with anything
// else as like, or types other than pods, it is Decode.
func (c *Codec) DecodeLike(stored, like any) (any, error) {
	o, ok := stored.(*Object)
	l, ok2 := like.(*Object)
	if !ok || !ok2 || o == l {
		return c.Decode(stored)
	}
	return c.decodeLike(o, l)
}

// raw appends o's encoding to buf.
func (o *Object) raw(buf []byte) ([]byte, error) {
	switch {
	case o.data == nil:
		return o.t.data, nil
	case o.data[0] == dataWhole:
		return o.data[1:], nil
	case o.data[0] == dataDelta:
		raw, err := o.t.delta().Decode(buf, o.data[1:])
		if err != nil {
			return nil, fmt.Errorf("compact: %s: %w", o.Key(), err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("compact: %s: bytes of unknown kind %#x", o.Key(), o.data[0])
}

// decodeLike decodes o, like l's decoded object where the format can (l
// nil: plainly).
func (c *Codec) decodeLike(o, l *Object) (kruntime.Object, error) {
	if obj, ok := c.cache.get(o); ok {
		c.stats.hits.Add(1)
		return obj, nil
	}
	bp := scratch.Get().(*[]byte)
	defer scratch.Put(bp)
	raw, err := o.raw((*bp)[:0])
	if err != nil {
		return nil, err
	}
	if o.data != nil && o.data[0] == dataDelta { // raw is the scratch buffer, grown
		*bp = raw[:0]
	}
	var obj kruntime.Object
	if lf, ok := c.format.(likeFormat); ok && l != nil {
		obj, err = c.decodeWith(lf, raw, l)
	} else {
		obj, err = c.format.decode(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("compact: %s: %w", o.Key(), err)
	}
	if !o.t.gvk.Empty() {
		obj.GetObjectKind().SetGroupVersionKind(o.t.gvk)
	}
	c.stats.decoded.Add(1)
	c.cache.put(o, obj)
	return obj, nil
}

// decodeWith decodes raw like l's decoded object (decoded too, or found
// among those kept).
func (c *Codec) decodeWith(lf likeFormat, raw []byte, l *Object) (kruntime.Object, error) {
	likeObj, err := c.decode(l)
	if err != nil { // l's own read will report it
		return c.format.decode(raw)
	}
	lp := scratch.Get().(*[]byte)
	defer scratch.Put(lp)
	likeRaw, err := l.raw((*lp)[:0])
	if err != nil {
		return c.format.decode(raw)
	}
	if l.data != nil && l.data[0] == dataDelta {
		*lp = likeRaw[:0]
	}
	return lf.decodeLike(raw, likeObj, likeRaw)
}

// Transform returns a cache.TransformFunc applying next (if not nil), then
// Encode; an Object passes through untouched, so the result is idempotent if
// next is.
func (c *Codec) Transform(next cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if o, ok := obj.(*Object); ok {
			return o, nil
		}
		if next != nil {
			var err error
			if obj, err = next(obj); err != nil {
				return nil, err
			}
		}
		return c.Encode(obj)
	}
}

// Stats are a codec's counters since it was made.
type Stats struct {
	// Encoded counts the objects Encode stored as Objects, Unencoded those it
	// returned as they were (another type, no metadata, an encoding error).
	Encoded, Unencoded int64
	// EncodedBytes sums the encoded objects' Size.
	EncodedBytes int64
	// Decoded counts the objects Decode decoded, DecodedHits those it
	// returned from its decoded objects.
	Decoded, DecodedHits int64
	// Templates is the number of live templates.
	Templates int
}

// Stats returns the codec's counters.
func (c *Codec) Stats() Stats {
	c.mu.Lock()
	n := len(c.mu.templates)
	c.mu.Unlock()
	return Stats{
		Encoded: c.stats.encoded.Load(), Unencoded: c.stats.unencoded.Load(), EncodedBytes: c.stats.bytes.Load(),
		Decoded: c.stats.decoded.Load(), DecodedHits: c.stats.hits.Load(), Templates: n,
	}
}

// protoMessage is what gogo-protobuf generates for Kubernetes' types.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer(dAtA []byte) (int, error)
	Unmarshal(dAtA []byte) error
}

type protoFormat struct{ typ reflect.Type }

var podType = reflect.TypeFor[corev1.Pod]()

func (protoFormat) typed() bool { return true }

func (protoFormat) append(dst []byte, obj kruntime.Object) ([]byte, error) {
	m := obj.(protoMessage)
	n := m.Size()
	dst = delta.Grow(dst, n)[:len(dst)+n]
	if _, err := m.MarshalToSizedBuffer(dst[len(dst)-n:]); err != nil {
		return dst, err
	}
	return dst, nil
}

func (f protoFormat) decode(data []byte) (kruntime.Object, error) {
	if f.typ == podType { // each read of a pod decodes one: with exact-size slices
		p := &corev1.Pod{}
		if err := wire.UnmarshalPod(p, data); err != nil {
			return nil, err
		}
		return p, nil
	}
	obj := reflect.New(f.typ).Interface()
	if err := obj.(protoMessage).Unmarshal(data); err != nil {
		return nil, err
	}
	return obj.(kruntime.Object), nil
}

// likeFormat is a format that can decode an encoding sharing parts with
// another object's whose encoding it is given: protoFormat of pods.
type likeFormat interface {
	decodeLike(data []byte, like kruntime.Object, likeData []byte) (kruntime.Object, error)
}

// decodeLike decodes a pod sharing the spec and status of like where their
// encodings are equal (wire.UnmarshalPodLike); other types plainly.
func (f protoFormat) decodeLike(data []byte, like kruntime.Object, likeData []byte) (kruntime.Object, error) {
	lp, ok := like.(*corev1.Pod)
	if f.typ != podType || !ok {
		return f.decode(data)
	}
	p := &corev1.Pod{}
	if err := wire.UnmarshalPodLike(p, data, lp, likeData); err != nil {
		return nil, err
	}
	return p, nil
}

type jsonFormat struct{ typ reflect.Type }

func (jsonFormat) typed() bool { return false }

func (jsonFormat) append(dst []byte, obj kruntime.Object) ([]byte, error) {
	b, err := json.Marshal(obj)
	return append(dst, b...), err
}

func (f jsonFormat) decode(data []byte) (kruntime.Object, error) {
	obj := reflect.New(f.typ).Interface()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	return obj.(kruntime.Object), nil
}

type unstructuredJSON struct{}

func (unstructuredJSON) typed() bool { return false }

func (unstructuredJSON) append(dst []byte, obj kruntime.Object) ([]byte, error) {
	b, err := json.Marshal(obj.(*unstructured.Unstructured).Object)
	return append(dst, b...), err
}

func (unstructuredJSON) decode(data []byte) (kruntime.Object, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}
