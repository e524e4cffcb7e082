package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

func TestIngestActivity(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	c.t = time.Date(2026, 6, 15, 13, 30, 0, 0, time.UTC)
	if act := a.Ingest.IngestActivity(); len(act.Hours) != ActivityHours || len(act.Rejections) != 0 || !act.Since.Equal(c.t) {
		t.Fatalf("empty: %+v", act)
	}
	body := func(lines ...string) *strings.Reader { return strings.NewReader(strings.Join(lines, "\n")) }
	ok := `{"type":"conduit_session","id":"s-1","agent_id":"agent-7","status":"VERIFIED","started_at":"2026-06-15T10:00:00Z","completed_at":"2026-06-15T10:05:00Z"}`
	bad := `{"type":"conduit_session","id":"s-2","agent_id":"agent-7","status":"DONE","started_at":"2026-06-15T10:00:00Z"}`
	if _, err := a.Ingest.IngestEvents(ctx, "market-1", body(ok, bad)); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Hour)
	// Another operator's batch: its own event, re-sent in the same batch
	// (a duplicate), and two bad lines.
	ok3 := strings.ReplaceAll(ok, "s-1", "s-3")
	if _, err := a.Ingest.IngestEvents(ctx, "market-2", body(ok3, ok3, bad, bad)); err != nil {
		t.Fatal(err)
	}
	act := a.Ingest.IngestActivity()
	prev, cur := act.Hours[ActivityHours-2], act.Hours[ActivityHours-1]
	if !cur.Start.Equal(time.Date(2026, 6, 15, 14, 0, 0, 0, time.UTC)) || !prev.Start.Equal(cur.Start.Add(-time.Hour)) ||
		!act.Hours[0].Start.Equal(cur.Start.Add(-(ActivityHours-1)*time.Hour)) {
		t.Fatalf("hours %s .. %s, %s", act.Hours[0].Start, prev.Start, cur.Start)
	}
	if prev != (IngestHour{Start: prev.Start, Batches: 1, Accepted: 1, Rejected: 1}) ||
		cur != (IngestHour{Start: cur.Start, Batches: 1, Accepted: 1, Duplicates: 1, Rejected: 2}) || cur.Events() != 4 {
		t.Fatalf("hours %+v %+v", prev, cur)
	}
	if len(act.Rejections) != 3 {
		t.Fatalf("%d rejections", len(act.Rejections))
	}
	r := act.Rejections[0] // newest first: the second batch's last line
	if r.Operator != "market-2" || r.Line != 4 || r.ID != "s-2" || !r.At.Equal(c.t) ||
		!strings.Contains(r.Err.Error(), `"DONE" is not a conduit_session status`) {
		t.Fatalf("newest rejection %+v %v", r, r.Err)
	}
	if act.Rejections[2].Operator != "market-1" {
		t.Fatalf("oldest rejection %+v", act.Rejections[2])
	}

	// A batch that fails as a whole counts as failed, with no events.
	if _, err := a.Ingest.IngestItems(ctx, "bad operator", []Item{{Event: ledger.Event{ID: "x"}}}); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("bad operator: %v", err)
	}
	if h := a.Ingest.IngestActivity().Hours[ActivityHours-1]; h.Failed != 1 || h.Batches != 1 {
		t.Fatalf("after a failed batch %+v", h)
	}

	// Only the newest MaxRecentRejections rejections are kept.
	var lines []string
	for i := range MaxRecentRejections + 7 {
		lines = append(lines, fmt.Sprintf(`{"type":"conduit_session","id":"r-%d","agent_id":"agent-7","status":"DONE","started_at":"2026-06-15T10:00:00Z"}`, i))
	}
	if _, err := a.Ingest.IngestEvents(ctx, "market-3", body(lines...)); err != nil {
		t.Fatal(err)
	}
	act = a.Ingest.IngestActivity()
	if len(act.Rejections) != MaxRecentRejections || act.Rejections[0].ID != fmt.Sprintf("r-%d", MaxRecentRejections+6) ||
		act.Rejections[MaxRecentRejections-1].ID != "r-7" {
		t.Fatalf("%d rejections, newest %s, oldest %s", len(act.Rejections), act.Rejections[0].ID, act.Rejections[len(act.Rejections)-1].ID)
	}
	if h := act.Hours[ActivityHours-1]; h.Rejected != 2+MaxRecentRejections+7 {
		t.Fatalf("rejected this hour: %d", h.Rejected)
	}

	// Hours older than the ring are forgotten, not mistaken for new ones.
	c.t = c.t.Add(ActivityHours * time.Hour)
	for _, h := range a.Ingest.IngestActivity().Hours {
		if h.Batches != 0 || h.Failed != 0 || h.Events() != 0 {
			t.Fatalf("hour %s still holds %+v", h.Start, h)
		}
	}
}
