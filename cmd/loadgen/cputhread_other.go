//go:build !linux

package main

import "time"

// threadCPU is the calling thread's CPU time; unknown (0) off Linux.
func threadCPU() time.Duration { return 0 }
