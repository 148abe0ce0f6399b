package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// CPU returns a process's user+system CPU time from /proc/<pid>/stat.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseStat(string(b))
}

// ParseStat reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func ParseStat(s string) (time.Duration, error) {
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

// RSS is a process's resident set in bytes (/proc/<pid>/statm; 0 if
// unknown).
func RSS(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// OOMKills is the kernel's count of OOM kills (/proc/vmstat oom_kill; 0 if
// unknown).
func OOMKills() uint64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// MemTotal is the machine's memory in bytes (/proc/meminfo MemTotal; 0 if
// unknown).
func MemTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
