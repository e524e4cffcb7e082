package service

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

func statusCorrection(typ ledger.Type, id string, to ledger.Status, by, reason string) ledger.CorrectionRequest {
	return ledger.CorrectionRequest{EventType: typ, EventID: id, Action: ledger.ActionStatus, Status: to, By: by, Reason: reason}
}

// TestCorrectChargeback: a payment system reports a chargeback through its
// operator token. The score drops at once, the passport is re-issued in the
// correction's transaction (recorded as such), the old passport fails L2,
// the new one verifies, the same correction again is a no-op and the
// chains still walk.
func TestCorrectChargeback(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	old, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(time.Hour + 500*time.Millisecond)
	cor, created, err := a.Corrections.Correct(ctx, statusCorrection(ledger.AP2Transaction, "t-0", ledger.Refunded, "payments", "chargeback reported by the card network"))
	if err != nil || !created {
		t.Fatalf("correct: %+v %v %v", cor, created, err)
	}
	now := c.t.Truncate(time.Second)
	if cor.FromStatus != ledger.Settled || cor.ToStatus != ledger.Refunded || cor.FromAgent != "agent-1" || cor.ToAgent != "agent-1" ||
		cor.By != "payments" || !cor.At.Equal(now) || !cor.ReissuedAt.Equal(now) || !strings.HasPrefix(cor.ID, "cor-") {
		t.Fatalf("correction %+v", cor)
	}
	e, err := a.Certificates.Score(ctx, "agent-1")
	if err != nil || e.Result.Counts.AP2Success != 37 || e.Result.Score >= 760 || !e.ComputedAt.Equal(now) {
		t.Fatalf("score after the chargeback: %+v %v", e, err)
	}
	// The re-issued passport is the one served, and it verifies.
	cur, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil || cur.Issued || bytes.Equal(cur.Passport, old.Passport) || !cur.ComputedAt.Equal(now) {
		t.Fatalf("certificate after the correction: issued=%v computed %s %v", cur.Issued, cur.ComputedAt, err)
	}
	if p := verifyOK(t, a, cur.Passport, "agent-1"); p.Counts().AP2Success != 37 {
		t.Fatalf("new passport counts %+v", p.Counts())
	}
	v, err := a.Verifier.Verify(ctx, old.Passport, "agent-1")
	if err != nil || v.ScoreValid || !hasCode(v, CodeLedgerMismatch) {
		t.Fatalf("old passport after the correction: %+v %v", v, err)
	}
	// The history of passports holds both, by agent_passport_id.
	ps, err := a.store.Passports(ctx, "agent-1")
	if err != nil || len(ps) != 2 || !bytes.Equal(ps[1].Document, cur.Passport) {
		t.Fatalf("passport history: %d %v", len(ps), err)
	}

	c.t = c.t.Add(time.Minute)
	again, created, err := a.Corrections.Correct(ctx, statusCorrection(ledger.AP2Transaction, "t-0", ledger.Refunded, "payments", "chargeback reported by the card network"))
	if err != nil || created || again.ID != cor.ID || !again.At.Equal(cor.At) {
		t.Fatalf("repeat: %+v %v %v", again, created, err)
	}
	list, err := a.store.Corrections(ctx, ledger.AP2Transaction, "t-0")
	if err != nil || len(list) != 1 || list[0].ID != cor.ID {
		t.Fatalf("corrections of t-0: %+v %v", list, err)
	}
	r, err := a.Signals.VerifyLedger(ctx)
	if err != nil || len(r.Broken) != 0 {
		t.Fatalf("verify ledger: %+v %v", r, err)
	}
}

func hasCode(v Verification, code string) bool {
	for _, e := range v.Errors {
		if e.Code == code {
			return true
		}
	}
	return false
}

// TestCorrectReattribute: both agents' scores move, and a watch started by
// a certificate request hears of both before Correct returns.
func TestCorrectReattribute(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	fw := newFakeWatch()
	b := New(&countingStore{Backend: a.store, watch: fw}, Config{Now: c.now, Key: a.cfg.Key, Platform: a.cfg.Platform})
	ingest(t, b, conduit("agent-1", "c", 10, 10, t0))
	ingest(t, b, conduit("agent-2", "d", 5, 5, t0))
	if _, err := b.Certificates.Certificate(ctx, "agent-1"); err != nil {
		t.Fatal(err)
	}
	fw.wrote = nil
	cor, _, err := b.Corrections.Correct(ctx, ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "c-3", Action: ledger.ActionReattribute,
		AgentID: "agent-2", By: "ops", Reason: "filed under the wrong agent"})
	if err != nil || cor.FromAgent != "agent-1" || cor.ToAgent != "agent-2" {
		t.Fatalf("reattribute: %+v %v", cor, err)
	}
	if len(fw.wrote) != 1 || strings.Join(fw.wrote[0], ",") != "agent-1,agent-2" {
		t.Fatalf("the watch heard of %v", fw.wrote)
	}
	for agent, want := range map[string]int64{"agent-1": 9, "agent-2": 6} {
		e, err := b.Certificates.Score(ctx, agent)
		if err != nil || e.Result.Counts.ConduitTotal != want {
			t.Errorf("%s: %+v %v", agent, e.Result.Counts, err)
		}
	}
	// A repeat writes nothing, so the watch hears of nothing.
	fw.wrote = nil
	if _, created, err := b.Corrections.Correct(ctx, ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "c-3", Action: ledger.ActionReattribute,
		AgentID: "agent-2", By: "ops", Reason: "filed under the wrong agent"}); err != nil || created || len(fw.wrote) != 0 {
		t.Fatalf("repeat: created %v, watch %v, %v", created, fw.wrote, err)
	}
}

func TestCorrectErrors(t *testing.T) {
	ctx := context.Background()
	a, _ := newUseCases(t)
	ingest(t, a, conduit("agent-1", "c", 2, 2, t0))
	ingest(t, a, []ledger.Event{{Type: ledger.ConduitSession, ID: "run", AgentID: "agent-1", Status: ledger.Running, StartedAt: t0}})
	cases := []struct {
		name   string
		req    ledger.CorrectionRequest
		kind   errkind.Kind
		detail string
	}{
		{"unknown event", statusCorrection(ledger.ConduitSession, "nope", ledger.Failed, "ops", "x"), errkind.NotFound, `conduit_session "nope" is not in the ledger`},
		{"not final", statusCorrection(ledger.ConduitSession, "run", ledger.Failed, "ops", "x"), errkind.Conflict, ""},
		{"no reason", statusCorrection(ledger.ConduitSession, "c-0", ledger.Failed, "ops", ""), errkind.Invalid, ""},
		{"same status", statusCorrection(ledger.ConduitSession, "c-0", ledger.Verified, "ops", "x"), errkind.Invalid, ""},
		{"unknown appeal", func() ledger.CorrectionRequest {
			r := statusCorrection(ledger.ConduitSession, "c-0", ledger.Failed, "ops", "x")
			r.AppealID = "apl-none"
			return r
		}(), errkind.NotFound, `no appeal with id "apl-none"`},
	}
	for _, tc := range cases {
		_, _, err := a.Corrections.Correct(ctx, tc.req)
		if errkind.Of(err) != tc.kind {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.kind)
			continue
		}
		if d, _ := errkind.PublicDetail(err); tc.detail != "" && d != tc.detail {
			t.Errorf("%s: public detail %q, want %q", tc.name, d, tc.detail)
		}
	}
	// Without a key nothing could be re-issued: refused before writing.
	nokey := New(a.store, Config{Now: a.cfg.Now})
	if _, _, err := nokey.Corrections.Correct(ctx, statusCorrection(ledger.ConduitSession, "c-0", ledger.Failed, "ops", "x")); errkind.Of(err) != errkind.Invalid ||
		!strings.Contains(err.Error(), SigningKeyEnv) {
		t.Fatalf("no key: %v", err)
	}
	if list, _ := a.store.Corrections(ctx, ledger.ConduitSession, "c-0"); len(list) != 0 {
		t.Fatalf("a refused correction was stored: %+v", list)
	}
}
