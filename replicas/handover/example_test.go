package handover_test

import (
	"fmt"

	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/handover"
)

// Example takes one replica alone from nothing to dispatching its two
// slots, one round at a time.
func Example() {
	target, _ := replicas.Assign([]string{"ctrl-0"}, 2)
	r := handover.New("ctrl-0", 2)
	for round := range 4 {
		acts := r.Step(handover.View{
			Target:        target,
			ClaimsVisible: true, // the renewal carrying r.Published() succeeded
			CacheSynced:   func(int) bool { return true },
		})
		fmt.Println(round, r.Phase(0), acts)
	}
	// Output:
	// 0 syncing [{start-cache 0} {start-cache 1}]
	// 1 synced []
	// 2 claimed []
	// 3 active [{activate 0} {activate 1}]
}
