package shardselector

import "github.com/shardinformer/shardinformer/shards"

// Hash returns the 64-bit FNV-1a hash of value's bytes (the API server's
// sharding.HashField, as a number): the position in the shard hash space of
// an object whose selected field has this value.
func Hash(value string) uint64 { return shards.FNV1a(value) }
