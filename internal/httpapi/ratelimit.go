package httpapi

import (
	"container/heap"
	"net/netip"
	"sync"
	"time"
)

// ipLimiter is a token bucket per client. IPv4 clients are one address
// each; IPv6 clients are one network of v6Bits (a /64 by default): a host
// on IPv6 is usually given a whole /64, and would otherwise get a fresh
// bucket for every address it picks from it.
//
// The table is bounded (max clients), and what it forgets must not matter:
// a forgotten client comes back with a full bucket, so only clients whose
// buckets are full anyway are forgotten. A newcomer takes the place of the
// client whose bucket has been full the longest; when no bucket is full
// (every tracked client spent tokens within the last burst/rate), the
// newcomer is not tracked and draws on one bucket shared by every such
// newcomer. A flood of fresh addresses therefore neither resets the
// clients being limited nor grows the table: it drains the shared bucket,
// and itself.
type ipLimiter struct {
	rate   float64 // tokens per second
	burst  float64
	max    int
	v6Bits int

	mu       sync.Mutex
	m        map[netip.Addr]*bucket
	byFull   fullHeap // every tracked bucket, soonest full first
	overflow bucket   // the newcomers' shared bucket, never in m
}

// bucket is one client's tokens as of last (Unix nanoseconds), and when
// they will be back to the burst (full).
type bucket struct {
	key    netip.Addr
	tokens float64
	last   int64
	full   int64
	index  int // in byFull; -1 for the overflow bucket
}

// newIPLimiter limits each client to perSecond with bursts of burst,
// tracking at most max clients, IPv6 ones per network of v6Bits bits (64
// when out of 1..128).
func newIPLimiter(perSecond float64, burst, max, v6Bits int) *ipLimiter {
	if v6Bits < 1 || v6Bits > 128 {
		v6Bits = 64
	}
	l := &ipLimiter{rate: perSecond, burst: float64(burst), max: max, v6Bits: v6Bits, m: make(map[netip.Addr]*bucket)}
	l.overflow = bucket{tokens: l.burst, index: -1}
	return l
}

// key is the bucket a client address belongs to. An address that does not
// parse (no test or server gives one) shares the zero key.
func (l *ipLimiter) key(ip string) netip.Addr {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(l.v6Bits)
		return p.Addr()
	}
	return a
}

// allow takes one token from the client's bucket. When the bucket is empty
// it takes nothing and says how long until a token is due.
func (l *ipLimiter) allow(ip string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketFor(l.key(ip), now.UnixNano(), true)
	if b.tokens >= 1 {
		b.tokens--
		l.settle(b)
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// bucketFor returns the client's bucket refilled to now: its own, a new
// one in the place of a full one, or (when add and no bucket is full) the
// shared overflow bucket. Without add an untracked client has none (nil).
func (l *ipLimiter) bucketFor(k netip.Addr, now int64, add bool) *bucket {
	b := l.m[k]
	switch {
	case b != nil:
	case !add:
		return nil
	case len(l.m) < l.max:
		b = &bucket{key: k, tokens: l.burst, last: now}
		l.m[k] = b
		heap.Push(&l.byFull, b)
	case len(l.byFull) > 0 && l.byFull[0].full <= now:
		// The bucket full the longest: forgetting it loses nothing.
		b = l.byFull[0]
		delete(l.m, b.key)
		*b = bucket{key: k, tokens: l.burst, last: now, index: b.index}
		l.m[k] = b
	default:
		b = &l.overflow
	}
	if now > b.last {
		b.tokens = min(l.burst, b.tokens+float64(now-b.last)/1e9*l.rate)
		b.last = now
	}
	return b
}

// settle records when b will be full again and reorders the heap.
func (l *ipLimiter) settle(b *bucket) {
	b.full = b.last + int64((l.burst-b.tokens)/l.rate*1e9)
	if b.index >= 0 {
		heap.Fix(&l.byFull, b.index)
	}
}

// size is the number of clients tracked.
func (l *ipLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// fullHeap orders buckets by the instant they are full again.
type fullHeap []*bucket

func (h fullHeap) Len() int           { return len(h) }
func (h fullHeap) Less(i, j int) bool { return h[i].full < h[j].full }
func (h fullHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *fullHeap) Push(x any) {
	b := x.(*bucket)
	b.index = len(*h)
	*h = append(*h, b)
}
func (h *fullHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	b.index = -1
	return b
}
