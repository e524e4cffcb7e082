package storetest

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// victim is the erased agent's id: distinctive, so that finding it
// anywhere in a dump of the database means it was left behind.
const victim = "victim-7q3x"

const identity = "9c1f0e2d3b4a59687766554433221100ffeeddccbbaa99887766554433221100"

// testErasure: an agent erased is renamed to a pseudonym in every table —
// its chain, the events it bought, corrections naming it, consent,
// appeals, tokens, passports, checkpoint leaves, chain breaks — and then
// appears nowhere; the ledger still verifies, old checkpoints still hold,
// other agents' counts are unchanged, and a sealed row altered afterwards
// is still caught.
func testErasure(t *testing.T, h Harness) {
	s := h.Open(t)
	f := victimLedger(t, s)
	mustVerify(t, s)
	before := map[string]score.Counts{}
	for _, id := range []string{victim, "seller", "other"} {
		c, err := s.Counts(ctx(t), id, base)
		if err != nil {
			t.Fatal(err)
		}
		before[id] = c
	}
	if !strings.Contains(h.Tamper.Dump(t, s), victim) {
		t.Fatal("the dump does not show the agent before its erasure: it cannot prove it gone after")
	}

	const pseudonym = "erased-4b1d9e"
	req := ledger.ErasureRequest{AgentID: victim, Pseudonym: pseudonym, Identity: identity, ID: "era-1", By: "op-a", At: base.Add(time.Hour)}
	e, err := s.Erase(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if e.Pseudonym != pseudonym || e.Identity != identity || len(e.Digests) == 0 {
		t.Errorf("erasure %+v", e)
	}
	checkErased(t, h, s, f, e, before)

	// Refused: the agent again, a pseudonym, a pseudonym in use, a bad
	// identity.
	again := req
	again.ID = "era-2"
	wantKind(t, errOnly(s.Erase(ctx(t), again)), errkind.NotFound)
	again.AgentID, again.Pseudonym, again.ID = pseudonym, "erased-0000", "era-2"
	wantKind(t, errOnly(s.Erase(ctx(t), again)), errkind.Conflict)
	again.AgentID, again.Pseudonym = "seller", "other"
	wantKind(t, errOnly(s.Erase(ctx(t), again)), errkind.Conflict)
	again.Pseudonym, again.Identity = "erased-0000", "not-a-commitment"
	wantKind(t, errOnly(s.Erase(ctx(t), again)), errkind.Invalid)
	mustVerify(t, s)

	// A second erasure of another party of a sealed record seals it again.
	again.Identity = identity
	if _, err := s.Erase(ctx(t), again); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, s)
	if c, err := s.Counts(ctx(t), "erased-0000", base); err != nil || c != before["seller"] {
		t.Errorf("seller's counts after its erasure: %+v %v", c, err)
	}

	// A sealed row altered afterwards still breaks the chain.
	h.Tamper.Exec(t, s, "UPDATE conduit_sessions SET started_at = "+h.Tamper.Time(f.start.Add(-time.Minute))+" WHERE id = 'c1'")
	if r, err := s.VerifyLedger(ctx(t)); err != nil || len(r.Broken) == 0 || r.Broken[0].AgentID != pseudonym {
		t.Errorf("a sealed row altered: %+v %v", r.Broken, err)
	}
}

// victimFixture is what victimLedger stored that testErasure checks again
// after the erasure.
type victimFixture struct {
	start      time.Time // the victim's events' start
	token      [32]byte  // the hash of the victim's token
	passport   ledger.IssuedPassport
	checkpoint checkpoint.Checkpoint // made over heads
	heads      []checkpoint.Leaf
}

// victimLedger stores the victim's events and the events it bought, a
// correction moving an event to it and one naming it in its reason, and
// everything else that names it: consent, a token, a passport, an appeal,
// a checkpoint, a chain break.
func victimLedger(t *testing.T, s service.Backend) victimFixture {
	t.Helper()
	start, end := base.Add(-3*time.Hour), base.Add(-2*time.Hour)
	f := victimFixture{start: start, token: sha256.Sum256([]byte("victim-token"))}
	bought := conduit("c-bought", "seller", ledger.Verified, start, end)
	bought.BuyerID = victim
	pay := ap2("t-bought", "seller", ledger.Settled, start, end)
	pay.BuyerID = victim
	asked := offer("o-1", "seller", ledger.Declined, start, end)
	asked.BuyerID = victim
	ingest(t, s, "op-a",
		conduit("c1", victim, ledger.Running, start, time.Time{}),
		conduit("c1", victim, ledger.Verified, start, end),
		ap2("t1", victim, ledger.Refunded, start, end),
		conduit("c2", "other", ledger.Verified, start, end),
		bought, pay, asked)
	mv := correction(ledger.ActionReattribute, ledger.ConduitSession, "c2", base)
	mv.AgentID = victim
	correct(t, s, mv, nil)
	cb := correction(ledger.ActionStatus, ledger.AP2Transaction, "t-bought", base)
	cb.Status, cb.Reason = ledger.Disputed, "chargeback filed by "+victim+" through the card network"
	correct(t, s, cb, nil)

	if err := s.RecordConsent(ctx(t), victim, "disclosure-1", "agent:"+victim, base); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx(t), auth.Token{ID: "tok-v", Operator: "op-a", AgentID: victim, SHA256: f.token, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	issue := func(e *ledger.ScoreEntry) ([]byte, string, error) {
		e.PassportID = fmt.Sprintf("p-%x", sha256.Sum256([]byte(e.AgentID)))[:18]
		return []byte(fmt.Sprintf(`{"agent_id":%q}`, e.AgentID)), "sig-" + e.AgentID, nil
	}
	if _, err := s.RefreshScore(ctx(t), victim, base, issue); err != nil {
		t.Fatal(err)
	}
	ps, err := s.Passports(ctx(t), victim)
	if err != nil || len(ps) != 1 {
		t.Fatalf("passports %+v %v", ps, err)
	}
	f.passport = ps[0]
	a, err := appeal.New(appeal.Filing{ID: "apl-1", PassportID: f.passport.ID, Grounds: appeal.IdentityError, Statement: "c2 is not " + victim + "'s session",
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c2"}}, By: "agent:" + victim, At: base.Add(time.Minute)}, f.passport)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAppeal(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	if f.heads, err = s.Heads(ctx(t)); err != nil {
		t.Fatal(err)
	}
	tree, _ := checkpoint.NewTree(f.heads)
	f.checkpoint = checkpoint.Checkpoint{Number: 1, Time: base, Agents: tree.Size(), Root: tree.Root(), Environment: "production"}
	if err := s.AddCheckpoint(ctx(t), f.checkpoint, []byte(`{"checkpoint":1}`), f.heads); err != nil {
		t.Fatal(err)
	}
	for _, a := range []auth.Action{
		{At: base, Operator: "op-a", Via: auth.ViaAPI, Kind: auth.ActCorrection, AgentID: victim, Target: "cor-1",
			Detail: "moved c2 from " + victim + " to seller", Outcome: auth.OK},
		{At: base, Operator: "op-a", Via: auth.ViaConsole, Kind: auth.ActAppealAck, AgentID: "seller", Target: "apl-0",
			Detail: "about " + victim + "'s appeal", Outcome: auth.Failed, Code: "conflict"},
	} {
		if _, err := s.AppendAction(ctx(t), a); err != nil {
			t.Fatal(err)
		}
	}
	broken := []ledger.BrokenLink{{AgentID: victim, Seq: 1, Reason: "a test break of " + victim}}
	for _, b := range [][]ledger.BrokenLink{broken, nil, broken} {
		if err := s.SetChainBreaks(ctx(t), base, b); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// checkErased checks the store after the erasure e of the victim: the id
// is nowhere, the ledger verifies, counts are unchanged (before, by old
// id), and every record naming the victim now names the pseudonym: consent
// unlisted, token and passport revoked, the appeal renamed, checkpoint 1
// still valid and a checkpoint of heads read before refused.
func checkErased(t *testing.T, h Harness, s service.Backend, f victimFixture, e ledger.Erasure, before map[string]score.Counts) {
	t.Helper()
	pseudonym := e.Pseudonym
	if dump := h.Tamper.Dump(t, s); strings.Contains(dump, victim) {
		var lines []string
		for _, l := range strings.Split(dump, "\n") {
			if strings.Contains(l, victim) {
				lines = append(lines, l)
			}
		}
		t.Errorf("the erased id is still stored:\n%s", strings.Join(lines, "\n"))
	}
	rep := mustVerify(t, s)
	if rep.Agents != 3 {
		t.Errorf("agents after the erasure: %d", rep.Agents)
	}
	after := map[string]string{victim: pseudonym, "seller": "seller", "other": "other"}
	for id, now := range after {
		c, err := s.Counts(ctx(t), now, base)
		if err != nil || c != before[id] {
			t.Errorf("counts of %s (now %s): %+v %v, were %+v", id, now, c, err, before[id])
		}
	}
	if _, err := s.Agent(ctx(t), victim); errkind.Of(err) != errkind.NotFound {
		t.Errorf("the erased agent: %v", err)
	}
	if c, err := s.Consent(ctx(t), pseudonym); err != nil || c.Visibility != ledger.VisibilityUnlisted || c.DisclosureVersion != "disclosure-1" {
		t.Errorf("the pseudonym's consent %+v %v", c, err)
	}
	if _, err := s.Authenticate(ctx(t), f.token); errkind.Of(err) != errkind.Unauthorized {
		t.Errorf("the erased agent's token: %v", err)
	}
	if p, err := s.Passport(ctx(t), f.passport.ID); err != nil || p.RevokedAt.IsZero() || len(p.Document) != 0 || p.AgentID != pseudonym {
		t.Errorf("the erased agent's passport %+v %v", p, err)
	}
	if got, err := s.Appeal(ctx(t), "apl-1"); err != nil || got.AgentID != pseudonym || got.Statement != "c2 is not "+pseudonym+"'s session" {
		t.Errorf("the appeal %+v %v", got, err)
	}
	// The action log keeps its entries, the agent renamed in them.
	acts, err := s.Actions(ctx(t), auth.ActionQuery{})
	if err != nil || len(acts) != 2 || acts[1].AgentID != pseudonym || acts[1].Detail != "moved c2 from "+pseudonym+" to seller" ||
		acts[0].AgentID != "seller" || acts[0].Detail != "about "+pseudonym+"'s appeal" || acts[0].Outcome != auth.Failed {
		t.Errorf("the action log after the erasure: %+v %v", acts, err)
	}
	leaves, err := s.CheckpointLeaves(ctx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Extends(f.checkpoint, leaves); err != nil {
		t.Errorf("checkpoint 1 after the erasure: %v", err)
	}
	if es, err := s.Erasures(ctx(t)); err != nil || len(es) != 1 || es[0].ID != "era-1" || len(es[0].Digests) != len(e.Digests) {
		t.Errorf("erasures %+v %v", es, err)
	}
	// The checkpoint made from heads read before an erasure is refused.
	cp := f.checkpoint
	cp.Number = 2
	wantKind(t, s.AddCheckpoint(ctx(t), cp, []byte(`{"checkpoint":2}`), f.heads), errkind.Conflict)
}

func errOnly(_ ledger.Erasure, err error) error { return err }
