package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// decodeSync is the benchmark whose figures include HTTP and decoding.
const decodeSync = "BenchmarkDecodeSync"

// row is one sub-benchmark's metrics over the -count runs: bench is the
// benchmark (BenchmarkWatchDecode), sub the rest of its name without the
// -procs suffix (impl=wire/workers=2).
type row struct {
	bench, sub string
	values     map[string][]float64 // unit → one value per run
}

func (r *row) median(unit string) (float64, bool) {
	v, ok := r.values[unit]
	return median(v), ok && len(v) > 0
}

// parseRows reads benchmark lines into rows, in the order they first
// appear.
func parseRows(rd io.Reader) []*row {
	var rows []*row
	byName := map[string]*row{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := procsSuffix.ReplaceAllString(fields[0], "")
		r := byName[name]
		if r == nil {
			bench, sub, _ := strings.Cut(name, "/")
			r = &row{bench: bench, sub: sub, values: map[string][]float64{}}
			byName[name] = r
			rows = append(rows, r)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			r.values[fields[i+1]] = append(r.values[fields[i+1]], v)
		}
	}
	return rows
}

// segment returns the value of key=value in a sub-benchmark name.
func segment(sub, key string) string {
	for _, p := range strings.Split(sub, "/") {
		if v, ok := strings.CutPrefix(p, key+"="); ok {
			return v
		}
	}
	return ""
}

// ratioText formats x/base, or "—".
func ratioText(x, base float64, ok bool) string {
	if !ok || base == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fx", x/base)
}

// writeDecodeSync prints BenchmarkDecodeSync: every core on every decoder
// against client-go's whole stack (impl=client-go/decoder=client-go) of the
// same list mode, and the initial-sync targets.
func writeDecodeSync(w io.Writer, rows []*row) {
	rows = slices.DeleteFunc(slices.Clone(rows), func(r *row) bool { return r.bench != decodeSync })
	if len(rows) == 0 {
		return
	}
	base := func(r *row) *row {
		for _, b := range rows {
			if segment(b.sub, "impl") == "client-go" && segment(b.sub, "decoder") == "client-go" &&
				segment(b.sub, "list") == segment(r.sub, "list") && segment(b.sub, "objects") == segment(r.sub, "objects") {
				return b
			}
		}
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Initial sync through HTTP with decoding (BenchmarkDecodeSync: realistic pods with managedFields, protobuf, in-process simulated API server; medians; ratios to client-go's informer on client-go's decoder; sync time = 1 / objects/s; CPU includes the server's writes):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| list | informer | decoder | objects/s | sync time / client-go | CPU-ns/object | CPU / client-go | heap-B/object | heap / client-go |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		b := base(r)
		if b == nil {
			continue
		}
		ops, ok1 := r.median("objects/s")
		bops, ok2 := b.median("objects/s")
		cpu, ok3 := r.median("cpu-ns/object")
		bcpu, ok4 := b.median("cpu-ns/object")
		heap, ok5 := r.median("heap-B/object")
		bheap, ok6 := b.median("heap-B/object")
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", segment(r.sub, "list"), segment(r.sub, "impl"), segment(r.sub, "decoder"),
			num(ops, ok1), ratioText(bops, ops, ok1 && ok2 && ops != 0), num(cpu, ok3), ratioText(cpu, bcpu, ok3 && ok4),
			num(heap, ok5), ratioText(heap, bheap, ok5 && ok6))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets (issue 11, initial sync; here with the server in the process and a smaller count than loadgen's 100k):")
	fmt.Fprintln(w)
	for _, r := range rows {
		if segment(r.sub, "impl") != "shardinformer" {
			continue
		}
		var goal float64
		switch segment(r.sub, "decoder") {
		case "wire":
			goal = 0.5
		case "wire+diet":
			goal = 0.4
		default:
			continue
		}
		b := base(r)
		ops, ok1 := r.median("objects/s")
		bops, ok2 := b.median("objects/s")
		if !ok1 || !ok2 || ops == 0 {
			continue
		}
		mark := "met"
		if bops/ops > goal {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "- sync time, shardinformer on %s / client-go, %s: %.2f (target <= %.1f) — %s\n", segment(r.sub, "decoder"), segment(r.sub, "list"), bops/ops, goal, mark)
		if segment(r.sub, "decoder") == "wire+diet" {
			heap, ok1 := r.median("heap-B/object")
			bheap, ok2 := b.median("heap-B/object")
			if ok1 && ok2 && bheap != 0 {
				mark = "met"
				if heap/bheap > 0.5 {
					mark = "MISSED"
				}
				fmt.Fprintf(w, "- heap per cached pod, shardinformer on wire+diet / client-go, %s: %.2f (target <= 0.5) — %s\n", segment(r.sub, "list"), heap/bheap, mark)
			}
		}
	}
}

// wireUnits are the wire package's figures, in order, and whether the
// summary shows client-go / x (a speed-up) rather than x / client-go.
var wireUnits = []struct {
	unit    string
	speedup bool
}{{"ns/event", true}, {"ns/pod", true}, {"B/pod", false}, {"allocs/event", false}, {"B/op", false}}

// writeWire prints the wire package's decoding benchmarks: every variant
// against impl=client-go of the same benchmark, and the watch-decode
// target.
func writeWire(w io.Writer, rows []*row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Decoding from memory (package wire's benchmarks: realistic pods with managedFields, protobuf; medians; against client-go's decoder, as speed-up client-go / x for times and x / client-go otherwise):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| benchmark | variant | metric | value | vs client-go |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|")
	base := map[string]*row{}
	for _, r := range rows {
		if r.sub == "impl=client-go" {
			base[r.bench] = r
		}
	}
	for _, r := range rows {
		b := base[r.bench]
		for _, u := range wireUnits {
			v, ok := r.median(u.unit)
			if !ok || (v == 0 && u.unit == "B/op") {
				continue
			}
			vs := "—"
			if b != nil && b != r {
				bv, okb := b.median(u.unit)
				if u.speedup {
					vs = ratioText(bv, v, okb && v != 0)
				} else {
					vs = ratioText(v, bv, okb)
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", strings.TrimPrefix(r.bench, "Benchmark"), r.sub, u.unit, num(v, true), vs)
		}
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		if r.bench == "BenchmarkWatchDecode" && r.sub == "impl=wire/workers=2" && base[r.bench] != nil {
			v, ok1 := r.median("ns/event")
			bv, ok2 := base[r.bench].median("ns/event")
			if ok1 && ok2 && v != 0 {
				mark := "met"
				if bv/v < 1.8 {
					mark = "MISSED"
				}
				fmt.Fprintf(w, "- watch decode throughput, wire with 2 workers / client-go's StreamWatcher: %.2fx (target >= 1.8x) — %s\n", bv/v, mark)
			}
		}
	}
}
