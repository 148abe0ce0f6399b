package wire

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"

	"github.com/shardinformer/shardinformer/wire/internal/cborwire"
	"github.com/shardinformer/shardinformer/wire/internal/diet"
	"github.com/shardinformer/shardinformer/wire/internal/jsonwire"
	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// format is the encoding of a response body.
type format int

const (
	formatJSON format = iota
	formatProtobuf
	formatCBOR
	numFormats
)

func (f format) mediaType() string {
	switch f {
	case formatProtobuf:
		return runtime.ContentTypeProtobuf
	case formatCBOR:
		return runtime.ContentTypeCBOR
	}
	return runtime.ContentTypeJSON
}

// unmarshaler is what the generated protobuf code gives every built-in type.
type unmarshaler interface {
	Unmarshal([]byte) error
}

// codec decodes one resource's objects. Its fast paths take the canonical
// encodings the API server writes; everything else goes to the decoders a
// client-go client of the same resource uses (reference), so that odd
// inputs decode — or fail — exactly as they would there. A codec is
// immutable and safe for concurrent use.
type codec struct {
	typed bool
	// Typed resources.
	gvk, listGVK schema.GroupVersionKind
	apiVersion   string // gvk as it appears on the wire
	newItem      func() runtime.Object
	protobuf     bool // the type has a protobuf encoding
	// canExcise: the type's protobuf metadata is field 1, so managedFields
	// can be cut from the bytes (see pbwire.DropManagedFields).
	canExcise bool

	// reference holds client-go's decoders per format.
	reference [numFormats]struct {
		object runtime.Decoder // the body of a list, or a watch event's object
		event  runtime.Decoder // a watch frame into metav1.WatchEvent
	}
	// known reports the kinds the reference decodes into typed objects for
	// an unstructured resource (metav1's, like Status).
	known func(schema.GroupVersionKind) bool
	// cborItem decodes a CBOR list item as a CBOR list decode decodes it:
	// into the resource's type, or into Unstructured (which, when the item
	// has no kind, fails with the object decoded; the list supplies it).
	cborItem runtime.Decoder
	// cborDirect: the type's CBOR items may be unmarshalled directly
	// (cborListItem): it holds no value the serializer transcodes after
	// decoding but the FieldsV1 of its metadata's managedFields.
	cborDirect bool

	// diet is applied to every object decoded (diet.Applier.Apply), and
	// decodes protobuf pods when they are shared (ProtoPod).
	diet *diet.Applier
	// pod: the resource is pods, whose diet shares parts before decoding
	// (diet.Applier.ProtoPod) and which are decoded into exact-size slices
	// without it (diet.DecodePod).
	pod bool
	// metadata: the objects are metav1.PartialObjectMetadata (metadata.go);
	// typed is set too, and there is no CBOR.
	metadata bool
}

func newCodec(res Resource, d *diet.Applier) (*codec, error) {
	if isMetadata(res.Object) {
		return newMetadataCodec(d)
	}
	c := &codec{diet: d}
	// The decoders a client-go client of the resource uses: the typed
	// clientset's (WithoutConversion) or the dynamic client's.
	var negotiator runtime.ClientNegotiator
	if res.Object == nil {
		ns := newUnstructuredSerializer()
		negotiator = runtime.NewClientNegotiator(ns, res.GVR.GroupVersion())
		c.known = ns.scheme.Recognizes
		c.cborItem = cbor.NewSerializer(unstructuredCreater{ns.scheme}, unstructuredTyper{ns.scheme})
	} else {
		c.typed = true
		kinds, _, err := res.Scheme.ObjectKinds(res.Object)
		if err != nil {
			return nil, fmt.Errorf("wire: example object: %w", err)
		}
		i := slices.IndexFunc(kinds, func(k schema.GroupVersionKind) bool { return k.GroupVersion() == res.GVR.GroupVersion() })
		if i < 0 {
			return nil, fmt.Errorf("wire: the example object is %v, not of resource %v", kinds[0], res.GVR)
		}
		c.gvk = kinds[i]
		c.listGVK = c.gvk.GroupVersion().WithKind(c.gvk.Kind + "List")
		if !res.Scheme.Recognizes(c.listGVK) {
			return nil, fmt.Errorf("wire: the scheme has no list kind %v", c.listGVK)
		}
		c.apiVersion = c.gvk.GroupVersion().String()
		t := reflect.TypeOf(res.Object)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("wire: the example object %T is not a pointer to a struct", res.Object)
		}
		t = t.Elem()
		c.newItem = func() runtime.Object { return reflect.New(t).Interface().(runtime.Object) }
		_, c.protobuf = res.Object.(unmarshaler)
		if f, ok := t.FieldByName("ObjectMeta"); ok && f.Type == reflect.TypeFor[metav1.ObjectMeta]() {
			c.canExcise = strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,1,")
		}
		negotiator = runtime.NewClientNegotiator(codecFactory(res.Scheme).WithoutConversion(), c.gvk.GroupVersion())
		_, c.pod = res.Object.(*corev1.Pod)
		c.cborItem = cbor.NewSerializer(res.Scheme, res.Scheme)
		c.cborDirect = !transcodedIn(t, map[reflect.Type]bool{})
	}
	for _, f := range []format{formatJSON, formatProtobuf, formatCBOR} {
		if f == formatProtobuf && !c.protobuf {
			continue
		}
		obj, ev, _, err := negotiator.StreamDecoder(f.mediaType(), nil)
		if err != nil {
			return nil, fmt.Errorf("wire: no %s decoder: %w", f.mediaType(), err)
		}
		c.reference[f].object, c.reference[f].event = obj, ev
	}
	return c, nil
}

// Errors of watch decoding, worded as client-go's watch decoder words them.
var errNotWatchEvent = errors.New("unable to decode to metav1.WatchEvent")

func validEventType(t string) bool {
	switch watch.EventType(t) {
	case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
		return true
	}
	return false
}

// decodeEvent decodes one watch frame (its bytes may be modified). Errors
// are the ones client-go's watch decoder returns for the same frame.
func (c *codec) decodeEvent(f format, frame []byte) (watch.Event, error) {
	var typ string
	var object []byte
	var ok bool
	switch f {
	case formatProtobuf:
		var t []byte
		t, object, ok = pbwire.ParseWatchEvent(frame)
		typ = string(t)
	case formatCBOR:
		typ, object, ok = cborwire.ParseWatchEvent(frame)
	default:
		typ, object, ok = jsonwire.ParseWatchEvent(frame)
	}
	if !ok {
		return c.referenceEvent(f, frame)
	}
	if !validEventType(typ) {
		return watch.Event{}, fmt.Errorf("got invalid watch event type: %v", typ)
	}
	obj, err := c.decodeObject(f, object)
	if err != nil {
		return watch.Event{}, fmt.Errorf("unable to decode watch event: %v", err)
	}
	return watch.Event{Type: watch.EventType(typ), Object: obj}, nil
}

// referenceEvent decodes a frame the way client-go's watch decoder does.
func (c *codec) referenceEvent(f format, frame []byte) (watch.Event, error) {
	var got metav1.WatchEvent
	res, _, err := c.reference[f].event.Decode(frame, nil, &got)
	if err != nil {
		return watch.Event{}, err
	}
	if res != &got {
		return watch.Event{}, errNotWatchEvent
	}
	if !validEventType(got.Type) {
		return watch.Event{}, fmt.Errorf("got invalid watch event type: %v", got.Type)
	}
	obj, err := c.referenceObject(f, got.Object.Raw)
	if err != nil {
		return watch.Event{}, fmt.Errorf("unable to decode watch event: %v", err)
	}
	return watch.Event{Type: watch.EventType(got.Type), Object: obj}, nil
}

// decodeObject decodes a watch event's object: enveloped protobuf, JSON
// with its kind, or CBOR (by client-go's decoder, after cutting
// managedFields from the bytes for the diet's drop: the watch frames it and
// decodes on several goroutines).
func (c *codec) decodeObject(f format, b []byte) (runtime.Object, error) {
	if f == formatCBOR {
		if c.diet.DropManagedFields {
			b, _ = cborwire.DropManagedFields(b)
		}
		return c.referenceObject(f, b)
	}
	if f == formatProtobuf {
		apiVersion, kind, raw, ok := pbwire.ParseUnknown(b)
		if !ok || string(apiVersion) != c.apiVersion || string(kind) != c.gvk.Kind {
			return c.referenceObject(f, b)
		}
		return c.protoItem(raw)
	}
	out, apiVersion, kind, ok := jsonwire.Inspect(b, c.diet.DropManagedFields)
	if !ok {
		return c.referenceObject(f, b)
	}
	if c.typed {
		if apiVersion != c.apiVersion || kind != c.gvk.Kind {
			return c.referenceObject(f, out)
		}
		obj := c.newItem()
		if err := kjson.UnmarshalCaseSensitivePreserveInts(out, obj); err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as WithoutVersionDecoder does
		return c.diet.Apply(obj), nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || gv.Version == "" || c.known(gv.WithKind(kind)) {
		return c.referenceObject(f, out)
	}
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(out, &u.Object); err != nil {
		return nil, err
	}
	return c.diet.Apply(u), nil
}

// referenceObject decodes an object with client-go's decoder, then applies
// the diet.
func (c *codec) referenceObject(f format, b []byte) (runtime.Object, error) {
	obj, err := runtime.Decode(c.reference[f].object, b)
	if err != nil {
		return nil, err
	}
	if c.diet.DropManagedFields {
		clearManagedFields(obj)
	}
	return c.diet.Apply(obj), nil
}

func clearManagedFields(obj runtime.Object) {
	if _, isStatus := obj.(*metav1.Status); isStatus {
		return
	}
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
}

// protoItem decodes an object message (a list item, or the raw bytes of an
// enveloped object of the resource's kind); b may be modified.
func (c *codec) protoItem(b []byte) (runtime.Object, error) {
	excised := false
	if c.diet.DropManagedFields && c.canExcise {
		var err error
		if b, err = pbwire.DropManagedFields(b); err != nil {
			return nil, err
		}
		excised = true
	}
	if c.pod && c.diet.Sharing() && (excised || !c.diet.DropManagedFields) {
		return c.diet.ProtoPod(b)
	}
	obj := c.newItem()
	var err error
	if pod, ok := obj.(*corev1.Pod); ok {
		err = diet.DecodePod(pod, b)
	} else {
		err = obj.(unmarshaler).Unmarshal(b)
	}
	if err != nil {
		return nil, err
	}
	if c.diet.DropManagedFields && !excised {
		clearManagedFields(obj)
	}
	return c.diet.Apply(obj), nil
}

// jsonItem decodes a list item of a JSON list; b may be modified.
func (c *codec) jsonItem(b []byte) (runtime.Object, error) {
	dropped := false
	if c.diet.DropManagedFields {
		var ok bool
		if b, _, _, ok = jsonwire.Inspect(b, true); ok {
			dropped = true
		}
	}
	var obj runtime.Object
	if c.typed {
		obj = c.newItem()
		if err := kjson.UnmarshalCaseSensitivePreserveInts(b, obj); err != nil {
			return nil, err
		}
	} else {
		u := &unstructured.Unstructured{}
		if err := utiljson.Unmarshal(b, &u.Object); err != nil {
			return nil, err
		}
		obj = u
	}
	if c.diet.DropManagedFields && !dropped {
		clearManagedFields(obj)
	}
	return c.diet.Apply(obj), nil
}

// cborListItem decodes an item of a CBOR list as client-go's decode of the
// whole list decodes it.
//
// With the diet's drop, managedFields are cut from the bytes first
// (cborwire.DropManagedFields), so neither decoded nor transcoded. A typed
// item is then unmarshalled directly, in apimachinery's strict CBOR mode
// (cbor/direct), when its type allows (cborDirect): what the lax decode
// behind the serializer gives whenever the strict one succeeds, without the
// serializer's extra pass over the item for its apiVersion and kind; the
// FieldsV1 of managedFields are then transcoded to JSON as the serializer
// does. On any error the serializer decodes the item, and its result or
// error is the one client-go's would be.
func (c *codec) cborListItem(b []byte) (runtime.Object, error) {
	if c.diet.DropManagedFields {
		b, _ = cborwire.DropManagedFields(b)
	}
	if c.cborDirect {
		obj := c.newItem()
		if direct.Unmarshal(b, obj) == nil && (c.diet.DropManagedFields || transcodeManagedFields(obj) == nil) {
			if c.diet.DropManagedFields {
				clearManagedFields(obj)
			}
			return c.diet.Apply(obj), nil
		}
	}
	var into runtime.Object = &unstructured.Unstructured{}
	if c.typed {
		into = c.newItem()
	}
	obj, _, err := c.cborItem.Decode(b, nil, into)
	switch {
	case err == nil && obj != into:
		return nil, fmt.Errorf("wire: a list item of kind %v", obj.GetObjectKind().GroupVersionKind())
	case err != nil && (c.typed || !(runtime.IsMissingKind(err) || runtime.IsMissingVersion(err))):
		return nil, err
	}
	// An unstructured item without kind or apiVersion is decoded all the
	// same; the list gives it its own (listBuilder.unstructuredList).
	if c.diet.DropManagedFields {
		clearManagedFields(into)
	}
	return c.diet.Apply(into), nil
}

// transcodeManagedFields rewrites the FieldsV1 of obj's managedFields, as
// decoded from CBOR, in JSON, as apimachinery's CBOR serializer does after
// decoding.
func transcodeManagedFields(obj runtime.Object) error {
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	for _, e := range a.GetManagedFields() { // entries share FieldsV1 pointers with obj
		if f := e.FieldsV1; f != nil && f.GetRawReader().Size() != 0 {
			j, err := f.MarshalJSON()
			if err != nil {
				return err
			}
			f.SetRawBytes(j)
		}
	}
	return nil
}

// transcodedIn reports whether values of type t can hold, other than in
// metav1.ObjectMeta, a value apimachinery's CBOR serializer transcodes
// after decoding (a runtime.RawExtension or a metav1.FieldsV1) or an
// interface (which could hold one). seen breaks cycles.
func transcodedIn(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t {
	case reflect.TypeFor[metav1.ObjectMeta]():
		return false // its managedFields: transcodeManagedFields
	case reflect.TypeFor[runtime.RawExtension](), reflect.TypeFor[metav1.FieldsV1]():
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return transcodedIn(t.Elem(), seen)
	case reflect.Map:
		return transcodedIn(t.Key(), seen) || transcodedIn(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if transcodedIn(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// codecFactory is the codec factory of typed resources: the scheme's, with
// CBOR.
func codecFactory(s *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(s, serializer.WithSerializer(cbor.NewSerializerInfo))
}

// unstructuredSerializer is the dynamic client's negotiated serializer
// (client-go/dynamic keeps its own unexported): JSON and CBOR (as the
// dynamic client has with client-go's ClientsAllowCBOR); kinds of metav1
// registered under "v1" (Status, WatchEvent, …) decode typed, everything
// else into Unstructured.
type unstructuredSerializer struct {
	scheme *runtime.Scheme
	infos  []runtime.SerializerInfo
}

func newUnstructuredSerializer() unstructuredSerializer {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return unstructuredSerializer{scheme: s, infos: []runtime.SerializerInfo{{
		MediaType:        runtime.ContentTypeJSON,
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       jsonSerializer(unstructuredCreater{s}, unstructuredTyper{s}),
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true,
			Serializer:    jsonSerializer(s, s),
			Framer:        jsonFramer,
		},
	}, {
		MediaType:        runtime.ContentTypeCBOR,
		MediaTypeType:    "application",
		MediaTypeSubType: "cbor",
		Serializer:       cbor.NewSerializer(unstructuredCreater{s}, unstructuredTyper{s}),
		StreamSerializer: &runtime.StreamSerializerInfo{
			Serializer: cbor.NewSerializer(s, s, cbor.Transcode(false)),
			Framer:     cbor.NewFramer(),
		},
	}}}
}

func (s unstructuredSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }
func (s unstructuredSerializer) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}
func (s unstructuredSerializer) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

type unstructuredCreater struct{ nested runtime.ObjectCreater }

func (c unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	if out, err := c.nested.New(kind); err == nil {
		return out, nil
	}
	out := &unstructured.Unstructured{}
	out.GetObjectKind().SetGroupVersionKind(kind)
	return out, nil
}

type unstructuredTyper struct{ nested runtime.ObjectTyper }

func (t unstructuredTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	kinds, unversioned, err := t.nested.ObjectKinds(obj)
	if err == nil {
		return kinds, unversioned, nil
	}
	if _, ok := obj.(runtime.Unstructured); ok && !obj.GetObjectKind().GroupVersionKind().Empty() {
		return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
	}
	return nil, false, err
}

func (t unstructuredTyper) Recognizes(schema.GroupVersionKind) bool { return true }

func jsonSerializer(c runtime.ObjectCreater, t runtime.ObjectTyper) runtime.Serializer {
	return jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, c, t, jsonserializer.SerializerOptions{})
}

var jsonFramer = jsonserializer.Framer
