// Package pbscan reads fields of protobuf messages without decoding them:
// what apisim's tests and its scale tool need to look inside a response
// (the "k8s\x00" envelope, a list's metadata and items) by field number.
package pbscan

import "encoding/binary"

// Field returns the first length-delimited field num of message b. It
// reports false if there is none, or if b holds a field that is not
// length-delimited or is cut short before it.
func Field(b []byte, num uint64) ([]byte, bool) {
	for len(b) > 0 {
		tag, k := binary.Uvarint(b)
		if k <= 0 || tag&7 != 2 {
			return nil, false
		}
		l, m := binary.Uvarint(b[k:])
		if m <= 0 || uint64(len(b)-k-m) < l {
			return nil, false
		}
		if tag>>3 == num {
			return b[k+m : k+m+int(l)], true
		}
		b = b[k+m+int(l):]
	}
	return nil, false
}
