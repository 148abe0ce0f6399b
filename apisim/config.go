package apisim

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Sentinel errors. Validation errors wrap ErrInvalidConfig.
var (
	ErrInvalidConfig  = errors.New("apisim: invalid config")
	ErrAlreadyStarted = errors.New("apisim: server already started")
	ErrClosed         = errors.New("apisim: server closed")
)

// Config configures a Server. The zero value is usable: every field has a
// documented default.
type Config struct {
	// Addr is the listen address; it must be a loopback address.
	// Default "127.0.0.1:0" (a free port; see Server.URL).
	Addr string

	// History is the number of watch events kept so that watches (and exact
	// or paginated lists) can resume from an older resourceVersion. It is
	// shared by all resources, like etcd's revisions. A watch
	// from a version whose successors have left history gets an ERROR event
	// with 410 Expired, as from a real API server; the client relists.
	// Memory grows with History × object size (superseded versions keep
	// only their encodings). Default 100000.
	History int

	// BookmarkInterval is how often a watch that asked for
	// allowWatchBookmarks receives a BOOKMARK carrying the newest
	// resourceVersion it has been brought up to. Default 1s; negative
	// disables periodic bookmarks (the initial-events-end bookmark of a
	// WatchList is always sent).
	BookmarkInterval time.Duration

	// MaxWatchTimeout caps a watch's lifetime: a watch ends cleanly after
	// min(timeoutSeconds, MaxWatchTimeout), or after MaxWatchTimeout if the
	// client sent no timeoutSeconds (the API server's --min-request-timeout
	// behaviour). Default 30m.
	MaxWatchTimeout time.Duration

	// WatchBuffer is how many events may arrive after a watch went live
	// (after any initial events) that it has not yet written to its
	// connection before it is considered too slow and closed (without an
	// error event, like the API server closes a watcher whose buffer is
	// full); the client re-watches from the last resourceVersion it saw.
	// Events are never copied per watcher, so this bounds lag, not memory.
	// Like History, it counts the writes of every resource (one store, one
	// history), not only those of the watched resource.
	// While initial events are sent only History bounds the lag: events
	// older than history get the watch a 410. Default min(20000, History);
	// at most History.
	WatchBuffer int

	// ResourceVersionWait is how long a request for a resourceVersion newer
	// than the store's waits for it to appear before failing with the API
	// server's "Too large resource version" timeout error. Default 1s.
	ResourceVersionWait time.Duration

	// ListSnapshots is how many snapshots of paginated lists are kept for
	// continue tokens. A continuation whose snapshot was evicted is rebuilt
	// from history, or fails with 410 Expired once history is gone (etcd
	// compaction semantics). Default 32; negative keeps none.
	ListSnapshots int

	// EncodedOnly keeps every version, the current one included, only
	// encoded and compactly: each write (and Load, on all cores) encodes
	// the new version in protobuf (JSON for custom resources) at once and
	// drops its decoded form, and encodings are stored as deltas against
	// the first encoding of the same template (a namespace's objects with
	// one generateName: a ReplicaSet's pods), with label sets interned — a
	// realistic pod costs ≈1 KB of heap the garbage collector barely scans
	// instead of ≈18 KB of pointer-rich objects: a million pods take under
	// a GiB of heap (bench/results/apisim-1m.md). A write then decodes the
	// version it replaces (one protobuf decode instead of one deep copy)
	// and encodes the new one (≈15 µs); serving decodes deltas (≈0.3 µs a
	// pod). Responses are byte for byte those without the option. Use it for large stores, or when
	// the server shares a process with the code under test and its heap
	// would otherwise weigh on that code's garbage collection. Default
	// false: current versions keep their decoded form, encodings are made
	// when first needed and kept whole, and only superseded versions are
	// reduced to their encodings.
	EncodedOnly bool

	// ShardedListAndWatch is kube-apiserver's feature gate of that name
	// (KEP-5866, alpha in 1.36, off by default). On, LIST and WATCH honour
	// the shardSelector parameter: only objects whose hash of the selected
	// field lies in one of its ranges are returned, typed lists echo it in
	// metadata.shardInfo, and a selector that does not parse fails the
	// request with 500 "invalid shard selector: …". Off (the default, as on
	// the real server), the parameter is ignored: every object is returned,
	// nothing is echoed, and a malformed selector is no error.
	ShardedListAndWatch bool
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.History == 0 {
		c.History = 100000
	}
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = time.Second
	}
	if c.MaxWatchTimeout == 0 {
		c.MaxWatchTimeout = 30 * time.Minute
	}
	if c.WatchBuffer == 0 {
		c.WatchBuffer = min(20000, c.History)
	}
	if c.ResourceVersionWait == 0 {
		c.ResourceVersionWait = time.Second
	}
	if c.ListSnapshots == 0 {
		c.ListSnapshots = 32
	}
	return c
}

// validate checks a defaulted config.
func (c Config) validate() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("%w: Addr %q: %v", ErrInvalidConfig, c.Addr, err)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("%w: Addr %q is not a loopback address", ErrInvalidConfig, c.Addr)
		}
	}
	if c.History < 1 {
		return fmt.Errorf("%w: History %d < 1", ErrInvalidConfig, c.History)
	}
	if c.MaxWatchTimeout < 0 {
		return fmt.Errorf("%w: MaxWatchTimeout %v < 0", ErrInvalidConfig, c.MaxWatchTimeout)
	}
	if c.WatchBuffer < 1 || c.WatchBuffer > c.History {
		return fmt.Errorf("%w: WatchBuffer %d not in [1, History=%d]", ErrInvalidConfig, c.WatchBuffer, c.History)
	}
	if c.ResourceVersionWait < 0 {
		return fmt.Errorf("%w: ResourceVersionWait %v < 0", ErrInvalidConfig, c.ResourceVersionWait)
	}
	return nil
}
