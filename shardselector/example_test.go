package shardselector_test

import (
	"fmt"

	"github.com/shardinformer/shardinformer/shardselector"
)

// Example parses the selector of the first of two shards and checks which
// shard an object's UID falls into.
func Example() {
	sel, err := shardselector.Parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
	if err != nil {
		panic(err)
	}
	uid := "0f0e1d2c-3b4a-4958-8776-a5b4c3d2e1f0"
	fmt.Printf("hash %#016x, shard 0: %v\n", shardselector.Hash(uid), sel.Matches(uid))

	_, err = shardselector.Parse("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
	fmt.Println(err)
	// Output:
	// hash 0xe48aa55e0ae6c812, shard 0: false
	// hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)
}
