package diet

import (
	"hash/maphash"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// interner maps strings to canonical copies: a direct-mapped cache of
// recently seen strings. It is not safe for concurrent use: each decoder
// goroutine works with its own (see interners), so lookups take no lock,
// no atomic and no shared cache line. Two decoders may each keep their own
// copy of a string; that costs one copy per decoder, not one per object.
//
// A string is the canonical copy from when it first fills a slot until a
// miss replaces it. A slot whose string was used since it was stored gets a
// second chance instead of being replaced, so that strings seen once (a
// pod's IPs, container IDs) do not push out the ones every pod repeats. An
// interner holds at most internSlots strings strongly.
type interner struct {
	slots  [internSlots]string
	used   [internSlots / 64]uint64 // bit i: slots[i] looked up since stored or since its second chance
	shared []sharedSlot             // see share.go: nil until a part is cached, then grown
	key    []byte                   // scratch for sharing keys
	plan   sharePlan                // scratch for sharing before decoding (shareproto.go)
	reuse  reusePlan                // scratch for sharing with previous versions (versions.go)
	clock  uint64                   // counts the values stored in shared
	seen   []uint64                 // hashes of parts seen once (share.go): 2×len(shared)
	// lookups and stores count the calls of lookup and store since shared
	// last grew (share.go).
	lookups, stores int
	// sharing is the pod sharePod shares, for share's mutation check.
	sharing *corev1.Pod
}

const internSlots = 1 << 13

var internSeed = maphash.MakeSeed()

// hashKey hashes interned strings and sharing keys. A variable so that
// tests can fix which keys collide (the seed differs in every process).
var hashKey = func(s string) uint64 { return maphash.String(internSeed, s) }

// canonical returns the canonical copy of s. The used bits are kept apart
// from the strings so that the table of strings is 16 bytes a slot (128
// KiB), which keeps more of it in the caches.
func (t *interner) canonical(s string) string {
	i := hashKey(s) & (internSlots - 1)
	w, bit := &t.used[i/64], uint64(1)<<(i%64)
	switch slot := &t.slots[i]; {
	case *slot == s:
		*w |= bit
		return *slot
	case *w&bit != 0:
		*w &^= bit // its second chance
	default:
		*slot = s
	}
	return s
}

// canonicalBytes is canonical for the string b holds, allocating it only
// when it is not the cached copy. (The two are written out each: a shared
// helper is not inlined, and costs 1% of a pod's diet.)
func (t *interner) canonicalBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	i := hashKey(unsafe.String(unsafe.SliceData(b), len(b))) & (internSlots - 1)
	w, bit := &t.used[i/64], uint64(1)<<(i%64)
	slot := &t.slots[i]
	if *slot == string(b) {
		*w |= bit
		return *slot
	}
	s := string(b)
	if *w&bit != 0 {
		*w &^= bit
	} else {
		*slot = s
	}
	return s
}

// interners holds a ListerWatcher's interners not in use, at most one per
// decoder goroutine: a decoder takes one for each object and puts it back
// after, so each decoder works on its own, without a lock on the hot path
// (the channel operations cost two uncontended handoffs per object). A nil
// interners gives a fresh interner every time.
type interners chan *interner

func newInterners(workers int) interners { return make(interners, workers) }

func (p interners) get() *interner {
	select {
	case t := <-p:
		return t
	default:
		return new(interner)
	}
}

func (p interners) put(t *interner) {
	select {
	case p <- t:
	default:
	}
}
