// Package procfs reads what loadgen measures of processes from Linux's /proc:
// a process's CPU time (/proc/<pid>/stat) and resident set (/proc/<pid>/statm),
// the kernel's count of OOM kills (/proc/vmstat) and the machine's memory
// (/proc/meminfo). Off Linux, or for a process that is gone, RSS, OOMKills
// and MemTotal return 0 and CPU an error.
//
//	cpu, err := procfs.CPU(pid)
package procfs
