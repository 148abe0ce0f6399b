package shardselector

// FNV-1a 64 parameters (the hash of hash/fnv.New64a, and of the API
// server's sharding.HashField).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Hash returns the 64-bit FNV-1a hash of value's bytes: the position of an
// object whose selected field has this value in the shard hash space.
func Hash(value string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(value); i++ {
		h ^= uint64(value[i])
		h *= fnvPrime64
	}
	return h
}
