package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	kjson "sigs.k8s.io/json"

	"github.com/shardinformer/shardinformer/wire/internal/cborwire"
	"github.com/shardinformer/shardinformer/wire/internal/jsonwire"
	"github.com/shardinformer/shardinformer/wire/internal/ordered"
	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// ListWithContext implements cache.ListerWithContext: one LIST request (one
// page; the reflector's pager asks for the next), its body decoded while it
// streams in. It returns the resource's typed list (*corev1.PodList for
// pods) or an *unstructured.UnstructuredList, with the items in the server's
// order, or the error client-go's typed client would return: a
// *errors.StatusError for an API error (410 Expired, 429, 5xx, …), the
// transport's error otherwise.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	req, timeout := lw.request(opts, false)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return lw.decodeList(body)
}

// decodeList decodes a list body.
func (lw *ListerWatcher) decodeList(body io.Reader) (runtime.Object, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	head, err := br.Peek(len(pbwire.Magic))
	if len(head) == 0 {
		if err == io.EOF {
			return nil, errors.New("wire: 0-length list response")
		}
		return nil, err
	}
	f := formatJSON
	switch {
	case bytes.HasPrefix(head, []byte(pbwire.Magic)):
		if !lw.codec.protobuf {
			return nil, fmt.Errorf("wire: protobuf list response for %v, which has no protobuf encoding", lw.res.GVR)
		}
		f = formatProtobuf
	case !lw.codec.metadata && (bytes.HasPrefix(head, cborwire.SelfDescribed) || (lw.cborRequested() && head[0] != '{')):
		// The API server starts CBOR with the self-described tag and JSON
		// with '{'; asked for CBOR, it answers one of the two. (The
		// metadata client has no CBOR: its bodies are protobuf or JSON.)
		f = formatCBOR
	}
	b := lw.newListBuilder(f)
	defer b.stop()
	switch f {
	case formatProtobuf:
		err = pbwire.ReadList(br, lw.cfg.maxFrameSize, (*protoListHandler)(b))
		var nc *pbwire.NotCanonicalError
		if errors.As(err, &nc) {
			return lw.referenceList(formatProtobuf, io.MultiReader(bytes.NewReader(nc.Prefix), br))
		}
	case formatCBOR:
		err = cborwire.ReadList(br, lw.cfg.maxFrameSize, (*cborListHandler)(b))
		var nc *cborwire.NotCanonicalError
		if errors.As(err, &nc) {
			return lw.referenceList(formatCBOR, nc.Body)
		}
	default:
		err = jsonwire.ReadList(jsonwire.NewScanner(br, lw.cfg.maxFrameSize), (*jsonListHandler)(b))
		var nc *jsonwire.NotCanonicalError
		if errors.As(err, &nc) {
			return lw.referenceList(formatJSON, nc.Body)
		}
	}
	if err != nil {
		b.stop()
		if derr := b.decodeErr(); derr != nil {
			return nil, derr
		}
		return nil, fmt.Errorf("wire: reading %s list: %w", b.format.mediaType(), err)
	}
	return b.finish()
}

// referenceList decodes a whole list body with client-go's decoder, as
// rest.Result.Into does: a Status other than Success is its error. A
// metadata-only list is decoded as the metadata client's List decodes it
// (metadataList).
func (lw *ListerWatcher) referenceList(f format, body io.Reader) (runtime.Object, error) {
	data, err := io.ReadAll(body) // only for lists not in the form the API server writes
	if err != nil {
		return nil, err
	}
	var into runtime.Object = &unstructured.UnstructuredList{}
	switch {
	case lw.codec.metadata:
		if into, err = lw.metadataList(f, data); err != nil {
			return nil, err
		}
	default:
		if lw.codec.typed {
			into = reflect.New(lw.listType).Interface().(runtime.Object)
		}
		out, _, err := lw.codec.reference[f].object.Decode(data, nil, into)
		if err != nil {
			return nil, err
		}
		if out != into {
			if s, ok := out.(*metav1.Status); ok && s.Status != metav1.StatusSuccess {
				return nil, apierrors.FromObject(s)
			}
		}
	}
	d := lw.codec.diet
	if d.On() {
		forEachItem(into, func(obj runtime.Object) {
			if d.DropManagedFields {
				clearManagedFields(obj)
			}
			d.Apply(obj)
		})
	}
	return into, nil
}

func forEachItem(list runtime.Object, fn func(runtime.Object)) {
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		for i := range u.Items {
			fn(&u.Items[i])
		}
		return
	}
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	for i := range items.Len() {
		fn(items.Index(i).Addr().Interface().(runtime.Object))
	}
}

// itemResult is a decoded list item or its error.
type itemResult struct {
	obj runtime.Object
	err error
}

// listBuilder assembles a list. Its handler methods run on the List
// caller's goroutine (the reader); with more than one worker, items are
// decoded by the pool's workers and collected, in order, by one collector
// goroutine, which owns items and err until done is closed.
type listBuilder struct {
	lw     *ListerWatcher
	format format
	// Reader-owned.
	listMeta     metav1.ListMeta
	object       map[string]any // unstructured: the list's members but items
	itemsPresent bool
	kindChecked  bool     // the JSON handler's Kind has run
	members      [][]byte // CBOR: the list's members but items, each key and value encoded

	pool     *ordered.Pool[[]byte, itemResult]
	halt     chan struct{} // closed to stop the pool
	haltOnce sync.Once
	closed   bool          // reader-owned: the pool's input was closed
	done     chan struct{} // closed by the collector when it exits
	// Collector-owned until done (reader-owned with one worker).
	items []runtime.Object
	err   error
}

func (lw *ListerWatcher) newListBuilder(f format) *listBuilder {
	b := &listBuilder{lw: lw, format: f}
	if !lw.codec.typed {
		b.object = map[string]any{}
	}
	if lw.cfg.workers > 1 {
		b.halt = make(chan struct{})
		b.done = make(chan struct{})
		b.pool = ordered.New(lw.cfg.workers, lw.cfg.window, b.halt, b.decodeItem)
		b.pool.Start()
		go b.collect() // collector goroutine: exits when the pool ends or halts
	}
	return b
}

func (b *listBuilder) decodeItem(data []byte) itemResult {
	var r itemResult
	switch b.format {
	case formatProtobuf:
		r.obj, r.err = b.lw.codec.protoItem(data)
	case formatCBOR:
		r.obj, r.err = b.lw.codec.cborListItem(data)
	default:
		r.obj, r.err = b.lw.codec.jsonItem(data)
	}
	b.lw.putBuf(data)
	return r
}

func (b *listBuilder) collect() {
	defer close(b.done)
	for {
		r, ok := b.pool.Next()
		if !ok {
			return
		}
		if r.err != nil {
			b.err = r.err
			b.halt1()
			return
		}
		b.items = append(b.items, r.obj)
	}
}

func (b *listBuilder) halt1() { b.haltOnce.Do(func() { close(b.halt) }) }

// addItem hands on an item read by the reader.
func (b *listBuilder) addItem(data []byte) error {
	b.itemsPresent = true
	if b.pool == nil {
		r := b.decodeItem(data)
		if r.err != nil {
			b.err = r.err
			return r.err
		}
		b.items = append(b.items, r.obj)
		return nil
	}
	if !b.pool.Submit(data) {
		return errDecodeFailed
	}
	return nil
}

var errDecodeFailed = errors.New("wire: an item failed to decode")

// stop ends the pool (if any) and waits for its goroutines. Reader only;
// idempotent.
func (b *listBuilder) stop() {
	if b.pool == nil {
		return
	}
	b.halt1()
	b.closePool()
	<-b.done
	b.pool.Wait()
}

func (b *listBuilder) closePool() {
	if !b.closed {
		b.closed = true
		b.pool.Close()
	}
}

// decodeErr returns the error of the first item that failed to decode.
func (b *listBuilder) decodeErr() error {
	if b.err != nil {
		return fmt.Errorf("wire: decoding a list item: %w", b.err)
	}
	return nil
}

// finish waits for the last items and assembles the list.
func (b *listBuilder) finish() (runtime.Object, error) {
	if b.pool != nil {
		b.closePool()
		<-b.done
		b.pool.Wait()
	}
	if err := b.decodeErr(); err != nil {
		return nil, err
	}
	if b.format == formatCBOR {
		if err := b.cborMembers(); err != nil {
			return nil, err
		}
	}
	if !b.lw.codec.typed {
		return b.unstructuredList()
	}
	list := reflect.New(b.lw.listType)
	v := list.Elem()
	v.FieldByName("ListMeta").Set(reflect.ValueOf(b.listMeta))
	if len(b.items) > 0 || (b.itemsPresent && b.format != formatProtobuf) {
		items := reflect.MakeSlice(v.FieldByName("Items").Type(), len(b.items), len(b.items))
		for i, obj := range b.items {
			items.Index(i).Set(reflect.ValueOf(obj).Elem())
		}
		v.FieldByName("Items").Set(items)
	}
	return list.Interface().(runtime.Object), nil
}

func (b *listBuilder) unstructuredList() (runtime.Object, error) {
	list := &unstructured.UnstructuredList{Object: b.object}
	if list.GetKind() == "" {
		return nil, runtime.NewMissingKindErr("list")
	}
	itemKind := strings.TrimSuffix(list.GetKind(), "List")
	list.Items = make([]unstructured.Unstructured, len(b.items))
	for i, obj := range b.items {
		u := obj.(*unstructured.Unstructured)
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(itemKind)
			u.SetAPIVersion(list.GetAPIVersion())
		}
		list.Items[i] = *u
	}
	return list, nil
}

// kindOK reports whether a list of this kind is streamed; a typed resource
// streams only its own list kind.
func (b *listBuilder) kindOK(apiVersion, kind string) bool {
	c := b.lw.codec
	return !c.typed || (apiVersion == c.apiVersion && kind == c.listGVK.Kind)
}

// protoListHandler receives a protobuf list from pbwire.ReadList.
type protoListHandler listBuilder

func (h *protoListHandler) Kind(apiVersion, kind []byte) error {
	if !(*listBuilder)(h).kindOK(string(apiVersion), string(kind)) {
		return pbwire.ErrDecline
	}
	return nil
}

func (h *protoListHandler) ListMeta(b []byte) error { return h.listMeta.Unmarshal(b) }
func (h *protoListHandler) Alloc(n int) []byte      { return h.lw.getBuf(n) }
func (h *protoListHandler) Item(b []byte) error     { return (*listBuilder)(h).addItem(b) }

// jsonListHandler receives a JSON list from jsonwire.ReadList.
type jsonListHandler listBuilder

func (h *jsonListHandler) Kind(apiVersion, kind string) error {
	h.kindChecked = true
	if !(*listBuilder)(h).kindOK(apiVersion, kind) {
		return jsonwire.ErrDecline
	}
	return nil
}

func (h *jsonListHandler) Member(key string, value []byte) error {
	if h.kindChecked && (key == "kind" || key == "apiVersion") && h.lw.codec.typed {
		// A typed list's kind was checked before its items; it may repeat
		// but not change.
		var v *string
		if err := kjson.UnmarshalCaseSensitivePreserveInts(value, &v); err != nil {
			return err
		}
		want := h.lw.codec.apiVersion
		if key == "kind" {
			want = h.lw.codec.listGVK.Kind
		}
		if v != nil && *v != want {
			return fmt.Errorf("wire: list %s %q after its items, want %q", key, *v, want)
		}
	}
	if h.object != nil {
		var v any
		if err := utiljson.Unmarshal(value, &v); err != nil {
			return err
		}
		h.object[key] = v
		return nil
	}
	if key == "metadata" {
		return kjson.UnmarshalCaseSensitivePreserveInts(value, &h.listMeta)
	}
	return nil
}

func (h *jsonListHandler) Alloc(n int) []byte  { return h.lw.getBuf(n) }
func (h *jsonListHandler) Item(b []byte) error { return (*listBuilder)(h).addItem(b) }

// cborListHandler receives a CBOR list from cborwire.ReadList.
type cborListHandler listBuilder

func (h *cborListHandler) Member(key string, keyItem, value []byte) error {
	if c := h.lw.codec; c.typed && (key == "kind" || key == "apiVersion") {
		// Sorted keys put kind before the items and apiVersion after them;
		// kube-apiserver's unsorted ones (struct order) put both first.
		// Before the first item, a typed list of another kind (a Status,
		// say) is declined and decoded by client-go's decoder; after it,
		// a mismatch is an error.
		want := c.apiVersion
		if key == "kind" {
			want = c.listGVK.Kind
		}
		if v, ok := cborwire.Text(value); !ok || v != want {
			if h.itemsPresent {
				return fmt.Errorf("wire: list %s %x after its items, want %q", key, value, want)
			}
			return cborwire.ErrDecline
		}
	}
	h.members = append(h.members, append(keyItem, value...))
	return nil
}

func (h *cborListHandler) Array()              { h.itemsPresent = true }
func (h *cborListHandler) Alloc() []byte       { return h.lw.getBuf(0) }
func (h *cborListHandler) Item(b []byte) error { return (*listBuilder)(h).addItem(b) }

// cborMembers decodes the members of a CBOR list other than its items
// (metadata, kind, apiVersion, and any other of an unstructured list) with
// client-go's decoder, as one map: the list without its items.
func (b *listBuilder) cborMembers() error {
	c := b.lw.codec
	data := cborwire.EncodeMap(b.members)
	if !c.typed {
		list := &unstructured.UnstructuredList{}
		if _, _, err := c.reference[formatCBOR].object.Decode(data, nil, list); err != nil {
			return err
		}
		b.object = list.Object
		return nil
	}
	list := reflect.New(b.lw.listType)
	if _, _, err := c.reference[formatCBOR].object.Decode(data, nil, list.Interface().(runtime.Object)); err != nil {
		return err
	}
	b.listMeta = list.Elem().FieldByName("ListMeta").Interface().(metav1.ListMeta)
	return nil
}
