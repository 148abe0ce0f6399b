//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/shardinformer/shardinformer/faults"
	"github.com/shardinformer/shardinformer/internal/testkit"
)

// envFaultConverge bounds, in seconds, how long after the faults stop every
// cache and handler must equal the server (default 90: client-go's
// reflector backs off up to 30s between attempts after failures).
const envFaultConverge = "SHARDINFORMER_E2E_FAULT_CONVERGE_SECONDS"

// faultRules are TestFaults' faults: every kind, bounded per scenario (the
// proxy is shared by every impl of the scenario).
var faultRules = map[faults.Kind]faults.Rule{
	faults.Cut:             {P: 0.06, Max: 25},
	faults.Stall:           {P: 0.03, Max: 10, Duration: time.Second},
	faults.InternalError:   {P: 0.04, Max: 15},
	faults.TooManyRequests: {P: 0.04, Max: 15, Duration: time.Second},
	faults.Gone:            {P: 0.05, Max: 25},
}

// podListsAndWatches is TestFaults' Config.Eligible: the informers' lists
// and watches of pods draw faults; discovery (controller-runtime's REST
// mapper, at construction) and everything else pass untouched.
func podListsAndWatches(method, path, _ string) bool {
	return method == http.MethodGet && strings.HasSuffix(path, "/pods")
}

// TestFaults runs every impl — client-go's and ours, typed (ListerWatcher),
// factory and controller-runtime paths — behind a fault proxy (package
// faults) in front of kube-apiserver's HTTPS port, for protobuf and JSON
// with WatchList on and off: connections cut mid-body and mid-frame,
// stalls, 500s, 429s with Retry-After, 410s (on lists a Status, on watches
// an ERROR event in the stream's framing) on their pod lists and watches,
// from before the initial sync
// until the churn ends. Then the faults stop and within
// $SHARDINFORMER_E2E_FAULT_CONVERGE_SECONDS every store and every
// handler's view equal the server (keys and resourceVersions, then the
// objects), every handler's history is consistent, and after Stop no
// informer goroutine is left and the goroutine count is back where it
// was. Pods: $SHARDINFORMER_E2E_PODS/2. Over the four scenarios every kind of fault must have been
// injected. $SHARDINFORMER_FAULT_SEED reruns a seed.
func TestFaults(t *testing.T) {
	cl := sharedCluster(t)
	pods := max(envInt(t, envPods, defaultPods)/2, 50)
	bound := envInt(t, envFaultConverge, 90)
	if os.Getenv(envConverge) == "" {
		t.Setenv(envConverge, strconv.Itoa(bound)) // the harness's converge waits this long
	} else {
		bound = envInt(t, envConverge, bound)
	}
	seed := testkit.FaultSeed(t)
	total := map[faults.Kind]uint64{}
	i := 0
	for _, media := range []string{mediaProtobuf, mediaJSON} {
		for _, wl := range []bool{true, false} {
			i++
			t.Run(fmt.Sprintf("%s,watchlist=%v", shortMedia(media), wl), func(t *testing.T) {
				base := runtime.NumGoroutine()
				p, err := faults.New(faults.Config{Upstream: cl.RESTConfig(), Seed: seed + int64(i), Rules: faultRules, Bytes: 256 << 10,
					Eligible: podListsAndWatches})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
				closed := false
				defer func() {
					if !closed {
						_ = p.Close()
					}
				}()
				h := newHarness(t, cl, scenario{media: media, watchList: wl})
				h.clientBase = func() *rest.Config { return p.ClientConfig(cl.RESTConfig()) }
				h.seed(pods / 5)
				h.startInformers()
				h.churn(pods, nil)
				stopped := p.StopFaults()
				s := p.Stats()
				for k, n := range s.Injected {
					total[k] += n
				}
				t.Logf("faults: %d requests through the proxy, %d draws came up with a fault, %d of them vetoed by a bound, injected %v; stopped",
					s.Requests, s.Drawn, s.Vetoed, s.ByName())
				h.converge(h.serverState())
				t.Logf("every impl converged (or failed) %v after the faults stopped (bound %ds)", time.Since(stopped).Round(time.Millisecond), bound)
				if t.Failed() {
					return
				}

				h.stopInformers()
				if err := p.Close(); err != nil {
					t.Errorf("closing the proxy: %v", err)
				}
				closed = true
				testkit.NoGoroutines(t, "shardinformer/pipeline.", "shardinformer/wire.", "shardinformer/faults.",
					"k8s.io/client-go/tools/cache.", "sigs.k8s.io/controller-runtime/")
				var now int
				testkit.EventuallyWhy(t, "the goroutine count to return to where it was", func() (bool, string) {
					now = runtime.NumGoroutine()
					return now <= base+10, fmt.Sprintf("%d goroutines, %d before the informers started", now, base)
				})
				t.Logf("goroutines: %d before, %d after Stop", base, now)
			})
		}
	}
	var missing []string
	for _, k := range faults.Kinds() {
		if total[k] == 0 {
			missing = append(missing, k.String())
		}
	}
	if len(missing) > 0 {
		t.Errorf("no %s fault injected in any scenario (injected %v): the test did not exercise them", strings.Join(missing, ", "), total)
	}
}
