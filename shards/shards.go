package shards

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
)

// ErrCount is returned by New for a shard count below one.
var ErrCount = errors.New("shards: shard count must be at least 1")

// Router routes keys to one of a fixed number of shards.
// The zero value is not usable; build one with New. A Router may be copied.
type Router struct {
	n uint64
}

// New returns a Router over n shards.
func New(n int) (Router, error) {
	if n < 1 {
		return Router{}, fmt.Errorf("%w, got %d", ErrCount, n)
	}
	return Router{n: uint64(n)}, nil
}

// DefaultCount is the shard count used when none is configured: one shard per
// processor the Go scheduler may use (GOMAXPROCS), so every drain goroutine can
// run at once.
func DefaultCount() int {
	return max(1, runtime.GOMAXPROCS(0))
}

// Count returns the number of shards.
func (r Router) Count() int { return int(r.n) }

// Of returns the shard of key, in [0, Count()).
func (r Router) Of(key string) int {
	hi, _ := bits.Mul64(Hash(key), r.n)
	return int(hi)
}

// FNV-1a 64 parameters (FIPS-free public domain constants, see
// http://www.isthe.com/chongo/tech/comp/fnv/).
const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

// Hash returns the FNV-1a 64 hash of key. It is equal to
// hash/fnv.New64a over the key's bytes, without allocating.
func Hash(key string) uint64 {
	h := uint64(offset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime64
	}
	return h
}
