package testkit

import (
	"bytes"
	"flag"
	"strconv"
	"sync"
	"testing"

	"k8s.io/klog/v2"
)

// CaptureKlog sets klog's verbosity to v and collects what klog writes
// until the test ends (then verbosity 0 and stderr again); logs returns it
// so far. klog's settings are global: tests using it must not run in
// parallel with other tests that log.
func CaptureKlog(t testing.TB, v int) (logs func() string) {
	t.Helper()
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	set := func(name, value string) {
		if err := fs.Set(name, value); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	set("logtostderr", "false")
	set("v", strconv.Itoa(v))
	klog.SetOutput(lockedWriter{&mu, &buf})
	t.Cleanup(func() {
		klog.Flush()
		set("v", "0")
		set("logtostderr", "true")
	})
	return func() string {
		klog.Flush()
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}
