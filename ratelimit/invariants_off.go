//go:build !invariants && !race

package ratelimit

// invariants: see invariants_on.go.
const invariants = false
