package main

import (
	"strings"
	"testing"
)

// decodeInput is BenchmarkDecodeSync output with two runs of each row, so
// the medians are the means of the pairs.
const decodeInput = `goos: linux
BenchmarkDecodeSync/impl=client-go/decoder=client-go/objects=10/list=list-2   1  100 ns/op  900 cpu-ns/object  20000 heap-B/object  1000 objects/s
BenchmarkDecodeSync/impl=client-go/decoder=client-go/objects=10/list=list-2   1  100 ns/op  1100 cpu-ns/object  20000 heap-B/object  1000 objects/s
BenchmarkDecodeSync/impl=shardinformer/decoder=wire/objects=10/list=list-2    1  100 ns/op  500 cpu-ns/object  20000 heap-B/object  2000 objects/s
BenchmarkDecodeSync/impl=shardinformer/decoder=wire/objects=10/list=list-2    1  100 ns/op  500 cpu-ns/object  20000 heap-B/object  3000 objects/s
BenchmarkDecodeSync/impl=shardinformer/decoder=wire+diet/objects=10/list=list-2  1  100 ns/op  700 cpu-ns/object  8000 heap-B/object  3000 objects/s
BenchmarkInitialSync/impl=client-go/objects=10/list=list-2   1  100 ns/op  5 objects/s
`

func TestWriteDecodeSync(t *testing.T) {
	var out strings.Builder
	writeDecodeSync(&out, parseRows(strings.NewReader(decodeInput)))
	got := out.String()
	for _, want := range []string{
		// median objects/s 2500 against 1000: sync time 0.40x; CPU 500/1000.
		"| list | shardinformer | wire | 2.5e+03 | 0.40x | 500 | 0.50x | 20k | 1.00x |",
		"| list | shardinformer | wire+diet | 3e+03 | 0.33x | 700 | 0.70x | 8e+03 | 0.40x |",
		"sync time, shardinformer on wire / client-go, list: 0.40 (target <= 0.5) — met",
		"sync time, shardinformer on wire+diet / client-go, list: 0.33 (target <= 0.4) — met",
		"heap per cached pod, shardinformer on wire+diet / client-go, list: 0.40 (target <= 0.5) — met",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "InitialSync") {
		t.Errorf("other benchmarks belong to the main table:\n%s", got)
	}
}

func TestWriteDecodeSyncMissed(t *testing.T) {
	in := strings.ReplaceAll(decodeInput, "3000 objects/s", "1500 objects/s")
	var out strings.Builder
	writeDecodeSync(&out, parseRows(strings.NewReader(in)))
	if want := "sync time, shardinformer on wire+diet / client-go, list: 0.67 (target <= 0.4) — MISSED"; !strings.Contains(out.String(), want) {
		t.Errorf("missing %q in:\n%s", want, out.String())
	}
}

func TestWriteDecodeSyncNone(t *testing.T) {
	var out strings.Builder
	writeDecodeSync(&out, parseRows(strings.NewReader("BenchmarkUpdates/impl=client-go-2 1 100 ns/op\n")))
	if out.Len() != 0 {
		t.Errorf("no BenchmarkDecodeSync rows, got:\n%s", out.String())
	}
}

func TestWriteWire(t *testing.T) {
	in := `BenchmarkWatchDecode/impl=client-go-2   10  4000 ns/event  12 allocs/event
BenchmarkWatchDecode/impl=wire/workers=2-2   10  2000 ns/event  12 allocs/event
`
	var out strings.Builder
	writeWire(&out, parseRows(strings.NewReader(in)))
	got := out.String()
	for _, want := range []string{
		"| WatchDecode | impl=wire/workers=2 | ns/event | 2e+03 | 2.00x |",
		"| WatchDecode | impl=wire/workers=2 | allocs/event | 12 | 1.00x |",
		"wire with 2 workers / client-go's StreamWatcher: 2.00x (target >= 1.8x) — met",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
