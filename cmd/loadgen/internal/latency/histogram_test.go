package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []time.Duration
	for range 20000 {
		v := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		vals = append(vals, v)
		h.Record(v)
	}
	slices.Sort(vals)
	s := Merge(&h)
	for _, q := range []float64{.5, .9, .99, .999} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := s.Quantile(q)
		if d := float64(got-exact) / float64(exact); d > 1./64 || d < -1./64 {
			t.Errorf("q%v = %v, exact %v (%.1f%% off)", q, got, exact, 100*d)
		}
	}
	if s.Max != int64(vals[len(vals)-1]) || s.N != 20000 {
		t.Errorf("max %v n %d", time.Duration(s.Max), s.N)
	}
	// A window: what was recorded after a snapshot, with the same quantiles
	// as a Histogram of that part alone (max unknown: bucket midpoints).
	var alone Histogram
	for range 1000 {
		v := time.Duration(100+rng.IntN(900)) * time.Millisecond
		h.Record(v)
		alone.Record(v)
	}
	w, want := Merge(&h).Since(s), Merge(&alone)
	if w.N != 1000 || w.sum != want.sum || !slices.Equal(w.counts, want.counts) {
		t.Fatalf("window: n %d sum %d, want 1000 and %d, counts differ %v", w.N, w.sum, want.sum, !slices.Equal(w.counts, want.counts))
	}
	want.Max = math.MaxInt64
	for _, q := range []float64{.5, .99} {
		if got, exp := w.Quantile(q), want.Quantile(q); got != exp {
			t.Errorf("window q%v = %v, want %v", q, got, exp)
		}
	}
	if first := Merge(&alone).Since(Snapshot{}); first.N != 1000 {
		t.Errorf("window since the zero snapshot: n %d, want 1000", first.N)
	}
	for b := range bucketOf(math.MaxUint64) + 1 { // bounds and bucketOf agree, up to the last
		lo, hi := bucketBounds(b)
		if bucketOf(lo) != b || bucketOf(hi) != b || (b > 0 && bucketOf(lo-1) != b-1) {
			t.Fatalf("bucket %d: [%d, %d] maps to %d, %d", b, lo, hi, bucketOf(lo), bucketOf(hi))
		}
	}
}
