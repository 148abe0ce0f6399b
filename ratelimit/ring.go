package ratelimit

// ring is a growable FIFO of keys backed by a power-of-two circular buffer.
//
// It is not safe for concurrent use; the Queue guards it with its mutex.
// It grows by doubling when full and never shrinks, so its memory is bounded
// by the largest number of keys that were ready at once. The zero value is an
// empty ring.
type ring[K any] struct {
	buf  []K // len(buf) is 0 or a power of two
	head int // index of the oldest element
	n    int // number of elements
}

func (r *ring[K]) len() int { return r.n }

func (r *ring[K]) push(k K) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = k
	r.n++
}

// pop removes and returns the oldest element.
// REQUIRES: r.len() > 0.
func (r *ring[K]) pop() K {
	var zero K
	k := r.buf[r.head]
	r.buf[r.head] = zero // let the GC reclaim what the key points to
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return k
}

// at returns the i-th oldest element without removing it.
// REQUIRES: 0 <= i < r.len().
func (r *ring[K]) at(i int) K {
	return r.buf[(r.head+i)&(len(r.buf)-1)]
}

func (r *ring[K]) grow() {
	size := 2 * len(r.buf)
	if size == 0 {
		size = 16
	}
	buf := make([]K, size)
	for i := 0; i < r.n; i++ {
		buf[i] = r.at(i)
	}
	r.buf, r.head = buf, 0
}
