package apisim

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
	namespace string // part of key
	name      string // part of key
	rv        uint64
	uid       types.UID
	uidHash   uint64 // shardselector.Hash(uid)
	created   metav1.Time
	labels    labels.Set // shared with the object's labels, or interned; read-only
	fields    string     // values of res.fieldNames, in order, packed (packFields)

	// tmpl, set with Config.EncodedOnly (res.shared), is the template whose
	// references this version's encodings are deltas against; the decoded
	// form is then dropped as soon as a whole-object encoding exists.
	// Read-only.
	tmpl *template

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
	enc [numEncodings]atomic.Pointer[blob]
}

// decodedObject boxes an Object for an atomic pointer.
type decodedObject struct{ obj Object }

// newObject wraps obj, which the store owns from now on and which its
// codec has normalized, as version rv of a res object.
func newObject(res *apiResource, obj Object, rv uint64) *object {
	ns, name, uid := obj.GetNamespace(), obj.GetName(), string(obj.GetUID())
	var fields []string
	if res.fieldValues != nil {
		fields = res.fieldValues(obj)
	}
	// key, uid and the packed fields share one allocation.
	var b strings.Builder
	b.Grow(len(res.prefix) + len(ns) + 1 + len(name) + len(uid) + packedLen(fields))
	b.WriteString(res.prefix)
	b.WriteString(ns)
	b.WriteByte('/')
	b.WriteString(name)
	keyEnd := b.Len()
	b.WriteString(uid)
	uidEnd := b.Len()
	packFields(&b, fields)
	all := b.String()
	p := len(res.prefix)
	o := &object{
		res:       res,
		key:       all[:keyEnd],
		namespace: all[p : p+len(ns)],
		name:      all[p+len(ns)+1 : keyEnd],
		rv:        rv,
		uid:       types.UID(all[keyEnd:uidEnd]),
		created:   obj.GetCreationTimestamp(),
		fields:    all[uidEnd:],
	}
	o.uidHash = shardselector.Hash(string(o.uid))
	if sp := res.shared; sp != nil {
		o.tmpl = sp.template(ns, obj.GetGenerateName())
		o.labels = sp.labelSet(obj.GetLabels())
	} else {
		o.labels = labels.Set(obj.GetLabels())
	}
	obj.SetResourceVersion(strconv.FormatUint(rv, 10))
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
	p := f.o.fields
	for _, n := range f.o.res.fieldNames {
		l, k := binary.Uvarint([]byte(p[:min(len(p), binary.MaxVarintLen64)]))
		v := p[k : k+int(l)]
		if n == field {
			return v, true
		}
		p = p[k+int(l):]
	}
	return "", false
}

// packFields writes field values packed, each preceded by its length
// (uvarint): one string instead of a slice and a string per value.
func packFields(b *strings.Builder, vs []string) {
	var n [binary.MaxVarintLen64]byte
	for _, v := range vs {
		b.Write(binary.AppendUvarint(n[:0], uint64(len(v))))
		b.WriteString(v)
	}
}

func packedLen(vs []string) int {
	n := 0
	for _, v := range vs {
		n += uvarintLen(uint64(len(v))) + len(v)
	}
	return n
}

// restamped returns a version of o carrying resourceVersion rv, as the API
// server reports the final state of a deleted object (or of one that left
// a watcher's selector) with the event's resourceVersion.
func (o *object) restamped(rv uint64) *object {
	return newObject(o.res, o.res.codec.shallowCopy(o.decoded()), rv)
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
		obj, err = o.res.codec.decode(b.bytes(), ctProtobuf)
	} else if b := o.enc[encJSON].Load(); b != nil {
		obj, err = o.res.codec.decode(b.bytes(), ctJSON)
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

// stored returns o's stored encoding e, computing it on first use.
func (o *object) stored(e encoding) *blob {
	if b := o.enc[e].Load(); b != nil {
		return b
	}
	o.encMu.Lock()
	defer o.encMu.Unlock()
	if b := o.enc[e].Load(); b != nil {
		return b
	}
	var bp *[]byte // compact versions: a pooled buffer to encode into before packing
	var buf []byte
	if o.tmpl != nil {
		bp = scratchPool.Get().(*[]byte)
		buf = *bp
	}
	raw, buf, err := o.encodeLocked(e, buf)
	if err != nil {
		panic(fmt.Sprintf("apisim: encode %s@%d: %v", o.key, o.rv, err))
	}
	b := &blob{data: raw}
	if o.tmpl != nil {
		b = o.tmpl.pack(e, raw) // copies what it keeps
		*bp = buf[:0]
		scratchPool.Put(bp)
	}
	o.enc[e].Store(b)
	if o.tmpl != nil && !e.meta() {
		o.dec.Store(nil) // decoded() decodes from b from now on; see release
	}
	return b
}

// encoded returns o's encoding e, computing it on first use: the stored
// bytes (shared, read-only) or, for a delta, a fresh copy.
func (o *object) encoded(e encoding) []byte { return o.stored(e).bytes() }

// settle encodes a compact version (Config.EncodedOnly) in its resource's
// primary encoding, which drops its decoded form, so that a store written
// faster than it is read never holds decoded objects. Called by writers
// after publishing, outside store.mu.
func (o *object) settle() {
	if o.tmpl != nil {
		o.stored(o.res.primary)
	}
}

// scratchPool holds buffers compact versions are encoded into before
// packing.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// encodeLocked computes encoding e, in buf if it can (buf's bytes are
// overwritten), and returns it with buf, grown, for reuse. The encoding may
// be buf's bytes, a stored encoding's or fresh ones: the caller stores it
// or copies it before reusing buf. REQUIRES: o.encMu held.
func (o *object) encodeLocked(e encoding, buf []byte) (enc, newBuf []byte, err error) {
	ct := e.contentType()
	if !e.meta() {
		enc, err = o.res.codec.encode(buf[:0], o.decoded(), ct)
		return enc, enc, err
	}
	if ct == ctProtobuf {
		if b := o.enc[encProtobuf].Load(); b != nil {
			// PartialObjectMetadata{metadata = 1} is, byte for byte, the
			// object message's own field 1.
			var whole []byte
			whole, buf = b.read(buf)
			if field, ok := o.res.codec.protobufMeta(whole); ok {
				return field, buf, nil
			}
		}
		enc, err = o.metadata().Marshal()
		return enc, buf, err
	}
	enc, err = json.Marshal(o.metadata())
	return enc, buf, err
}

// metadata returns the PartialObjectMetadata of this version, read from the
// protobuf encoding's metadata field if the decoded form is released.
func (o *object) metadata() *metav1.PartialObjectMetadata {
	if d := o.dec.Load(); d != nil {
		return partialMetadata(d.obj)
	}
	if b := o.enc[encProtobuf].Load(); b != nil {
		if field, ok := o.res.codec.protobufMeta(b.bytes()); ok {
			pom := &metav1.PartialObjectMetadata{}
			if err := pom.Unmarshal(field); err == nil {
				return pom
			}
		}
	}
	return partialMetadata(o.decoded())
}
