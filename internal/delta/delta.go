// Package delta stores a byte string as a delta against a similar one, the
// reference: copies out of the reference and literal bytes. The objects of
// one template — the pods of a ReplicaSet — encode to byte strings that are
// the same but for names, IPs, times and ids, so a pod's few kilobytes of
// protobuf become a few hundred bytes. The simulated API server stores its
// encodings this way (apisim, Config.EncodedOnly), and so does the compact
// store (package compact).
package delta

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// The format of a delta:
//
//	uvarint(decoded length)
//	repeated: uvarint(literal length), literal bytes,
//	          [until the decoded length is reached:]
//	          zigzag uvarint(copy offset − end of the previous copy), uvarint(copy length − minMatch)
//
// Offsets are relative to where the previous copy ended, so that a copy
// resuming in step with the reference (the common case: a literal replaced a
// run of the same length) costs one byte.

// minMatch is the shortest copy worth an operation (its offset and
// length take two to four bytes).
const minMatch = 6

// Ref is a reference byte string with a hash index of its minMatch-byte
// windows. Immutable once built; safe for concurrent use. Its memory is the
// reference's bytes plus an index of about half as many bytes (at most 128
// KiB); neither holds a pointer.
type Ref struct {
	data  []byte
	index []uint16 // hash of data[i:i+minMatch] → i+1 (0: none); positions past 65534 are not indexed
	shift uint     // 64 − log2(len(index))
}

func NewRef(data []byte) *Ref {
	size := 256
	for size < len(data)/2 && size < 1<<16 {
		size <<= 1
	}
	r := &Ref{data: data, index: make([]uint16, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	for i := 0; i+8 <= len(data) && i < 1<<16-1; i++ {
		h := r.hash(data[i:])
		if r.index[h] == 0 { // the first occurrence: references and objects run in step
			r.index[h] = uint16(i + 1)
		}
	}
	return r
}

// hash hashes the minMatch bytes at b. REQUIRES: len(b) >= 8.
func (r *Ref) hash(b []byte) uint64 {
	v := binary.LittleEndian.Uint64(b) << (64 - 8*minMatch)
	return (v * 0x9e3779b97f4a7c15) >> r.shift
}

// matchLen returns the length of the common prefix of a and b.
func matchLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		if x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Encode appends src as a delta against r to dst.
func (r *Ref) Encode(dst, src []byte) []byte {
	ref := r.data
	dst = binary.AppendUvarint(dst, uint64(len(src)))
	lit := 0     // start of the pending literal in src
	prevEnd := 0 // end of the previous copy in ref
	prevSrc := 0 // end of the previous copy in src
	i := 0
	for i+8 <= len(src) {
		best, bestLen := 0, 0
		word := binary.LittleEndian.Uint32(src[i:])
		// In step with the previous copy, or a byte or two off it (a value
		// replaced by a longer or shorter one): the same distance further
		// on in the reference, which is read in order, from the cache.
		step := prevEnd + (i - prevSrc)
		for _, d := range [...]int{0, -1, 1, -2, 2} {
			if p := step + d; p >= 0 && p+4 <= len(ref) && binary.LittleEndian.Uint32(ref[p:]) == word {
				if l := 4 + matchLen(ref[p+4:], src[i+4:]); l > bestLen {
					best, bestLen = p, l
				}
				if bestLen >= minMatch {
					break
				}
			}
		}
		// Elsewhere: the index, consulted at every 16th byte of a literal
		// from its 8th only (a random access, slow once references outgrow
		// the caches; most literals are a value replaced, resolved in step);
		// a match found late grows backwards over the bytes skipped.
		if bestLen < minMatch && (i-lit)&15 == 8 {
			if q := int(r.index[r.hash(src[i:])]) - 1; q >= 0 && binary.LittleEndian.Uint32(ref[q:]) == word {
				if l := 4 + matchLen(ref[q+4:], src[i+4:]); l > bestLen {
					best, bestLen = q, l
				}
			}
		}
		if bestLen < minMatch {
			i++
			continue
		}
		for i > lit && best > 0 && src[i-1] == ref[best-1] { // grow backwards over the literal
			i--
			best--
			bestLen++
		}
		dst = binary.AppendUvarint(dst, uint64(i-lit))
		dst = append(dst, src[lit:i]...)
		dst = binary.AppendUvarint(dst, zigzag(best-prevEnd))
		dst = binary.AppendUvarint(dst, uint64(bestLen-minMatch))
		i += bestLen
		lit, prevEnd, prevSrc = i, best+bestLen, i
	}
	if lit < len(src) || len(src) == 0 {
		dst = binary.AppendUvarint(dst, uint64(len(src)-lit))
		dst = append(dst, src[lit:]...)
	}
	return dst
}

// ErrMalformed is returned by Decode for bytes that are not a delta against
// the reference.
var ErrMalformed = errors.New("delta: malformed delta")

// Decode appends the encoding delta describes to dst.
func (r *Ref) Decode(dst, delta []byte) ([]byte, error) {
	ref := r.data
	n, k := binary.Uvarint(delta)
	if k <= 0 || n > uint64(len(delta))*uint64(len(ref)+1) { // each operation yields at most a reference or its own bytes
		return dst, ErrMalformed
	}
	delta = delta[k:]
	start := len(dst)
	want := start + int(n)
	dst = Grow(dst, int(n))
	prevEnd := 0
	for {
		l, k := binary.Uvarint(delta)
		if k <= 0 || l > uint64(len(delta)-k) || l > uint64(want-len(dst)) {
			return dst, ErrMalformed
		}
		dst = append(dst, delta[k:k+int(l)]...)
		delta = delta[k+int(l):]
		if len(dst) == want {
			if len(delta) != 0 {
				return dst, ErrMalformed
			}
			return dst, nil
		}
		z, k1 := binary.Uvarint(delta)
		if k1 <= 0 {
			return dst, ErrMalformed
		}
		c, k2 := binary.Uvarint(delta[k1:])
		if k2 <= 0 || c > uint64(want-len(dst)) {
			return dst, ErrMalformed
		}
		delta = delta[k1+k2:]
		off := prevEnd + unzigzag(z)
		end := off + int(c) + minMatch
		if off < 0 || end > len(ref) || end < off || len(dst)+end-off > want {
			return dst, ErrMalformed
		}
		dst = append(dst, ref[off:end]...)
		prevEnd = end
		if len(dst) == want {
			if len(delta) != 0 {
				return dst, ErrMalformed
			}
			return dst, nil
		}
	}
}

// Len returns the decoded length a delta declares.
func Len(delta []byte) int {
	n, _ := binary.Uvarint(delta)
	return int(n)
}

func zigzag(v int) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int { return int(u>>1) ^ -int(u&1) }

// Grow returns b with room for n more bytes.
func Grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	out := make([]byte, len(b), len(b)+n)
	copy(out, b)
	return out
}
