package diet

import (
	"fmt"
	"runtime"
	"sync"
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

// TestStatsKeepInternersWarm: Stats, called without pause while two
// goroutines decode, takes no interner from them, so they keep the two
// they started with (and their caches) and their counts match the slots
// in use.
func TestStatsKeepInternersWarm(t *testing.T) {
	d := New(Config{Intern: true, Compact: true, Share: true}, 2)
	raws := make([][]byte, 400)
	for i := range raws {
		raws[i] = marshalPod(t, apisim.NewPod(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{}))
	}
	done := make(chan struct{})
	stats := make(chan int)
	go func() { // samples as a scrape would, without pause, until done
		n := 0
		for {
			select {
			case <-done:
				stats <- n
				return
			default:
				d.Stats()
				n++
			}
		}
	}()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for round := range 5 {
				for _, b := range raws {
					if _, err := d.ProtoPod(b); err != nil {
						t.Error(round, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	t.Logf("%d Stats calls while 4000 pods were decoded", <-stats)
	if d.interners.made > 2 {
		t.Errorf("%d interners made for 2 decoding goroutines: Stats took their interners, and they started cold ones", d.interners.made)
	}
	s := d.Stats()
	strs, parts := 0, 0
	d.interners.each(func(in *interner) {
		for _, v := range in.slots {
			if v != "" {
				strs++
			}
		}
		parts += cachedParts(in)
	})
	if s.Interners != d.interners.made || s.InternedStrings != strs || s.SharedValues != parts || parts == 0 {
		t.Errorf("Stats %+v; the interners hold %d strings and %d shared values", s, strs, parts)
	}
}
