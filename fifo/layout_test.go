package fifo

import (
	"testing"
	"unsafe"
)

// Oldest is polled by other goroutines (the pipeline's watermark) while the
// queue's writer and consumer write its mutex: oldest is at least a cache
// line away from the fields before and after it, whatever the alignment.
func TestOldestLayout(t *testing.T) {
	var q Queue
	const line = 64
	before := unsafe.Offsetof(q.space) + unsafe.Sizeof(q.space)
	if gap := unsafe.Offsetof(q.oldest) - before; gap < line {
		t.Errorf("oldest is %d bytes after space, want >= %d", gap, line)
	}
	after := unsafe.Offsetof(q.oldest) + unsafe.Sizeof(q.oldest)
	if gap := unsafe.Offsetof(q.mu) - after; gap < line {
		t.Errorf("mu is %d bytes after oldest, want >= %d", gap, line)
	}
}
