package shards_test

import (
	"fmt"

	"github.com/shardinformer/shardinformer/shards"
)

func Example() {
	r, err := shards.New(4)
	if err != nil {
		panic(err)
	}
	// The shard of a key never changes, so all events of one object share a path.
	fmt.Println(r.Of("default/web-0") == r.Of("default/web-0"), r.Count())
	// Output: true 4
}
