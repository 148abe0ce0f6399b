package diet

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/apisim"
)

// TestStats: Stats counts the idle interners and the strings and shared
// values they hold, and the versions table's entries, live and dead; the
// interners stay in the pool after it.
func TestStats(t *testing.T) {
	d := versionsDiet(false)
	if s := d.Stats(); s != (Stats{}) {
		t.Fatalf("before any pod: %+v", s)
	}
	base := apisim.NewPod("ns", "p", 7, apisim.PodOptions{})
	var keep []*corev1.Pod
	for i := range 100 {
		p := base.DeepCopy()
		p.Name = fmt.Sprintf("p-%d", i)
		obj, err := d.ProtoPod(marshalPod(t, p))
		if err != nil {
			t.Fatal(err)
		}
		if i < 40 {
			keep = append(keep, obj.(*corev1.Pod))
		}
	}
	runtime.GC()
	s := d.Stats()
	if s.Interners != 1 || s.InternedStrings == 0 || s.InternedStrings > internSlots || s.SharedValues == 0 || s.Versions != 100 || s.VersionsDead != 60 {
		t.Errorf("after 100 pods, 40 kept: %+v; want 1 interner holding strings and values, 100 versions of which 60 dead", s)
	}
	if again := d.Stats(); again != s {
		t.Errorf("a second Stats %+v differs from the first %+v: an interner left the pool?", again, s)
	}
	runtime.KeepAlive(keep)
	if s := New(Config{Intern: true}, 2).Stats(); s.Versions != 0 || s.Interners != 0 {
		t.Errorf("no sharing, nothing decoded: %+v", s)
	}
}
