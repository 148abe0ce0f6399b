package testkit

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Goroutines returns the stacks of the live goroutines, other than the
// caller's and other tests' (running testing.tRunner), whose stack contains
// any of markers — a package path with its dot ("shardinformer/pipeline."),
// a function ("(*Queue[...]).delayLoop(").
func Goroutines(markers ...string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 { // the caller
			continue
		}
		s := string(g)
		if strings.Contains(s, "testing.tRunner") {
			continue
		}
		for _, m := range markers {
			if strings.Contains(s, m) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// NoGoroutines waits until Goroutines(markers...) is empty and fails the
// test, listing them, if it is not within Guard. Goroutines finish
// asynchronously after what stopped them returns (their last instructions
// run after they signal), hence the wait.
func NoGoroutines(t testing.TB, markers ...string) {
	t.Helper()
	deadline := time.Now().Add(Guard)
	for {
		left := Goroutines(markers...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutine(s) matching %q still running:\n\n%s", len(left), markers, strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CheckLeaks makes the test fail if, once it and its other cleanups are
// done, goroutines matching markers are still running (see NoGoroutines).
// Call it first in the test, so that its cleanup runs last.
func CheckLeaks(t testing.TB, markers ...string) {
	t.Helper()
	t.Cleanup(func() { NoGoroutines(t, markers...) })
}
