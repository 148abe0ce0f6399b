//go:build ignore

// Summarize reads the `go test -json` (test2json) streams hack/upstream.sh
// wrote for Kubernetes' integration test packages, run once on client-go's
// informer factories (baseline) and once on ours, and prints, per package:
// tests run, passed on each side, the tests that pass on the baseline but
// fail on ours (with the first lines of their failure output), and the tests
// that fail on the baseline too (reported, not counted). It exits 1 when ours
// passes fewer of the tests the baseline passes, 2 when a baseline could not
// be built or run at all.
//
//	go run hack/upstream/summarize.go -results DIR -pkgs "replicaset job"
//	go run hack/upstream/summarize.go -failed FILE.json   # failed top-level tests, one a line
//
// Layout of DIR (hack/upstream.sh writes it): DIR/<pkg>/<side>.json for the
// first attempt, <side>.retry<N>.json for reruns of that side's failed tests,
// <side>.build.log and <side>.build.rc for `go test -c`, times.txt with lines
// "<side> <compile|run|retry> <seconds>". A top-level test passes on a side
// when any attempt passed it; it is flaky when another attempt failed it.
// Only top-level tests are counted; failed subtests are named in the details.
//
// Only the standard library: the script runs it with `go run` on a machine
// that has nothing but Go.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var sides = []string{"baseline", "ours"}

// event is one line of test2json's output.
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// outcome is a test's result in one attempt.
type outcome int

const (
	notRun   outcome = iota
	passed           // "pass"
	failed           // "fail"
	skipped          // "skip"
	noResult         // "run" but no final action: the binary timed out or crashed
)

// result is what one attempt (one test2json stream) says about each test.
type result struct {
	tests   map[string]outcome  // every test and subtest seen
	order   []string            // top-level tests in the order they started
	lines   map[string][]string // top-level test → its first failure lines in _test.go files
	other   map[string][]string // … and in other files (helpers, the framework)
	elapsed map[string]float64  // top-level test → seconds
	pkgTail []string            // last package-level output lines (no test)
	pkgFail bool
}

const maxLines = 12

// failureLine matches t.Error/t.Fatal and friends as test2json relays them
// ("    foo_test.go:123: message"), panics and --- FAIL lines; klog lines
// routed through the test's logger ("util.go:12: I1201 ...") are not failures.
var (
	failureLine = regexp.MustCompile(`^\s*(--- FAIL|panic:|\S+\.go:\d+: )`)
	klogLine    = regexp.MustCompile(`^\s*\S+\.go:\d+: [IWEF]\d{4} `)
	testLine    = regexp.MustCompile(`^(--- FAIL|panic:|\S+_test\.go:\d+: )`)
)

func parse(path string) (*result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &result{
		tests:   map[string]outcome{},
		lines:   map[string][]string{},
		other:   map[string][]string{},
		elapsed: map[string]float64{},
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line test2json could not frame; ignore
		}
		top, _, _ := strings.Cut(e.Test, "/")
		switch e.Action {
		case "run":
			if _, ok := r.tests[e.Test]; !ok && e.Test == top {
				r.order = append(r.order, top)
			}
			r.tests[e.Test] = noResult
		case "pass":
			if e.Test == "" {
				continue
			}
			r.tests[e.Test] = passed
		case "skip":
			if e.Test == "" {
				continue
			}
			r.tests[e.Test] = skipped
		case "fail":
			if e.Test == "" {
				r.pkgFail = true
				continue
			}
			r.tests[e.Test] = failed
			if e.Test == top {
				r.elapsed[top] = e.Elapsed
			}
		case "output":
			line := strings.TrimRight(e.Output, "\n")
			if e.Test == "" {
				r.pkgTail = append(r.pkgTail, line)
				if len(r.pkgTail) > 2*maxLines {
					r.pkgTail = r.pkgTail[len(r.pkgTail)-2*maxLines:]
				}
				continue
			}
			if !failureLine.MatchString(line) || klogLine.MatchString(line) {
				continue
			}
			// Lines of the test's own files first: the framework's
			// (testserver.go: "Starting kube-apiserver…") only when
			// there are none.
			l := strings.TrimSpace(line)
			if testLine.MatchString(l) {
				if len(r.lines[top]) < maxLines {
					r.lines[top] = append(r.lines[top], l)
				}
			} else if len(r.other[top]) < maxLines {
				r.other[top] = append(r.other[top], l)
			}
		}
		if e.Test == top && (e.Action == "pass" || e.Action == "skip") {
			r.elapsed[top] = e.Elapsed
		}
	}
	for t, l := range r.other {
		if len(r.lines[t]) == 0 {
			r.lines[t] = l
		}
	}
	return r, sc.Err()
}

// failedTop lists the top-level tests an attempt failed (or left without a result).
func (r *result) failedTop() []string {
	var out []string
	for _, t := range r.order {
		if o := r.tests[t]; o == failed || o == noResult {
			out = append(out, t)
		}
	}
	return out
}

// failedSubtests of top in an attempt, leaves only.
func (r *result) failedSubtests(top string) []string {
	var out []string
	for name, o := range r.tests {
		if strings.HasPrefix(name, top+"/") && (o == failed || o == noResult) {
			leaf := true
			for other, oo := range r.tests {
				if strings.HasPrefix(other, name+"/") && (oo == failed || oo == noResult) {
					leaf = false
					break
				}
			}
			if leaf {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// sideResult merges a side's attempts.
type sideResult struct {
	attempts []*result
	built    bool
	buildLog []string
}

// verdict of a top-level test on a side: passes when any attempt passes it.
func (s *sideResult) verdict(test string) (o outcome, passes, tries int) {
	o = notRun
	for _, a := range s.attempts {
		ao, ok := a.tests[test]
		if !ok {
			continue
		}
		tries++
		if ao == passed {
			passes++
		}
		switch {
		case ao == passed:
			o = passed
		case ao == skipped && o != passed:
			o = skipped
		case o == notRun || o == noResult:
			o = ao
		}
	}
	return o, passes, tries
}

func loadSide(dir, side string) (*sideResult, error) {
	s := &sideResult{}
	rc, err := os.ReadFile(filepath.Join(dir, side+".build.rc"))
	s.built = err == nil && strings.TrimSpace(string(rc)) == "0"
	if log, err := os.ReadFile(filepath.Join(dir, side+".build.log")); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
			if len(s.buildLog) < 2*maxLines && l != "" {
				s.buildLog = append(s.buildLog, l)
			}
		}
	}
	if !s.built {
		return s, nil
	}
	files := []string{filepath.Join(dir, side+".json")}
	retries, _ := filepath.Glob(filepath.Join(dir, side+".retry*.json"))
	sort.Strings(retries)
	files = append(files, retries...)
	for _, f := range files {
		r, err := parse(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		s.attempts = append(s.attempts, r)
	}
	return s, nil
}

type times map[string]float64 // "side phase" → seconds

func loadTimes(dir string) times {
	t := times{}
	b, _ := os.ReadFile(filepath.Join(dir, "times.txt"))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			v, _ := strconv.ParseFloat(f[2], 64)
			t[f[0]+" "+f[1]] += v
		}
	}
	return t
}

type row struct {
	pkg                                  string
	run, skipped, basePass, oursPass     int
	regressions, baseFail, flaky, unseen []string
	baseBroken                           bool
	base, ours                           *sideResult
	t                                    times
}

func summarize(dir, pkg string) (*row, error) {
	pdir := filepath.Join(dir, pkg)
	base, err := loadSide(pdir, "baseline")
	if err != nil {
		return nil, err
	}
	ours, err := loadSide(pdir, "ours")
	if err != nil {
		return nil, err
	}
	r := &row{pkg: pkg, base: base, ours: ours, t: loadTimes(pdir)}
	if !base.built || len(base.attempts) == 0 {
		r.baseBroken = true
		return r, nil
	}
	first := base.attempts[0]
	if len(first.order) == 0 {
		r.baseBroken = true // built, but ran no test (TestMain failed: etcd missing, …)
	}
	for _, t := range first.order {
		r.run++
		bo, bp, bt := base.verdict(t)
		oo, op, ot := ours.verdict(t)
		switch {
		case bo == skipped:
			r.skipped++
			continue
		case bo != passed:
			r.baseFail = append(r.baseFail, t) // reported, counted on neither side
			continue
		}
		r.basePass++
		if oo == passed {
			r.oursPass++
			if op < ot || bp < bt {
				r.flaky = append(r.flaky, fmt.Sprintf("%s (client-go %d/%d, ours %d/%d attempts passed)", t, bp, bt, op, ot))
			}
			continue
		}
		if oo == notRun {
			r.unseen = append(r.unseen, t)
		}
		r.regressions = append(r.regressions, t)
	}
	return r, nil
}

func secs(t times, side, phase string) string {
	v, ok := t[side+" "+phase]
	if !ok {
		return "–"
	}
	return strconv.Itoa(int(v + 0.5))
}

func main() {
	results := flag.String("results", "", "results directory hack/upstream.sh wrote")
	pkgs := flag.String("pkgs", "", "packages, space-separated, in the order to print")
	failedOf := flag.String("failed", "", "print the top-level tests this test2json file failed, one a line, and exit")
	flag.Parse()

	if *failedOf != "" {
		r, err := parse(*failedOf)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for _, t := range r.failedTop() {
			fmt.Println(t)
		}
		return
	}

	var rows []*row
	for _, p := range strings.Fields(*pkgs) {
		r, err := summarize(*results, p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "summarize:", p, err)
			os.Exit(2)
		}
		rows = append(rows, r)
	}

	fmt.Println("| package | tests | skipped | pass, client-go's factories | pass, ours | pass on client-go's, fail on ours | fail on client-go's too (not counted) | compile s (client-go's / ours) | run s | reruns s |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	exit := 0
	for _, r := range rows {
		run := fmt.Sprintf("%s / %s", secs(r.t, "baseline", "run"), secs(r.t, "ours", "run"))
		rerun := fmt.Sprintf("%s / %s", secs(r.t, "baseline", "retry"), secs(r.t, "ours", "retry"))
		compile := fmt.Sprintf("%s / %s", secs(r.t, "baseline", "compile"), secs(r.t, "ours", "compile"))
		if r.baseBroken {
			fmt.Printf("| %s | baseline did not build or run | | | | | | %s | %s | %s |\n", r.pkg, compile, run, rerun)
			exit = max(exit, 2)
			continue
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n", r.pkg, r.run, r.skipped, r.basePass, r.oursPass,
			len(r.regressions), len(r.baseFail), compile, run, rerun)
		if len(r.regressions) > 0 {
			exit = max(exit, 1)
		}
	}

	fmt.Println("\nTimes in seconds, client-go's / ours; reruns are of each side's failed tests.")
	for _, r := range rows {
		if r.baseBroken {
			fmt.Printf("\n### %s: the baseline did not build or ran no test\n\n```\n", r.pkg)
			for _, l := range r.base.buildLog {
				fmt.Println(l)
			}
			if len(r.base.attempts) > 0 {
				for _, l := range r.base.attempts[0].pkgTail {
					fmt.Println(l)
				}
			}
			fmt.Println("```")
			continue
		}
		if !r.ours.built {
			fmt.Printf("\n### %s: ours does not compile\n\n```\n", r.pkg)
			for _, l := range r.ours.buildLog {
				fmt.Println(l)
			}
			fmt.Println("```")
		}
		if len(r.regressions) > 0 && r.ours.built {
			fmt.Printf("\n### %s: pass on client-go's factories, fail on ours\n", r.pkg)
			for _, t := range r.regressions {
				_, op, ot := r.ours.verdict(t)
				fmt.Printf("\n- `%s` (ours passed %d of %d attempts)", t, op, ot)
				if len(r.ours.attempts) == 0 {
					fmt.Println()
					continue
				}
				a := r.ours.attempts[0]
				if a.tests[t] == noResult || a.tests[t] == notRun {
					fmt.Print(": no result (the test binary timed out or crashed)")
				}
				if subs := a.failedSubtests(t); len(subs) > 0 {
					fmt.Printf("; failed subtests: `%s`", strings.Join(subs, "`, `"))
				}
				fmt.Println()
				if len(a.lines[t]) > 0 {
					fmt.Println("\n  ```")
					for _, l := range a.lines[t] {
						fmt.Println("  " + l)
					}
					fmt.Println("  ```")
				} else if a.tests[t] == noResult || a.tests[t] == notRun {
					fmt.Println("\n  ```")
					for _, l := range a.pkgTail {
						fmt.Println("  " + l)
					}
					fmt.Println("  ```")
				}
			}
		}
		if len(r.baseFail) > 0 {
			fmt.Printf("\n### %s: fail on client-go's factories too (not counted)\n\n", r.pkg)
			for _, t := range r.baseFail {
				oo, _, _ := r.ours.verdict(t)
				state := "fails on ours too"
				if oo == passed {
					state = "passes on ours"
				}
				fmt.Printf("- `%s` (%s)", t, state)
				if a := r.base.attempts[0]; len(a.lines[t]) > 0 {
					fmt.Printf(": `%s`", a.lines[t][0])
				}
				fmt.Println()
			}
		}
		if len(r.flaky) > 0 {
			fmt.Printf("\n### %s: passed on both, but not on every attempt\n\n", r.pkg)
			for _, f := range r.flaky {
				fmt.Println("- " + f)
			}
		}
	}
	os.Exit(exit)
}
