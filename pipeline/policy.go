package pipeline

import (
	"fmt"
	"strings"
)

// FullRingPolicy decides what a listener's ring does when it is full, that is
// when the handler has fallen a ring's capacity behind the shard feeding it.
// The package documentation lists the exact events a handler receives under
// each policy.
type FullRingPolicy int

const (
	// Buffer (the default) keeps every notification, exactly as client-go
	// delivers them, while the listener's backlog beyond its rings is within
	// its budget (WithBacklogBudget); beyond the budget, overflow is merged per
	// key as under Coalesce until the handler has caught up, then every
	// notification is kept again. Memory is bounded by the budget plus one
	// entry per key, a slow handler never holds up the shard or other
	// handlers, and a handler that is merely busy misses nothing.
	Buffer FullRingPolicy = iota
	// Coalesce merges overflow per key from the first notification that does
	// not fit: the handler later receives, for every key it fell behind on,
	// one notification that takes it from the last state it was told about to
	// the latest state. Memory is bounded by the number of keys. It is Buffer
	// with a budget of zero.
	Coalesce
	// Block applies backpressure: the shard waits until the handler frees a
	// slot, and once the shard's queue holds 4×batch-size deltas the
	// reflector waits too, so the pressure reaches the watch stream. Every
	// notification is delivered, memory stays bounded (by the rings, the
	// queues and one batch's notifications per shard, which a shard keeps
	// until the batch is applied: a relist's part is one batch), and a slow
	// handler slows every handler fed by the same shard.
	Block
	// Grow keeps every notification in an unbounded overflow, like client-go.
	// Nothing is merged or delayed; memory grows with the backlog. It is
	// Buffer with an unlimited budget.
	Grow
)

// FullRingPolicies returns every policy, the default first.
func FullRingPolicies() []FullRingPolicy { return []FullRingPolicy{Buffer, Coalesce, Block, Grow} }

func (p FullRingPolicy) String() string {
	switch p {
	case Buffer:
		return "buffer"
	case Coalesce:
		return "coalesce"
	case Block:
		return "block"
	case Grow:
		return "grow"
	}
	return fmt.Sprintf("FullRingPolicy(%d)", int(p))
}

// ParseFullRingPolicy parses a policy's name as String spells it.
func ParseFullRingPolicy(s string) (FullRingPolicy, error) {
	var names []string
	for _, p := range FullRingPolicies() {
		if p.String() == s {
			return p, nil
		}
		names = append(names, p.String())
	}
	return 0, fmt.Errorf("pipeline: unknown full-ring policy %q (want %s)", s, strings.Join(names, ", "))
}

// DefaultBacklogBudget is the default of WithBacklogBudget: 2^18 = 262,144
// notifications per listener. A relist of a quarter million objects, or a
// burst of that many events, reaches a slow handler exactly as it would with
// client-go; the worst a stalled handler can pin before coalescing starts is
// that many notification records (56 bytes each, 14 MiB) plus the old object
// versions they alone still reference.
const DefaultBacklogBudget = 1 << 18

// budget returns the backlog budget a listener gets under p: how many
// notifications its overflow keeps exactly before merging per key. Block
// keeps no overflow.
func (c config) budget() int64 {
	switch c.policy {
	case Buffer:
		return int64(c.backlogBudget)
	case Grow:
		return unlimited
	}
	return 0
}

const unlimited = int64(^uint64(0) >> 1)
