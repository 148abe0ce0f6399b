package fifo_test

import (
	"fmt"
	"maps"

	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
)

// examplePartition stands in for a shard's index partition. The example runs
// on one goroutine; a real partition must allow reads during writes.
type examplePartition map[string]any

func (p examplePartition) Get(key string) (any, bool) { obj, ok := p[key]; return obj, ok }

func (p examplePartition) Range(f func(key string, obj any) bool) {
	for key, obj := range p {
		if !f(key, obj) {
			return
		}
	}
}

func Example() {
	partition := examplePartition{}
	q, err := fifo.New(fifo.Config{Known: partition})
	if err != nil {
		panic(err)
	}

	// The reflector's side: a list, a watch event, a sync mark, another event.
	_ = q.Replace([]fifo.Keyed{{Key: "default/a", Object: "a-v1"}, {Key: "default/b", Object: "b-v1"}})
	_ = q.Update("default/a", "a-v2")
	q.Mark(fifo.Mark{Seq: 1, RV: "42"})
	_ = q.Delete("default/b", "b-v2")

	// The drain goroutine: Pop a batch, apply it without holding the queue's
	// lock, then Done, which reports the marks the batch completed.
	var batch []fifo.Item
	for {
		batch = q.Pop(batch[:0], 128)
		if len(batch) == 0 {
			break // a drain goroutine parks here until its writers wake it (!q.Pending())
		}
		for _, it := range batch {
			for _, d := range it.Deltas {
				fmt.Println(it.Key, d.Type, d.Object, "initial:", it.Initial)
				if d.Type == cache.Deleted {
					delete(partition, it.Key)
				} else {
					partition[it.Key] = d.Object
				}
			}
		}
		if m, ok := q.Done(batch); ok {
			fmt.Println("applied everything before resource version", m.RV)
		}
	}
	fmt.Println("synced:", q.HasSynced(), "cache:", maps.Collect(maps.All(partition)))
	// Output:
	// default/a Replaced a-v1 initial: true
	// default/a Updated a-v2 initial: true
	// default/b Replaced b-v1 initial: true
	// default/b Deleted b-v2 initial: true
	// applied everything before resource version 42
	// synced: true cache: map[default/a:a-v2]
}
