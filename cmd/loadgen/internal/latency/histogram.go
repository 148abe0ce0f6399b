package latency

import (
	"iter"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
)

// Histogram records durations in log-linear buckets: 32 sub-buckets per power
// of two, so a quantile is within 1/64 (1.6%) of the true value (with 8, two
// implementations within a few percent of each other tied or split on a
// bucket edge of 12.5%, and that decided runs; 16 KiB per histogram). Record is
// safe for concurrent use (atomic adds); one writer per histogram avoids
// cache-line contention, so each handler has its own and reports merge them.
type Histogram struct {
	counts [64 * subBuckets]atomic.Uint64
	max    atomic.Int64
	sum    atomic.Int64
	n      atomic.Uint64
}

const subBits = 5
const subBuckets = 1 << subBits

// bucketOf maps v ≥ 0 to its bucket: values below subBuckets are exact, above
// that the top subBits+1 significant bits select the bucket.
func bucketOf(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	exp := bits.Len64(v) - 1 // ≥ subBits
	sub := (v >> (exp - subBits)) & (subBuckets - 1)
	return (exp-subBits+1)*subBuckets + int(sub)
}

// bucketBounds returns the lowest and highest value of bucket b.
func bucketBounds(b int) (lo, hi uint64) {
	if b < subBuckets {
		return uint64(b), uint64(b)
	}
	exp := b/subBuckets + subBits - 1
	sub := uint64(b % subBuckets)
	lo = (1 << exp) | sub<<(exp-subBits)
	return lo, lo + (1 << (exp - subBits)) - 1
}

// Record adds d; safe for concurrent use.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(uint64(v))].Add(1)
	h.sum.Add(v)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Snapshot is a plain copy of histograms, merged.
type Snapshot struct {
	counts []uint64
	N      uint64 // values recorded
	sum    int64
	Max    int64 // nanoseconds; math.MaxInt64 when unknown (a window)
}

// Merge returns the sum of hs.
func Merge(hs ...*Histogram) Snapshot {
	s := Snapshot{counts: make([]uint64, 64*subBuckets)}
	for _, h := range hs {
		for i := range h.counts {
			s.counts[i] += h.counts[i].Load()
		}
		s.N += h.n.Load()
		s.sum += h.sum.Load()
		s.Max = max(s.Max, h.max.Load())
	}
	return s
}

// Since returns what was recorded after prev, an earlier snapshot of the
// same histograms (or the zero snapshot). The counts are read one by one while
// handlers record, so n is their sum; the maximum is unknown, so quantiles
// are bucket midpoints.
func (s Snapshot) Since(prev Snapshot) Snapshot {
	d := Snapshot{counts: slices.Clone(s.counts), sum: s.sum - prev.sum, Max: math.MaxInt64}
	for i := range d.counts {
		if prev.counts != nil {
			d.counts[i] -= prev.counts[i]
		}
		d.N += d.counts[i]
	}
	return d
}

// Quantile returns the q-quantile (0 < q ≤ 1) as the midpoint of its bucket,
// capped at the exact maximum.
func (s Snapshot) Quantile(q float64) time.Duration {
	if s.N == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.N)))
	var seen uint64
	for b, c := range s.counts {
		seen += c
		if seen >= rank && c > 0 {
			lo, hi := bucketBounds(b)
			return time.Duration(min(int64(lo+(hi-lo)/2), s.Max))
		}
	}
	return time.Duration(s.Max)
}

// Mean returns the mean value recorded.
func (s Snapshot) Mean() time.Duration {
	if s.N == 0 {
		return 0
	}
	return time.Duration(s.sum / int64(s.N))
}

// Buckets yields each non-empty bucket of s, in increasing order, as its
// exclusive upper bound and its count.
func (s Snapshot) Buckets() iter.Seq2[time.Duration, uint64] {
	return func(yield func(time.Duration, uint64) bool) {
		for b, c := range s.counts {
			if c == 0 {
				continue
			}
			_, hi := bucketBounds(b)
			if !yield(time.Duration(hi+1), c) {
				return
			}
		}
	}
}
