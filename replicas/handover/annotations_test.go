package handover

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestAnnotationsRoundTrip: Decode(Encode(p)) == p for random p over
// every slot count from 1 to 70.
func TestAnnotationsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for slots := 1; slots <= 70; slots++ {
		p := Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
		for s := range slots {
			p.Synced[s], p.Claimed[s] = rng.IntN(2) == 0, rng.IntN(2) == 0
		}
		got, err := Decode(p.Encode(), slots)
		if err != nil || !slices.Equal(got.Synced, p.Synced) || !slices.Equal(got.Claimed, p.Claimed) {
			t.Fatalf("slots=%d: %v %v, want %v", slots, got, err, p)
		}
	}
	if got := (Published{Synced: []bool{true, false, false, false, false, false, false, false, false, true}, Claimed: make([]bool, 10)}).Encode(); got[AnnotationSynced] != "0102" || got[AnnotationClaimed] != "0000" {
		t.Fatalf("encoding %v", got)
	}
}

// TestDecodeBad: each malformed input is an error matching ErrAnnotation,
// and reads as every slot claimed, none synced.
func TestDecodeBad(t *testing.T) {
	good := Published{Synced: make([]bool, 10), Claimed: make([]bool, 10)}.Encode()
	for name, mut := range map[string]func(map[string]string){
		"missing synced":  func(m map[string]string) { delete(m, AnnotationSynced) },
		"missing claimed": func(m map[string]string) { delete(m, AnnotationClaimed) },
		"short":           func(m map[string]string) { m[AnnotationClaimed] = "00" },
		"long":            func(m map[string]string) { m[AnnotationSynced] = "000000" },
		"not hex":         func(m map[string]string) { m[AnnotationSynced] = "0g00" },
		"0x prefix":       func(m map[string]string) { m[AnnotationSynced] = "0x00" },
		"bit past slots":  func(m map[string]string) { m[AnnotationClaimed] = "0004" },
	} {
		m := map[string]string{AnnotationSynced: good[AnnotationSynced], AnnotationClaimed: good[AnnotationClaimed]}
		mut(m)
		p, err := Decode(m, 10)
		if !errors.Is(err, ErrAnnotation) {
			t.Errorf("%s: %v, want ErrAnnotation", name, err)
		}
		if slices.Contains(p.Synced, true) || slices.Contains(p.Claimed, false) || len(p.Claimed) != 10 {
			t.Errorf("%s: read as %v, want all claimed, none synced", name, p)
		}
	}
}

// TestDecodeOtherSlotCount: annotations written for another slot count —
// well-formed of another length, or of this one with a slot beyond the
// last — are ErrSlotCount (and ErrAnnotation); other malformed ones are
// not.
func TestDecodeOtherSlotCount(t *testing.T) {
	enc := func(slots int, claim ...int) map[string]string {
		p := Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
		for _, s := range claim {
			p.Claimed[s] = true
		}
		return p.Encode()
	}
	for name, tc := range map[string]struct {
		ann   map[string]string
		slots int
		other bool
	}{
		"16 read as 8":           {enc(16), 8, true},
		"8 read as 16":           {enc(8), 16, true},
		"8 read as 4, slot 5":    {enc(8, 5), 4, true},
		"8 read as 4, slot 2":    {enc(8, 2), 4, false}, // reads as 4 slots: no error at all
		"lengths differ":         {map[string]string{AnnotationSynced: "00", AnnotationClaimed: "0000"}, 8, false},
		"not hex":                {map[string]string{AnnotationSynced: "zz", AnnotationClaimed: "zz"}, 8, false},
		"missing":                {map[string]string{AnnotationSynced: "00"}, 8, false},
		"empty":                  {map[string]string{AnnotationSynced: "", AnnotationClaimed: ""}, 8, false},
		"right length, not hex ": {map[string]string{AnnotationSynced: "0000", AnnotationClaimed: "00zz"}, 16, false},
	} {
		_, err := Decode(tc.ann, tc.slots)
		if got := errors.Is(err, ErrSlotCount); got != tc.other || (err != nil && !errors.Is(err, ErrAnnotation)) {
			t.Errorf("%s: %v; want ErrSlotCount %v", name, err, tc.other)
		}
	}
}

// FuzzDecode: Decode never panics; what it accepts encodes back to the
// same text, in lower case; what it refuses reads as all claimed, none synced. Seed
// corpus: testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add("0102", "ffff", 10)
	f.Add("", "", 0)
	f.Add("A0", "0a", 5)
	f.Fuzz(func(t *testing.T, synced, claimed string, slots int) {
		if slots < 0 || slots > 1<<12 {
			return
		}
		in := map[string]string{AnnotationSynced: synced, AnnotationClaimed: claimed}
		p, err := Decode(in, slots)
		if len(p.Synced) != slots || len(p.Claimed) != slots {
			t.Fatalf("lengths %d %d for %d slots", len(p.Synced), len(p.Claimed), slots)
		}
		if err != nil {
			if !errors.Is(err, ErrAnnotation) || slices.Contains(p.Synced, true) || slices.Contains(p.Claimed, false) {
				t.Fatalf("refused %q %q: %v, read as %v", synced, claimed, err, p)
			}
			return
		}
		if out := p.Encode(); out[AnnotationSynced] != strings.ToLower(synced) || out[AnnotationClaimed] != strings.ToLower(claimed) {
			t.Fatalf("accepted %q %q, encodes back to %v", synced, claimed, out)
		}
	})
}
