package webhook

import (
	"math/rand/v2"
	"time"
)

// Retry is the schedule of a message's attempts: exponential backoff with
// jitter, for at most MaxAge after the message was written, after which
// the message is failed.
type Retry struct {
	// Base is the wait after the first failed attempt; each later wait
	// doubles, up to Cap.
	Base, Cap time.Duration
	// MaxAge is how long after its creation a message is still attempted.
	MaxAge time.Duration
}

// DefaultRetry waits 5 s, 10 s, 20 s, … up to 2 h between attempts, for
// 24 h (about 22 attempts).
var DefaultRetry = Retry{Base: 5 * time.Second, Cap: 2 * time.Hour, MaxAge: 24 * time.Hour}

// Next is what follows the failed attempt number n (1 for the first) of a
// message created at created, made at now: the next attempt's time, or
// ok false when the message has failed: MaxAge has passed since created.
// A wait that would end past created + MaxAge is cut short there, so the
// last attempt is made at MaxAge. The wait is drawn uniformly from [d/2, d] ("equal
// jitter"), d = min(Cap, Base·2^(n-1)), so that receivers recovering
// together are not hit by every sender at once, while no wait is shorter
// than half the schedule's.
func (r Retry) Next(n int, created, now time.Time) (next time.Time, ok bool) {
	d := r.Base
	for i := 1; i < n && d < r.Cap; i++ {
		d *= 2
	}
	d = min(d, r.Cap)
	if d > 1 {
		d = d/2 + rand.N(d/2+1)
	}
	end := created.Add(r.MaxAge)
	if !now.Before(end) {
		return time.Time{}, false
	}
	next = now.Add(d)
	if next.After(end) {
		next = end
	}
	return next, true
}
