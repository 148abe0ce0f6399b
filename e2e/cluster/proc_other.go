//go:build unix && !linux

package cluster

import "syscall"

// sysProcAttr puts the child in its own process group so stop can signal the
// group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
