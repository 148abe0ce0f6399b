package replicas_test

import (
	"fmt"

	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/shardselector"
)

// Example assigns 8 slots to three replicas (3, 2 and 3 slots), adds a
// fourth and prints which slots move so that each holds 2: the
// newcomer's two, both from ctrl-0, and one from ctrl-2 to ctrl-0 — one
// move more than the least (the package documentation measures how
// many more).
func Example() {
	before, err := replicas.Assign([]string{"ctrl-0", "ctrl-1", "ctrl-2"}, 8)
	if err != nil {
		panic(err)
	}
	owner, _ := before.Owner(shardselector.Hash("0f0e1d2c-3b4a-4958-8776-a5b4c3d2e1f0"))
	fmt.Println("object owned by", owner)
	after, _ := replicas.Assign([]string{"ctrl-0", "ctrl-1", "ctrl-2", "ctrl-3"}, 8)
	moves, _ := replicas.Moves(before, after)
	for _, m := range moves {
		fmt.Printf("slot %d: %s -> %s\n", m.Slot, m.From, m.To)
	}
	// Output:
	// object owned by ctrl-2
	// slot 0: ctrl-0 -> ctrl-3
	// slot 1: ctrl-0 -> ctrl-3
	// slot 2: ctrl-2 -> ctrl-0
}
