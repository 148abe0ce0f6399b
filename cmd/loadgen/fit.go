package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
)

// Whether an implementation fits: the parent enforces --child-mem-limit on
// every implementation's child process by sampling its resident set, and
// kills a child above it. Such a child, one the kernel killed (SIGKILL: the
// OOM killer or a cgroup's memory limit) and one whose Go runtime ran out of
// memory did not fit: the report says "did not fit in N GiB" for that
// implementation and size, and the run goes on with the next trial. The
// implementation is not run again at that size or above (it would not fit
// there either); those trials are reported as not run.

// childMemHeadroom is what --child-mem-limit's default leaves of the
// machine's memory to the parent (the simulated server peaks at ≈2.7 GiB of
// RSS at 1M pods, bench/results/apisim-1m.md) and the system.
const childMemHeadroom = 4 << 30

// rssWatchEvery is how often the parent reads a child's resident set: a
// child that allocates a GiB a second overshoots the limit by ~50 MiB
// before it is killed.
const rssWatchEvery = 50 * time.Millisecond

// defaultChildMemLimit is --child-mem-limit's default: the machine's memory
// less childMemHeadroom, rounded down to whole GiB (0 = none, if the
// machine's memory is unknown or too small for that).
func defaultChildMemLimit() int64 {
	total := int64(procfs.MemTotal())
	if total <= 2*childMemHeadroom {
		return 0
	}
	return (total - childMemHeadroom) &^ (1<<30 - 1)
}

// defaultChildMemLimitFlag is defaultChildMemLimit as the flag spells it.
func defaultChildMemLimitFlag() string {
	if l := defaultChildMemLimit(); l > 0 {
		return fmt.Sprintf("%dGiB", l>>30)
	}
	return "0"
}

// parseMemLimit reads --child-mem-limit: a size in binary units (20GiB,
// 20Gi, 512MiB, 1.5GiB, 1048576) or 0, "none" or "off" for no limit.
func parseMemLimit(s string) (int64, error) {
	bad := fmt.Errorf("--child-mem-limit %q: want a size in binary units (e.g. 20GiB, 512MiB) or 0 for no limit", s)
	t := strings.TrimSpace(s)
	switch t {
	case "0", "none", "off":
		return 0, nil
	}
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"B", 1}} {
		if r, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(r), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, bad
	}
	if v < 0 {
		return 0, fmt.Errorf("--child-mem-limit %q: must not be negative (0 = no limit)", s)
	}
	n := v * mult
	if n >= math.MaxInt64 {
		return 0, bad
	}
	if n > 0 && n < 1<<20 {
		return 0, fmt.Errorf("--child-mem-limit %q: below 1 MiB; no process fits in that (0 = no limit)", s)
	}
	return int64(n), nil
}

// childSoftLimit is the Go soft memory limit (what GOMEMLIMIT sets) of a
// child whose resident set the parent kills above limit: 90% of it. It
// helps: without it, GOGC lets the heap grow to twice the live heap, so a
// child whose live heap fits would be killed for garbage it had not yet
// collected, and with the default soft limit of half the machine a child
// allowed more than that would collect continuously from half the machine
// on. With it, the GC paces as usual until the heap nears the limit, then
// works harder (its CPU shows in the GC figures) so that only a child whose
// live heap, stacks and runtime structures do not fit is killed. The tenth
// left is for what the soft limit does not cover (the binary's mapped text,
// memory the runtime has freed but the kernel not yet taken back).
func childSoftLimit(limit int64) int64 { return limit - limit/10 }

// fitText is the report's words for a limit.
func fitText(limit int64) string { return "did not fit in " + fmtLimit(limit) }

// fmtLimit formats a memory limit: whole GiB or MiB without decimals.
func fmtLimit(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return report.FmtBytes(float64(b))
}

// childWatch is the parent's watch over one child's memory: a goroutine that
// samples its resident set every rssWatchEvery, keeps the peak and kills the
// child above limit, and what tells, once the child has exited, whether it
// did not fit.
type childWatch struct {
	limit   int64
	pid     int
	oomKill uint64 // /proc/vmstat oom_kill when the child started
	start   time.Time
	stderr  *oomScanner

	quit, exited chan struct{}
	mu           sync.Mutex
	peak         uint64
	killed       bool // by this watch, above the limit
}

// watchChild starts watching cmd's process (started, not yet waited for;
// its Stderr an oomScanner). With limit 0 it only keeps the peak.
func watchChild(cmd *exec.Cmd, limit int64, scan *oomScanner, oomKill0 uint64) *childWatch {
	w := &childWatch{limit: limit, pid: cmd.Process.Pid, oomKill: oomKill0, start: time.Now(), stderr: scan,
		quit: make(chan struct{}), exited: make(chan struct{})}
	// The kernel's OOM killer should pick the child, whose size is the
	// measurement, rather than the parent (the server) or a neighbour.
	// Raising one's child's score needs no privilege; failing is harmless.
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", w.pid), []byte("1000"), 0)
	go func() { // the child's RSS watch; stop joins it
		defer close(w.exited)
		tick := time.NewTicker(rssWatchEvery)
		defer tick.Stop()
		for {
			select {
			case <-w.quit:
				return
			case <-tick.C:
			}
			r := procfs.RSS(w.pid)
			w.mu.Lock()
			w.peak = max(w.peak, r)
			over := w.limit > 0 && r > uint64(w.limit) && !w.killed
			if over {
				w.killed = true
			}
			w.mu.Unlock()
			if over {
				// os.Process signals through a pidfd, and the child is not
				// reaped before stop: this cannot reach another process.
				_ = cmd.Process.Kill()
			}
		}
	}()
	return w
}

// stop ends the watch; call it before cmd.Wait, so that the pid sampled is
// still the child's (exited, maybe, but not reaped).
func (w *childWatch) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.exited
}

// verdict returns, after the child exited with waitErr, whether it did not
// fit and why; nil if it fitted (exited normally, or failed otherwise).
func (w *childWatch) verdict(waitErr error) *report.DidNotFit {
	w.mu.Lock()
	peak, killed := w.peak, w.killed
	w.mu.Unlock()
	d := &report.DidNotFit{LimitBytes: w.limit, PeakRSSBytes: peak, Seconds: time.Since(w.start).Seconds()}
	var ee *exec.ExitError
	if waitErr == nil || !errors.As(waitErr, &ee) {
		return nil
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	switch {
	case killed:
		d.Reason = fmt.Sprintf("resident set %s above --child-mem-limit %s: killed by loadgen", report.FmtBytes(float64(peak)), fmtLimit(w.limit))
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		d.Reason = "killed by SIGKILL, not by loadgen: the kernel's OOM killer or a cgroup's memory limit"
		if n := procfs.OOMKills(); n > w.oomKill {
			d.Reason = "killed by the kernel's OOM killer (SIGKILL; /proc/vmstat oom_kill rose)"
		}
	case w.stderr != nil && w.stderr.seen():
		d.Reason = "the Go runtime ran out of memory (fatal error: runtime: out of memory)"
	default:
		return nil
	}
	d.Text = fitText(w.limit)
	if !killed && (w.limit == 0 || peak < uint64(w.limit)) {
		// Not our limit: the machine's.
		d.LimitBytes = int64(procfs.MemTotal())
		d.Text = fitText(d.LimitBytes) + " (the machine's memory)"
	}
	return d
}

// oomMarker is how the Go runtime says it could not get memory.
const oomMarker = "fatal error: runtime: out of memory"

// oomScanner passes a child's stderr through to w and notes whether the Go
// runtime's out-of-memory message went by. Written by exec's copying
// goroutine; seen may be called from any goroutine.
type oomScanner struct {
	w    io.Writer
	mu   sync.Mutex
	tail []byte // the last len(oomMarker)-1 bytes, for a marker split between writes
	oom  bool
}

func (s *oomScanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	if !s.oom {
		buf := append(s.tail, p...)
		s.oom = bytes.Contains(buf, []byte(oomMarker))
		if k := len(oomMarker) - 1; len(buf) > k {
			buf = buf[len(buf)-k:]
		}
		s.tail = append(s.tail[:0], buf...)
	}
	s.mu.Unlock()
	return s.w.Write(p)
}

func (s *oomScanner) seen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oom
}
