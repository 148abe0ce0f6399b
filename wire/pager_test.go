package wire_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/pager"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// TestPagedList: page by page (limit, continue, remainingItemCount,
// resourceVersion) wire returns what the typed client returns, and
// client-go's pager over wire assembles the same list, in both formats.
func TestPagedList(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	s := startSim(t, 230, apisim.Config{})
	for _, ct := range contentTypes() {
		t.Run(ctName(ct), func(t *testing.T) {
			cfg := restConfig(s, ct)
			cs := clientset(t, cfg)
			lw := newPodLW(t, cfg, "", wire.WithContentType(ct))
			opts := metav1.ListOptions{Limit: 100}
			pages := 0
			for {
				want, err := cs.CoreV1().Pods("").List(ctx(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := lw.ListWithContext(ctx(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				mustEqual(t, "page", want, got)
				pages++
				if want.Continue == "" {
					break
				}
				opts.Continue = want.Continue
			}
			if pages != 3 {
				t.Fatalf("%d pages", pages)
			}
			want, _, err := pager.New(func(c ctxT, o metav1.ListOptions) (runtimeObject, error) {
				return cs.CoreV1().Pods("").List(c, o)
			}).List(ctx(t), metav1.ListOptions{Limit: 70})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := pager.New(lw.ListWithContext).List(ctx(t), metav1.ListOptions{Limit: 70})
			if err != nil {
				t.Fatal(err)
			}
			mustEqual(t, "paged list", want, got)
			_ = corev1.Pod{}
		})
	}
}

// TestListExpiredContinue: a Status in the middle of a paginated list (the
// continue token's snapshot was compacted: 410 Expired) is the same
// StatusError through wire as through the typed client, which makes the
// reflector relist from scratch.
func TestListExpiredContinue(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	s := startSim(t, 50, apisim.Config{ListSnapshots: -1})
	for _, ct := range contentTypes() {
		cfg := restConfig(s, ct)
		cs := clientset(t, cfg)
		lw := newPodLW(t, cfg, "", wire.WithContentType(ct))
		first, err := lw.ListWithContext(ctx(t), metav1.ListOptions{Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		s.Modify("ns-0", "pod-00000", func(p *corev1.Pod) { p.Labels["x"] = "y" })
		s.Compact(s.ResourceVersion())
		opts := metav1.ListOptions{Limit: 20, Continue: first.(*corev1.PodList).Continue}
		_, werr := cs.CoreV1().Pods("").List(ctx(t), opts)
		_, gerr := lw.ListWithContext(ctx(t), opts)
		if !apierrors.IsResourceExpired(gerr) {
			t.Fatalf("%s: %v, want 410 Expired", ctName(ct), gerr)
		}
		sameError(t, "expired continue", werr, gerr)
	}
}
