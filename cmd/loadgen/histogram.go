package main

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
)

// histogram records durations in log-linear buckets: 32 sub-buckets per power
// of two, so a quantile is within 1/64 (1.6%) of the true value (with 8, two
// implementations within a few percent of each other tied or split on a
// bucket edge of 12.5%, and that decided runs; 16 KiB per histogram). Record is
// safe for concurrent use (atomic adds); one writer per histogram avoids
// cache-line contention, so each handler has its own and reports merge them.
type histogram struct {
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

func (h *histogram) record(d time.Duration) {
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

// snapshot is a plain copy of histograms, merged.
type snapshot struct {
	counts []uint64
	n      uint64
	sum    int64
	max    int64
}

func merge(hs ...*histogram) snapshot {
	s := snapshot{counts: make([]uint64, 64*subBuckets)}
	for _, h := range hs {
		for i := range h.counts {
			s.counts[i] += h.counts[i].Load()
		}
		s.n += h.n.Load()
		s.sum += h.sum.Load()
		s.max = max(s.max, h.max.Load())
	}
	return s
}

// since returns what was recorded after prev, an earlier snapshot of the
// same histograms (or the zero snapshot). The counts are read one by one while
// handlers record, so n is their sum; the maximum is unknown, so quantiles
// are bucket midpoints.
func (s snapshot) since(prev snapshot) snapshot {
	d := snapshot{counts: slices.Clone(s.counts), sum: s.sum - prev.sum, max: math.MaxInt64}
	for i := range d.counts {
		if prev.counts != nil {
			d.counts[i] -= prev.counts[i]
		}
		d.n += d.counts[i]
	}
	return d
}

// quantile returns the q-quantile (0 < q ≤ 1) as the midpoint of its bucket,
// capped at the exact maximum.
func (s snapshot) quantile(q float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(s.n)))
	var seen uint64
	for b, c := range s.counts {
		seen += c
		if seen >= rank && c > 0 {
			lo, hi := bucketBounds(b)
			return time.Duration(min(int64(lo+(hi-lo)/2), s.max))
		}
	}
	return time.Duration(s.max)
}

func (s snapshot) mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return time.Duration(s.sum / int64(s.n))
}
