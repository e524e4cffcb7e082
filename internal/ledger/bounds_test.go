package ledger_test

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// TestBoundsMatchInWindow checks that the microsecond bounds sent to
// the database select exactly the event times ledger.InWindow accepts, for
// as_of instants with and without sub-microsecond digits.
func TestBoundsMatchInWindow(t *testing.T) {
	base := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	for _, ns := range []int{0, 1, 499, 500, 999, 1000, 1001, 123456789} {
		asOf := base.Add(time.Duration(ns))
		lo, hi := ledger.Bounds(asOf)
		for _, edge := range []time.Time{ledger.WindowStart(asOf), asOf} {
			for d := -3; d <= 3; d++ {
				e := edge.Truncate(time.Microsecond).Add(time.Duration(d) * time.Microsecond)
				got := !e.Before(lo) && !e.After(hi)
				if want := ledger.InWindow(e, asOf); got != want {
					t.Errorf("as_of %s, event %s: bounds [%s, %s] say %v, InWindow says %v",
						asOf.Format(time.RFC3339Nano), e.Format(time.RFC3339Nano), lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano), got, want)
				}
			}
		}
		if lo.Nanosecond()%1000 != 0 || hi.Nanosecond()%1000 != 0 {
			t.Errorf("bounds %s, %s are not whole microseconds", lo, hi)
		}
	}
}
