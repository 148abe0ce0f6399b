package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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
		if _, err := procCPU(pid); err != nil {
			return nil, fmt.Errorf("--server-pids: %w", err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procCPU returns a process's user+system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStat(string(b))
}

// parseProcStat reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %.40q: no command name", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat %.40q: %d fields after the command name, want at least 13", s, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("/proc stat: CPU time %q is not a tick count", v)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// serversCPU returns the summed CPU time of pids; a process that is gone
// counts as an error.
func serversCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := procCPU(pid)
		if err != nil {
			return 0, fmt.Errorf("--server-pids: %w", err)
		}
		sum += d
	}
	return sum, nil
}
