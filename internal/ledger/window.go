package ledger

import "time"

// Window is the scoring window's length: 90 days of 24 hours (§3.1, §12.2).
const Window = 90 * 24 * time.Hour

// CacheLifetime is how long a computed score (and the passport issued from
// it) is valid at most: 7 days (§7.2, Pitfall 6; docs/ERRATA.md E12).
const CacheLifetime = 7 * 24 * time.Hour

// Resolution is the finest time step the ledger keeps. Times are stored with
// microsecond precision, so "the instant after t" is t + Resolution.
const Resolution = time.Microsecond

// WindowStart is the first instant of the window ending at asOf: the window
// is [asOf − 90 days, asOf], both ends inclusive, in UTC (docs/ERRATA.md E8).
func WindowStart(asOf time.Time) time.Time { return asOf.UTC().Add(-Window) }

// Bounds returns the inclusive bounds of the window ending at asOf on the
// ledger's microsecond grid: an event time e (a whole microsecond) is in
// [asOf − 90 days, asOf] exactly when lo <= e <= hi, even for an asOf with
// sub-microsecond digits, which a stored time cannot have. Back ends must
// count with these bounds, not with a truncated WindowStart, which would let
// in an event one microsecond before the window.
func Bounds(asOf time.Time) (lo, hi time.Time) {
	asOf = asOf.UTC()
	hi = asOf.Truncate(Resolution)
	start := WindowStart(asOf)
	lo = start.Truncate(Resolution)
	if lo.Before(start) {
		lo = lo.Add(Resolution)
	}
	return lo, hi
}

// InWindow reports whether an event that ended at t falls in the window
// ending at asOf.
func InWindow(t, asOf time.Time) bool {
	return !t.Before(WindowStart(asOf)) && !t.After(asOf)
}

// ValidUntil is the first instant at which a score computed as of computedAt
// may no longer hold, given the earliest counted end time inside that window
// (oldest; zero if none) and the earliest counted end time after computedAt
// (next; zero if none). The counts stay the same for every asOf in
// [computedAt, ValidUntil): until the 7-day lifetime ends, the oldest counted
// event leaves the window (the instant after oldest + 90 days), or an event
// that had not yet ended enters it. Results are truncated to Resolution.
func ValidUntil(computedAt, oldest, next time.Time) time.Time {
	until := computedAt.Add(CacheLifetime)
	if !oldest.IsZero() {
		if leave := oldest.Add(Window + Resolution); leave.Before(until) {
			until = leave
		}
	}
	if !next.IsZero() && next.Before(until) {
		until = next
	}
	return until.UTC().Truncate(Resolution)
}
