//go:build unix

package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is one server process whose output goes to a log file that
// survives restarts. Not safe for concurrent use; Cluster serialises calls.
type process struct {
	name    string
	path    string
	args    []string
	logPath string

	cmd  *exec.Cmd
	done chan struct{} // closed by the waiter goroutine when cmd exits
	err  error         // exit error; read only after done is closed
}

// start launches the process in its own process group, appending its output
// to logPath. The waiter goroutine it starts exits when the process does.
func (p *process) start() error {
	if p.running() {
		return fmt.Errorf("cluster: %s already running", p.name)
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== %s starting at %s: %s %q\n", p.name, time.Now().Format(time.RFC3339Nano), p.path, p.args)
	cmd := exec.Command(p.path, p.args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("cluster: starting %s: %w", p.name, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	done := p.done
	go func() { // waiter: owns cmd.Wait and the log file handle
		err := cmd.Wait()
		logf.Close()
		p.err = err
		close(done)
	}()
	return nil
}

func (p *process) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exited returns a channel closed when the current process exits (nil when
// never started).
func (p *process) exited() <-chan struct{} { return p.done }

// stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the exit. It is a no-op when the process is not running.
func (p *process) stop(grace time.Duration) {
	if !p.running() {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Reap anything left in the group (a server never forks, but be sure).
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// tail returns at most the last n bytes of the log file.
func (p *process) tail(n int64) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := int64(0)
	if st.Size() > n {
		off = st.Size() - n
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err.Error()
	}
	b, _ := io.ReadAll(f)
	prefix := ""
	if off > 0 {
		prefix = fmt.Sprintf("(... %d earlier bytes in %s)\n", off, p.logPath)
	}
	return prefix + string(b)
}

// processAlive reports whether pid names a live process.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
