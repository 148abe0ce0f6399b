package selfstat

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// TestCPUSplitCountsFaultsAndGC: touching fresh memory adds page faults and
// a collection adds GC CPU to a reading's difference.
func TestCPUSplitCountsFaultsAndGC(t *testing.T) {
	before := ReadCPUSplit()
	mem := make([]byte, 64<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	runtime.GC()
	d := ReadCPUSplit().Sub(before)
	runtime.KeepAlive(mem)
	if d.Faults <= 0 || d.GC <= 0 || d.Sys < 0 {
		t.Errorf("split after touching 64 MiB and a GC: %+v, want faults and GC CPU", d)
	}
}

// TestGCCPUClampedToCPU: the GC's part of a span is the runtime's estimate
// where it is within the span's CPU, and the CPU where the runtime counted
// more (P-time on a loaded machine).
func TestGCCPUClampedToCPU(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		c    CPUSplit
		want time.Duration
	}{
		{CPUSplit{CPU: 1000 * ms, GC: 300 * ms}, 300 * ms},
		{CPUSplit{CPU: 1000 * ms, GC: 1200 * ms}, 1000 * ms},
		{CPUSplit{CPU: 1000 * ms, GC: 0}, 0},
		{CPUSplit{CPU: 0, GC: 200 * ms}, 0},
	} {
		if got := tc.c.GCCPU(); got != tc.want {
			t.Errorf("%+v: GCCPU %v, want %v", tc.c, got, tc.want)
		}
	}
}

// TestHeapReadings: allocating moves the cumulative counters by at least
// what was allocated, and a held allocation shows in the live heap and the
// peaks.
func TestHeapReadings(t *testing.T) {
	before := ReadHeap()
	hold := make([][]byte, 64)
	for i := range hold {
		hold[i] = make([]byte, 1<<20)
	}
	after := ReadHeap()
	if got := after.AllocBytes - before.AllocBytes; got < 64<<20 {
		t.Errorf("allocated %d bytes, counters moved %d", 64<<20, got)
	}
	if got := after.AllocObjects - before.AllocObjects; got < 64 {
		t.Errorf("allocated 64 objects, counters moved %d", got)
	}
	if live := LiveHeap(); live < 64<<20 {
		t.Errorf("live heap %d with 64 MiB held", live)
	}
	var p Peaks
	if h, r := p.Get(); h != 0 || r != 0 {
		t.Errorf("zero Peaks: %d, %d", h, r)
	}
	h, r := p.Sample()
	runtime.KeepAlive(hold)
	ph, pr := p.Get()
	if h < 64<<20 || ph != h || pr != r {
		t.Errorf("sample %d/%d, peaks %d/%d, want heap ≥ 64 MiB and peaks equal to the one sample", h, r, ph, pr)
	}
	if runtime.GOOS == "linux" && r == 0 {
		t.Error("no resident set on Linux")
	}
	if Metric("/no/such/metric:bytes") != 0 || GCCycles() == 0 {
		t.Errorf("unknown metric %d, GC cycles %d (after LiveHeap's collection)", Metric("/no/such/metric:bytes"), GCCycles())
	}
}

// TestByLabel: samples are summed by "impl/role", either label alone, or ""
// when unlabelled; a malformed profile is an error.
func TestByLabel(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	sample := func(ns int64, labels map[string][]string) *profile.Sample {
		return &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, ns}, Label: labels}
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Function:   []*profile.Function{fn},
		Location:   []*profile.Location{loc},
		Sample: []*profile.Sample{
			sample(10, map[string][]string{"impl": {"ours"}, "role": {"handler"}}),
			sample(5, map[string][]string{"impl": {"ours"}, "role": {"handler"}}),
			sample(7, map[string][]string{"impl": {"ours"}}),
			sample(3, map[string][]string{"role": {"churn"}}),
			sample(2, nil),
		},
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ByLabel(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"ours/handler": 15, "ours": 7, "churn": 3, "": 2}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q: %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if _, err := ByLabel(strings.NewReader("not a profile")); err == nil {
		t.Error("a malformed profile was accepted")
	}
}
