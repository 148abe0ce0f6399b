package pipeline

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/shardinformer/shardinformer/shards"
)

// FullRingPolicy decides what a listener's ring does when it is full, that is
// when the handler has fallen a ring's capacity behind the shard feeding it.
type FullRingPolicy int

const (
	// Coalesce (the default) merges overflow per key: the handler later
	// receives, for every key it fell behind on, one notification that takes it
	// from the last state it was told about to the latest state (see the package
	// documentation for the exact events). Memory is bounded by the number of
	// keys, and a slow handler never holds up the shard or other handlers.
	Coalesce FullRingPolicy = iota
	// Block applies backpressure: the shard waits until the handler frees a
	// slot, and once the shard's queue holds 4×batch-size deltas the
	// reflector waits too, so the pressure reaches the watch stream. Every
	// notification is delivered, memory stays bounded, and a slow handler
	// slows every handler fed by the same shard.
	Block
	// Grow keeps every notification in an unbounded overflow list, like
	// client-go. Nothing is merged or delayed; memory grows with the backlog.
	Grow
)

func (p FullRingPolicy) String() string {
	switch p {
	case Coalesce:
		return "coalesce"
	case Block:
		return "block"
	case Grow:
		return "grow"
	}
	return fmt.Sprintf("FullRingPolicy(%d)", int(p))
}

// ParseFullRingPolicy parses "coalesce", "block" or "grow".
func ParseFullRingPolicy(s string) (FullRingPolicy, error) {
	for _, p := range []FullRingPolicy{Coalesce, Block, Grow} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("pipeline: unknown full-ring policy %q (want coalesce, block or grow)", s)
}

// Option configures an Informer.
type Option func(*config)

type config struct {
	shards       int
	ringCapacity int
	policy       FullRingPolicy
	batchSize    int
	observer     Observer
	crashOnPanic bool
	name         string
}

func defaultConfig() config {
	return config{
		shards:       shards.DefaultCount(),
		ringCapacity: 4096,
		policy:       Coalesce,
		batchSize:    256,
		observer:     NopObserver{},
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
	if c.policy < Coalesce || c.policy > Grow {
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

// WithFullRingPolicy sets what listeners do when a ring is full. Default Coalesce.
func WithFullRingPolicy(p FullRingPolicy) Option { return func(c *config) { c.policy = p } }

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
