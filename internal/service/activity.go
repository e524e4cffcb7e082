package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
)

// What IngestActivity keeps, in memory and per process.
const (
	// ActivityHours is how many hours of per-hour totals are kept.
	ActivityHours = 48
	// MaxRecentRejections is how many of the latest rejected events are
	// kept.
	MaxRecentRejections = 100
)

// IngestActivity is what this process's ingests did recently. It is
// memory, not the ledger: it starts empty with the process and covers only
// batches ingested through these use cases (the HTTP route and, in its own
// process, `swarmscore ingest`).
type IngestActivity struct {
	// Since is when this process began recording.
	Since time.Time
	// Hours are the last ActivityHours whole hours (UTC), oldest first,
	// ending with the current one; hours with no ingest are zero.
	Hours []IngestHour
	// Rejections are the latest rejected events, newest first.
	Rejections []RecentRejection
}

// IngestHour totals the batches that ended in one hour.
type IngestHour struct {
	Start time.Time
	// Batches recorded, and batches that failed as a whole (nothing was
	// reported for their events: the database was unavailable, the
	// request was cancelled, the input was not a batch).
	Batches, Failed int
	// Events by outcome.
	Accepted, Duplicates, Superseded, Rejected int
}

// Events is the number of events the hour's recorded batches reported.
func (h IngestHour) Events() int { return h.Accepted + h.Duplicates + h.Superseded + h.Rejected }

// RecentRejection is one rejected event and the batch it came in.
type RecentRejection struct {
	At       time.Time
	Operator string
	Rejection
}

// IngestItems records the items that parsed as one batch (Ingest) and
// reports every item, parse failures included, with rejections in input
// order; the outcome is added to IngestActivity. Errors are Ingest's; on
// an error nothing is reported.
func (u *Ingestion) IngestItems(ctx context.Context, operator string, items []Item) (IngestReport, error) {
	rep, err := u.ingestItems(ctx, operator, items)
	u.ingests.record(u.clock.now(), operator, &rep, err)
	detail := fmt.Sprintf("%s: %d accepted, %d duplicates, %d superseded, %d rejected",
		plural(len(items), "event", "events"), rep.Accepted, rep.Duplicates, rep.Superseded, len(rep.Rejected))
	if err != nil {
		detail = plural(len(items), "event", "events") + ", none recorded"
	}
	u.actions.record(ctx, auth.ActIngest, "", "", detail, err)
	return rep, err
}

// IngestActivity returns what this process's ingests did in the last
// ActivityHours hours and its latest rejections. It never fails and does
// not touch the database.
func (u *Ingestion) IngestActivity() IngestActivity {
	return u.ingests.snapshot(u.clock.now())
}

// ingestLog is IngestActivity's memory: a ring of hours and a ring of
// rejections, bounded whatever the traffic. The zero value is ready to use
// and safe for concurrent use.
type ingestLog struct {
	mu    sync.Mutex
	since time.Time
	hours [ActivityHours]IngestHour // by hour number mod ActivityHours
	rej   [MaxRecentRejections]RecentRejection
	nrej  int // rejections recorded ever; the newest is rej[(nrej−1) mod len]
}

func (l *ingestLog) start(now time.Time) {
	if l.since.IsZero() {
		l.since = now
	}
}

// hour returns the slot of the hour holding now, cleared if it last held
// an older hour.
func (l *ingestLog) hour(now time.Time) *IngestHour {
	start := now.Truncate(time.Hour)
	h := &l.hours[slot(start)]
	if !h.Start.Equal(start) {
		*h = IngestHour{Start: start}
	}
	return h
}

// slot is the ring position of the hour starting at start.
func slot(start time.Time) int {
	n := start.Unix() / 3600 % ActivityHours
	if n < 0 {
		n += ActivityHours
	}
	return int(n)
}

func (l *ingestLog) record(now time.Time, operator string, rep *IngestReport, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start(now)
	h := l.hour(now)
	if err != nil {
		h.Failed++
		return
	}
	h.Batches++
	h.Accepted += rep.Accepted
	h.Duplicates += rep.Duplicates
	h.Superseded += rep.Superseded
	h.Rejected += len(rep.Rejected)
	// A huge batch of rejections keeps only its last ones: the ring holds
	// the newest MaxRecentRejections whatever their batch.
	from := max(0, len(rep.Rejected)-MaxRecentRejections)
	for _, rj := range rep.Rejected[from:] {
		l.rej[l.nrej%MaxRecentRejections] = RecentRejection{At: now, Operator: operator, Rejection: rj}
		l.nrej++
	}
}

func (l *ingestLog) snapshot(now time.Time) IngestActivity {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start(now)
	a := IngestActivity{Since: l.since, Hours: make([]IngestHour, ActivityHours)}
	cur := now.Truncate(time.Hour)
	for i := range a.Hours {
		start := cur.Add(-time.Duration(ActivityHours-1-i) * time.Hour)
		h := l.hours[slot(start)]
		if !h.Start.Equal(start) {
			h = IngestHour{Start: start}
		}
		a.Hours[i] = h
	}
	n := min(l.nrej, MaxRecentRejections)
	a.Rejections = make([]RecentRejection, n)
	for i := range n {
		a.Rejections[i] = l.rej[(l.nrej-1-i)%MaxRecentRejections]
	}
	return a
}
