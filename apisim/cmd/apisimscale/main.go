// Command apisimscale measures what the simulated API server costs at a
// given number of pods: it populates an apisim.Server with the pods
// cmd/loadgen generates (apisim.NewPod, --namespaces namespaces, loadgen's
// names and seeds), as loadgen's parent process does, and reports the time
// to populate, the live heap and the process's RSS; then it serves them —
// a paginated protobuf LIST, a WatchList up to its initial-events-end
// bookmark and a watch — while churn writes, and reports the same again.
//
//	go run ./apisim/cmd/apisimscale --pods 1000000
//
// Run it alone on the machine: RSS and times are the process's own. The
// figures go to stdout as Markdown; --heap-profile writes a heap profile
// taken after populating.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/apisim/internal/pbscan"
)

func main() {
	pods := flag.Int("pods", 100000, "pods to populate")
	namespaces := flag.Int("namespaces", 100, "namespaces the pods are spread over (loadgen's --namespaces)")
	seed := flag.Int64("seed", 1, "loadgen's --seed")
	managed := flag.Bool("managed-fields", false, "give pods managedFields (loadgen's --managed-fields)")
	encodedOnly := flag.Bool("encoded-only", true, "apisim.Config.EncodedOnly, as loadgen runs the server")
	heapProfile := flag.String("heap-profile", "", "write a heap profile taken after populating to this file")
	cpuProfile := flag.String("cpu-profile", "", "write a CPU profile of populating to this file")
	serve := flag.Bool("serve", true, "after populating, list, WatchList and watch while churning")
	churnRate := flag.Int("churn-rate", 2000, "writes per second (creates, updates, deletes 1:8:1) while serving")
	flag.Parse()
	if err := run(*pods, *namespaces, *seed, *managed, *encodedOnly, *heapProfile, *cpuProfile, *serve, *churnRate); err != nil {
		fmt.Fprintln(os.Stderr, "apisimscale:", err)
		os.Exit(1)
	}
}

func namespace(i, n int) string { return fmt.Sprintf("loadgen-%03d", i%n) }
func podName(i int) string      { return fmt.Sprintf("pod-%06d", i) }
func podSeed(seed int64, i int) int64 {
	return seed<<32 + int64(i)
}

func run(n, namespaces int, seed int64, managed, encodedOnly bool, heapProfile, cpuProfile string, serve bool, churnRate int) error {
	fmt.Printf("# apisim at %d pods\n\n", n)
	fmt.Printf("- command: `%s`\n", strings.Join(os.Args, " "))
	fmt.Printf("- date: %s; %s, GOMAXPROCS %d, %s; %s\n", time.Now().UTC().Format(time.RFC3339), runtime.Version(),
		runtime.GOMAXPROCS(0), runtime.GOARCH, machine())
	fmt.Printf("- pods: %d over %d namespaces, managedFields %v, EncodedOnly %v\n", n, namespaces, managed, encodedOnly)
	fmt.Printf("- load average at the start (other processes share the machine): %s\n\n", loadavg())
	defer func() { fmt.Printf("- load average at the end: %s\n", loadavg()) }()

	srv, err := apisim.New(apisim.Config{EncodedOnly: encodedOnly})
	if err != nil {
		return err
	}
	defer srv.Close()

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
	}
	cpu0 := cpuTime()
	start := time.Now()
	if err := populate(srv, n, namespaces, seed, managed); err != nil {
		return err
	}
	loaded := time.Since(start)
	pprof.StopCPUProfile()
	cpu := cpuTime() - cpu0
	fmt.Printf("| phase | wall | process CPU | live heap | heap in use | RSS | peak RSS |\n|---|---|---|---|---|---|---|\n")
	row := func(phase string, wall, cpu time.Duration) {
		live, inuse := heap()
		rss, hwm := rss()
		fmt.Printf("| %s | %.1f s | %.1f s | %s | %s | %s | %s |\n", phase, wall.Seconds(), cpu.Seconds(),
			size(live), size(inuse), size(rss), size(hwm))
	}
	row("populate (generate + Load)", loaded, cpu)
	if err := srv.Start(); err != nil {
		return err
	}
	// What loadgen does next (simTarget.preencode): one protobuf LIST, so
	// that no encoding is left for the clients' sync.
	cpu0 = cpuTime()
	encStart := time.Now()
	if err := listDiscard(srv.URL()); err != nil {
		return fmt.Errorf("pre-encode list: %w", err)
	}
	row("pre-encode (one protobuf LIST)", time.Since(encStart), cpuTime()-cpu0)
	live, _ := heap()
	perPod := float64(live) / float64(n)
	if heapProfile != "" {
		f, err := os.Create(heapProfile)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if !serve {
		fmt.Printf("\nlive heap per pod: %.0f B\n", perPod)
		return nil
	}

	// Serve: churn in the background; a paginated LIST, a WatchList and a
	// watch from the current resourceVersion meanwhile.
	ctx, cancel := context.WithCancel(context.Background())
	var churned atomic.Int64
	var churnErr error
	var churning, watching sync.WaitGroup
	churning.Go(func() { // goroutine: the churn writer; stop waits for it
		churnErr = churn(ctx, srv, n, namespaces, seed, managed, churnRate, &churned)
	})
	watchRV := srv.ResourceVersion()
	var watched atomic.Int64
	var watchErr error
	wctx, wcancel := context.WithCancel(context.Background())
	watching.Go(func() { // goroutine: the watch; stop waits for it
		watchErr = watchEvents(wctx, srv.URL(), watchRV, &watched)
	})
	stop := func() {
		cancel()
		churning.Wait()
		// The watch has every write once it has caught up with the last.
		for deadline := time.Now().Add(30 * time.Second); uint64(watched.Load()) < srv.ResourceVersion()-watchRV && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		wcancel()
		watching.Wait()
	}

	cpu0 = cpuTime()
	t0 := time.Now()
	items, pages, err := list(srv.URL(), 500)
	if err != nil {
		stop()
		return fmt.Errorf("paginated list: %w", err)
	}
	row(fmt.Sprintf("paginated LIST (limit 500: %d pages, %d pods) under churn", pages, items), time.Since(t0), cpuTime()-cpu0)
	cpu0 = cpuTime()
	t0 = time.Now()
	events, endRV, err := watchList(srv.URL())
	if err != nil {
		stop()
		return fmt.Errorf("watchlist: %w", err)
	}
	row(fmt.Sprintf("WatchList (%d ADDED, then the initial-events-end bookmark at RV %d) under churn", events, endRV), time.Since(t0), cpuTime()-cpu0)
	stop()
	if churnErr != nil && !errors.Is(churnErr, context.Canceled) {
		return fmt.Errorf("churn: %w", churnErr)
	}
	if watchErr != nil && !errors.Is(watchErr, context.Canceled) {
		return fmt.Errorf("watch: %w", watchErr)
	}
	if got, want := uint64(watched.Load()), srv.ResourceVersion()-watchRV; got != want {
		return fmt.Errorf("the watch from RV %d received %d events, the store made %d", watchRV, got, want)
	}
	fmt.Printf("\nchurn: %d writes; a watch from RV %d received %d events (the store advanced by %d); objects now %d\n",
		churned.Load(), watchRV, watched.Load(), srv.ResourceVersion()-watchRV, srv.Len())
	fmt.Printf("live heap per pod after populating: %.0f B\n", perPod)
	return nil
}

// populate generates pods 0..n-1 on all cores and loads them in order, as
// loadgen's parent does (apisim.Populate).
func populate(srv *apisim.Server, n, namespaces int, seed int64, managed bool) error {
	return apisim.Populate(context.Background(), n, func(i int) *corev1.Pod {
		return apisim.NewPod(namespace(i, namespaces), podName(i), podSeed(seed, i), apisim.PodOptions{ManagedFields: managed})
	}, srv.Load)
}

// churn writes creates, updates and deletes (1:8:1) at rate per second
// until ctx ends, as loadgen's churner does (stamped annotations).
func churn(ctx context.Context, srv *apisim.Server, n, namespaces int, seed int64, managed bool, rate int, count *atomic.Int64) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	per := max(1, rate/100)
	live := make([]int, n) // pod indexes; created pods get new ones
	for i := range live {
		live[i] = i
	}
	next := n
	x := uint64(seed)
	rnd := func(m int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(m))
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		for range per {
			var err error
			switch op := rnd(10); {
			case op == 0:
				p := apisim.NewPod(namespace(next, namespaces), podName(next), podSeed(seed, next), apisim.PodOptions{ManagedFields: managed})
				p.Annotations["loadgen.shardinformer.io/emitted-unix-nano"] = strconv.FormatInt(time.Now().UnixNano(), 10)
				_, err = srv.Create(p)
				live = append(live, next)
				next++
			case op == 1 && len(live) > 0:
				j := rnd(len(live))
				i := live[j]
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				_, err = srv.Delete(namespace(i, namespaces), podName(i))
			default:
				i := live[rnd(len(live))]
				_, err = srv.Modify(namespace(i, namespaces), podName(i), func(p *corev1.Pod) {
					p.Annotations["loadgen.shardinformer.io/emitted-unix-nano"] = strconv.FormatInt(time.Now().UnixNano(), 10)
				})
			}
			if err != nil {
				return err
			}
			count.Add(1)
		}
	}
}

// list reads every pod with protobuf LISTs of limit items (0: one LIST) and
// returns the items and pages read. It splits the items off the wire
// without decoding them.
func list(base string, limit int) (items, pages int, err error) {
	cont := ""
	var buf bytes.Buffer // reused: the client's garbage would be the server process's
	for {
		q := url.Values{}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if cont != "" {
			q.Set("continue", cont)
		}
		body, err := get(base+"/api/v1/pods?"+q.Encode(), &buf)
		if err != nil {
			return items, pages, err
		}
		var meta metav1.ListMeta
		n, err := protoItems(body, &meta)
		if err != nil {
			return items, pages, err
		}
		items += n
		pages++
		if meta.Continue == "" {
			return items, pages, nil
		}
		cont = meta.Continue
	}
}

// listDiscard reads one whole protobuf LIST and discards it.
func listDiscard(base string) error {
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/pods", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", apisim.ContentTypeProtobuf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// get reads the protobuf response to a GET of u into buf.
func get(u string, buf *bytes.Buffer) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", apisim.ContentTypeProtobuf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, buf.Bytes())
	}
	return buf.Bytes(), err
}

// protoItems counts the items of a protobuf list response ("k8s\x00",
// runtime.Unknown{typeMeta=1, raw=2}, the list {metadata=1, items=2}) and
// decodes its ListMeta.
func protoItems(b []byte, meta *metav1.ListMeta) (int, error) {
	if !strings.HasPrefix(string(b), "k8s\x00") {
		return 0, errors.New("not a protobuf response")
	}
	raw, ok := pbscan.Field(b[4:], 2)
	if !ok {
		return 0, errors.New("no raw field in the envelope")
	}
	n := 0
	for len(raw) > 0 {
		tag, k := binary.Uvarint(raw)
		l, m := binary.Uvarint(raw[k:])
		if k <= 0 || m <= 0 || tag&7 != 2 || uint64(len(raw)-k-m) < l {
			return 0, errors.New("malformed list")
		}
		v := raw[k+m : k+m+int(l)]
		switch tag >> 3 {
		case 1:
			if err := meta.Unmarshal(v); err != nil {
				return 0, err
			}
		case 2:
			n++
		}
		raw = raw[k+m+int(l):]
	}
	return n, nil
}

// watchList streams a WatchList (sendInitialEvents=true) until its
// initial-events-end bookmark and returns the ADDED events before it and the
// bookmark's resourceVersion.
func watchList(base string) (int, uint64, error) {
	q := url.Values{"watch": {"1"}, "sendInitialEvents": {"true"}, "resourceVersionMatch": {"NotOlderThan"},
		"allowWatchBookmarks": {"true"}, "resourceVersion": {""}}
	added := 0
	var endRV uint64
	err := stream(context.Background(), base+"/api/v1/pods?"+q.Encode(), func(typ string, obj []byte) bool {
		switch typ {
		case "ADDED":
			added++
			return true
		case "BOOKMARK":
			var pod corev1.Pod
			if err := pod.Unmarshal(obj); err == nil && pod.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				endRV, _ = strconv.ParseUint(pod.ResourceVersion, 10, 64)
				return false
			}
		}
		return true
	})
	if err == nil && endRV == 0 {
		err = errors.New("the stream ended before the initial-events-end bookmark")
	}
	return added, endRV, err
}

// watchEvents watches from rv and counts events until ctx ends.
func watchEvents(ctx context.Context, base string, rv uint64, count *atomic.Int64) error {
	q := url.Values{"watch": {"1"}, "resourceVersion": {strconv.FormatUint(rv, 10)}}
	return stream(ctx, base+"/api/v1/pods?"+q.Encode(), func(typ string, _ []byte) bool {
		if typ == "ERROR" {
			return false
		}
		count.Add(1)
		return true
	})
}

// stream reads a protobuf watch: 4-byte big-endian length, WatchEvent
// {type=1, object=2: RawExtension{raw=1: "k8s\x00" Unknown{raw=2}}}; fn gets
// each event's type and object message until it returns false.
func stream(ctx context.Context, u string, fn func(typ string, obj []byte) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", apisim.ContentTypeProtobuf+";stream=watch")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	var buf []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		typ, _ := pbscan.Field(buf, 1)
		obj, _ := pbscan.Field(buf, 2)
		raw, _ := pbscan.Field(obj, 1)
		var msg []byte
		if len(raw) > 4 {
			msg, _ = pbscan.Field(raw[4:], 2)
		}
		if !fn(string(typ), msg) {
			return nil
		}
	}
}

// heap collects garbage and returns the live heap and the heap in use.
func heap() (live, inuse uint64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.HeapInuse
}

// rss returns the process's resident set and its peak (VmRSS, VmHWM).
func rss() (cur, peak uint64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			cur = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return cur, peak
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100
}

func machine() string {
	var model string
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	var mem string
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 2 {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			mem = size(kb << 10)
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s memory", runtime.NumCPU(), model, mem)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func size(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	default:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
}
