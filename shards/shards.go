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

// FNV-1a 64 parameters (public domain).
const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

// Hash returns the hash that places key: FNV-1a 64 over the key's bytes,
// followed by an avalanche step (the 64-bit finalizer of MurmurHash3).
//
// Raw FNV-1a is not enough because ranges are taken from the high bits: a key
// that differs from another only in its last byte ("ns/web-1", "ns/web-2")
// differs only around bit 40 of the FNV-1a value, so every such key of a
// workload would land in the same shard. The finalizer makes every input bit
// affect every output bit.
func Hash(key string) uint64 {
	return mix(FNV1a(key))
}

// FNV1a returns the FNV-1a 64 hash of key, equal to hash/fnv.New64a over the
// key's bytes, without allocating.
func FNV1a(key string) uint64 {
	h := uint64(offset64)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime64
	}
	return h
}

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
