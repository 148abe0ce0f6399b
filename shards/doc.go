// Package shards maps object keys to shards.
//
// A key is the informer key of an object: "namespace/name", or "name" for a
// cluster-scoped object. Its shard is a pure function of the key, so every
// event of one object takes the same path through the pipeline and per-key
// order holds end to end.
//
// The hash is FNV-1a 64 (the family the API server's shard selector,
// KEP-5866, uses) followed by an avalanche step, because ranges come from the
// high bits and raw FNV-1a leaves them unchanged when keys differ only at the
// end, as sequential names do. A Router with n shards gives shard i the
// contiguous hash range [i·2⁶⁴/n, (i+1)·2⁶⁴/n).
//
// A Router is an immutable value: copy it freely and use it from any
// goroutine.
package shards
