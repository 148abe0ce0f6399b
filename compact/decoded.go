package compact

import (
	"sync"
	"unsafe"

	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// decodedShards is the number of independently locked parts of a
// decodedCache: readers on many goroutines seldom meet on one lock.
const decodedShards = 16

// decodedCache keeps up to limit decoded objects by stored form, the
// most recently used ones, as two generations per part: a hit in the old one
// moves the entry to the current one, and when the current one is full it
// becomes the old one (the old one is dropped). So an entry used since the
// last turn survives the next, and at most limit entries are kept. Keys are
// the Objects themselves: each version of an object is its own Object, so an
// entry never goes stale.
type decodedCache struct {
	n     int // parts in use: fewer for a small limit
	per   int // entries per generation of one part
	parts [decodedShards]decodedPart
}

type decodedPart struct {
	mu       sync.Mutex
	cur, old map[*Object]kruntime.Object
	_        [40]byte // a part per cache line pair: parts are locked by different goroutines
}

// init sizes the cache for at most max(limit, 2) entries.
func (c *decodedCache) init(limit int) {
	c.n = min(decodedShards, max(1, limit/2))
	c.per = max(1, limit/(2*c.n))
}

func (c *decodedCache) part(o *Object) *decodedPart {
	p := uintptr(unsafe.Pointer(o))
	return &c.parts[(p>>4^p>>10)%uintptr(c.n)]
}

func (c *decodedCache) get(o *Object) (kruntime.Object, bool) {
	p := c.part(o)
	p.mu.Lock()
	defer p.mu.Unlock()
	if obj, ok := p.cur[o]; ok {
		return obj, true
	}
	obj, ok := p.old[o]
	if ok {
		delete(p.old, o)
		p.putLocked(o, obj, c.per)
	}
	return obj, ok
}

func (c *decodedCache) put(o *Object, obj kruntime.Object) {
	p := c.part(o)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.putLocked(o, obj, c.per)
}

func (p *decodedPart) putLocked(o *Object, obj kruntime.Object, per int) {
	if len(p.cur) >= per {
		p.old, p.cur = p.cur, nil
	}
	if p.cur == nil {
		p.cur = make(map[*Object]kruntime.Object, per)
	}
	p.cur[o] = obj
}
