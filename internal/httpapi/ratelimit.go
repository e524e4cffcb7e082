package httpapi

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// ipLimiter is a token bucket per client IP. The map is bounded: past max
// clients the least recently seen is forgotten (it starts again with a full
// bucket), so a flood of addresses costs memory proportional to max only.
type ipLimiter struct {
	limit rate.Limit
	burst int
	max   int

	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List // of *ipEntry, most recently used first
}

type ipEntry struct {
	ip  string
	lim *rate.Limiter
}

func newIPLimiter(perSecond float64, burst, max int) *ipLimiter {
	return &ipLimiter{limit: rate.Limit(perSecond), burst: burst, max: max, m: make(map[string]*list.Element)}
}

// allow takes one token from ip's bucket. When the bucket is empty it takes
// nothing and says how long until a token is due.
func (l *ipLimiter) allow(ip string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lim *rate.Limiter
	if el, ok := l.m[ip]; ok {
		l.lru.MoveToFront(el)
		lim = el.Value.(*ipEntry).lim
	} else {
		lim = rate.NewLimiter(l.limit, l.burst)
		l.m[ip] = l.lru.PushFront(&ipEntry{ip, lim})
		for l.lru.Len() > l.max {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.m, old.Value.(*ipEntry).ip)
		}
	}
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// size is the number of clients tracked.
func (l *ipLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
