package pipeline

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/shards"
)

// Option configures an Informer.
type Option func(*config)

type config struct {
	shards        int
	ringCapacity  int
	policy        FullRingPolicy
	backlogBudget int
	batchSize     int
	observer      Observer
	crashOnPanic  bool
	relaxed       bool
	name          string
	compact       *compact.Config
}

func defaultConfig() config {
	return config{
		shards:        shards.DefaultCount(),
		ringCapacity:  4096,
		policy:        Buffer,
		backlogBudget: DefaultBacklogBudget,
		batchSize:     256,
		observer:      NopObserver{},
	}
}

var errConfig = errors.New("pipeline: invalid option")

// maxQueued is the bound on each shard's queue: none, except under Block.
func (c config) maxQueued() int {
	if c.policy == Block {
		return 4 * c.batchSize
	}
	return 0
}

func (c config) validate() error {
	var errs []error
	if c.shards < 1 {
		errs = append(errs, fmt.Errorf("%w: WithShards(%d): need at least 1 (0: the default)", errConfig, c.shards))
	}
	if c.ringCapacity < 1 {
		errs = append(errs, fmt.Errorf("%w: WithRingCapacity(%d): need at least 1", errConfig, c.ringCapacity))
	}
	if c.batchSize < 1 {
		errs = append(errs, fmt.Errorf("%w: WithBatchSize(%d): need at least 1", errConfig, c.batchSize))
	}
	if c.backlogBudget < 0 {
		errs = append(errs, fmt.Errorf("%w: WithBacklogBudget(%d): must not be negative", errConfig, c.backlogBudget))
	}
	if c.policy < Buffer || c.policy > Grow {
		errs = append(errs, fmt.Errorf("%w: unknown %v", errConfig, c.policy))
	}
	if c.observer == nil {
		errs = append(errs, fmt.Errorf("%w: WithObserver(nil)", errConfig))
	}
	return errors.Join(errs...)
}

// WithShards sets the number of shards, each with its own queue, index
// partition and drain goroutine. 0 means the default, shards.DefaultCount()
// (GOMAXPROCS); a negative count is an error.
func WithShards(n int) Option { return func(c *config) { c.shards = cmp.Or(n, shards.DefaultCount()) } }

// WithRingCapacity sets the capacity of each (shard, listener worker) ring,
// rounded up to a power of two. Default 4096.
func WithRingCapacity(n int) Option { return func(c *config) { c.ringCapacity = n } }

// WithFullRingPolicy sets what listeners do when a ring is full. Default Buffer.
func WithFullRingPolicy(p FullRingPolicy) Option { return func(c *config) { c.policy = p } }

// WithBacklogBudget sets, for the Buffer policy, how many notifications each
// listener keeps beyond its rings, every one delivered as produced, before
// overflow is merged per key; 0 makes Buffer behave as Coalesce. Counted over
// all of a listener's shards and workers. Default DefaultBacklogBudget.
func WithBacklogBudget(notifications int) Option {
	return func(c *config) { c.backlogBudget = notifications }
}

// WithBatchSize sets how many keys a drain goroutine takes from its queue at
// once. Default 256.
func WithBatchSize(n int) Option { return func(c *config) { c.batchSize = n } }

// WithObserver installs hooks for metrics (see Observer). Default: none.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithCrashOnPanic restores client-go's behaviour for a panicking handler:
// the panic propagates and crashes the process. By default a panic is
// recovered, logged with the object's key, counted, and delivery goes on.
func WithCrashOnPanic() Option { return func(c *config) { c.crashOnPanic = true } }

// WithName names the informer in logs and in the reflector (default: the
// example object's type).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithRelaxedOrder gives up client-go's cross-key order for lower latency.
// By default a handler receives a notification only once the cache holds
// every write the watch stream made before it, in every shard, as with
// client-go's single stream: once a handler has seen an object at resource
// version R, listers return every object's state up to R (read-your-writes
// clients such as controller-runtime's rely on it). With WithRelaxedOrder
// each shard delivers as soon as it has applied its own writes: order per key
// is unchanged, but a handler may see an object before the cache holds
// objects of other shards written earlier, so a lister read right after a
// notification can miss them (NotFound, or an older state), for as long as
// those shards lag behind. LastStoreSyncResourceVersion is the same in both
// modes.
func WithRelaxedOrder() Option { return func(c *config) { c.relaxed = true } }

// WithCompactStore keeps the cache's objects encoded, as package compact's
// Objects: a few hundred bytes a pod that the garbage collector does not
// scan, for caches too large to keep decoded. Objects are encoded as they
// arrive (the reflector's and the queues' transform, after the informer's
// own), so the initial list is held encoded too; they are decoded for the
// index functions, the handlers and every read of the cache, with the last
// cfg.Decoded decoded objects kept and shared. Reads cost a decode each
// (package compact's doc states how much); OnUpdate's old object is decoded
// from the cache, sharing the new one's unchanged parts: equal to the
// object the handler saw before, not necessarily the same pointer. Stats().Compact reports the codec's counters.
// Run it under a soft memory limit (GOMEMLIMIT; package compact's doc says
// why): the retained heap is small, the garbage of decoding is not.
func WithCompactStore(cfg compact.Config) Option {
	return func(c *config) { c.compact = &cfg }
}
