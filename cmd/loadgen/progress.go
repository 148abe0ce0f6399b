package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress writes one live line to stderr: rewritten in place on a terminal,
// one line per update otherwise.
type progress struct {
	w       io.Writer
	enabled bool
	every   time.Duration
	tty     bool
	mu      sync.Mutex
	last    time.Time
	width   int
}

func newProgress(w io.Writer, every time.Duration) *progress {
	p := &progress{w: w, enabled: every > 0, every: every}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// update prints line() at most every 200ms (terminal) or second (log).
func (p *progress) update(line func() string) {
	if !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	every := max(p.every, time.Second)
	if p.tty {
		every = min(p.every, 200*time.Millisecond)
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	l := line()
	if p.tty {
		pad := max(p.width-len(l), 0)
		fmt.Fprintf(p.w, "\r%s%*s", l, pad, "")
		p.width = len(l)
	} else {
		fmt.Fprintln(p.w, l)
	}
}

// done ends the live line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.enabled && p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
		p.width = 0
	}
	p.last = time.Time{}
}
