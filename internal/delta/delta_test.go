package delta_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/delta"
)

// TestRoundTrip: a delta decodes to the encoding it was taken from,
// whatever the reference — the encoding itself, a replica, an unrelated
// encoding, nothing — and is small against a replica.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	enc := func(p *corev1.Pod) []byte {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base := enc(apisim.NewPod("ns", "p-0", 0, apisim.PodOptions{Apps: 1}))
	ref := delta.NewRef(base)
	var replicaBytes, deltaBytes int
	for i := range 300 {
		var src []byte
		switch i % 5 {
		case 0: // a replica of the reference's template
			src = enc(apisim.NewPod("ns", fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{Apps: 1}))
			d := ref.Encode(nil, src)
			replicaBytes += len(src)
			deltaBytes += len(d)
		case 1: // another template, managedFields
			src = enc(apisim.NewPod("other", fmt.Sprintf("q-%d", i), int64(i), apisim.PodOptions{ManagedFields: true}))
		case 2: // random bytes
			src = make([]byte, r.IntN(300))
			for j := range src {
				src[j] = byte(r.IntN(4))
			}
		case 3: // the reference with random edits
			src = bytes.Clone(base)
			for range 1 + r.IntN(20) {
				j := r.IntN(len(src))
				switch r.IntN(3) {
				case 0:
					src[j]++
				case 1:
					src = append(src[:j], src[j+1+r.IntN(min(50, len(src)-j-1)):]...)
				default:
					src = append(src[:j], append([]byte("inserted"), src[j:]...)...)
				}
			}
		default: // short and empty
			src = base[r.IntN(len(base)):][:r.IntN(8)]
		}
		for _, rf := range []*delta.Ref{ref, delta.NewRef(src), delta.NewRef(nil)} {
			d := rf.Encode(nil, src)
			if delta.Len(d) != len(src) {
				t.Fatalf("case %d: delta declares %d bytes, encoding has %d", i, delta.Len(d), len(src))
			}
			got, err := rf.Decode([]byte("prefix"), d)
			if err != nil || !bytes.Equal(got[len("prefix"):], src) || string(got[:len("prefix")]) != "prefix" {
				t.Fatalf("case %d: decode: %v, equal %v", i, err, err == nil && bytes.Equal(got[len("prefix"):], src))
			}
		}
	}
	if deltaBytes*8 > replicaBytes {
		t.Errorf("replicas' deltas are %d bytes for %d bytes of protobuf: want at most 1/8", deltaBytes, replicaBytes)
	}
	t.Logf("replicas: %d bytes of protobuf, %d of deltas", replicaBytes, deltaBytes)
}

// TestMalformed: a corrupt delta is an error, never a panic or an
// out-of-range read.
func TestMalformed(t *testing.T) {
	ref := delta.NewRef([]byte("0123456789abcdefghijklmnopqrstuvwxyz"))
	good := ref.Encode(nil, []byte("xx0123456789abcdefyyghijklmnopqrstuvwxyzzz"))
	for i := range good {
		for _, b := range []byte{0, 1, 0x7f, 0x80, 0xff} {
			d := bytes.Clone(good)
			d[i] = b
			_, _ = ref.Decode(nil, d)
		}
		if _, err := ref.Decode(nil, good[:i]); err == nil {
			t.Errorf("a delta cut at %d of %d decodes", i, len(good))
		}
	}
	if _, err := ref.Decode(nil, append(bytes.Clone(good), 0)); err == nil {
		t.Error("a delta with a trailing byte decodes")
	}
}

func FuzzDelta(f *testing.F) {
	f.Add([]byte("0123456789abcdefghijklmnop"), []byte("01234567xx9abcdefghijklmnopq"))
	f.Add([]byte{}, []byte("a"))
	f.Fuzz(func(t *testing.T, ref, src []byte) {
		r := delta.NewRef(ref)
		d := r.Encode(nil, src)
		got, err := r.Decode(nil, d)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("round trip: %v", err)
		}
		_, _ = r.Decode(nil, src) // any bytes as a delta: an error or a result, no panic
	})
}

// Benchmark measures taking and applying the delta of a pod's
// protobuf against its template's reference.
func Benchmark(b *testing.B) {
	enc := func(i int) []byte {
		p, err := apisim.NewPod("loadgen-001", fmt.Sprintf("pod-%06d", i), int64(1<<32+i), apisim.PodOptions{Apps: 1}).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	ref := delta.NewRef(enc(0))
	srcs := make([][]byte, 64)
	for i := range srcs {
		srcs[i] = enc(i + 1)
	}
	b.Run("op=encode", func(b *testing.B) {
		var out []byte
		n := 0
		for i := range b.N {
			out = ref.Encode(out[:0], srcs[i%len(srcs)])
			n += len(out)
		}
		b.SetBytes(int64(len(srcs[0])))
		b.ReportMetric(float64(n)/float64(b.N), "delta-bytes/op")
	})
	b.Run("op=decode", func(b *testing.B) {
		deltas := make([][]byte, len(srcs))
		for i, s := range srcs {
			deltas[i] = ref.Encode(nil, s)
		}
		var out []byte
		for i := range b.N {
			var err error
			if out, err = ref.Decode(out[:0], deltas[i%len(deltas)]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(srcs[0])))
	})
}
