package pbwire

import (
	"fmt"
	"testing"
)

// TestNextFastPath checks next against nextSlow, the general path, on
// every one- and two-byte start of a field, with third bytes and tails
// that make the field fit, end exactly or run past the input.
func TestNextFastPath(t *testing.T) {
	for _, tail := range []int{0, 1, 126, 127, 300} {
		for _, third := range []byte{0, 1, 0x7f, 0x80, 0xff} {
			b := make([]byte, 3+tail)
			b[2] = third
			for x := range 256 {
				for y := range 256 {
					b[0], b[1] = byte(x), byte(y)
					for _, in := range [][]byte{b, b[:2], b[:3]} {
						fast, errFast := next(in, 0)
						slow, errSlow := nextSlow(in, 0)
						if fast != slow || fmt.Sprint(errFast) != fmt.Sprint(errSlow) {
							t.Fatalf("next(% x…, %d bytes) = %+v, %v; nextSlow: %+v, %v", in[:2], len(in), fast, errFast, slow, errSlow)
						}
					}
				}
			}
		}
	}
}
