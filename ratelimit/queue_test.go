package ratelimit

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardinformer/shardinformer/internal/testkit"
)

// background counts the goroutines running the queue's delay and
// unfinished-work loops.
func background() (delay, update int) {
	return len(testkit.Goroutines(").delayLoop(")), len(testkit.Goroutines(").updateLoop("))
}

func expectBackground(t *testing.T, delay, update int) {
	t.Helper()
	synctest.Wait()
	if d, u := background(); d != delay || u != update {
		t.Fatalf("%d delay and %d update goroutines, want %d and %d", d, u, delay, update)
	}
}

// New starts nothing; each background goroutine runs only while it has
// work, and exits by itself once it has none, without ShutDown.
func TestBackgroundGoroutinesRunOnlyWithWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := New(Config[string]{Name: "q", MetricsProvider: newRecProvider()})
		if err != nil {
			t.Fatal(err)
		}
		expectBackground(t, 0, 0)
		q.Add("a")
		expectBackground(t, 0, 0)
		mustGet(t, q, "a")
		expectBackground(t, 0, 1) // a in flight: the gauges are updated
		q.AddAfter("b", time.Second)
		q.AddAfter("c", 2*time.Second)
		expectBackground(t, 1, 1)
		advance(time.Second)
		expectBackground(t, 1, 1) // c still delayed
		q.Done("a")
		advance(time.Second)
		expectBackground(t, 0, 0) // nothing delayed, nothing in flight
		mustGet(t, q, "b")
		expectBackground(t, 0, 1) // restarted
		q.Done("b")
		mustGet(t, q, "c")
		q.Done("c")
		advance(time.Second)
		expectBackground(t, 0, 0)
		if err := q.check(); err != nil {
			t.Fatal(err)
		}
	})
}

// ShutDown stops both goroutines and waits for them, whatever they wait for.
func TestShutDownStopsBackground(t *testing.T) {
	for _, drain := range []bool{false, true} {
		t.Run(map[bool]string{false: "ShutDown", true: "ShutDownWithDrain"}[drain], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, err := New(Config[string]{Name: "q", MetricsProvider: newRecProvider()})
				if err != nil {
					t.Fatal(err)
				}
				q.Add("a")
				mustGet(t, q, "a")
				q.AddAfter("later", time.Hour)
				expectBackground(t, 1, 1)
				if drain {
					go func() {
						time.Sleep(time.Minute)
						q.Done("a")
					}()
					q.ShutDownWithDrain()
				} else {
					q.ShutDown()
					q.Done("a")
				}
				expectBackground(t, 0, 0)
				q.AddAfter("after", time.Second) // ignored: starts nothing
				q.Add("x")
				advance(2 * time.Hour)
				if n := q.Len(); n != 0 {
					t.Fatalf("Len = %d after shutdown; want the delayed key dropped and adds ignored", n)
				}
			})
		})
	}
}

func TestDoneOfKeyNotInFlight(t *testing.T) {
	if !invariants {
		t.Skip("Done of a key not in flight panics only in race and invariants builds")
	}
	q, err := New(Config[string]{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	q.Add("ready")
	for _, k := range []string{"unknown", "ready"} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), `queue "q"`) {
					t.Errorf("Done(%q): recovered %v, want a panic naming the queue", k, r)
				}
			}()
			q.Done(k)
		}()
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
	q.ShutDown()
}
