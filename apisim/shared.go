package apisim

import (
	"github.com/shardinformer/shardinformer/internal/delta"

	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
)

// sharedParts is what the compact versions of one resource's objects share
// (Config.EncodedOnly): the reference encodings their deltas are taken
// against, one per template and encoding, and interned label sets and
// field values. Safe for concurrent use; its tables only grow (by the
// distinct templates, label sets and field values ever stored), which suits
// a simulator's workloads of replicas of a few templates.
type sharedParts struct {
	mu struct {
		sync.Mutex
		templates map[string]*template
		labels    map[string]labels.Set
		strs      map[string]string
	}
}

func newSharedParts() *sharedParts {
	sp := &sharedParts{}
	sp.mu.templates = map[string]*template{}
	sp.mu.labels = map[string]labels.Set{}
	sp.mu.strs = map[string]string{}
	return sp
}

// template is a group of objects whose encodings are stored as deltas
// against one reference per encoding: the objects of a namespace with one
// generateName — the pods of one ReplicaSet, which differ only where
// replicas differ. The first object of the group encoded in an encoding
// becomes its reference. Safe for concurrent use.
type template struct {
	refs [numEncodings]atomic.Pointer[delta.Ref]
}

// template returns the template of the objects in namespace with
// generateName.
func (sp *sharedParts) template(namespace, generateName string) *template {
	key := namespace + "/" + generateName
	sp.mu.Lock()
	defer sp.mu.Unlock()
	t, ok := sp.mu.templates[key]
	if !ok {
		t = &template{}
		sp.mu.templates[key] = t
	}
	return t
}

// labelSet returns a read-only label set equal to m, shared with every
// other object with the same labels.
func (sp *sharedParts) labelSet(m map[string]string) labels.Set {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	size := 0
	for k, v := range m {
		keys = append(keys, k)
		size += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, size+2*len(m))
	for _, k := range keys { // length-prefixed: no two sets share a key
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(m[k])))
		b = append(b, m[k]...)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if s, ok := sp.mu.labels[string(b)]; ok {
		return s
	}
	s := make(labels.Set, len(m))
	for k, v := range m {
		s[sp.strLocked(k)] = sp.strLocked(v)
	}
	sp.mu.labels[string(b)] = s
	return s
}

// strLocked interns s. REQUIRES: sp.mu held.
func (sp *sharedParts) strLocked(s string) string {
	if t, ok := sp.mu.strs[s]; ok {
		return t
	}
	sp.mu.strs[s] = s
	return s
}

// pack stores raw, a fresh encoding e of an object of t that the caller
// no longer uses, as a delta against t's reference for e, making raw the
// reference if t has none. An encoding no delta makes smaller is stored
// whole.
func (t *template) pack(e encoding, raw []byte) *blob {
	r := t.refs[e].Load()
	if r == nil {
		r = delta.NewRef(bytes.Clone(raw))
		if !t.refs[e].CompareAndSwap(nil, r) {
			r = t.refs[e].Load()
		}
	}
	bp := scratchPool.Get().(*[]byte)
	d := r.Encode((*bp)[:0], raw)
	defer func() {
		*bp = d[:0]
		scratchPool.Put(bp)
	}()
	if len(d) >= len(raw) {
		return &blob{data: bytes.Clone(raw)}
	}
	return &blob{ref: r, data: bytes.Clone(d)}
}

// blob is one stored encoding of an object version: the bytes themselves,
// or (ref != nil) a delta against a reference encoding. Immutable.
type blob struct {
	ref  *delta.Ref
	data []byte
}

// len returns the length of the encoding.
func (b *blob) len() int {
	if b.ref == nil {
		return len(b.data)
	}
	return delta.Len(b.data)
}

// bytes returns the encoding: b's own bytes (shared, read-only) when stored
// whole, else a fresh copy.
func (b *blob) bytes() []byte {
	enc, _ := b.read(nil)
	return enc
}

// read returns the encoding: b's own bytes (shared, read-only) when stored
// whole, else the encoding decoded into buf, grown as needed; buf is
// returned for reuse, and the encoding is valid until buf is reused.
func (b *blob) read(buf []byte) (enc, newBuf []byte) {
	if b.ref == nil {
		return b.data, buf
	}
	out, err := b.ref.Decode(buf[:0], b.data)
	if err != nil {
		panic("apisim: a stored delta does not decode: " + err.Error())
	}
	return out, out
}
