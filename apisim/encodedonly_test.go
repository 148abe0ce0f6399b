package apisim

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestEncodedOnly checks that with Config.EncodedOnly a listed version keeps
// only its encoding, and that writes, reads and watches of such versions
// see the same pods as without the option.
func TestEncodedOnly(t *testing.T) {
	ctx := context.Background()
	for _, encodedOnly := range []bool{false, true} {
		s := startServer(t, Config{EncodedOnly: encodedOnly})
		fill(t, s, 50, 3)
		want := s.List("")
		pb := clientFor(t, s, runtime.ContentTypeProtobuf)
		if _, err := pb.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		decoded := 0
		s.st.cur.Load().tree.Ascend("", func(_ string, o *object) bool {
			if o.dec.Load() != nil {
				decoded++
			}
			return true
		})
		if wantDecoded := map[bool]int{false: 50, true: 0}[encodedOnly]; decoded != wantDecoded {
			t.Errorf("EncodedOnly=%v: %d of 50 listed versions keep their decoded form, want %d", encodedOnly, decoded, wantDecoded)
		}

		w, err := pb.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: want[0].ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		p := want[7]
		rv, err := s.Modify(p.Namespace, p.Name, func(p *corev1.Pod) { p.Annotations["x"] = "y" })
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(p.Namespace, p.Name)
		p.Annotations["x"] = "y"
		p.ResourceVersion = got.ResourceVersion
		if !equality.Semantic.DeepEqual(got, p) {
			t.Errorf("EncodedOnly=%v: Modify of an encoded version: got %+v, want %+v", encodedOnly, got, p)
		}
		for ev := range w.ResultChan() {
			if ev.Object.(*corev1.Pod).ResourceVersion == got.ResourceVersion {
				if !equality.Semantic.DeepEqual(ev.Object, p) {
					t.Errorf("EncodedOnly=%v: watched %+v, want %+v", encodedOnly, ev.Object, p)
				}
				break
			}
		}
		w.Stop()
		if got.ResourceVersion != strconv.FormatUint(rv, 10) {
			t.Errorf("EncodedOnly=%v: Get at RV %s, Modify returned %d", encodedOnly, got.ResourceVersion, rv)
		}
		del, err := s.Delete(want[3].Namespace, want[3].Name)
		if err != nil || del.Name != want[3].Name || !equality.Semantic.DeepEqual(del.Spec, want[3].Spec) {
			t.Errorf("EncodedOnly=%v: Delete of an encoded version: %v, spec equal %v", encodedOnly, err, err == nil && equality.Semantic.DeepEqual(del.Spec, want[3].Spec))
		}
	}
}
