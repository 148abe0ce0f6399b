package testkit

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// EnvFaultSeed names the environment variable that fixes the seed of the
// fault-injecting tests (package faults, e2e under faults); FaultSeed reads
// it.
const EnvFaultSeed = "SHARDINFORMER_FAULT_SEED"

// FaultSeed returns the seed a fault-injecting test draws its faults with:
// $SHARDINFORMER_FAULT_SEED if set (a bad value fails the test), else a new
// one from the clock. It logs the seed and, if the test fails, how to rerun
// it with the same seed.
func FaultSeed(t testing.TB) int64 {
	t.Helper()
	seed := time.Now().UnixNano() % 1_000_000
	if s := os.Getenv(EnvFaultSeed); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not an integer", EnvFaultSeed, s)
		}
		seed = n
	}
	t.Logf("fault seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rerun with the same faults: %s=%d go test -run '^%s$'", EnvFaultSeed, seed, t.Name())
		}
	})
	return seed
}
