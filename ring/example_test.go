package ring_test

import (
	"context"
	"fmt"

	"github.com/shardinformer/shardinformer/ring"
)

func Example() {
	r, err := ring.New[string](4)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	// Producer: the drain goroutine of one shard.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, key := range []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e", "ns/f"} {
			for !r.Push(key) {
				// Full: this producer chose backpressure.
				if !r.WaitSpace(ctx) {
					return
				}
			}
			r.Flush() // real drain loops flush once per batch
		}
		r.Close()
	}()

	// Consumer: the listener goroutine.
	buf := make([]string, 3)
	for r.Wait(ctx) {
		n := r.Pop(buf)
		for _, key := range buf[:n] {
			fmt.Println(key)
		}
	}
	<-done
	// Output:
	// ns/a
	// ns/b
	// ns/c
	// ns/d
	// ns/e
	// ns/f
}
