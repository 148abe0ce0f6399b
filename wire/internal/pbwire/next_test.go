package pbwire

import "testing"

// TestNextFastPath checks next against nextSlow, the general path, on
// every two-byte start of a field (a tag of one or two bytes, the first
// byte of a length or varint), with third and fourth bytes and tails that
// make the field fit, end exactly or run past the input.
func TestNextFastPath(t *testing.T) {
	for _, tail := range []int{0, 127, 300} {
		for k := range 25 {
			b := make([]byte, 4+tail)
			bytes := []byte{0, 1, 0x7f, 0x80, 0xff}
			b[2], b[3] = bytes[k%5], bytes[k/5]
			for x := range 256 {
				for y := range 256 {
					b[0], b[1] = byte(x), byte(y)
					// Each input once: b, and with tail 0 (b is then 4 bytes) its
					// 3-byte prefix for each third byte and its 2-byte prefix.
					ins := [3][]byte{b}
					n := 1
					if tail == 0 && k/5 == 0 {
						ins[n], n = b[:3], n+1
						if k == 0 {
							ins[n], n = b[:2], n+1
						}
					}
					for _, in := range ins[:n] {
						fast, errFast := next(in, 0)
						slow, errSlow := nextSlow(in, 0)
						if fast != slow || (errFast == nil) != (errSlow == nil) || errFast != nil && errFast.Error() != errSlow.Error() {
							t.Fatalf("next(% x…, %d bytes) = %+v, %v; nextSlow: %+v, %v", in[:2], len(in), fast, errFast, slow, errSlow)
						}
					}
				}
			}
		}
	}
}
