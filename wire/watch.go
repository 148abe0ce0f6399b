package wire

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardinformer/shardinformer/wire/internal/cborwire"
	"github.com/shardinformer/shardinformer/wire/internal/jsonwire"
	"github.com/shardinformer/shardinformer/wire/internal/ordered"
	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// WatchWithContext implements cache.WatcherWithContext: it opens a watch
// and returns a watch.Interface whose events are decoded on the
// ListerWatcher's workers and delivered in the server's order, with the
// semantics of client-go's watch.StreamWatcher (see the package
// documentation). Like client-go's Watch it is not client-side throttled,
// and a connection that fails with a probable EOF or a timeout gives an
// empty, closed watch.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	req, _ := lw.request(opts, true)
	body, err := req.Throttle(nil).Stream(ctx)
	if err != nil {
		if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	w := lw.newWatcher(body)
	w.start()
	return w, nil
}

// watcher is one watch stream.
//
// Goroutines: with one worker, one receive goroutine reads a frame, decodes
// it and sends the event, like client-go's StreamWatcher. With W workers,
// a reader goroutine frames the stream and submits each frame to an
// ordered.Pool (W decoder goroutines), and an emitter goroutine takes the
// events out in order and sends them. The reader owns the body reader and
// the framing state; the emitter owns result. A full window stops the
// reader, and with it the TCP stream. Stop closes done (which stops the
// pool) and the body (which ends a blocked read), then waits for every
// goroutine.
type watcher struct {
	lw     *ListerWatcher
	body   io.ReadCloser
	br     *bufio.Reader
	format format
	frames frameReader

	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// frameReader reads the next frame into a buffer from alloc.
type frameReader func(alloc func(int) []byte) ([]byte, error)

// eventResult is a decoded frame, or the error that ends the stream.
type eventResult struct {
	ev  watch.Event
	err error
}

// reporter turns a stream error into the ERROR event's object, as
// rest.Request.Watch's StreamWatcher does.
var reporter = apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")

func (lw *ListerWatcher) newWatcher(body io.ReadCloser) *watcher {
	return &watcher{
		lw:     lw,
		body:   body,
		br:     bufio.NewReaderSize(body, 32<<10),
		result: make(chan watch.Event), // unbuffered, as StreamWatcher's
		done:   make(chan struct{}),
	}
}

// sniff picks the format from the first byte. A JSON watch stream starts
// with '{' or whitespace; the length prefix of a protobuf frame starts with
// a byte below 0x09 (frames are at most 128 MiB). So when protobuf was
// requested, anything but '{' and whitespace is read as protobuf. A CBOR
// stream from the API server starts with the self-described tag (0xd9), but
// any byte but '{' starts a CBOR data item, so when CBOR was requested,
// anything but '{' is read as CBOR.
func (w *watcher) sniff() error {
	head, err := w.br.Peek(1)
	if err != nil {
		return err
	}
	max := w.lw.cfg.maxFrameSize
	if w.lw.cborRequested() && head[0] != '{' { // whitespace is CBOR too
		w.format = formatCBOR
		var last []byte
		w.frames = func(alloc func(int) []byte) ([]byte, error) {
			if alloc == nil { // reuse one buffer
				var err error
				last, err = cborwire.ReadItem(w.br, max, last[:0])
				return last, err
			}
			return cborwire.ReadItem(w.br, max, alloc(0)[:0])
		}
		return nil
	}
	if c := head[0]; c != '{' && c != ' ' && c != '\t' && c != '\n' && c != '\r' && w.lw.protobufRequested() {
		w.format = formatProtobuf
		fr := pbwire.NewFrameReader(w.br, max)
		var last []byte
		w.frames = func(alloc func(int) []byte) ([]byte, error) {
			if alloc == nil { // reuse one buffer
				var err error
				last, err = fr.Next(last)
				return last, err
			}
			return fr.Next(alloc(0)[:0])
		}
		return nil
	}
	w.format = formatJSON
	s := jsonwire.NewScanner(w.br, max)
	var last []byte
	w.frames = func(alloc func(int) []byte) ([]byte, error) {
		if alloc == nil {
			alloc = func(n int) []byte {
				if cap(last) < n {
					last = make([]byte, n)
				}
				return last[:n]
			}
		}
		return jsonwire.ReadValue(s, alloc)
	}
	return nil
}

func (w *watcher) start() {
	w.wg.Add(1)
	if w.lw.cfg.workers == 1 {
		go w.receive() // receive goroutine: read, decode, send
		return
	}
	pool := ordered.New(w.lw.cfg.workers, w.lw.cfg.window, w.done, w.decode)
	w.wg.Add(1)
	go w.read(pool) // reader goroutine: frames the stream into the pool
	go w.emit(pool) // emitter goroutine: sends the pool's events in order
}

// receive is the one-worker loop.
func (w *watcher) receive() {
	defer w.wg.Done()
	defer close(w.result)
	defer w.stop()
	if err := w.sniff(); err != nil {
		w.fail(err)
		return
	}
	for {
		frame, err := w.frames(nil)
		if err != nil {
			w.fail(err)
			return
		}
		ev, err := w.lw.codec.decodeEvent(w.format, frame)
		if err != nil {
			w.fail(err)
			return
		}
		if !w.send(ev) {
			return
		}
	}
}

// read frames the stream into the pool; a read error goes in as the last
// result, after every frame before it.
func (w *watcher) read(pool *ordered.Pool[[]byte, eventResult]) {
	defer w.wg.Done()
	pool.Start()
	defer pool.Wait()
	defer pool.Close()
	err := w.sniff()
	for err == nil {
		var frame []byte
		if frame, err = w.frames(w.lw.getBuf); err == nil && !pool.Submit(frame) {
			return
		}
	}
	pool.Put(eventResult{err: err})
}

// decode runs on the pool's workers.
func (w *watcher) decode(frame []byte) eventResult {
	ev, err := w.lw.codec.decodeEvent(w.format, frame)
	w.lw.putBuf(frame)
	return eventResult{ev: ev, err: err}
}

// emit sends the pool's events in order until the stream ends.
func (w *watcher) emit(pool *ordered.Pool[[]byte, eventResult]) {
	defer w.wg.Done()
	defer close(w.result)
	defer w.stop()
	for {
		r, ok := pool.Next()
		if !ok {
			return
		}
		if r.err != nil {
			w.fail(r.err)
			return
		}
		if !w.send(r.ev) {
			return
		}
	}
}

func (w *watcher) send(ev watch.Event) bool {
	select {
	case <-w.done:
		return false
	case w.result <- ev:
		return true
	}
}

// fail ends the stream as StreamWatcher does: quietly for a clean or
// truncated end, a probable EOF or a timeout; otherwise with one ERROR
// event carrying the client's error Status.
func (w *watcher) fail(err error) {
	if err == io.EOF || err == io.ErrUnexpectedEOF || utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
		return
	}
	select {
	case <-w.done:
		return // stopped: the error is the closed body's
	default:
	}
	w.send(watch.Event{
		Type:   watch.Error,
		Object: reporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %v", err)),
	})
}

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface: it ends the stream, closes the response
// body and returns once every goroutine of the watch has exited; the result
// channel is then closed. Safe to call more than once and concurrently.
func (w *watcher) Stop() {
	w.stop()
	w.wg.Wait()
}

func (w *watcher) stop() {
	w.stopOnce.Do(func() {
		close(w.done)
		w.body.Close()
	})
}
