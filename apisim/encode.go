package apisim

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// contentType indexes the encodings the server speaks.
type contentType int

const (
	ctJSON contentType = iota
	ctProtobuf
)

// Media types, as the API server names them.
const (
	ContentTypeJSON     = k8sruntime.ContentTypeJSON     // "application/json"
	ContentTypeProtobuf = k8sruntime.ContentTypeProtobuf // "application/vnd.kubernetes.protobuf"
)

func (ct contentType) mediaType() string {
	if ct == ctProtobuf {
		return ContentTypeProtobuf
	}
	return ContentTypeJSON
}

// watchMediaType is the Content-Type of a watch response: the API server
// marks protobuf streams with stream=watch and leaves JSON plain.
func (ct contentType) watchMediaType() string {
	if ct == ctProtobuf {
		return ContentTypeProtobuf + ";stream=watch"
	}
	return ContentTypeJSON
}

var (
	jsonSerializer  = serializerFor(ContentTypeJSON)
	protoSerializer = serializerFor(ContentTypeProtobuf)
)

func serializerFor(mediaType string) k8sruntime.Serializer {
	info, ok := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		panic("apisim: client-go scheme has no serializer for " + mediaType)
	}
	return info.Serializer
}

// encodeObject encodes a complete API object (with kind/apiVersion, and for
// protobuf the "k8s\x00" envelope) with client-go's serializers.
func encodeObject(obj k8sruntime.Object, ct contentType) []byte {
	var buf bytes.Buffer
	s := jsonSerializer
	if ct == ctProtobuf {
		s = protoSerializer
	}
	if err := s.Encode(obj, &buf); err != nil {
		panic(fmt.Sprintf("apisim: encode %T: %v", obj, err))
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Protobuf wire format pieces (see k8s.io/apimachinery/pkg/runtime/types.proto:
// Unknown{typeMeta=1, raw=2, contentEncoding=3, contentType=4},
// TypeMeta{apiVersion=1, kind=2}; meta/v1 WatchEvent{type=1, object=2},
// RawExtension{raw=1}; lists: {metadata=1, items=2}, except meta/v1beta1
// PartialObjectMetadataList {items=1, metadata=2}).
var (
	protoMagic       = []byte{'k', '8', 's', 0}
	protoUnknownTail = []byte{0x1a, 0x00, 0x22, 0x00} // empty contentEncoding, contentType
	jsonEventTail    = []byte("}\n")
	jsonListTail     = []byte("]}\n")
	jsonItemsStart   = []byte(`,"items":[`)
	newline          = []byte("\n")
	comma            = []byte(",")
	closeBrace       = []byte("}")
)

func protoTypeMeta(apiVersion, kind string) []byte {
	var tm []byte
	tm = protoBytesField(tm, 1, []byte(apiVersion))
	tm = protoBytesField(tm, 2, []byte(kind))
	return protoBytesField(nil, 1, tm) // Unknown.typeMeta
}

func protoTag(b []byte, field int) []byte { return append(b, byte(field<<3|2)) }

func protoBytesField(b []byte, field int, v []byte) []byte {
	b = protoTag(b, field)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// lenField is the size of a length-delimited field holding n bytes.
func lenField(n int) int { return 1 + uvarintLen(uint64(n)) + n }

// frameWriter writes watch events, list bodies and objects of one view in
// one content type to a buffered stream. Owned by one request goroutine.
type frameWriter struct {
	ct  contentType
	v   *view
	w   io.Writer
	hdr []byte // scratch
}

// writeJSON writes a stored JSON encoding body with prefix in place of its
// leading '{' (the kind and apiVersion the encoding lacks).
func (f *frameWriter) writeJSON(prefix, body []byte) error {
	if len(body) == 2 { // "{}": no field follows the prefix's comma
		prefix, body = prefix[:len(prefix)-1], closeBrace
	} else {
		body = body[1:]
	}
	if _, err := f.w.Write(prefix); err != nil {
		return err
	}
	_, err := f.w.Write(body)
	return err
}

// envelopeLen is the size of a protobuf envelope holding a body of n bytes.
func (f *frameWriter) envelopeLen(n int) int {
	return len(protoMagic) + len(f.v.objProto) + lenField(n) + len(protoUnknownTail)
}

// writeEvent writes one watch event whose object is the stored encoding
// body (f.v.encoding(f.ct)).
func (f *frameWriter) writeEvent(typ string, body []byte) error {
	h := f.hdr[:0]
	if f.ct == ctJSON {
		h = append(h, `{"type":"`...)
		h = append(h, typ...)
		h = append(h, `","object":`...)
		f.hdr = h
		if _, err := f.w.Write(h); err != nil {
			return err
		}
		if err := f.writeJSON(f.v.objJSON, body); err != nil {
			return err
		}
		_, err := f.w.Write(jsonEventTail)
		return err
	}
	env := f.envelopeLen(len(body))
	raw := lenField(env)                     // RawExtension{raw}
	ev := lenField(len(typ)) + lenField(raw) // WatchEvent{type, object}
	h = binary.BigEndian.AppendUint32(h, uint32(ev))
	h = protoBytesField(h, 1, []byte(typ))
	h = protoTag(h, 2)
	h = binary.AppendUvarint(h, uint64(raw))
	h = protoTag(h, 1)
	h = binary.AppendUvarint(h, uint64(env))
	h = append(h, protoMagic...)
	h = append(h, f.v.objProto...)
	h = protoTag(h, 2)
	h = binary.AppendUvarint(h, uint64(len(body)))
	return f.writeEnveloped(h, body)
}

// writeRawEvent writes one watch event whose object is a complete encoded
// object (encodeObject).
func (f *frameWriter) writeRawEvent(typ string, obj []byte) error {
	if f.ct == ctJSON {
		h := append(f.hdr[:0], `{"type":"`...)
		h = append(h, typ...)
		h = append(h, `","object":`...)
		h = append(h, obj...)
		h = append(h, "}\n"...)
		f.hdr = h
		_, err := f.w.Write(h)
		return err
	}
	raw := lenField(len(obj))
	ev := lenField(len(typ)) + lenField(raw)
	h := binary.BigEndian.AppendUint32(f.hdr[:0], uint32(ev))
	h = protoBytesField(h, 1, []byte(typ))
	h = protoTag(h, 2)
	h = binary.AppendUvarint(h, uint64(raw))
	h = protoBytesField(h, 1, obj)
	f.hdr = h
	_, err := f.w.Write(h)
	return err
}

// writeEnveloped writes a protobuf header h (kept for reuse), the object
// bytes and the runtime.Unknown tail that closes the envelope.
func (f *frameWriter) writeEnveloped(h, body []byte) error {
	f.hdr = h
	if _, err := f.w.Write(h); err != nil {
		return err
	}
	if _, err := f.w.Write(body); err != nil {
		return err
	}
	_, err := f.w.Write(protoUnknownTail)
	return err
}

// writeObject writes one object as a complete response (GET).
func (f *frameWriter) writeObject(body []byte) error {
	if f.ct == ctJSON {
		if err := f.writeJSON(f.v.objJSON, body); err != nil {
			return err
		}
		_, err := f.w.Write(newline)
		return err
	}
	h := append(f.hdr[:0], protoMagic...)
	h = append(h, f.v.objProto...)
	h = protoTag(h, 2)
	h = binary.AppendUvarint(h, uint64(len(body)))
	return f.writeEnveloped(h, body)
}

// writeList writes a list holding items, whose encodings for f.v and f.ct
// enc returns (called in order, once per item; a result need stay valid
// only until the next call). For protobuf every item must already be
// encoded (its size goes into the header).
func (f *frameWriter) writeList(meta metav1.ListMeta, items []*object, enc func(i int) []byte) error {
	if f.ct == ctJSON {
		m, err := json.Marshal(&meta)
		if err != nil {
			return err
		}
		h := append(f.hdr[:0], f.v.listJSON...)
		h = append(h, m...)
		h = append(h, jsonItemsStart...)
		f.hdr = h
		if _, err := f.w.Write(h); err != nil {
			return err
		}
		for i := range items {
			if i > 0 {
				if _, err := f.w.Write(comma); err != nil {
					return err
				}
			}
			b := enc(i)
			if f.v.itemJSON != nil {
				err = f.writeJSON(f.v.itemJSON, b)
			} else {
				_, err = f.w.Write(b)
			}
			if err != nil {
				return err
			}
		}
		_, err = f.w.Write(jsonListTail)
		return err
	}
	lm, err := meta.Marshal()
	if err != nil {
		return err
	}
	slot := f.v.encoding(ctProtobuf)
	body := lenField(len(lm))
	for _, o := range items {
		body += lenField(o.enc[slot].Load().len())
	}
	h := append(f.hdr[:0], protoMagic...)
	h = append(h, f.v.listProto...)
	h = protoTag(h, 2)
	h = binary.AppendUvarint(h, uint64(body))
	h = protoBytesField(h, f.v.listMetaField, lm)
	if _, err := f.w.Write(h); err != nil {
		return err
	}
	for i := range items {
		b := enc(i)
		h = protoTag(h[:0], f.v.listItemsField)
		h = binary.AppendUvarint(h, uint64(len(b)))
		if _, err := f.w.Write(h); err != nil {
			return err
		}
		if _, err := f.w.Write(b); err != nil {
			return err
		}
	}
	f.hdr = h
	_, err = f.w.Write(protoUnknownTail)
	return err
}

// bookmarkBody encodes the object of a BOOKMARK event for view v: an empty
// object of res (or PartialObjectMetadata) carrying only rv and, at the end
// of a WatchList's initial events, the initial-events-end annotation.
func bookmarkBody(res *apiResource, v *view, ct contentType, rv uint64, initialEnd bool) ([]byte, error) {
	om := metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(rv, 10)}
	if initialEnd {
		om.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	if v.meta {
		pom := &metav1.PartialObjectMetadata{ObjectMeta: om}
		if ct == ctProtobuf {
			return pom.Marshal()
		}
		return json.Marshal(pom)
	}
	obj := res.codec.empty()
	if err := res.codec.normalize(obj); err != nil {
		return nil, err
	}
	obj.SetResourceVersion(om.ResourceVersion)
	obj.SetAnnotations(om.Annotations)
	return res.codec.encode(nil, obj, ct)
}

// encodeAhead makes sure every item has encoding enc, in parallel on all
// cores, and hands them out in order. Items already encoded cost nothing.
// The helper goroutines are owned by the caller's request and exit before
// stop returns.
type encodeAhead struct {
	items  []*object
	enc    encoding
	buf    []byte // at's: a delta's encoding is decoded into it
	chunks []chan struct{}
	next   atomic.Int64
	quit   atomic.Bool
	wg     sync.WaitGroup
}

const encodeChunk = 64

// newEncodeAhead starts encoding items. Call at(i) for i in order, then stop.
func newEncodeAhead(items []*object, enc encoding) *encodeAhead {
	e := &encodeAhead{items: items, enc: enc}
	missing := 0
	for _, o := range items {
		if o.enc[enc].Load() == nil {
			missing++
		}
	}
	if missing < 2*encodeChunk {
		return e // encode inline in at()
	}
	n := (len(items) + encodeChunk - 1) / encodeChunk
	e.chunks = make([]chan struct{}, n)
	for i := range e.chunks {
		e.chunks[i] = make(chan struct{})
	}
	workers := runtime.GOMAXPROCS(0)
	e.wg.Add(workers)
	for range workers {
		go e.work() // goroutine: encode worker, owned by the request via stop()
	}
	return e
}

func (e *encodeAhead) work() {
	defer e.wg.Done()
	for !e.quit.Load() {
		c := int(e.next.Add(1) - 1)
		if c >= len(e.chunks) {
			return
		}
		end := min((c+1)*encodeChunk, len(e.items))
		for _, o := range e.items[c*encodeChunk : end] {
			o.stored(e.enc)
		}
		close(e.chunks[c])
	}
}

// at returns the encoding of items[i], waiting for the workers if needed.
// The result is valid until the next call of at.
func (e *encodeAhead) at(i int) []byte {
	if e.chunks != nil {
		<-e.chunks[i/encodeChunk]
	}
	var b []byte
	b, e.buf = e.items[i].stored(e.enc).read(e.buf)
	return b
}

// all waits until every item is encoded.
func (e *encodeAhead) all() {
	for _, c := range e.chunks {
		<-c
	}
	for _, o := range e.items {
		o.stored(e.enc)
	}
}

// stop ends the workers and waits for them.
func (e *encodeAhead) stop() {
	e.quit.Store(true)
	e.wg.Wait()
}
