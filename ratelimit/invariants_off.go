//go:build !invariants && !race

package ratelimit

// invariants: see invariants_on.go.
const invariants = false

// segSize is the number of cells per ready-queue segment: one allocation
// per segSize keys (16 KiB for a string key). Race and invariants builds use
// tiny segments (invariants_on.go).
const segSize = 512
