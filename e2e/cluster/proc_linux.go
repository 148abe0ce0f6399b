package cluster

import "syscall"

// sysProcAttr puts the child in its own process group (so stop can signal
// the group) and has the kernel kill it if the test binary dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
