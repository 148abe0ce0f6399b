package fifo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/fifo"
	"github.com/shardinformer/shardinformer/internal/doorbell"
)

const benchKeys = 1000

func benchObjects() ([]string, []*corev1.ConfigMap) {
	keys := make([]string, benchKeys)
	objs := make([]*corev1.ConfigMap, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/cm-%d", i)
		objs[i] = configMap(keys[i], i+1)
	}
	return keys, objs
}

// BenchmarkUpdateThroughput measures b.N Updates over 1000 keys written by one
// producer goroutine while one consumer goroutine drains the queue and applies
// every item to a store. shardinformer's consumer drains batches of up to 128
// keys outside the queue lock; client-go's queues are popped one item at a time,
// each applied under the queue's lock.
func BenchmarkUpdateThroughput(b *testing.B) {
	keys, objs := benchObjects()
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}

	// marked: every write carries a stream position (WriteAt) and the
	// consumer takes segments (PopSegment), as the pipeline does by default.
	runOurs := func(b *testing.B, marked bool) {
		b.ReportAllocs()
		known := newMapKnown()
		q := newQueue(b, fifo.Config{Known: known})
		bell := doorbell.New() // the consumer parks on it; the producer rings after each write
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.ResetTimer()
		var wg sync.WaitGroup
		wg.Go(func() { // the consumer
			var buf []fifo.Item
			for seen := 0; seen < b.N; {
				if marked {
					buf = q.PopSegment(buf[:0], 128)
				} else {
					buf = q.Pop(buf[:0], 128)
				}
				if len(buf) == 0 {
					if !bell.Wait(ctx, q.Pending) {
						return
					}
					continue
				}
				for _, it := range buf {
					known.apply(it)
					seen += len(it.Deltas)
				}
				q.Done(buf)
			}
		})
		for i := range b.N {
			k := i % benchKeys
			var err error
			if marked {
				err = q.WriteAt(cache.Updated, keys[k], objs[k], fifo.Mark{Seq: uint64(i + 1), RV: objs[k].ResourceVersion})
			} else {
				err = q.Update(keys[k], objs[k])
			}
			if err != nil {
				b.Fatal(err)
			}
			bell.Ring()
		}
		wg.Wait()
		b.StopTimer()
		report(b)
	}
	b.Run("impl=shardinformer", func(b *testing.B) { runOurs(b, false) })
	b.Run("impl=shardinformer/marked", func(b *testing.B) { runOurs(b, true) })

	// popOne runs a client-go queue's consumer: Pop one item at a time and
	// apply it to store inside the process function (under the queue's lock).
	popOne := func(b *testing.B, q cache.Queue, store cache.Store) {
		for seen := 0; seen < b.N; {
			_, err := q.Pop(func(obj any, _ bool) error {
				for _, d := range obj.(cache.Deltas) {
					var err error
					if d.Type == cache.Deleted {
						err = store.Delete(d.Object)
					} else {
						err = store.Update(d.Object)
					}
					if err != nil {
						return err
					}
					seen++
				}
				return nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	}
	runClientGo := func(b *testing.B, q cache.Queue, store cache.Store) {
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		wg.Go(func() { popOne(b, q, store) })
		for i := range b.N {
			if err := q.Update(objs[i%benchKeys]); err != nil {
				b.Fatal(err)
			}
		}
		wg.Wait()
		b.StopTimer()
		report(b)
	}

	b.Run("impl=client-go-deltafifo", func(b *testing.B) {
		store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
		runClientGo(b, cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
			KeyFunction:           cache.DeletionHandlingMetaNamespaceKeyFunc,
			KnownObjects:          store,
			EmitDeltaTypeReplaced: true,
		}), store)
	})

	b.Run("impl=client-go-realfifo", func(b *testing.B) {
		store := cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc)
		runClientGo(b, cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
			KeyFunction:  cache.DeletionHandlingMetaNamespaceKeyFunc,
			KnownObjects: store,
		}), store)
	})
}
