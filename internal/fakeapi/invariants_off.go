//go:build !invariants && !race

package fakeapi

// invariants: see invariants_on.go.
const invariants = false
