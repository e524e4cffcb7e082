package audittest

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// AsOf is the instant Scenario audits.
var AsOf = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// Conduit is a session of agent ending at end (absent unless st is final),
// started an hour before.
func Conduit(id, agent string, st ledger.Status, end time.Time) ledger.Event {
	e := ledger.Event{Type: ledger.ConduitSession, ID: id, AgentID: agent, Status: st, StartedAt: end.Add(-time.Hour)}
	if st.Terminal() {
		e.EndedAt = end
	}
	return e
}

// AP2 is a transaction of agent with buyer ending at end, started two
// hours before.
func AP2(id, agent, buyer string, st ledger.Status, end time.Time) ledger.Event {
	e := ledger.Event{Type: ledger.AP2Transaction, ID: id, AgentID: agent, BuyerID: buyer, Status: st, EscrowAmountCents: 12345,
		StartedAt: end.Add(-2 * time.Hour)}
	if st.Terminal() {
		e.EndedAt = end
	}
	return e
}

// Req is a correction request by op-1 at at, with a reason that needs
// escaping.
func Req(action ledger.CorrectionAction, typ ledger.Type, id string, at time.Time) ledger.CorrectionRequest {
	return ledger.CorrectionRequest{EventType: typ, EventID: id, Action: action, Reason: "confirmed data error: ticket <42> & \"quotes\"",
		By: "op-1", At: at}
}

// Scenario is a ledger in which agent "a" has one event of every outcome,
// corrections of every action and events moved in from other chains
// (directly, and through a third agent), with a checkpoint over it and a
// passport as of AsOf.
func Scenario(tb testing.TB) (*Ledger, audit.Source) {
	m := scenario(tb)
	ckpt := SignCheckpoint(tb, 1, AsOf.Add(-40*time.Minute), m.Leaves())
	leaves := m.Leaves()
	return m, m.Source("a", AsOf, m.SignPassport(tb, "a", AsOf), ckpt, leaves)
}

// HoldScenario is Scenario with escrow holds of provider "a" (issue 24):
// h1 priced by one passport, released, then refunded by a chargeback
// correction (a step naming it); h2 priced by a later passport and
// disputed, still open; h3 of a provider with no passport (score 0, a full
// hold), cancelled. The bundle holds them and both passports.
func HoldScenario(tb testing.TB) (*Ledger, audit.Source) {
	m := scenario(tb)
	p1 := m.SignPassport(tb, "a", AsOf.Add(-30*time.Hour))
	p2 := m.SignPassport(tb, "a", AsOf.Add(-10*time.Hour))
	m.Hold(tb, p1, holdReq("h1", 100000, AsOf.Add(-29*time.Hour)),
		ledger.HoldRequest{Action: ledger.HoldRelease, HasFee: true, FeeCents: 1500, At: AsOf.Add(-28 * time.Hour)})
	m.Hold(tb, p2, holdReq("h2", 250000, AsOf.Add(-9*time.Hour)),
		ledger.HoldRequest{Action: ledger.HoldDispute, Reason: "not delivered", At: AsOf.Add(-8 * time.Hour)})
	m.Hold(tb, nil, holdReq("h3", 777, AsOf.Add(-7*time.Hour)), ledger.HoldRequest{Action: ledger.HoldCancel, At: AsOf.Add(-6 * time.Hour)})
	cb := Req(ledger.ActionStatus, ledger.AP2Transaction, "h1", AsOf.Add(-45*time.Minute))
	cb.Status, cb.Reason = ledger.Refunded, "chargeback"
	m.Correct(tb, cb)
	ckpt := SignCheckpoint(tb, 1, AsOf.Add(-40*time.Minute), m.Leaves())
	leaves := m.Leaves()
	return m, m.Source("a", AsOf, m.SignPassport(tb, "a", AsOf), ckpt, leaves)
}

func holdReq(id string, amount int64, at time.Time) ledger.HoldRequest {
	return ledger.HoldRequest{Action: ledger.HoldCreate, TransactionID: id, ProviderID: "a", BuyerID: "buyer-h", AmountCents: amount,
		Currency: ledger.HoldCurrency, At: at}
}

// scenario is Scenario's ledger.
func scenario(tb testing.TB) *Ledger {
	m := NewLedger()
	h := time.Hour
	m.Ingest(tb, "op-1",
		Conduit("c1", "a", ledger.Running, AsOf.Add(-h)),
		Conduit("c2", "a", ledger.Failed, AsOf.Add(-100*24*h)),
		Conduit("c3", "a", ledger.Error, AsOf.Add(-2*h)),
		Conduit("c4", "a", ledger.Running, AsOf),
		AP2("t1", "a", "buyer-x", ledger.Held, AsOf.Add(-3*h)),
		AP2("t2", "a", "buyer-y", ledger.Settled, AsOf.Add(-4*h)),
		Conduit("c5", "a", ledger.Verified, AsOf.Add(-5*h)),
		Conduit("c6", "c", ledger.Verified, AsOf.Add(-6*h)),
		AP2("t3", "a", "buyer-x", ledger.Settled, AsOf.Add(h)),
		Conduit("c7", "a", ledger.Verified, AsOf.Add(-7*h)),
		AP2("t4", "c", "buyer-z", ledger.Settled, AsOf.Add(-8*h)),
		Conduit("c8", "b", ledger.Verified, AsOf.Add(-9*h)),
	)
	m.Ingest(tb, "op-1",
		Conduit("c1", "a", ledger.Verified, AsOf.Add(-h)),
		AP2("t1", "a", "buyer-x", ledger.Settled, AsOf.Add(-3*h)),
	)
	at := AsOf.Add(-50 * time.Minute)
	cb := Req(ledger.ActionStatus, ledger.AP2Transaction, "t1", at)
	cb.Status, cb.AppealID = ledger.Refunded, "ap-1"
	m.Correct(tb, cb)
	m.Correct(tb, Req(ledger.ActionVoid, ledger.AP2Transaction, "t2", at))
	move := func(typ ledger.Type, id, to string) {
		r := Req(ledger.ActionReattribute, typ, id, at)
		r.AgentID = to
		m.Correct(tb, r)
	}
	move(ledger.ConduitSession, "c5", "b")
	move(ledger.ConduitSession, "c6", "a")
	move(ledger.ConduitSession, "c7", "b")
	move(ledger.ConduitSession, "c7", "a")
	move(ledger.AP2Transaction, "t4", "b")
	move(ledger.AP2Transaction, "t4", "a")
	return m
}
