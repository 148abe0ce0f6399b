package apisim

import (
	"bufio"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// stopReason says why a watch was ended by the server.
type stopReason int

const (
	stopDropped stopReason = iota + 1 // DropWatches / SetUnavailable
	stopSlow                          // fell more than WatchBuffer events behind
	stopClosed                        // Server.Close
)

// watcher is the shared part of one watch request: the request goroutine
// streams events from the store's history; writers wake it and may stop it.
type watcher struct {
	wake chan struct{} // cap 1; writers do a non-blocking send
	stop chan struct{} // closed by kill

	// cursor is the RV of the newest event the request goroutine has
	// written or skipped. Written by the request goroutine only.
	cursor atomic.Uint64
	// base is the store's RV when the watch went live (after its initial
	// events): lag is counted only over events that arrived after it.
	// notLive while initial events are being sent.
	base  atomic.Uint64
	limit uint64 // WatchBuffer

	stopped atomic.Bool
	rc      *http.ResponseController
	slow    *atomic.Uint64 // Stats.WatchesSlowClosed

	mu struct {
		sync.Mutex
		done bool // the request has finished; rc must not be used
	}
}

const notLive = ^uint64(0)

// notify is called by writers (under store.mu) after publishing rv.
func (w *watcher) notify(head uint64) {
	if w.stopped.Load() {
		return
	}
	if base := w.base.Load(); base != notLive && head-max(w.cursor.Load(), base) > w.limit {
		w.slow.Add(1)
		w.kill(stopSlow)
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// kill ends the watch. The request goroutine sees stop at its next check;
// a write it is blocked in is cut by a write deadline: at once for a slow
// or closing server, after a grace period for a dropped watch (a reading
// client gets a clean end of stream).
func (w *watcher) kill(why stopReason) {
	if !w.stopped.CompareAndSwap(false, true) {
		return
	}
	close(w.stop)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.done {
		return
	}
	deadline := time.Now()
	if why == stopDropped {
		deadline = deadline.Add(2 * time.Second)
	}
	_ = w.rc.SetWriteDeadline(deadline)
}

// finish marks the request as done; afterwards kill does not touch rc.
func (w *watcher) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.done = true
	if w.stopped.Load() {
		// Clear a deadline set by kill so a kept-alive connection is not
		// cut later.
		_ = w.rc.SetWriteDeadline(time.Time{})
	}
}

// watchStart is where a watch begins.
type watchStart struct {
	rv       uint64 // events after rv are streamed live
	initial  *state // if non-nil, its objects are sent first as ADDED
	endMark  bool   // send the initial-events-end bookmark after initial
	errEvent error  // if non-nil, send it as an ERROR event and end
}

func (s *Server) resolveWatch(r *http.Request, o *listOptions) (watchStart, error) {
	rvParam := o.resourceVersion
	fromSnapshot := func() watchStart {
		cur := s.st.cur.Load()
		return watchStart{rv: cur.rv, initial: cur}
	}
	fromRV := func() (watchStart, error) {
		want, err := parseRV(rvParam)
		if err != nil {
			return watchStart{}, err
		}
		cur, ok := s.waitForRV(r, want)
		if !ok {
			return watchStart{errEvent: tooLargeRV(want, cur.rv)}, nil
		}
		if oldest := s.st.minRV.Load(); want < oldest {
			return watchStart{errEvent: apierrors.NewResourceExpired(
				fmt.Sprintf("too old resource version: %d (%d)", want, oldest))}, nil
		}
		return watchStart{rv: want}, nil
	}
	switch {
	case o.sendInitialEvents != nil && *o.sendInitialEvents:
		// WatchList: state at least as new as resourceVersion, then the
		// initial-events-end bookmark, then live events.
		if rvParam != "" && rvParam != "0" {
			want, err := parseRV(rvParam)
			if err != nil {
				return watchStart{}, err
			}
			if cur, ok := s.waitForRV(r, want); !ok {
				return watchStart{errEvent: tooLargeRV(want, cur.rv)}, nil
			}
		}
		ws := fromSnapshot()
		ws.endMark = true
		return ws, nil
	case o.sendInitialEvents != nil:
		if rvParam == "" || rvParam == "0" {
			return watchStart{rv: s.st.cur.Load().rv}, nil
		}
		return fromRV()
	case rvParam == "" || rvParam == "0":
		return fromSnapshot(), nil
	default:
		return fromRV()
	}
}

func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, f *filter, o *listOptions, fm format) {
	start, err := s.resolveWatch(r, o)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	timeout := s.cfg.MaxWatchTimeout
	if o.timeout > 0 && o.timeout < timeout {
		timeout = o.timeout
	}
	deadline := time.Now().Add(timeout) // the request's lifetime includes initial events

	wt := &watcher{
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		limit: uint64(s.cfg.WatchBuffer),
		rc:    http.NewResponseController(w),
		slow:  &s.stats.slowClosed,
	}
	wt.cursor.Store(start.rv)
	wt.base.Store(notLive)
	s.st.addWatcher(wt)
	s.stats.watchesOpen.Add(1)
	defer func() {
		s.st.removeWatcher(wt)
		s.stats.watchesOpen.Add(-1)
		wt.finish()
	}()
	select {
	case <-s.closing:
		return
	default:
	}
	if s.unavailable.Load() {
		// SetUnavailable ran between the routing check and addWatcher.
		writeStatus(w, r, apierrors.NewServiceUnavailable("apisim: server is unavailable"))
		return
	}

	w.Header().Set("Content-Type", fm.ct.watchMediaType())
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	_ = wt.rc.Flush()

	sw := &watchStream{
		s: s, wt: wt, r: r, fm: fm, enc: fm.view.encoding(fm.ct), f: f,
		bw: bufio.NewWriterSize(countingWriter{w, &s.stats.bytes}, 64<<10),
	}
	sw.fw = &frameWriter{ct: fm.ct, v: fm.view, w: sw.bw}
	defer sw.flushCounts()

	if start.errEvent != nil {
		_ = sw.writeError(start.errEvent)
		_ = sw.flush()
		return
	}
	if start.initial != nil {
		if !sw.sendInitial(start.initial) {
			return
		}
		if start.endMark {
			if sw.writeBookmark(start.rv, true) != nil {
				return
			}
		}
	}
	if sw.flush() != nil {
		return
	}
	wt.base.Store(s.st.cur.Load().rv)
	sw.live(start.rv, time.Until(deadline), o.allowBookmarks)
}

// watchStream is the request goroutine's side of a watch.
type watchStream struct {
	s      *Server
	wt     *watcher
	r      *http.Request
	fm     format
	enc    encoding // of the objects written
	bw     *bufio.Writer
	fw     *frameWriter
	f      *filter
	events uint64 // not yet added to stats
	buf    []byte // a delta's encoding is decoded into it
}

func (sw *watchStream) stopped() bool {
	select {
	case <-sw.wt.stop:
		return true
	case <-sw.r.Context().Done():
		return true
	default:
		return false
	}
}

func (sw *watchStream) flush() error {
	if err := sw.bw.Flush(); err != nil {
		return err
	}
	sw.flushCounts()
	return sw.wt.rc.Flush()
}

func (sw *watchStream) flushCounts() {
	if sw.events > 0 {
		sw.s.stats.events.Add(sw.events)
		sw.events = 0
	}
}

// sendInitial writes an ADDED event for every object of the snapshot that
// the watch selects. It returns false if the watch ended meanwhile.
func (sw *watchStream) sendInitial(st *state) bool {
	from, _ := sw.f.res.keyRange(sw.f.namespace)
	items, _ := collect(st.tree, from, sw.f, 0)
	enc := newEncodeAhead(items, sw.enc)
	defer enc.stop()
	for i := range items {
		if i%256 == 0 && sw.stopped() {
			return false
		}
		if sw.fw.writeEvent(string(watch.Added), enc.at(i)) != nil {
			return false
		}
		sw.events++
	}
	return true
}

// live streams history from after rv until the watch ends.
func (sw *watchStream) live(rv uint64, timeout time.Duration, bookmarks bool) {
	st := sw.s.st
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if bookmarks && sw.s.cfg.BookmarkInterval > 0 {
		t := time.NewTicker(sw.s.cfg.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	cursor := rv
	for {
		head := st.cur.Load().rv
		for n := 0; cursor < head; n++ {
			if n%256 == 0 && sw.stopped() { // also before the first event: a stopped watch sends nothing new
				return
			}
			next := cursor + 1
			ev := st.eventAt(next)
			if ev == nil {
				_ = sw.writeError(apierrors.NewResourceExpired(
					fmt.Sprintf("too old resource version: %d (%d)", cursor, st.minRV.Load())))
				_ = sw.flush()
				return
			}
			if sw.writeChange(ev) != nil {
				return
			}
			cursor = next
			sw.wt.cursor.Store(cursor)
		}
		if sw.flush() != nil {
			return
		}
		select {
		case <-sw.wt.wake:
		case <-tick:
			if sw.writeBookmark(cursor, false) != nil || sw.flush() != nil {
				return
			}
		case <-timer.C:
			return
		case <-sw.wt.stop:
			return
		case <-sw.r.Context().Done():
			return
		case <-sw.s.closing:
			return
		}
	}
}

// writeChange writes what ev means to this watch's selector: the API
// server turns a change that moves an object into the selection into
// ADDED and one that moves it out into DELETED (of the previous state).
// Events of other resources are skipped.
func (sw *watchStream) writeChange(ev *event) error {
	if ev.obj.res != sw.f.res {
		return nil
	}
	cur := sw.f.matches(ev.obj)
	switch ev.typ {
	case watch.Added, watch.Deleted:
		if !cur {
			return nil
		}
		return sw.writeObjectEvent(ev.typ, ev.obj)
	}
	prev := sw.f.matches(ev.prev)
	switch {
	case cur && prev:
		return sw.writeObjectEvent(watch.Modified, ev.obj)
	case cur:
		return sw.writeObjectEvent(watch.Added, ev.obj)
	case prev:
		return sw.writeObjectEvent(watch.Deleted, ev.prevRestamped())
	}
	return nil
}

func (sw *watchStream) writeObjectEvent(typ watch.EventType, o *object) error {
	sw.events++
	var b []byte
	b, sw.buf = o.stored(sw.enc).read(sw.buf)
	return sw.fw.writeEvent(string(typ), b)
}

// writeBookmark writes a BOOKMARK: an empty object carrying only rv (and, at
// the end of a WatchList's initial events, the initial-events-end annotation).
func (sw *watchStream) writeBookmark(rv uint64, initialEnd bool) error {
	body, err := bookmarkBody(sw.f.res, sw.fm.view, sw.fm.ct, rv, initialEnd)
	if err != nil {
		return err
	}
	sw.s.stats.bookmarks.Add(1)
	return sw.fw.writeEvent(string(watch.Bookmark), body)
}

func (sw *watchStream) writeError(err error) error {
	sw.s.stats.errorEvents.Add(1)
	return sw.fw.writeRawEvent(string(watch.Error), encodeObject(toStatus(err), sw.fm.ct))
}
