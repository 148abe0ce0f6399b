package wire

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire/internal/diet"
)

var benchPodsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// benchPods returns n realistic pods (with managedFields).
func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = apisim.NewPod(fmt.Sprintf("ns-%d", i%20), fmt.Sprintf("pod-%06d", i), int64(i), apisim.PodOptions{ManagedFields: true})
	}
	return pods
}

// BenchmarkWatchDecode replays a protobuf watch stream of realistic pods
// from memory through client-go's StreamWatcher (built as
// rest.Request.Watch builds it) and through wire's watcher with 1 and 2
// workers, draining the result channel; floor is a plain proto Unmarshal of
// each pod's bytes on one goroutine. format=cbor does the same with the
// stream in CBOR.
func BenchmarkWatchDecode(b *testing.B) {
	const n = 2000
	pods := benchPods(n)
	events := make([]watch.Event, n)
	for i, p := range pods {
		events[i] = watch.Event{Type: watch.Modified, Object: p}
	}
	stream := encodeWatch(b, formatProtobuf, events, schema.GroupVersion{Version: "v1"})
	raws := make([][]byte, n)
	for i, p := range pods {
		raws[i], _ = p.Marshal()
	}
	report := func(b *testing.B) {
		ev := float64(b.N) * n
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/ev, "ns/event")
		b.ReportMetric(ev/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(0, "ns/op")
	}
	// allocs also reports the CPU time of the process (user and system,
	// every goroutine, GC included) per event: on a shared machine it
	// varies less than the wall time.
	allocs := func(b *testing.B, f func()) {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0 := processCPU(b)
		f()
		c1 := processCPU(b)
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/(float64(b.N)*n), "allocs/event")
		b.ReportMetric(float64((c1-c0).Nanoseconds())/(float64(b.N)*n), "cpu-ns/event")
	}
	b.Run("impl=floor", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		allocs(b, func() {
			for range b.N {
				for _, raw := range raws {
					var p corev1.Pod
					if err := p.Unmarshal(raw); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		report(b)
	})
	// keep=true holds every decoded event until the end of the run, as an
	// informer's store holds its objects during an initial sync: the live
	// heap grows by every pod, so the collector's marking and the garbage
	// that makes it run more often are counted too.
	for _, keep := range []bool{false, true} {
		suffix := ""
		if keep {
			suffix = "/keep=true"
		}
		var kept [][]watch.Event
		collect := func(b *testing.B, evs []watch.Event) {
			if len(evs) != n {
				b.Fatalf("%d events", len(evs))
			}
			if keep {
				kept = append(kept, evs)
			}
		}
		b.Run("impl=client-go"+suffix, func(b *testing.B) {
			kept = nil
			b.SetBytes(int64(len(stream)))
			allocs(b, func() {
				for range b.N {
					collect(b, drain(streamWatcher(b, formatProtobuf, bytes.NewReader(stream))))
				}
			})
			report(b)
			kept = nil
		})
		for _, v := range []struct {
			name    string
			workers int
			diet    Option
		}{{"workers=1", 1, nil}, {"workers=2", 2, nil}, {"workers=1/diet=full", 1, WithDiet()}, {"workers=2/diet=full", 2, WithDiet()}} {
			if keep && v.workers == 1 {
				continue
			}
			b.Run("impl=wire/"+v.name+suffix, func(b *testing.B) {
				kept = nil
				opts := []Option{WithWorkers(v.workers)}
				if v.diet != nil {
					opts = append(opts, v.diet)
				}
				lw := testLW(b, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, opts...)
				b.SetBytes(int64(len(stream)))
				allocs(b, func() {
					for range b.N {
						w := lw.newWatcher(io.NopCloser(bytes.NewReader(stream)))
						w.start()
						collect(b, drain(w))
						w.Stop()
					}
				})
				report(b)
				kept = nil
			})
		}
	}
	// The same stream in CBOR (WithContentType(CBOR)): client-go's
	// StreamWatcher on its CBOR decoder, and wire, which frames the events
	// and decodes them with that decoder on its workers.
	cborStream := encodeWatch(b, formatCBOR, events, schema.GroupVersion{Version: "v1"})
	b.Run("format=cbor/impl=client-go", func(b *testing.B) {
		b.SetBytes(int64(len(cborStream)))
		allocs(b, func() {
			for range b.N {
				if evs := drain(streamWatcher(b, formatCBOR, bytes.NewReader(cborStream))); len(evs) != n {
					b.Fatalf("%d events", len(evs))
				}
			}
		})
		report(b)
	})
	for _, v := range []struct {
		name    string
		workers int
		diet    bool
	}{{"workers=1", 1, false}, {"workers=2", 2, false}, {"workers=2/diet=full", 2, true}} {
		b.Run("format=cbor/impl=wire/"+v.name, func(b *testing.B) {
			opts := []Option{WithWorkers(v.workers), WithContentType(CBOR)}
			if v.diet {
				opts = append(opts, WithDiet())
			}
			lw := testLW(b, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, opts...)
			b.SetBytes(int64(len(cborStream)))
			allocs(b, func() {
				for range b.N {
					w := lw.newWatcher(io.NopCloser(bytes.NewReader(cborStream)))
					w.start()
					if evs := drain(w); len(evs) != n {
						b.Fatalf("%d events", len(evs))
					}
					w.Stop()
				}
			})
			report(b)
		})
	}
}

// processCPU returns the user and system CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// decodeAll decodes a protobuf watch stream of the given pods and returns
// the objects, as an informer's cache would hold them.
func decodeAllClientGo(b testing.TB, stream []byte) []watch.Event {
	return drain(streamWatcher(b, formatProtobuf, bytes.NewReader(stream)))
}

// BenchmarkHeapPerPod measures the heap retained per cached realistic pod
// (with managedFields, protobuf, 10k pods held in a slice, after GC) decoded
// by client-go and by wire with and without the diet, and how much of it
// the collector scans (scan-B/pod); the class=… sub-benchmarks intern one
// field class each (on top of drop).
func BenchmarkHeapPerPod(b *testing.B) {
	const n = 10000
	pods := benchPods(n)
	events := make([]watch.Event, n)
	for i, p := range pods {
		events[i] = watch.Event{Type: watch.Added, Object: p}
	}
	stream := encodeWatch(b, formatProtobuf, events, schema.GroupVersion{Version: "v1"})
	pods, events = nil, nil
	measure := func(b *testing.B, decode func() []watch.Event) {
		var perPod, objects, scan float64
		for range b.N {
			runtime.GC()
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			s0 := scannable()
			held := decode()
			if len(held) != n {
				b.Fatalf("%d events", len(held))
			}
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&m1)
			scan = float64(int64(scannable())-int64(s0)) / n
			runtime.KeepAlive(held)
			perPod = float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / n
			objects = float64(int64(m1.HeapObjects)-int64(m0.HeapObjects)) / n
		}
		b.ReportMetric(perPod, "B/pod")
		b.ReportMetric(objects, "objects/pod")
		b.ReportMetric(scan, "scan-B/pod")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("impl=client-go", func(b *testing.B) {
		measure(b, func() []watch.Event { return decodeAllClientGo(b, stream) })
	})
	wireRun := func(name string, d diet.Config) {
		b.Run(name, func(b *testing.B) {
			lw := testLW(b, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(1))
			measure(b, func() []watch.Event {
				lw.codec.diet = diet.New(d, 1) // each run pays for what it caches, and for its table of versions
				return wireWatch(lw, stream)
			})
		})
	}
	wireRun("impl=wire", diet.Config{})
	wireRun("impl=wire/diet=drop", diet.Config{DropManagedFields: true})
	wireRun("impl=wire/diet=drop+intern", diet.Config{DropManagedFields: true, Intern: true})
	wireRun("impl=wire/diet=drop+compact", diet.Config{DropManagedFields: true, Compact: true})
	wireRun("impl=wire/diet=drop+intern+compact", diet.Config{DropManagedFields: true, Intern: true, Compact: true})
	wireRun("impl=wire/diet=full", diet.Config{DropManagedFields: true, Intern: true, Compact: true, Share: true})
	wireRun("impl=wire/diet=full+shared-maps", diet.Config{DropManagedFields: true, Intern: true, Compact: true, Share: true, ShareMaps: true})
	for _, c := range diet.InternClasses {
		wireRun("impl=wire/diet=drop/class="+c.Name, diet.Config{DropManagedFields: true, Intern: true, Classes: c.Class})
	}
}

// BenchmarkListDecode decodes a list of 10k realistic pods from memory, in
// protobuf and in CBOR: client-go reads the whole body and decodes it into a
// PodList (as rest.Result.Into does after transformResponse's io.ReadAll);
// wire streams it with 1 and 2 workers.
func BenchmarkListDecode(b *testing.B) {
	const n = 10000
	list := &corev1.PodList{}
	for _, p := range benchPods(n) {
		list.Items = append(list.Items, *p)
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*n), "ns/pod")
		b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "pods/s")
		b.ReportMetric(0, "ns/op")
	}
	for _, f := range []format{formatProtobuf, formatCBOR} {
		body := encodeObject(b, f, list, schema.GroupVersion{Version: "v1"})
		b.Run(fmt.Sprintf("format=%s/impl=client-go", f), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				data, err := io.ReadAll(bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				var l corev1.PodList
				if err := clientGoList(b, f, data, &l); err != nil || len(l.Items) != n {
					b.Fatal(err)
				}
			}
			report(b)
		})
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("format=%s/impl=wire/workers=%d", f, workers), func(b *testing.B) {
				lw := testLW(b, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(workers), WithContentType(f.contentType()))
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for range b.N {
					l, err := lw.decodeList(bytes.NewReader(body))
					if err != nil || len(l.(*corev1.PodList).Items) != n {
						b.Fatal(err)
					}
				}
				report(b)
			})
		}
	}
}

// BenchmarkUnstructuredListDecode decodes a list of 5k custom resources
// (realistic pods as unstructured objects of a made-up kind, what a
// controller of a CRD with pod-like objects lists) in JSON and in CBOR:
// client-go's dynamic client reads the whole body and decodes it (its JSON
// and CBOR decoders, as wire's reference); wire streams it with 2 workers.
// Custom resources have no protobuf, so for them CBOR is the binary choice.
func BenchmarkUnstructuredListDecode(b *testing.B) {
	const n = 5000
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "podlikes"}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "PodLikeList"}}
	for _, p := range benchPods(n) {
		m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			b.Fatal(err)
		}
		u := unstructured.Unstructured{Object: m}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("PodLike")
		list.Items = append(list.Items, u)
	}
	lw := testLW(b, Resource{GVR: gvr})
	for _, f := range []format{formatJSON, formatCBOR} {
		var body bytes.Buffer
		var enc k8sruntime.Encoder = unstructured.UnstructuredJSONScheme
		if f == formatCBOR {
			enc = cbor.NewSerializer(nil, nil)
		}
		if err := enc.Encode(list, &body); err != nil {
			b.Fatal(err)
		}
		report := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*n), "ns/object")
			b.ReportMetric(0, "ns/op")
		}
		b.Run(fmt.Sprintf("format=%s/impl=client-go", f), func(b *testing.B) {
			b.SetBytes(int64(body.Len()))
			b.ReportAllocs()
			for range b.N {
				data, err := io.ReadAll(bytes.NewReader(body.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				var l unstructured.UnstructuredList
				if _, _, err := lw.codec.reference[f].object.Decode(data, nil, &l); err != nil || len(l.Items) != n {
					b.Fatal(err)
				}
			}
			report(b)
		})
		b.Run(fmt.Sprintf("format=%s/impl=wire/workers=2", f), func(b *testing.B) {
			lw := testLW(b, Resource{GVR: gvr}, WithWorkers(2), WithContentType(f.contentType()))
			b.SetBytes(int64(body.Len()))
			b.ReportAllocs()
			for range b.N {
				l, err := lw.decodeList(bytes.NewReader(body.Bytes()))
				if err != nil || len(l.(*unstructured.UnstructuredList).Items) != n {
					b.Fatal(err)
				}
			}
			report(b)
		})
	}
}

// scannable is the heap the collector scans for pointers (runtime/metrics
// /gc/scan/heap:bytes, as of the last collection).
func scannable() uint64 {
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
