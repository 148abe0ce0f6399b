package apisim

import (
	"github.com/shardinformer/shardinformer/internal/delta"

	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// codec converts one resource's objects to and from their stored
// encodings, which carry no kind or apiVersion (views add them).
// Implementations are stateless and safe for concurrent use.
type codec interface {
	// empty returns a new object of the kind with nothing set.
	empty() Object
	deepCopy(Object) Object
	// shallowCopy returns a copy that shares everything with the original
	// except the ObjectMeta fields a store stamps (resourceVersion).
	shallowCopy(Object) Object
	// normalize prepares an object the store takes over: typed objects
	// drop their TypeMeta; custom resources must name their own kind and
	// apiVersion (or none, which are then set).
	normalize(Object) error
	// encode appends the encoding of an object to dst.
	encode(dst []byte, o Object, ct contentType) ([]byte, error)
	decode([]byte, contentType) (Object, error)
	// protobufMeta returns the ObjectMeta field of a protobuf encoding
	// (field 1 of every Kubernetes object message) without decoding the
	// rest; ok is false if the codec has no protobuf form.
	protobufMeta(b []byte) (field []byte, ok bool)
}

// protoObject is a generated Kubernetes type with its protobuf methods.
type protoObject interface {
	Object
	Marshal() ([]byte, error)
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
	Size() int
}

// typedCodec handles a built-in type X through its generated protobuf
// methods and client-go's JSON serializer.
type typedCodec[X any, P interface {
	*X
	protoObject
}] struct{}

func typed[X any, P interface {
	*X
	protoObject
}]() codec {
	return typedCodec[X, P]{}
}

func (typedCodec[X, P]) empty() Object            { return P(new(X)) }
func (typedCodec[X, P]) deepCopy(o Object) Object { return o.DeepCopyObject().(Object) }
func (typedCodec[X, P]) shallowCopy(o Object) Object {
	cp := *o.(P)
	return P(&cp)
}

func (typedCodec[X, P]) normalize(o Object) error {
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return nil
}

func (typedCodec[X, P]) encode(dst []byte, o Object, ct contentType) ([]byte, error) {
	if ct == ctProtobuf {
		n := o.(P).Size()
		out := delta.Grow(dst, n)[:len(dst)+n]
		if _, err := o.(P).MarshalToSizedBuffer(out[len(dst):]); err != nil {
			return dst, err
		}
		return out, nil
	}
	if !o.GetObjectKind().GroupVersionKind().Empty() {
		return nil, errors.New("stored object carries TypeMeta")
	}
	buf := bytes.NewBuffer(dst)
	buf.Grow(2 * o.(P).Size()) // JSON is about twice the protobuf size
	if err := jsonSerializer.Encode(o, buf); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), newline), nil
}

func (typedCodec[X, P]) decode(b []byte, ct contentType) (Object, error) {
	p := P(new(X))
	if ct == ctProtobuf {
		return p, p.Unmarshal(b)
	}
	if _, _, err := jsonSerializer.Decode(b, nil, p); err != nil {
		return nil, err
	}
	p.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return p, nil
}

func (typedCodec[X, P]) protobufMeta(b []byte) ([]byte, bool) {
	if len(b) == 0 || b[0] != 1<<3|2 { // field 1, length-delimited
		return nil, false
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return nil, false
	}
	return b[:1+k+int(n)], true
}

// unstructuredCodec handles a custom resource of kind gvk as JSON.
type unstructuredCodec struct {
	gvk schema.GroupVersionKind
}

func (c unstructuredCodec) empty() Object {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(c.gvk)
	return u
}

func (unstructuredCodec) deepCopy(o Object) Object { return o.(*unstructured.Unstructured).DeepCopy() }

func (unstructuredCodec) shallowCopy(o Object) Object {
	m := maps.Clone(o.(*unstructured.Unstructured).Object)
	if md, ok := m["metadata"].(map[string]any); ok {
		m["metadata"] = maps.Clone(md)
	}
	return &unstructured.Unstructured{Object: m}
}

func (c unstructuredCodec) normalize(o Object) error {
	u := o.(*unstructured.Unstructured)
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	if gvk := u.GroupVersionKind(); !gvk.Empty() && gvk != c.gvk {
		return fmt.Errorf("the object's kind %q does not match the resource's %q", gvk, c.gvk)
	}
	u.SetGroupVersionKind(c.gvk)
	return nil
}

func (unstructuredCodec) encode(dst []byte, o Object, ct contentType) ([]byte, error) {
	if ct != ctJSON {
		return nil, errors.New("custom resources have no protobuf encoding")
	}
	m := maps.Clone(o.(*unstructured.Unstructured).Object)
	delete(m, "apiVersion")
	delete(m, "kind")
	b, err := json.Marshal(m)
	return append(dst, b...), err
}

func (c unstructuredCodec) decode(b []byte, ct contentType) (Object, error) {
	if ct != ctJSON {
		return nil, errors.New("custom resources have no protobuf encoding")
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(c.gvk)
	return u, nil
}

func (unstructuredCodec) protobufMeta([]byte) ([]byte, bool) { return nil, false }

// partialMetadata returns the PartialObjectMetadata of o as the API server
// builds it, without TypeMeta.
func partialMetadata(o Object) *metav1.PartialObjectMetadata {
	var m metav1.Object = o
	if a, ok := o.(metav1.ObjectMetaAccessor); ok {
		m = a.GetObjectMeta() // the *ObjectMeta itself: copied, not rebuilt field by field
	}
	return meta.AsPartialObjectMetadata(m)
}
