//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const defaultPods = 5000

// TestChurn: thousands of pods created, updated and deleted concurrently,
// for protobuf and JSON, with WatchList on and off; afterwards every cache
// equals a fresh LIST and every handler's per-key history moved forward and
// ended at the server's state.
func TestChurn(t *testing.T) {
	cl := sharedCluster(t)
	pods := envInt(t, envPods, defaultPods)
	for _, media := range []string{mediaProtobuf, mediaJSON} {
		for _, wl := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s,watchlist=%v", shortMedia(media), wl), func(t *testing.T) {
				h := newHarness(t, cl, scenario{media: media, watchList: wl})
				h.seed(pods / 5)
				h.startInformers()
				h.churn(pods, nil)
				h.converge(h.serverState())
			})
		}
	}
}

// TestAPIServerRestart restarts kube-apiserver during the churn; the
// informers reconnect (relisting where needed) and converge.
func TestAPIServerRestart(t *testing.T) {
	cl := sharedCluster(t)
	pods := envInt(t, envPods, defaultPods)
	h := newHarness(t, cl, scenario{media: mediaProtobuf, watchList: true})
	h.seed(pods / 5)
	h.startInformers()
	watchesBefore := map[*run]int64{}
	for _, r := range h.runs {
		watchesBefore[r] = r.lw.Watches()
	}
	h.churn(pods, func(ctx context.Context) {
		t.Log("fault: restarting kube-apiserver")
		if err := cl.RestartAPIServer(ctx); err != nil {
			t.Errorf("restarting kube-apiserver: %v", err)
		}
	})
	h.converge(h.serverState())
	for _, r := range h.runs {
		if r.lw.Watches() <= watchesBefore[r] {
			t.Errorf("%s: no new watch after the restart", r.impl.name)
		}
	}
}

// TestEtcdOutage stops etcd for a few seconds during the churn.
func TestEtcdOutage(t *testing.T) {
	cl := sharedCluster(t)
	pods := envInt(t, envPods, defaultPods)
	h := newHarness(t, cl, scenario{media: mediaProtobuf, watchList: false})
	h.seed(pods / 5)
	h.startInformers()
	h.churn(pods, func(ctx context.Context) {
		t.Log("fault: stopping etcd for 3s")
		cl.StopEtcd()
		time.Sleep(3 * time.Second)
		if err := cl.StartEtcd(ctx); err != nil {
			t.Errorf("restarting etcd: %v", err)
			return
		}
		for !cl.Ready(ctx) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
		}
		t.Log("fault: etcd back, kube-apiserver ready")
	})
	h.converge(h.serverState())
}

// TestCompactionWhileDisconnected cuts the informers off the server, deletes,
// updates and creates pods, compacts etcd and reconnects. With the watch
// cache off the watch at the old resourceVersion reaches etcd and gets 410
// Gone; the informers must relist (not get stuck) and report the deletions
// they missed as DeletedFinalStateUnknown.
func TestCompactionWhileDisconnected(t *testing.T) {
	cl := ownCluster(t, "--watch-cache=false")
	pods := max(envInt(t, envPods, defaultPods)/2, 10)
	for _, wl := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchlist=%v", wl), func(t *testing.T) {
			h := newHarness(t, cl, scenario{media: mediaProtobuf, watchList: wl})
			h.seed(pods / 5)
			h.startInformers()
			h.churn(pods, nil)
			before := h.serverState()
			h.converge(before)
			if t.Failed() {
				return
			}

			for _, r := range h.runs {
				r.lw.Disconnect()
			}
			// Every 4th pod is deleted, every 4th+1 updated, and new pods appear.
			var deleted []string
			pc := h.admin.CoreV1().Pods(h.ns)
			for i, key := range sortedKeys(before) {
				name := key[strings.IndexByte(key, '/')+1:]
				var err error
				switch i % 4 {
				case 0:
					err = pc.Delete(t.Context(), name, metav1.DeleteOptions{})
					deleted = append(deleted, key)
				case 1:
					_, err = pc.Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"labels":{"offline":"true"}}}`), metav1.PatchOptions{})
				}
				if err != nil {
					t.Fatalf("writing while disconnected: %v", err)
				}
			}
			for i := range pods / 10 {
				p := newPod(h.ns, 900000+i, 0)
				if _, err := pc.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
					t.Fatalf("creating while disconnected: %v", err)
				}
			}
			if _, err := cl.Compact(t.Context()); err != nil {
				t.Fatal(err)
			}
			gone := map[*run]int64{}
			for _, r := range h.runs {
				gone[r] = r.lw.Gone()
				r.lw.Reconnect()
			}
			t.Logf("while disconnected: deleted %d, updated ~%d, created %d pods; etcd compacted", len(deleted), len(before)/4, pods/10)

			h.converge(h.serverState())
			for _, r := range h.runs {
				if r.lw.Gone() == gone[r] {
					t.Errorf("%s: no 410 Gone after the compaction; the scenario did not force a relist", r.impl.name)
				}
				for _, rec := range r.recs {
					if missing := rec.tombstoned(deleted); len(missing) > 0 {
						t.Errorf("%s: %d of %d keys deleted while disconnected did not end with a DeletedFinalStateUnknown delete, e.g. %v",
							rec.name, len(missing), len(deleted), missing[:min(5, len(missing))])
					}
				}
			}
		})
	}
}

// TestTransformAndSelector runs the churn with a transform that strips
// managedFields and a label selector (pods move in and out of it as their
// "group" label flips).
func TestTransformAndSelector(t *testing.T) {
	cl := sharedCluster(t)
	pods := envInt(t, envPods, defaultPods)
	for _, wl := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchlist=%v", wl), func(t *testing.T) {
			h := newHarness(t, cl, scenario{media: mediaProtobuf, watchList: wl, transform: true, selector: "group=a"})
			h.seed(pods / 5)
			h.startInformers()
			h.churn(pods, nil)
			h.converge(h.serverState())
		})
	}
}

func shortMedia(m string) string {
	return map[string]string{mediaProtobuf: "protobuf", mediaJSON: "json", mediaCBOR: "cbor"}[m]
}

// TestCBOR is TestChurn in CBOR, on a cluster of its own serving it
// (kube-apiserver's CBORServingAndStorage gate, alpha in 1.36): client-go's
// informer on client-go's CBOR decoding (its ClientsAllowCBOR gate), and
// every impl on the wire decoder with WithContentType(wire.CBOR), with
// WatchList on and off; every response must have been CBOR.
func TestCBOR(t *testing.T) {
	cl := ownCluster(t, "--feature-gates=CBORServingAndStorage=true")
	pods := max(envInt(t, envPods, defaultPods)/2, 10)
	for _, wl := range []bool{true, false} {
		t.Run(fmt.Sprintf("watchlist=%v", wl), func(t *testing.T) {
			h := newHarness(t, cl, scenario{media: mediaCBOR, watchList: wl})
			h.seed(pods / 5)
			h.startInformers()
			h.churn(pods, nil)
			h.converge(h.serverState())
		})
	}
}
