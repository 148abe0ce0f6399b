package shards

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"testing"
)

func TestFNV1aMatchesStdlib(t *testing.T) {
	for _, key := range []string{"", "a", "default/nginx-1", "kube-system/coredns-5d78c9869d-abcde", "node-1"} {
		h := fnv.New64a()
		h.Write([]byte(key))
		if got, want := FNV1a(key), h.Sum64(); got != want {
			t.Errorf("FNV1a(%q) = %#x, want %#x", key, got, want)
		}
	}
}

// Keys that differ only in their last characters, as the pods of a
// ReplicaSet or a StatefulSet do, must still spread over the shards.
func TestSequentialNamesSpread(t *testing.T) {
	for _, n := range []int{2, 3, 8} {
		r, _ := New(n)
		counts := make([]int, n)
		for i := range 1000 {
			counts[r.Of(fmt.Sprintf("ns/cm-%03d", i))]++
		}
		for s, c := range counts {
			if want := 1000 / n; math.Abs(float64(c-want)) > 0.2*float64(want) {
				t.Errorf("n=%d: shard %d got %d of 1000 sequential keys, want about %d", n, s, c, want)
			}
		}
	}
}

func TestNewRejectsBadCount(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := New(n); !errors.Is(err, ErrCount) {
			t.Errorf("New(%d) error = %v, want ErrCount", n, err)
		}
	}
}

func TestOfIsInRangeStableAndContiguous(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16} {
		r, err := New(n)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, n)
		for i := range 20000 {
			key := fmt.Sprintf("ns-%d/pod-%d", i%37, i)
			s := r.Of(key)
			if s < 0 || s >= n {
				t.Fatalf("n=%d: Of(%q) = %d out of range", n, key, s)
			}
			if again := r.Of(key); again != s {
				t.Fatalf("n=%d: Of(%q) not stable: %d then %d", n, key, s, again)
			}
			// Contiguous hash ranges: shard i owns [i*2^64/n, (i+1)*2^64/n).
			lo := float64(s) * math.Exp2(64) / float64(n)
			hi := float64(s+1) * math.Exp2(64) / float64(n)
			if h := float64(Hash(key)); h < lo*(1-1e-12) || h > hi*(1+1e-12) {
				t.Fatalf("n=%d: hash of %q outside shard %d's range", n, key, s)
			}
			counts[s]++
		}
		// FNV-1a spreads realistic keys evenly: no shard is off by more than 10%.
		want := 20000 / n
		for s, c := range counts {
			if math.Abs(float64(c-want)) > 0.1*float64(want) {
				t.Errorf("n=%d: shard %d got %d keys, want about %d", n, s, c, want)
			}
		}
	}
}

func TestDefaultCountIsPositive(t *testing.T) {
	if DefaultCount() < 1 {
		t.Fatalf("DefaultCount() = %d", DefaultCount())
	}
}

func BenchmarkOf(b *testing.B) {
	r, _ := New(8)
	key := "kube-system/coredns-5d78c9869d-abcde"
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Of(key)
	}
}
