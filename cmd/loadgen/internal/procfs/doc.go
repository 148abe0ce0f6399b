// Package procfs reads what loadgen measures of processes from Linux's /proc:
// a process's CPU time (/proc/<pid>/stat) and resident set (/proc/<pid>/statm),
// and the kernel's count of OOM kills (/proc/vmstat). Off Linux, or for a
// process that is gone, RSS and OOMKills return 0 and CPU an error.
//
//	cpu, err := procfs.CPU(pid)
package procfs
