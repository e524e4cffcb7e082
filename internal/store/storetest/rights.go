package storetest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testConsent: consent and visibility are recorded per agent and read back,
// with the defaults for an agent that chose nothing.
func testConsent(t *testing.T, h Harness) {
	s := h.Open(t)
	ingest(t, s, "op-a", conduit("c1", "a", ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour)),
		conduit("c2", "b", ledger.Verified, base.Add(-2*time.Hour), base.Add(-time.Hour)))
	if c, err := s.Consent(ctx(t), "a"); err != nil || c.Visibility != ledger.VisibilityPublic || c.Consented() {
		t.Errorf("defaults %+v %v", c, err)
	}
	if err := s.RecordConsent(ctx(t), "a", "disclosure-2026-01", "agent:a", base); err != nil {
		t.Fatal(err)
	}
	c, err := s.Consent(ctx(t), "a")
	if err != nil || !c.Consented() || c.DisclosureVersion != "disclosure-2026-01" || !c.GivenAt.Equal(base) || c.By != "agent:a" ||
		c.Visibility != ledger.VisibilityPublic {
		t.Errorf("after consent %+v %v", c, err)
	}
	if err := s.SetVisibility(ctx(t), "a", ledger.VisibilityUnlisted, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Consent(ctx(t), "a"); c.Visibility != ledger.VisibilityUnlisted || c.DisclosureVersion != "disclosure-2026-01" {
		t.Errorf("after the visibility choice %+v", c)
	}
	if err := s.SetVisibility(ctx(t), "b", ledger.VisibilityUnlisted, base); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordConsent(ctx(t), "b", "disclosure-2026-02", "op-a", base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Consent(ctx(t), "b"); c.Visibility != ledger.VisibilityUnlisted || c.DisclosureVersion != "disclosure-2026-02" {
		t.Errorf("a consent after a visibility choice must keep it: %+v", c)
	}
	wantKind(t, s.RecordConsent(ctx(t), "nobody", "v1", "op-a", base), errkind.NotFound)
	wantKind(t, s.RecordConsent(ctx(t), "a", "bad version", "op-a", base), errkind.Invalid)
	if _, err := s.Consent(ctx(t), "nobody"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("consent of nobody: %v", err)
	}
}

// testRecords: the records behind a score are exactly the events it
// counts, after corrections.
func testRecords(t *testing.T, h Harness) {
	s := h.Open(t)
	start := base.Add(-100 * 24 * time.Hour)
	ingest(t, s, "op-a",
		conduit("old", "a", ledger.Verified, start, start.Add(time.Hour)), // outside the window
		conduit("c1", "a", ledger.Verified, base.Add(-3*time.Hour), base.Add(-2*time.Hour)),
		conduit("c2", "a", ledger.Error, base.Add(-3*time.Hour), base.Add(-2*time.Hour)), // does not count
		conduit("c3", "a", ledger.Running, base.Add(-3*time.Hour), time.Time{}),
		ap2("t1", "a", ledger.Refunded, base.Add(-3*time.Hour), base.Add(-time.Hour)),
		ap2("t2", "a", ledger.Settled, base.Add(-3*time.Hour), base.Add(-time.Hour)),
		offer("o1", "a", ledger.Accepted, base.Add(-3*time.Hour), base.Add(-time.Hour)),
		conduit("c4", "b", ledger.Failed, base.Add(-3*time.Hour), base.Add(-time.Hour)),
	)
	v := correction(ledger.ActionVoid, ledger.AP2Transaction, "t2", base)
	correct(t, s, v, nil)
	mv := correction(ledger.ActionReattribute, ledger.ConduitSession, "c4", base)
	mv.AgentID = "a"
	correct(t, s, mv, nil)
	recs, err := s.Records(ctx(t), "a", base)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Event.ID)
	}
	if len(ids) != 3 || ids[0] != "c1" || ids[1] != "t1" || ids[2] != "c4" {
		t.Errorf("records %v, want c1, t1, c4 (moved to a; by end time, then type)", ids)
	}
	if c := counts(t, s, "a", base); c[0]+c[2] != int64(len(recs)) {
		t.Errorf("records %d, counts %v", len(recs), c)
	}
	if _, err := s.Records(ctx(t), "nobody", base); errkind.Of(err) != errkind.NotFound {
		t.Errorf("records of nobody: %v", err)
	}
}
