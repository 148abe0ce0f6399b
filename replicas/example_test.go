package replicas_test

import (
	"fmt"

	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/shardselector"
)

// Example assigns 8 slots to three replicas (3, 2 and 3 slots), then a
// fourth joins. Assign, a function of the members only, gives each 2 but
// moves 3 slots (one between two replicas that stay); Sticky, starting
// from what the replicas hold, moves only the 2 the newcomer must get, one from each replica
// that held 3.
func Example() {
	before, err := replicas.Assign([]string{"ctrl-0", "ctrl-1", "ctrl-2"}, 8)
	if err != nil {
		panic(err)
	}
	owner, _ := before.Owner(shardselector.Hash("0f0e1d2c-3b4a-4958-8776-a5b4c3d2e1f0"))
	fmt.Println("object owned by", owner)
	four := []string{"ctrl-0", "ctrl-1", "ctrl-2", "ctrl-3"}
	plain, _ := replicas.Assign(four, 8)
	moves, _ := replicas.Moves(before, plain)
	fmt.Println("Assign:")
	for _, m := range moves {
		fmt.Printf("slot %d: %s -> %s\n", m.Slot, m.From, m.To)
	}
	held := map[string][]int{}
	for _, m := range before.Members() {
		held[m] = before.OwnedSlots(m)
	}
	sticky, _ := replicas.Sticky(four, 8, held)
	moves, _ = replicas.Moves(before, sticky)
	fmt.Println("Sticky:")
	for _, m := range moves {
		fmt.Printf("slot %d: %s -> %s\n", m.Slot, m.From, m.To)
	}
	// Output:
	// object owned by ctrl-2
	// Assign:
	// slot 0: ctrl-0 -> ctrl-3
	// slot 1: ctrl-0 -> ctrl-3
	// slot 2: ctrl-2 -> ctrl-0
	// Sticky:
	// slot 0: ctrl-0 -> ctrl-3
	// slot 2: ctrl-2 -> ctrl-3
}
