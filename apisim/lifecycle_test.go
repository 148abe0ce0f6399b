package apisim

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCloseStopsEverything opens watches and a large list whose client does
// not read, closes the server, and checks that no server goroutine is left.
func TestCloseStopsEverything(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s, 2000, 4)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	var bodies []*http.Response
	for _, path := range []string{
		"/api/v1/pods?watch=1",
		"/api/v1/pods?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
		"/api/v1/pods", // ~20 MB, not read
	} {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, resp)
	}
	w, err := clientFor(t, s, ContentTypeProtobuf).CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A goroutine that has signalled its WaitGroup may still be returning;
	// give such goroutines a moment to disappear.
	var left []string
	for range 100 {
		left = serverGoroutines()
		if len(left) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, g := range left {
		t.Errorf("goroutine left after Close:\n%s", g)
	}
	drainUntilClosed(t, w)
	for _, b := range bodies {
		b.Body.Close()
	}
	if n := s.Stats().WatchesOpen; n != 0 {
		t.Errorf("%d watches open after Close", n)
	}
}

func serverGoroutines() []string {
	buf := make([]byte, 4<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	var out []string
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "apisim.(*Server)") || strings.Contains(g, "apisim.(*watchStream)") ||
			strings.Contains(g, "apisim.(*encodeAhead)") {
			out = append(out, g)
		}
	}
	return out
}
