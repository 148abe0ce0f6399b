package diet

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
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
	// counts are the slots in use, kept by the owner and read by Stats.
	counts struct{ strings, shared atomic.Int32 }
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
		if *slot == "" {
			t.counts.strings.Add(1)
		}
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
		if *slot == "" {
			t.counts.strings.Add(1)
		}
		*slot = s
	}
	return s
}

// interners holds a ListerWatcher's interners not in use, at most one per
// decoder goroutine: a decoder takes one for each object and puts it back
// after, so each decoder works on its own, without a lock on the hot path
// (the channel operations cost two uncontended handoffs per object). A
// decoder that finds none idle makes a fresh one, and one put back when
// as many are idle is dropped. all is every interner not dropped, idle or
// in use, for Stats: Stats reads their counts and never takes one, for a
// decoder that found the pool empty because Stats held its interner would
// start a fresh one, and put back, the fresh one would push out the warm
// one — with a scrape every minute the cache of shared values never stayed
// warm, and pods decoded meanwhile missed their parts (the soak's heap
// slope; TestStatsKeepInternersWarm).
type interners struct {
	idle chan *interner
	mu   sync.Mutex
	all  map[*interner]struct{}
	made int // interners made, for tests
}

func newInterners(workers int) *interners {
	return &interners{idle: make(chan *interner, workers), all: make(map[*interner]struct{}, workers)}
}

func (p *interners) get() *interner {
	select {
	case t := <-p.idle:
		return t
	default:
	}
	t := new(interner)
	p.mu.Lock()
	p.all[t] = struct{}{}
	p.made++
	p.mu.Unlock()
	return t
}

func (p *interners) put(t *interner) {
	select {
	case p.idle <- t:
	default:
		p.mu.Lock()
		delete(p.all, t)
		p.mu.Unlock()
	}
}

// each calls f with every interner kept, under p's lock; f must only read
// the interner's counts (it may be in use).
func (p *interners) each(f func(*interner)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for t := range p.all {
		f(t)
	}
}
