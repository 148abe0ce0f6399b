package doorbell_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/shardinformer/shardinformer/internal/doorbell"
)

func Example() {
	bell := doorbell.New()
	var queued atomic.Int64
	done := make(chan struct{})
	go func() { // waiter: parks until three items are announced
		defer close(done)
		bell.Wait(context.Background(), func() bool { return queued.Load() >= 3 })
		fmt.Println("woken with", queued.Load())
	}()
	for range 3 { // notifier: write, then ring
		queued.Add(1)
		bell.Ring()
	}
	<-done
	// Output: woken with 3
}
