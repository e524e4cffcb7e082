package storetest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// The property test is only as good as its oracle: check the brute-force
// helpers on a hand-made history.
func TestBruteForce(t *testing.T) {
	d := 24 * time.Hour
	evs := []ledger.Event{
		conduit("c1", "a", ledger.Verified, base.Add(-91*d), base.Add(-90*d)), // exactly the window start
		conduit("c2", "a", ledger.Failed, base.Add(-2*d), base.Add(-d)),
		conduit("c3", "a", ledger.Error, base.Add(-2*d), base.Add(-d)),
		ap2("t1", "a", ledger.Refunded, base.Add(-2*d), base),
		ap2("t2", "a", ledger.Settled, base.Add(-2*d), base.Add(time.Hour)), // future
		ap2("t3", "b", ledger.Settled, base.Add(-2*d), base),
	}
	if got, want := bruteCounts(evs, "a", base), (score.Counts{ConduitTotal: 2, ConduitSuccess: 1, AP2Total: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if got, want := bruteValidUntil(evs, "a", base), base.Add(time.Microsecond); !got.Equal(want) {
		t.Errorf("valid until %s, want %s (c1 leaves)", got, want)
	}
	if got, want := bruteValidUntil(evs, "a", base.Add(2*time.Microsecond)), base.Add(time.Hour); !got.Equal(want) {
		t.Errorf("valid until %s, want %s (t2 enters)", got, want)
	}
	if got, want := bruteValidUntil(evs, "b", base.Add(10*d)), base.Add(17*d); !got.Equal(want) {
		t.Errorf("valid until %s, want %s (lifetime)", got, want)
	}
}
