package wire_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire"
	"github.com/shardinformer/shardinformer/wire/internal/leak"
)

func TestSmokeListWatch(t *testing.T) {
	leak.Check(t)
	s := startSim(t, 300, apisim.Config{})
	for _, ct := range contentTypes() {
		for _, w := range []int{1, 3} {
			t.Run(ctName(ct), func(t *testing.T) {
				cfg := restConfig(s, ct)
				cs := clientset(t, cfg)
				lw := newPodLW(t, cfg, "", wire.WithContentType(ct), wire.WithWorkers(w))
				want, err := cs.CoreV1().Pods("").List(ctx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := lw.ListWithContext(ctx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				mustEqual(t, "list", want, got)

				opts := metav1.ListOptions{ResourceVersion: "0"}
				ww, err := cs.CoreV1().Pods("").Watch(ctx(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				defer ww.Stop()
				gw, err := lw.WatchWithContext(ctx(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				defer gw.Stop()
				mustEqual(t, "watch", collect(t, ww, 300), collect(t, gw, 300))
				_ = (*corev1.Pod)(nil)
			})
		}
	}
}
