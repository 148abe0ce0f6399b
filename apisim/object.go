package apisim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardinformer/shardinformer/shardselector"
)

// encoding indexes the encodings an object version keeps. Each is the
// bare message or JSON object without kind/apiVersion; views frame them.
type encoding uint8

const (
	encJSON         encoding = iota // the whole object, JSON
	encProtobuf                     // the whole object, protobuf message
	encMetaJSON                     // its PartialObjectMetadata, JSON
	encMetaProtobuf                 // its PartialObjectMetadata, protobuf message
	numEncodings
)

func (e encoding) contentType() contentType { return contentType(e % 2) }
func (e encoding) meta() bool               { return e >= encMetaJSON }

// object is one version of one object. Its identity and attributes never
// change after it is published; only its caches fill in (encodings) and
// its decoded form is released once a newer version supersedes it.
type object struct {
	res       *apiResource
	key       string // the tree key: res.prefix + "namespace/name"
	namespace string
	name      string
	rv        uint64
	rvString  string
	uid       types.UID
	uidHash   uint64 // shardselector.Hash(uid)
	created   metav1.Time
	labels    labels.Set // shared with the object's labels; read-only
	fields    []string   // values of res.fieldNames, in order

	// encodedOnly: drop the decoded form as soon as a whole-object encoding
	// exists (Config.EncodedOnly). Set before the object is published;
	// read-only afterwards.
	encodedOnly bool

	// dec is the decoded version. Read-only once published: it is shared by
	// every reader and never modified. The writer that supersedes this
	// version stores nil if an encoding of the whole object exists (see
	// release), so that history mostly holds byte slices, not
	// pointer-rich objects.
	dec atomic.Pointer[decodedObject]

	// encMu serializes filling enc, so each encoding is computed once even
	// when several watchers need it at the same moment.
	encMu sync.Mutex
	// enc[e] is encoding e, written once under encMu.
	enc [numEncodings]atomic.Pointer[[]byte]
}

// decodedObject boxes an Object for an atomic pointer.
type decodedObject struct{ obj Object }

// newObject wraps obj, which the store owns from now on and which its
// codec has normalized, as version rv of a res object.
func newObject(res *apiResource, obj Object, rv uint64) *object {
	o := &object{
		res:       res,
		key:       res.key(obj.GetNamespace(), obj.GetName()),
		namespace: obj.GetNamespace(),
		name:      obj.GetName(),
		rv:        rv,
		rvString:  strconv.FormatUint(rv, 10),
		uid:       obj.GetUID(),
		created:   obj.GetCreationTimestamp(),
		labels:    labels.Set(obj.GetLabels()),
	}
	o.uidHash = shardselector.Hash(string(o.uid))
	if res.fieldValues != nil {
		o.fields = res.fieldValues(obj)
	}
	obj.SetResourceVersion(o.rvString)
	o.dec.Store(&decodedObject{obj})
	return o
}

// objectFields is an object's selectable fields, for field selectors.
type objectFields struct{ o *object }

func (f objectFields) Has(field string) bool {
	_, ok := f.lookup(field)
	return ok
}

func (f objectFields) Get(field string) string {
	v, _ := f.lookup(field)
	return v
}

func (f objectFields) lookup(field string) (string, bool) {
	switch field {
	case "metadata.name":
		return f.o.name, true
	case "metadata.namespace":
		return f.o.namespace, true
	}
	for i, n := range f.o.res.fieldNames {
		if n == field {
			return f.o.fields[i], true
		}
	}
	return "", false
}

// restamped returns a version of o carrying resourceVersion rv, as the API
// server reports the final state of a deleted object (or of one that left
// a watcher's selector) with the event's resourceVersion.
func (o *object) restamped(rv uint64) *object {
	n := newObject(o.res, o.res.codec.shallowCopy(o.decoded()), rv)
	n.encodedOnly = o.encodedOnly
	return n
}

// decoded returns the object of this version, decoding it from one of its
// encodings if the decoded form has been released. The result is shared
// and read-only.
func (o *object) decoded() Object {
	if d := o.dec.Load(); d != nil {
		return d.obj
	}
	var (
		obj Object
		err error
	)
	if b := o.enc[encProtobuf].Load(); b != nil {
		obj, err = o.res.codec.decode(*b, ctProtobuf)
	} else if b := o.enc[encJSON].Load(); b != nil {
		obj, err = o.res.codec.decode(*b, ctJSON)
	} else {
		err = fmt.Errorf("released without an encoding")
	}
	if err != nil {
		panic(fmt.Sprintf("apisim: stored encoding of %s@%d does not decode: %v", o.key, o.rv, err))
	}
	return obj
}

// mutable returns a private copy of the object of this version, for a
// writer to modify: a deep copy of the decoded form, or a fresh decode if
// it has been released.
func (o *object) mutable() Object {
	if d := o.dec.Load(); d != nil {
		return o.res.codec.deepCopy(d.obj)
	}
	return o.decoded() // decoded afresh: already private
}

// release drops the decoded form of a superseded version if an encoding of
// the whole object can stand in for it; otherwise the version keeps it
// (writers never pay for an encoding nobody asked for). Called by the
// superseding writer.
func (o *object) release() {
	// No lock: an encoder that loads nil decodes from the encoding that
	// allowed the release; encodings are never removed.
	if o.enc[encProtobuf].Load() != nil || o.enc[encJSON].Load() != nil {
		o.dec.Store(nil)
	}
}

// encoded returns o's encoding e, computing it on first use. The result is
// shared and read-only.
func (o *object) encoded(e encoding) []byte {
	if b := o.enc[e].Load(); b != nil {
		return *b
	}
	o.encMu.Lock()
	defer o.encMu.Unlock()
	if b := o.enc[e].Load(); b != nil {
		return *b
	}
	b, err := o.encodeLocked(e)
	if err != nil {
		panic(fmt.Sprintf("apisim: encode %s@%d: %v", o.key, o.rv, err))
	}
	o.enc[e].Store(&b)
	if o.encodedOnly && !e.meta() {
		o.dec.Store(nil) // decoded() decodes from b from now on; see release
	}
	return b
}

// encodeLocked computes encoding e. REQUIRES: o.encMu held.
func (o *object) encodeLocked(e encoding) ([]byte, error) {
	ct := e.contentType()
	if !e.meta() {
		return o.res.codec.encode(o.decoded(), ct)
	}
	if ct == ctProtobuf {
		if b := o.enc[encProtobuf].Load(); b != nil {
			// PartialObjectMetadata{metadata = 1} is, byte for byte, the
			// object message's own field 1.
			if field, ok := o.res.codec.protobufMeta(*b); ok {
				return field, nil
			}
		}
		return o.metadata().Marshal()
	}
	return json.Marshal(o.metadata())
}

// metadata returns the PartialObjectMetadata of this version, read from the
// protobuf encoding's metadata field if the decoded form is released.
func (o *object) metadata() *metav1.PartialObjectMetadata {
	if d := o.dec.Load(); d != nil {
		return partialMetadata(d.obj)
	}
	if b := o.enc[encProtobuf].Load(); b != nil {
		if field, ok := o.res.codec.protobufMeta(*b); ok {
			pom := &metav1.PartialObjectMetadata{}
			if err := pom.Unmarshal(field); err == nil {
				return pom
			}
		}
	}
	return partialMetadata(o.decoded())
}
