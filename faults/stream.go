package faults

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// response copies one upstream body to the client, injecting the fault the
// request drew (and, on a watch, those it draws as it streams). It is
// owned by the request's goroutine.
type response struct {
	p     *Proxy
	w     http.ResponseWriter
	stop  <-chan struct{} // closed by StopFaults
	ctx   context.Context
	flush func()

	written int64
	pend    fault // the fault waiting for its offset, or none
	at      int64 // pend's absolute offset in the body
	// redraw: a watch draws again each time Config.Bytes of its stream
	// passed without a fault pending, from nextDraw on.
	redraw   bool
	nextDraw int64
}

const copyBuffer = 32 << 10

// arm makes f pending at its offset from here.
func (rs *response) arm(f fault) {
	if rs.flush == nil {
		rs.flush = func() {
			if fl, ok := rs.w.(http.Flusher); ok {
				fl.Flush()
			}
		}
	}
	rs.pend = f
	if !f.none {
		rs.at = rs.written + f.offset
	}
}

// settle ends the pending fault (it happened or not) and schedules the
// next draw.
func (rs *response) settle() {
	rs.pend = noFault
	rs.nextDraw = rs.written + rs.p.cfg.Bytes
}

// release gives back a pending fault that did not happen.
func (rs *response) release() {
	if !rs.pend.none {
		rs.p.drop(rs.pend.kind)
		rs.pend = noFault
	}
}

// byteDue reports whether a pending cut or stall is due.
func (rs *response) byteDue() bool {
	return !rs.pend.none && (rs.pend.kind == Cut || rs.pend.kind == Stall) && rs.written >= rs.at
}

// inject makes the pending cut or stall happen now, if faults are still
// on: a cut flushes what came before and aborts the connection (net/http
// closes it without a clean end of body: the client sees the body end
// early, usually mid-object or mid-frame); a stall waits its duration, or
// until StopFaults, or until the client leaves.
func (rs *response) inject() {
	k := rs.pend.kind
	rs.pend = noFault // fire settles its place under Max
	defer rs.settle()
	if !rs.p.fire(k) {
		return
	}
	switch k {
	case Cut:
		rs.flush()
		panic(http.ErrAbortHandler)
	case Stall:
		rs.flush()
		t := time.NewTimer(rs.p.cfg.Rules[Stall].Duration)
		defer t.Stop()
		select {
		case <-t.C:
		case <-rs.stop:
		case <-rs.ctx.Done():
		}
	}
}

// emit writes b, making a pending cut or stall happen at its offset, and
// flushes (watches are streams). It returns false if the client is gone.
func (rs *response) emit(b []byte) bool {
	for len(b) > 0 {
		if rs.byteDue() {
			rs.inject()
		}
		m := len(b)
		if !rs.pend.none && (rs.pend.kind == Cut || rs.pend.kind == Stall) && rs.written+int64(m) > rs.at {
			m = int(rs.at - rs.written)
		}
		if m == 0 {
			continue
		}
		n, err := rs.w.Write(b[:m])
		rs.written += int64(n)
		if err != nil {
			return false
		}
		b = b[m:]
	}
	if rs.byteDue() {
		rs.inject()
	}
	rs.flush()
	return true
}

// copyBytes copies body as it comes, with the request's cut or stall.
func (rs *response) copyBytes(body io.Reader) {
	buf := make([]byte, copyBuffer)
	for {
		n, err := body.Read(buf)
		if n > 0 && !rs.emit(buf[:n]) {
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				panic(http.ErrAbortHandler) // the upstream body broke: end the client's the same way
			}
			return
		}
	}
}

// copyWatch copies a watch stream frame by frame in info's framing: a cut
// or stall at its byte offset (a cut usually mid-frame), a 410 at the first
// frame boundary at or after its offset, as an ERROR event with a 410
// Expired Status in the stream's framing, after which the response ends,
// as the API server ends a watch it cannot continue. With redraw, the
// stream draws again (cut, stall or 410) after every Config.Bytes that
// passed without a fault, so that faults follow a long watch's traffic.
func (rs *response) copyWatch(body io.ReadCloser, info runtime.SerializerInfo) {
	frames := info.StreamSerializer.Framer.NewFrameReader(body)
	var out bytes.Buffer
	fw := info.StreamSerializer.Framer.NewFrameWriter(&out)
	json := info.MediaType == runtime.ContentTypeJSON
	buf := make([]byte, 0, copyBuffer)
	if rs.pend.none {
		rs.settle()
	}
	for {
		if !rs.pend.none && rs.pend.kind == Gone && rs.written >= rs.at {
			rs.pend = noFault
			if rs.p.fire(Gone) {
				out.Reset()
				if err := writeErrorEvent(&out, info, faultStatus(Gone, 0)); err == nil {
					rs.emit(out.Bytes())
				}
				return
			}
			rs.settle()
		}
		if rs.redraw && rs.pend.none && rs.written >= rs.nextDraw {
			f, stop := rs.p.next(streamKinds)
			rs.stop = stop
			rs.arm(f)
			if f.none {
				rs.settle()
			}
		}
		frame, err := readFrame(frames, buf[:0])
		buf = frame[:0]
		if err != nil {
			if !errors.Is(err, io.EOF) {
				panic(http.ErrAbortHandler) // the upstream stream broke: end the client's the same way
			}
			return
		}
		out.Reset()
		if _, err := fw.Write(frame); err != nil {
			return
		}
		if json {
			out.WriteByte('\n')
		}
		if !rs.emit(out.Bytes()) {
			return
		}
	}
}

// readFrame reads one whole frame from a framer's reader, which returns
// io.ErrShortBuffer while the frame does not fit.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, max(copyBuffer, cap(buf)))...)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.ErrShortBuffer) {
			continue
		}
		return buf, err
	}
}
