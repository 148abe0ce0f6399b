// Command summary reads the output of the bench package's benchmarks and
// prints a Markdown table of shardinformer / client-go ratios per workload
// (medians over the -count runs), with the targets next to them;
// then the initial sync over HTTP with decoding (BenchmarkDecodeSync: each
// core on each decoder against client-go's stack) and, given the wire
// package's benchmark output too, its decoding figures against client-go's
// decoder. It is informational: it never fails on a missed target.
//
//	go run ./bench/summary bench/results/raw.txt [bench/results/wire.txt]
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// key names one metric of one benchmark: name is the benchmark's name
// without its impl= segment and -procs suffix.
type key struct{ name, impl, unit string }

var procsSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: summary raw.txt [wire.txt]")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	data, names := parse(strings.NewReader(string(raw)))
	write(os.Stdout, data, names)
	writeDecodeSync(os.Stdout, parseRows(strings.NewReader(string(raw))))
	if len(os.Args) == 3 {
		w, err := os.ReadFile(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		writeWire(os.Stdout, parseRows(strings.NewReader(string(w))))
	}
}

func parse(r io.Reader) (map[key][]float64, []string) {
	data := make(map[key][]float64)
	var names []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name, impl := splitImpl(procsSuffix.ReplaceAllString(fields[0], ""))
		if impl == "" || strings.HasPrefix(name, decodeSync+"/") {
			continue // BenchmarkDecodeSync has a section of its own
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			k := key{name, impl, fields[i+1]}
			data[k] = append(data[k], v)
		}
	}
	return data, names
}

// splitImpl removes the impl=... segment from a benchmark name.
func splitImpl(full string) (name, impl string) {
	parts := strings.Split(full, "/")
	var rest []string
	for _, p := range parts {
		if v, ok := strings.CutPrefix(p, "impl="); ok {
			impl = v
			continue
		}
		rest = append(rest, p)
	}
	return strings.Join(rest, "/"), impl
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// units shown, in order, with whether higher is better.
var units = []struct {
	unit   string
	higher bool
}{
	{"objects/s", true}, {"events/s", true}, {"deliveries/s", true}, {"reads/s", true},
	{"heap-B/object", false}, {"cache-B/object", false}, {"allocs/object", false}, {"allocs/event", false},
	{"p50-ns", false}, {"p99-ns", false}, {"max-ns", false},
	{"done-frac", true}, {"heap-growth-B/event", false}, {"coalesced-frac", false},
}

func write(w io.Writer, data map[key][]float64, names []string) {
	get := func(name, impl, unit string) (float64, bool) {
		v, ok := data[key{name, impl, unit}]
		return median(v), ok
	}
	// client-go's row for a name: the same name, or (stalled handler) the
	// same name with another policy= segment.
	clientName := func(name string) string {
		if _, ok := get(name, "client-go", "sec/op"); ok {
			return name
		}
		if _, ok := get(name, "client-go", "ns/op"); ok {
			return name
		}
		i := strings.Index(name, "/policy=")
		if i < 0 {
			return name
		}
		for _, n := range names {
			if strings.HasPrefix(n, name[:i]+"/policy=") {
				if _, ok := get(n, "client-go", "ns/op"); ok {
					return n
				}
			}
		}
		return name
	}

	fmt.Fprintln(w, "| workload | metric | client-go | shardinformer | ours / client-go |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	for _, name := range names {
		cn := clientName(name)
		for _, u := range units {
			ours, okO := get(name, "shardinformer", u.unit)
			theirs, okC := get(cn, "client-go", u.unit)
			if !okO && !okC {
				continue
			}
			ratio := "—"
			if okO && okC && theirs != 0 {
				ratio = fmt.Sprintf("%.2fx", ours/theirs)
			}
			label := strings.TrimPrefix(name, "Benchmark")
			if cn != name {
				label += " (client-go: " + cn[strings.Index(cn, "/policy=")+1:] + ")"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", label, u.unit, num(theirs, okC), num(ours, okO), ratio)
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets (GOMAXPROCS=2; informational, benchmarks never fail on timing):")
	fmt.Fprintln(w)
	ratio := func(name, unit string) (float64, bool) {
		o, ok1 := get(name, "shardinformer", unit)
		c, ok2 := get(clientName(name), "client-go", unit)
		return o / c, ok1 && ok2 && c != 0
	}
	find := func(prefix, suffix string) []string {
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
				out = append(out, n)
			}
		}
		return out
	}
	check := func(what string, v float64, ok bool, goal string, met bool) {
		if !ok {
			fmt.Fprintf(w, "- %s: not measured\n", what)
			return
		}
		mark := "met"
		if !met {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "- %s: %.2f (target %s) — %s\n", what, v, goal, mark)
	}
	for _, h := range []string{"1", "4"} {
		for _, n := range find("BenchmarkUpdates/", "/handlers="+h+"/readers=0") {
			r, ok := ratio(n, "events/s")
			check("updates/s ratio, "+h+" handler(s)", r, ok, ">= 3x", r >= 3)
		}
	}
	for _, n := range find("BenchmarkUpdates/", "/handlers=1/readers=4") {
		r, ok := ratio(n, "events/s")
		check("updates/s ratio, 4 readers", r, ok, ">= 10x", r >= 10)
		base := strings.TrimSuffix(n, "readers=4") + "readers=0"
		o4, ok1 := get(n, "shardinformer", "events/s")
		o0, ok2 := get(base, "shardinformer", "events/s")
		check("our updates/s with 4 readers / without", o4/o0, ok1 && ok2 && o0 != 0, ">= 0.70", o4/o0 >= 0.7)
	}
	for _, n := range find("BenchmarkCPUHandler/", "") {
		r, ok := ratio(n, "events/s")
		check("20 µs handler, parallel vs client-go", r, ok, ">= 1.8x", r >= 1.8)
	}
	for _, n := range find("BenchmarkInitialSync/", "/list=watchlist") {
		r, ok := ratio(n, "cache-B/object")
		check("informer heap per cached object (WatchList)", r, ok, "<= 1.05x", r <= 1.05)
	}
	for _, n := range find("BenchmarkLatency/", "") {
		if strings.HasSuffix(n, "/rate=max") {
			continue
		}
		p99, ok := get(n, "shardinformer", "p99-ns")
		check("our p99 latency in ms at "+n[strings.LastIndex(n, "rate="):], p99/1e6, ok, "<= 1 ms", p99 <= 1e6)
	}
	for _, n := range find("BenchmarkStalledHandler/", "") {
		if strings.Contains(n, "policy=coalesce") || strings.Contains(n, "policy=block") {
			g, ok := get(n, "shardinformer", "heap-growth-B/event")
			fmt.Fprintf(w, "- stalled handler, %s: heap growth %s B/event (target: bounded; compare with client-go's, and rerun with a larger BENCH_STALL_UPDATES: bounded means B/event falls as events grow)\n", n[strings.Index(n, "policy="):], num(g, ok))
		}
	}
}

func num(v float64, ok bool) string {
	switch {
	case !ok:
		return "—"
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
