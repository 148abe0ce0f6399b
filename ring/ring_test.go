package ring

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
)

// deadlockGuard bounds tests that run real goroutines. It is not a timing
// assertion: a correct ring finishes these tests orders of magnitude sooner,
// and the guard only turns a lost wake-up into a failure instead of a hang.
const deadlockGuard = 2 * time.Minute

func mustNew[T any](t testing.TB, capacity int) *Ring[T] {
	t.Helper()
	r, err := New[T](capacity)
	if err != nil {
		t.Fatalf("New(%d): %v", capacity, err)
	}
	return r
}

func TestNewCapacity(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{1, 2}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {1000, 1024}, {1024, 1024}, {1025, 2048},
	} {
		r := mustNew[int](t, tc.in)
		if got := r.Cap(); got != tc.want {
			t.Errorf("New(%d).Cap() = %d, want %d", tc.in, got, tc.want)
		}
		if got := r.Free(); got != tc.want {
			t.Errorf("New(%d).Free() = %d, want %d", tc.in, got, tc.want)
		}
		if got := r.Len(); got != 0 {
			t.Errorf("New(%d).Len() = %d, want 0", tc.in, got)
		}
	}
	// Zero-size elements make the maximum cheap to allocate.
	if r, err := New[struct{}](maxCapacity); err != nil || r.Cap() != maxCapacity {
		t.Errorf("New(maxCapacity) = %v, %v", r, err)
	}
	for _, c := range []int{0, -1, -1 << 40, maxCapacity + 1, 1 << 62} {
		r, err := New[int](c)
		if r != nil || !errors.Is(err, ErrCapacity) {
			t.Errorf("New(%d) = %v, %v; want nil, ErrCapacity", c, r, err)
		}
	}
}

// fieldInfo is one field of Ring with the group of fields it shares cache
// lines with.
type fieldInfo struct {
	name   string
	group  string
	offset uintptr
	size   uintptr
}

func ringFields[T any]() (fields []fieldInfo, size uintptr) {
	var r Ring[T]
	add := func(group, name string, off, sz uintptr) {
		fields = append(fields, fieldInfo{name, group, off, sz})
	}
	add("readonly", "buf", unsafe.Offsetof(r.buf), unsafe.Sizeof(r.buf))
	add("readonly", "mask", unsafe.Offsetof(r.mask), unsafe.Sizeof(r.mask))
	add("readonly", "data", unsafe.Offsetof(r.data), unsafe.Sizeof(r.data))
	add("readonly", "space", unsafe.Offsetof(r.space), unsafe.Sizeof(r.space))
	add("readonly", "testHook", unsafe.Offsetof(r.testHook), unsafe.Sizeof(r.testHook))
	add("consumer", "head", unsafe.Offsetof(r.head), unsafe.Sizeof(r.head))
	add("consumer", "cachedTail", unsafe.Offsetof(r.cachedTail), unsafe.Sizeof(r.cachedTail))
	add("producer", "tail", unsafe.Offsetof(r.tail), unsafe.Sizeof(r.tail))
	add("producer", "next", unsafe.Offsetof(r.next), unsafe.Sizeof(r.next))
	add("producer", "cachedHead", unsafe.Offsetof(r.cachedHead), unsafe.Sizeof(r.cachedHead))
	add("producer", "ended", unsafe.Offsetof(r.ended), unsafe.Sizeof(r.ended))
	add("flags", "closed", unsafe.Offsetof(r.closed), unsafe.Sizeof(r.closed))
	return fields, unsafe.Sizeof(r)
}

func TestLayout(t *testing.T) {
	const line = 64
	t.Run("T=int", func(t *testing.T) { checkLayout[int](t, line) })
	t.Run("T=[5]string", func(t *testing.T) { checkLayout[[5]string](t, line) })
}

func checkLayout[T any](t *testing.T, line uintptr) {
	fields, size := ringFields[T]()
	// Every named field must be listed above, so a new field cannot dodge
	// the check.
	typ := reflect.TypeFor[Ring[T]]()
	named := 0
	for i := range typ.NumField() {
		if typ.Field(i).Name != "_" {
			named++
		}
	}
	if named != len(fields) {
		t.Fatalf("Ring has %d named fields, layout test lists %d; update ringFields", named, len(fields))
	}
	by := map[string]fieldInfo{}
	for _, f := range fields {
		by[f.name] = f
	}
	// gap is the number of bytes strictly between two fields. At least one
	// line of gap means no alignment of the allocation can put them on the
	// same cache line.
	gap := func(a, b fieldInfo) uintptr {
		if a.offset > b.offset {
			a, b = b, a
		}
		if b.offset < a.offset+a.size {
			return 0
		}
		return b.offset - (a.offset + a.size)
	}
	for i, a := range fields {
		for _, b := range fields[i+1:] {
			if a.group != b.group && gap(a, b) < line {
				t.Errorf("%s (%s, offset %d) and %s (%s, offset %d) are %d bytes apart, want >= %d",
					a.name, a.group, a.offset, b.name, b.group, b.offset, gap(a, b), line)
			}
		}
	}
	// The hot indices and each side's cached copy of the other's index.
	head, tail := by["head"], by["tail"]
	if gap(head, tail) < line {
		t.Errorf("head and tail are %d bytes apart, want >= %d", gap(head, tail), line)
	}
	for _, c := range []struct{ cached, owner, other string }{
		{"cachedHead", "tail", "head"}, // producer's copy lives with the producer's index
		{"cachedTail", "head", "tail"}, // consumer's copy lives with the consumer's index
	} {
		f, own, oth := by[c.cached], by[c.owner], by[c.other]
		if f.group != own.group {
			t.Errorf("%s is in group %s, want %s (with %s)", c.cached, f.group, own.group, c.owner)
		}
		if gap(f, oth) < line {
			t.Errorf("%s is %d bytes from %s, want >= %d", c.cached, gap(f, oth), c.other, line)
		}
	}
	// Leading and trailing padding keep neighbouring heap objects away.
	first, last := fields[0], fields[len(fields)-1]
	if first.offset < line {
		t.Errorf("first field at offset %d, want >= %d bytes of leading padding", first.offset, line)
	}
	if size-(last.offset+last.size) < line {
		t.Errorf("%d bytes after the last field, want >= %d", size-(last.offset+last.size), line)
	}
}

func TestPushFullAndFree(t *testing.T) {
	r := mustNew[int](t, 8)
	for i := range 8 {
		if got := r.Free(); got != 8-i {
			t.Fatalf("before push %d: Free() = %d, want %d", i, got, 8-i)
		}
		if !r.Push(i) {
			t.Fatalf("Push(%d) = false with %d free", i, 8-i)
		}
	}
	if got := r.Free(); got != 0 {
		t.Fatalf("full: Free() = %d, want 0", got)
	}
	if r.Push(8) {
		t.Fatal("Push on a full ring returned true")
	}
	if got := r.Len(); got != 0 {
		t.Fatalf("Len() before Flush = %d, want 0 (pushes are not published)", got)
	}
	dst := make([]int, 8)
	if n := r.Pop(dst); n != 0 {
		t.Fatalf("Pop before Flush returned %d items", n)
	}
	r.Flush()
	if got := r.Len(); got != 8 {
		t.Fatalf("Len() after Flush = %d, want 8", got)
	}
	if r.Push(8) {
		t.Fatal("Push on a full, flushed ring returned true")
	}
	if n := r.Pop(dst[:3]); n != 3 || dst[0] != 0 || dst[1] != 1 || dst[2] != 2 {
		t.Fatalf("Pop(3) = %d %v", n, dst[:3])
	}
	if got := r.Free(); got != 3 {
		t.Fatalf("after popping 3: Free() = %d, want 3", got)
	}
	for i := 8; i < 11; i++ {
		if !r.Push(i) {
			t.Fatalf("Push(%d) = false after Pop freed room", i)
		}
	}
	if r.Push(11) {
		t.Fatal("Push beyond capacity after wrap-around returned true")
	}
	if got := r.Free(); got != 0 {
		t.Fatalf("Free() = %d, want 0", got)
	}
	r.Flush()
	// Pop may stop at the end of its cached view of the tail (here the 5
	// items left from the first Flush); popping until 0 drains everything.
	var got []int
	for n := r.Pop(dst); n > 0; n = r.Pop(dst) {
		got = append(got, dst[:n]...)
	}
	if fmt.Sprint(got) != fmt.Sprint([]int{3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("after wrap-around popped %v, want 3..10", got)
	}
	if n := r.Pop(dst); n != 0 {
		t.Fatalf("Pop on empty ring returned %d", n)
	}
	if n := r.Pop(nil); n != 0 {
		t.Fatalf("Pop(nil) returned %d", n)
	}
}

// TestModel runs random single-goroutine operation sequences against a plain
// slice model of pushed and published items.
func TestModel(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, capacity := range []int{1, 2, 3, 8, 64} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprintf("cap=%d/seed=%d", capacity, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(capacity)))
				r := mustNew[int](t, capacity)
				c := r.Cap()
				var published, pending []int // the model
				nextVal := 0
				dst := make([]int, 2*c)
				for step := range 3000 {
					switch op := rng.IntN(10); {
					case op < 4: // Push
						ok := r.Push(nextVal)
						want := len(published)+len(pending) < c
						if ok != want {
							t.Fatalf("step %d: Push = %v, want %v (published %d, pending %d)", step, ok, want, len(published), len(pending))
						}
						if ok {
							pending = append(pending, nextVal)
							nextVal++
						}
					case op < 6: // Flush
						r.Flush()
						published = append(published, pending...)
						pending = pending[:0]
					case op < 8: // Pop
						k := rng.IntN(len(dst) + 1)
						n := r.Pop(dst[:k])
						if n > min(k, len(published)) || (n == 0 && k > 0 && len(published) > 0) {
							t.Fatalf("step %d: Pop(%d) = %d with %d published", step, k, n, len(published))
						}
						for i := range n {
							if dst[i] != published[i] {
								t.Fatalf("step %d: popped %v, want prefix of %v", step, dst[:n], published)
							}
						}
						published = published[n:]
					case op == 8: // Wait never blocks when items are published.
						if len(published) > 0 {
							if !r.Wait(context.Background()) {
								t.Fatalf("step %d: Wait = false with %d published", step, len(published))
							}
						} else if r.Wait(canceled) {
							t.Fatalf("step %d: Wait = true on an empty ring", step)
						}
					case op == 9: // WaitSpace flushes, then reports room.
						got := r.WaitSpace(canceled)
						published = append(published, pending...)
						pending = pending[:0]
						if want := len(published) < c; got != want {
							t.Fatalf("step %d: WaitSpace = %v, want %v", step, got, want)
						}
					}
					if got, want := r.Free(), c-len(published)-len(pending); got != want {
						t.Fatalf("step %d: Free() = %d, want %d", step, got, want)
					}
					if got := r.Len(); got != len(published) {
						t.Fatalf("step %d: Len() = %d, want %d", step, got, len(published))
					}
				}
				r.Close()
				published = append(published, pending...)
				for r.Wait(canceled) {
					n := r.Pop(dst)
					if n == 0 {
						t.Fatal("Wait = true but Pop moved nothing")
					}
					for i := range n {
						if dst[i] != published[i] {
							t.Fatalf("after Close: popped %v, want prefix of %v", dst[:n], published)
						}
					}
					published = published[n:]
				}
				if len(published) != 0 {
					t.Fatalf("Wait = false with %d items left", len(published))
				}
			})
		}
	}
}

// TestFIFOConcurrent moves millions of items between a producer and a consumer
// goroutine with random batch sizes, random Flush points and random Pop sizes,
// and checks that every item arrives exactly once and in order.
func TestFIFOConcurrent(t *testing.T) {
	for _, tc := range []struct{ capacity, items int }{
		{2, 1 << 18},
		{64, 1 << 21},
		{1024, 1 << 21},
	} {
		items := tc.items
		if testing.Short() {
			items /= 16
		}
		t.Run(fmt.Sprintf("cap=%d", tc.capacity), func(t *testing.T) {
			runFIFO(t, tc.capacity, items, uint64(tc.capacity))
		})
	}
}

func runFIFO(t *testing.T, capacity, items int, seed uint64) {
	r := mustNew[uint64](t, capacity)
	ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
	defer cancel()

	var wg sync.WaitGroup
	wg.Go(func() { // producer
		rng := rand.New(rand.NewPCG(seed, 1))
		defer r.Close()
		for i := 0; i < items; {
			batch := 1 + rng.IntN(2*r.Cap())
			for j := 0; j < batch && i < items; j++ {
				if !r.Push(uint64(i)) {
					if rng.IntN(2) == 0 {
						r.Flush() // WaitSpace also flushes; exercise both
					}
					if !r.WaitSpace(ctx) {
						t.Errorf("producer: WaitSpace = false at item %d (deadlock guard expired?)", i)
						return
					}
					continue // retry item i
				}
				i++
				if rng.IntN(16) == 0 {
					r.Flush() // random mid-batch flush point
				}
			}
			r.Flush()
		}
	})

	rng := rand.New(rand.NewPCG(seed, 2))
	dst := make([]uint64, 2*r.Cap())
	want := uint64(0)
	for r.Wait(ctx) {
		n := r.Pop(dst[:1+rng.IntN(len(dst))])
		if n == 0 {
			t.Fatal("Wait = true but Pop moved nothing")
		}
		for _, v := range dst[:n] {
			if v != want {
				t.Fatalf("got item %d, want %d", v, want)
			}
			want++
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("deadlock guard expired after %d of %d items", want, items)
	}
	if want != uint64(items) {
		t.Fatalf("consumer received %d items, want %d", want, items)
	}
}

func TestCloseDrainsAndFlushes(t *testing.T) {
	r := mustNew[int](t, 8)
	for i := range 5 {
		r.Push(i)
	}
	r.Flush()
	for i := 5; i < 8; i++ {
		r.Push(i) // pending: Close must publish these
	}
	r.Close()
	r.Close() // idempotent
	if got := r.Len(); got != 8 {
		t.Fatalf("Len() after Close = %d, want 8 (Close flushes)", got)
	}
	if r.WaitSpace(context.Background()) {
		t.Fatal("WaitSpace = true on a closed ring")
	}
	ctx := context.Background()
	var got []int
	dst := make([]int, 3)
	for r.Wait(ctx) {
		n := r.Pop(dst)
		got = append(got, dst[:n]...)
	}
	if fmt.Sprint(got) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("drained %v after Close", got)
	}
	if r.Wait(ctx) {
		t.Fatal("Wait = true on a closed, drained ring")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Push after Close did not panic")
			}
		}()
		r.Push(99)
	}()
}

func TestCloseWakesParkedConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew[int](t, 4)
		ctx := context.Background()
		var got []int
		done := make(chan struct{})
		go func() { // consumer
			defer close(done)
			dst := make([]int, 4)
			for r.Wait(ctx) {
				n := r.Pop(dst)
				got = append(got, dst[:n]...)
			}
		}()
		synctest.Wait() // consumer is durably blocked in Wait
		if !r.data.Armed() {
			t.Fatal("consumer blocked without setting its parked flag")
		}
		r.Push(1)
		r.Flush()
		synctest.Wait() // consumer popped 1 and parked again
		r.Push(2)
		r.Close() // publishes 2 and wakes the consumer
		<-done
		if fmt.Sprint(got) != "[1 2]" {
			t.Fatalf("consumer got %v, want [1 2]", got)
		}
	})
}

func TestCloseWakesParkedConsumerOnEmptyRing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew[int](t, 4)
		result := make(chan bool)
		go func() { result <- r.Wait(context.Background()) }()
		synctest.Wait()
		r.Close() // nothing to flush: Close itself must ring the doorbell
		if <-result {
			t.Fatal("Wait = true on a closed, empty ring")
		}
	})
}

func TestWaitSpaceWakesOnPop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew[int](t, 2)
		r.Push(1)
		r.Push(2)
		// No Flush: WaitSpace must publish these itself or wait forever.
		ok := false
		done := make(chan struct{})
		go func() { // producer
			defer close(done)
			ok = r.WaitSpace(context.Background())
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("WaitSpace returned while the ring was full")
		default:
		}
		if !r.space.Armed() {
			t.Fatal("producer blocked without setting its parked flag")
		}
		dst := make([]int, 1)
		if !r.Wait(context.Background()) || r.Pop(dst) != 1 || dst[0] != 1 {
			t.Fatalf("consumer could not pop the first item: %v", dst)
		}
		<-done
		if !ok {
			t.Fatal("WaitSpace = false, want true after Pop freed a slot")
		}
		if !r.Push(3) {
			t.Fatal("Push after WaitSpace = true failed")
		}
	})
}

func TestWaitCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew[int](t, 4)
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan bool)
		go func() { result <- r.Wait(ctx) }()
		synctest.Wait()
		cancel()
		if <-result {
			t.Fatal("Wait = true after cancel on an empty ring")
		}
		if r.data.Armed() {
			t.Fatal("consumer still armed after Wait returned")
		}
		// Deadline expiry, on synctest's fake clock.
		tctx, tcancel := context.WithTimeout(context.Background(), time.Hour)
		defer tcancel()
		if r.Wait(tctx) {
			t.Fatal("Wait = true after the deadline on an empty ring")
		}
		// The ring still works after a canceled Wait.
		go func() { result <- r.Wait(context.Background()) }()
		synctest.Wait()
		r.Push(7)
		r.Flush()
		if !<-result {
			t.Fatal("Wait = false after Push and Flush")
		}
	})
}

func TestWaitSpaceCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew[int](t, 2)
		r.Push(1)
		r.Push(2)
		r.Flush()
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan bool)
		go func() { result <- r.WaitSpace(ctx) }()
		synctest.Wait()
		cancel()
		if <-result {
			t.Fatal("WaitSpace = true after cancel on a full ring")
		}
		if r.space.Armed() {
			t.Fatal("producer still armed after WaitSpace returned")
		}
		tctx, tcancel := context.WithTimeout(context.Background(), time.Hour)
		defer tcancel()
		if r.WaitSpace(tctx) {
			t.Fatal("WaitSpace = true after the deadline on a full ring")
		}
		// The ring still works after a canceled WaitSpace.
		go func() { result <- r.WaitSpace(context.Background()) }()
		synctest.Wait()
		r.Pop(make([]int, 1))
		if !<-result {
			t.Fatal("WaitSpace = false after Pop")
		}
	})
}

// TestNoLostWakeupPingPong bounces one item at a time between two rings, so in
// every round each side parks and must be woken by the other. A lost wake-up
// stalls the round until the deadlock guard expires.
func TestNoLostWakeupPingPong(t *testing.T) {
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	ping, pong := mustNew[int](t, 2), mustNew[int](t, 2)
	// Count how often each side reached the point of blocking. Each ring's
	// consumer hooks run on one goroutine and no producer hook is reachable
	// (one item in a ring of two), so the counters need no locking.
	var pingParks, pongParks [4]int
	ping.testHook = func(p hookPoint) { pingParks[p]++ }
	pong.testHook = func(p hookPoint) { pongParks[p]++ }
	ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
	defer cancel()

	var wg sync.WaitGroup
	wg.Go(func() { // echo: consumer of ping, producer of pong
		defer pong.Close()
		dst := make([]int, 2)
		for ping.Wait(ctx) {
			n := ping.Pop(dst)
			for _, v := range dst[:n] {
				pong.Push(v)
			}
			pong.Flush()
		}
	})
	rng := rand.New(rand.NewPCG(1, 2))
	dst := make([]int, 2)
	for i := range rounds {
		// A little random work varies which side reaches the doorbell first.
		for range rng.IntN(64) {
			rng.Uint64()
		}
		ping.Push(i)
		ping.Flush()
		if !pong.Wait(ctx) {
			ping.Close()
			wg.Wait()
			t.Fatalf("round %d: pong.Wait = false (lost wake-up; deadlock guard expired)", i)
		}
		if n := pong.Pop(dst); n != 1 || dst[0] != i {
			t.Fatalf("round %d: got %v", i, dst[:n])
		}
	}
	ping.Close()
	wg.Wait()
	if pong.Wait(ctx) {
		t.Fatal("pong.Wait = true after the echo goroutine closed it")
	}
	t.Logf("%d rounds: echo blocked in ping.Wait %d times, main blocked in pong.Wait %d times",
		rounds, pingParks[hookConsumerBeforeBlock], pongParks[hookConsumerBeforeBlock])
}

// TestNoLostWakeupInterleavings pauses the parking side at each point of the
// store-flag / re-check / block handshake and makes the other side publish
// right there. If the parking side skipped the re-check, or the publishing
// side skipped the flag check, the parked side would never wake and the
// deadlock guard would fail the test.
func TestNoLostWakeupInterleavings(t *testing.T) {
	const rounds = 200
	for _, point := range []hookPoint{hookConsumerBeforeFlag, hookConsumerBeforeBlock} {
		t.Run(fmt.Sprintf("consumer/point=%d", point), func(t *testing.T) {
			r := mustNew[int](t, 2)
			ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
			defer cancel()
			publish, published := make(chan struct{}), make(chan struct{})
			armed := false // touched only by the consumer goroutine
			r.testHook = func(p hookPoint) {
				if p == point && armed {
					armed = false
					publish <- struct{}{}
					<-published
				}
			}
			var wg sync.WaitGroup
			wg.Go(func() { // producer: publishes only when the consumer is paused in the hook
				for i := range rounds {
					select {
					case <-publish:
					case <-ctx.Done():
						return
					}
					r.Push(i)
					r.Flush()
					published <- struct{}{}
				}
			})
			dst := make([]int, 2)
			for i := range rounds {
				armed = true
				if !r.Wait(ctx) {
					cancel()
					wg.Wait()
					t.Fatalf("round %d: Wait = false: wake-up lost at hook point %d", i, point)
				}
				if armed {
					t.Fatalf("round %d: Wait returned without reaching hook point %d", i, point)
				}
				if n := r.Pop(dst); n != 1 || dst[0] != i {
					t.Fatalf("round %d: popped %v", i, dst[:n])
				}
			}
			wg.Wait()
		})
	}
	for _, point := range []hookPoint{hookConsumerBeforeFlag, hookConsumerBeforeBlock} {
		t.Run(fmt.Sprintf("close/point=%d", point), func(t *testing.T) {
			r := mustNew[int](t, 2)
			ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
			defer cancel()
			closeNow, closed := make(chan struct{}), make(chan struct{})
			reached := false
			r.testHook = func(p hookPoint) {
				if p == point && !reached {
					reached = true
					closeNow <- struct{}{}
					<-closed
				}
			}
			go func() { // producer: closes while the consumer is paused in the hook
				<-closeNow
				r.Close()
				close(closed)
			}()
			if r.Wait(ctx) {
				t.Fatal("Wait = true on a closed, empty ring")
			}
			if ctx.Err() != nil {
				t.Fatalf("Close's wake-up lost at hook point %d", point)
			}
			if !reached {
				t.Fatalf("Wait returned without reaching hook point %d", point)
			}
		})
	}
	for _, point := range []hookPoint{hookProducerBeforeFlag, hookProducerBeforeBlock} {
		t.Run(fmt.Sprintf("producer/point=%d", point), func(t *testing.T) {
			r := mustNew[int](t, 2)
			ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
			defer cancel()
			pop, popped := make(chan struct{}), make(chan struct{})
			armed := false // touched only by the producer goroutine
			r.testHook = func(p hookPoint) {
				if p == point && armed {
					armed = false
					pop <- struct{}{}
					<-popped
				}
			}
			var wg sync.WaitGroup
			wg.Go(func() { // consumer: pops only when the producer is paused in the hook
				dst := make([]int, 1)
				for range rounds {
					select {
					case <-pop:
					case <-ctx.Done():
						return
					}
					if r.Pop(dst) != 1 {
						t.Error("consumer: Pop on a full ring moved nothing")
					}
					popped <- struct{}{}
				}
			})
			r.Push(-1)
			r.Push(-2)
			for i := range rounds {
				if r.Push(i) {
					t.Fatalf("round %d: Push succeeded on a full ring", i)
				}
				armed = true
				if !r.WaitSpace(ctx) {
					cancel()
					wg.Wait()
					t.Fatalf("round %d: WaitSpace = false: wake-up lost at hook point %d", i, point)
				}
				if armed {
					t.Fatalf("round %d: WaitSpace returned without reaching hook point %d", i, point)
				}
				if !r.Push(i) {
					t.Fatalf("round %d: Push failed after WaitSpace = true", i)
				}
			}
			wg.Wait()
		})
	}
}

func TestPopClearsSlots(t *testing.T) {
	r := mustNew[*int](t, 4)
	ptrs := make([]*int, 8)
	for i := range ptrs {
		ptrs[i] = new(int)
		*ptrs[i] = i
	}
	slotsNil := func(want ...bool) {
		t.Helper()
		for i, s := range r.buf {
			if (s == nil) != want[i] {
				t.Fatalf("slot %d = %v, want nil=%v (slots %v)", i, s, want[i], r.buf)
			}
		}
	}
	dst := make([]*int, 4)
	for _, p := range ptrs[:3] {
		r.Push(p)
	}
	r.Flush()
	if n := r.Pop(dst[:2]); n != 2 || dst[0] != ptrs[0] || dst[1] != ptrs[1] {
		t.Fatalf("Pop(2) = %d %v", n, dst[:2])
	}
	slotsNil(true, true, false, true)
	if n := r.Pop(dst); n != 1 || dst[0] != ptrs[2] {
		t.Fatalf("Pop = %d %v", n, dst[:1])
	}
	slotsNil(true, true, true, true)
	// Wrap around: the next four items occupy slots 3, 0, 1, 2.
	for _, p := range ptrs[3:7] {
		if !r.Push(p) {
			t.Fatal("Push failed on an empty ring")
		}
	}
	r.Flush()
	slotsNil(false, false, false, false)
	if n := r.Pop(dst); n != 4 {
		t.Fatalf("Pop across the wrap moved %d, want 4", n)
	}
	for i, p := range dst {
		if p != ptrs[3+i] {
			t.Fatalf("item %d = %v, want %v", i, p, ptrs[3+i])
		}
	}
	slotsNil(true, true, true, true)
}

func TestAllocs(t *testing.T) {
	r := mustNew[*int](t, 256)
	v := new(int)
	dst := make([]*int, 64)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		for range 64 {
			if !r.Push(v) {
				t.Fatal("Push failed")
			}
		}
		_ = r.Free()
		r.Flush()
		_ = r.Len()
		for r.Len() > 0 && r.Wait(ctx) {
			r.Pop(dst)
		}
	})
	if allocs != 0 {
		t.Fatalf("steady-state Push/Flush/Wait/Pop allocates %v times per batch, want 0", allocs)
	}
}
