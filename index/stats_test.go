package index

import (
	"fmt"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// TestPartitionStats: Stats gives the live cells, the slots of the item
// table, the tombstones removals left and the index value sets.
func TestPartitionStats(t *testing.T) {
	p := NewPartition(cache.Indexers{"first": func(obj any) ([]string, error) { return []string{obj.(string)[:1]}, nil }})
	for i := range 100 {
		if _, _, err := p.Upsert(fmt.Sprintf("k%03d", i), fmt.Sprintf("%c-%d", 'a'+i%4, i)); err != nil {
			t.Fatal(err)
		}
	}
	s := p.Stats()
	if s.Live != 100 || s.Slots < 128 || s.Tombstones != 0 || s.IndexSets != 4 {
		t.Fatalf("after 100 upserts: %+v", s)
	}
	for i := range 30 {
		p.Delete(fmt.Sprintf("k%03d", i))
	}
	s = p.Stats()
	if s.Live != 70 || s.Tombstones == 0 || s.Tombstones > 30 || s.IndexSets != 4 {
		t.Fatalf("after 30 deletes: %+v; want 70 live and up to 30 tombstones", s)
	}
	if s.Live != p.Len() {
		t.Errorf("Live %d, Len %d", s.Live, p.Len())
	}
}
