// Package leak checks in tests that no goroutine started by package wire or
// its internal packages outlives the test.
package leak

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// marker is in the stack of every goroutine whose code lives in package wire
// or below it.
const marker = "shardinformer/shardinformer/wire"

// Check registers a cleanup that fails t if, after the test and its other
// cleanups, a goroutine running code of package wire (or its internal
// packages) is still alive. Goroutines exit asynchronously after Stop or
// Close returns (their last instructions run after they signal), so the
// check retries for up to 5 seconds before it reports.
func Check(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			left := ours()
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("leak: %d goroutine(s) of package wire still running:\n\n%s", len(left), strings.Join(left, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// ours returns the stacks of live goroutines, other than the caller's, that
// run code of package wire.
func ours() []string {
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
		if i == 0 { // the calling goroutine
			continue
		}
		s := string(g)
		if strings.Contains(s, marker) && !strings.Contains(s, "/wire/internal/leak.") && !strings.Contains(s, "testing.tRunner") {
			out = append(out, s)
		}
	}
	return out
}
