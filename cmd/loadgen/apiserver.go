package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
)

// --server-pids: the CPU a local API server (and etcd) spent while the
// clients synced. On a small machine the server shares the cores with the
// client under test, so its work during the initial list is part of what the
// client's wall time measures.

// parsePIDs parses --server-pids: comma-separated positive process ids of
// processes whose /proc/<pid>/stat is readable now.
func parsePIDs(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var pids []int
	for _, f := range strings.Split(s, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || pid < 1 {
			return nil, fmt.Errorf("--server-pids %q: %q is not a process id", s, f)
		}
		if _, err := procfs.CPU(pid); err != nil {
			return nil, fmt.Errorf("--server-pids: %w", err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// serversCPU returns the summed CPU time of pids; a process that is gone
// counts as an error.
func serversCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := procfs.CPU(pid)
		if err != nil {
			return 0, fmt.Errorf("--server-pids: %w", err)
		}
		sum += d
	}
	return sum, nil
}
