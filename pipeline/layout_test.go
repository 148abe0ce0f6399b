package pipeline

import (
	"reflect"
	"testing"
	"unsafe"
)

// The watermark's hot atomics sit on cache lines of their own: the
// reflector's per-event stores of issued (and hint) must not invalidate the
// lines of reached, gated or the waiters' mutex. At least one line between
// two groups means no alignment of the allocation puts them on one line.
func TestWatermarkLayout(t *testing.T) {
	var w watermark
	type group struct {
		name      string
		off, size uintptr
	}
	groups := []group{
		{"shards", unsafe.Offsetof(w.shards), unsafe.Sizeof(w.shards)},
		{"issued, hint", unsafe.Offsetof(w.issued), unsafe.Offsetof(w.hint) + unsafe.Sizeof(w.hint) - unsafe.Offsetof(w.issued)},
		{"reached", unsafe.Offsetof(w.reached), unsafe.Sizeof(w.reached)},
		{"gated", unsafe.Offsetof(w.gated), unsafe.Sizeof(w.gated)},
		{"mu", unsafe.Offsetof(w.mu), unsafe.Sizeof(w.mu)},
	}
	// Every named field is in a group above, so a new one cannot dodge the check.
	named := 0
	for f := range reflect.TypeFor[watermark]().Fields() {
		if f.Name != "_" {
			named++
		}
	}
	if named != 6 {
		t.Fatalf("watermark has %d named fields; update the groups of this test", named)
	}
	const line = 64
	for i := 1; i < len(groups); i++ {
		a, b := groups[i-1], groups[i]
		if b.off < a.off+a.size || b.off-(a.off+a.size) < line {
			t.Errorf("%s (offset %d, %d bytes) and %s (offset %d) are less than a cache line apart", a.name, a.off, a.size, b.name, b.off)
		}
	}
}
