package bench

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestClassify(t *testing.T) {
	const (
		cache = "k8s.io/client-go/tools/cache."
		mod   = "github.com/shardinformer/shardinformer/"
	)
	tests := []struct {
		stack []string // innermost first
		want  Role
	}{
		// A channel send that wakes the receiver: the wake-up is the scheduler's.
		{[]string{"runtime.futex", "runtime.futexwakeup", "runtime.notewakeup", "runtime.startm", "runtime.wakep",
			"runtime.ready", "runtime.goready", "runtime.send", "runtime.chansend", "runtime.chansend1",
			mod + "bench.newGatedWatch.func1", "runtime.goexit"}, RoleSched},
		// The send's own work is the producer's.
		{[]string{"runtime.memmove", "runtime.chansend", mod + "bench.newGatedWatch.func1"}, RoleProducer},
		{[]string{"runtime.mapaccess2_faststr", mod + "internal/fakeapi.(*Cluster).writeKeyed",
			mod + "bench.(*Env).produce", mod + "bench.(*Env).Updates"}, RoleProducer},
		// client-go's key function called by our store is the informer's.
		{[]string{"k8s.io/apimachinery/pkg/api/meta.Accessor", cache + "MetaNamespaceKeyFunc",
			cache + "DeletionHandlingMetaNamespaceKeyFunc", mod + "pipeline.(*store).route",
			cache + "handleAnyWatch", cache + "(*Reflector).watch"}, RoleInformer},
		{[]string{"runtime.chanrecv", cache + "handleAnyWatch", cache + "(*Reflector).watch"}, RoleReflector},
		{[]string{"runtime.mapassign_faststr", cache + "(*threadSafeMap).Update", cache + "(*sharedIndexInformer).HandleDeltas"}, RoleInformer},
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.systemstack"}, RoleGC},
		// An assist inside an allocation is the GC's, not the allocator's caller's.
		{[]string{"runtime.scanobject", "runtime.gcDrainN", "runtime.gcAssistAlloc1", "runtime.gcAssistAlloc",
			"runtime.mallocgc", mod + "fifo.(*Queue).appendLocked"}, RoleGC},
		{[]string{"runtime.mallocgc", mod + "fifo.(*Queue).appendLocked"}, RoleInformer},
		{[]string{mod + "bench.spin", mod + "bench.(*Handler).OnUpdate", mod + "pipeline.notification.dispatch"}, RoleHandler},
		{[]string{mod + "index.(*Partition).ByIndex", mod + "bench.startReaders.func1"}, RoleReaders},
		{[]string{"runtime.futex", "runtime.ready", mod + "index.(*Partition).ByIndex", mod + "bench.startReaders.func1"}, RoleSched},
		{[]string{"runtime.chanrecv", mod + "bench.startReaders.func1"}, RoleReaders},
		{[]string{"runtime.futex", "runtime.futexsleep", "runtime.notesleep", "runtime.stopm",
			"runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall"}, RoleSched},
		{[]string{"runtime.memclrNoHeapPointers", "runtime.systemstack"}, RoleOther},
	}
	for _, tt := range tests {
		if got := classify(tt.stack); got != tt.want {
			t.Errorf("classify(%v) = %s, want %s", tt.stack, got, tt.want)
		}
	}
}

// TestSplitProfile profiles a busy loop through the probe and checks that the
// split adds up to the profile and charges the loop's frames.
func TestSplitProfile(t *testing.T) {
	old := benchSplitHz
	benchSplitHz = 100
	defer func() { benchSplitHz = old }()
	p := startCPU(NopTimer{})
	if !p.profile {
		t.Skip("another CPU profile is running")
	}
	h := NewHandler(Work(time.Millisecond))
	for i := 0; p.cpu0+300*time.Millisecond > cpuTime() || i < 10; i++ {
		h.OnUpdate(nil, &corev1.Pod{})
	}
	p.end()
	var res Result
	p.report(&res, 1, "event")
	if metric(res, "cpu-ns/event") <= 0 {
		t.Fatalf("no CPU time in %v", res.Metrics)
	}
	if metric(res, "handler-ns/event") <= 0 {
		t.Errorf("the handler's spin loop got no samples: %v", res.Metrics)
	}
}
