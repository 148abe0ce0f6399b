package wire

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardinformer/shardinformer/internal/testkit"
)

func orderedEvents(n int) []watch.Event {
	evs := make([]watch.Event, n)
	for i := range evs {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "ns", ResourceVersion: fmt.Sprint(i + 1),
			Labels: map[string]string{"i": fmt.Sprint(i)}}}
		if i%5 == 0 { // some large objects, so that decode times vary
			p.Annotations = map[string]string{"big": string(bytes.Repeat([]byte("x"), 20000))}
		}
		evs[i] = watch.Event{Type: []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark}[i%4], Object: p}
	}
	return evs
}

// TestWatchOrder: events leave in arrival order for every number of
// workers and every window down to 1, in both formats.
func TestWatchOrder(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	evs := orderedEvents(200)
	for _, f := range formats {
		stream := encodeWatch(t, f, evs, podGV)
		want := drain(streamWatcher(t, f, bytes.NewReader(stream)))
		for _, workers := range []int{1, 2, 4, 8} {
			for _, window := range []int{1, 2, 5, 64} {
				window = max(window, workers)
				lw := testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(workers), WithWindow(window), WithContentType(f.contentType()))
				got := wireWatch(lw, stream)
				if len(got) != len(want) {
					t.Fatalf("%s workers=%d window=%d: %d events, want %d", f, workers, window, len(got), len(want))
				}
				for i := range got {
					if got[i].Type != want[i].Type || got[i].Object.(*corev1.Pod).Name != want[i].Object.(*corev1.Pod).Name {
						t.Fatalf("%s workers=%d window=%d: event %d is %s %s, want %s %s", f, workers, window, i,
							got[i].Type, got[i].Object.(*corev1.Pod).Name, want[i].Type, want[i].Object.(*corev1.Pod).Name)
					}
				}
			}
		}
	}
}

// blockingBody is a response body that serves data, then blocks until
// closed, like a watch connection with no more events.
type blockingBody struct {
	r      io.Reader
	closed chan struct{}
	once   sync.Once
}

func newBlockingBody(data []byte) *blockingBody {
	return &blockingBody{r: bytes.NewReader(data), closed: make(chan struct{})}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if n, err := b.r.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	<-b.closed
	return 0, io.ErrClosedPipe
}

func (b *blockingBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// TestStopPrompt: Stop returns, closes the body and the result channel and
// leaves no goroutine, when the consumer reads nothing, when it has read
// part of the stream and the window is full, and while the stream is idle.
func TestStopPrompt(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	stream := encodeWatch(t, formatProtobuf, orderedEvents(200), podGV)
	for _, workers := range []int{1, 2, 4} {
		for _, read := range []int{0, 3, 200} {
			body := newBlockingBody(stream)
			lw := testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(workers), WithWindow(workers))
			w := lw.newWatcher(body)
			w.start()
			for range read {
				<-w.ResultChan()
			}
			stopped := make(chan struct{})
			go func() {
				w.Stop()
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(10 * time.Second):
				t.Fatalf("workers=%d read=%d: Stop did not return", workers, read)
			}
			select {
			case <-body.closed:
			default:
				t.Fatalf("workers=%d read=%d: body not closed", workers, read)
			}
			for range w.ResultChan() { // closed: the range ends
			}
			w.Stop() // idempotent
		}
	}
}

// TestStopWhileDecoding stops a watch whose workers are busy with large
// objects.
func TestStopWhileDecoding(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	var evs []watch.Event
	big := string(bytes.Repeat([]byte("y"), 256<<10))
	for i := range 16 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Annotations: map[string]string{"a": big}}}
		evs = append(evs, watch.Event{Type: watch.Added, Object: p})
	}
	stream := encodeWatch(t, formatJSON, evs, podGV)
	lw := testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(4), WithContentType(JSON))
	w := lw.newWatcher(newBlockingBody(stream))
	w.start()
	<-w.ResultChan()
	w.Stop()
}
