package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// LegacyDB is a back end's database at the last schema version before
// chain records were slimmed (each record then held its canonical content
// in a content column), with a store on it that has not migrated further.
type LegacyDB interface {
	// Store is the store on the database; its Migrate takes the database
	// to the latest version.
	Store() service.Backend
	// Exec runs SQL statements directly on the database, guards in place.
	Exec(sql string) error
	// Unguard lifts the trigger that keeps ledger_records from being
	// updated, as an attacker with database access could.
	Unguard() error
	// Down migrates the database back to the legacy version.
	Down() error
	// Contents returns the content column of every chain record, keyed
	// "agent/seq", at the legacy version.
	Contents() (map[string][]byte, error)
	// Time and Bytes render literals as Tamperer's do.
	Time(at time.Time) string
	Bytes(b []byte) string
}

// legacyWriter writes reports the way Ingest did before chain records were
// slimmed: event rows, full-content chain records and moved heads, one
// accepted report at a time. It is the test's own port of that layout, so
// the migration is tested on data laid out exactly as old versions left
// it.
type legacyWriter struct {
	t         *testing.T
	db        LegacyDB
	heads     map[string]ledger.Hash
	seqs      map[string]int64
	terminals map[string]int64
}

func (w *legacyWriter) exec(format string, args ...any) {
	w.t.Helper()
	q := fmt.Sprintf(format, args...)
	if err := w.db.Exec(q); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// report records e, which must be a first report or an allowed transition.
func (w *legacyWriter) report(operator string, e ledger.Event) {
	w.t.Helper()
	if err := e.Validate(); err != nil {
		w.t.Fatal(err)
	}
	now := w.db.Time(time.UnixMicro(1))
	w.exec("INSERT INTO operators (id, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING", quote(operator), now)
	w.exec("INSERT INTO agents (id, created_at) VALUES (%s, %s) ON CONFLICT DO NOTHING", quote(e.AgentID), now)
	w.seqs[e.AgentID]++
	rec := ledger.Record{Event: e, Operator: operator, Seq: w.seqs[e.AgentID]}
	buyer, ended := "NULL", "NULL"
	if e.BuyerID != "" {
		buyer = quote(e.BuyerID)
	}
	if !e.EndedAt.IsZero() {
		ended = w.db.Time(e.EndedAt)
	}
	if e.Type == ledger.ConduitSession {
		w.exec(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq, created_at, updated_at)
		  VALUES (%s, %s, %s, %s, %s, %s, %s, %d, %s, %s)
		  ON CONFLICT (id) DO UPDATE SET status = excluded.status, completed_at = excluded.completed_at, seq = excluded.seq`,
			quote(e.ID), quote(e.AgentID), buyer, quote(operator), w.db.Time(e.StartedAt), ended, quote(string(e.Status)), rec.Seq, now, now)
	} else {
		w.exec(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq, created_at, updated_at)
		  VALUES (%s, %s, %s, %s, %s, %d, %s, %s, %d, %s, %s)
		  ON CONFLICT (id) DO UPDATE SET status = excluded.status, settled_at = excluded.settled_at, seq = excluded.seq`,
			quote(e.ID), quote(e.AgentID), buyer, quote(operator), quote(string(e.Status)), e.EscrowAmountCents, w.db.Time(e.StartedAt), ended, rec.Seq, now, now)
	}
	content := rec.Canonical()
	hash := ledger.Link(w.heads[e.AgentID], content)
	w.heads[e.AgentID] = hash
	w.exec("INSERT INTO ledger_records (agent_id, seq, event_type, event_id, content, hash) VALUES (%s, %d, %s, %s, %s, %s)",
		quote(e.AgentID), rec.Seq, quote(string(e.Type)), quote(e.ID), w.db.Bytes(content), w.db.Bytes(hash[:]))
	if e.Status.Terminal() {
		w.terminals[e.AgentID] = rec.Seq
	}
	w.exec("UPDATE agents SET head_seq = %d, head_hash = %s, terminal_seq = %d WHERE id = %s",
		rec.Seq, w.db.Bytes(hash[:]), w.terminals[e.AgentID], quote(e.AgentID))
}

// MigrateSlimChainRecords populates a legacy database the way old versions
// wrote it, migrates it, and checks that every chain still verifies with
// the same hashes, that tampering done before the migration is still
// reported, that the append-only guard is back, that ingest continues the
// migrated chains as the other back end would, and that the down
// migration restores the old content byte for byte.
func MigrateSlimChainRecords(t *testing.T, db LegacyDB) {
	ctx := t.Context()
	s := db.Store()
	w := &legacyWriter{t: t, db: db, heads: map[string]ledger.Hash{}, seqs: map[string]int64{}, terminals: map[string]int64{}}
	reports := LegacyHistory()
	var tEnd time.Time
	for _, r := range reports {
		w.report(r.Operator, r.Event)
		if r.Event.ID == "agent-t-c1" && !r.Event.EndedAt.IsZero() {
			tEnd = r.Event.EndedAt
		}
	}
	// Tampering before the migration: agent-t's Conduit session is
	// back-dated in its row (the hashed content is as reported), and
	// agent-b's last record is made unreadable.
	w.exec("UPDATE conduit_sessions SET completed_at = %s WHERE id = 'agent-t-c1'", db.Time(tEnd.Add(-time.Second)))
	if err := db.Unguard(); err != nil {
		t.Fatal(err)
	}
	w.exec("UPDATE ledger_records SET content = %s WHERE agent_id = 'agent-b' AND seq = 6", db.Bytes([]byte("{")))

	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := s.VerifyLedger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Agents != 3 || rep.Records != int64(len(reports)) || rep.Events != 9 {
		t.Errorf("report %+v, want 3 agents, %d records, 9 events", rep, len(reports))
	}
	want := map[string]int64{"agent-b": 6, "agent-t": 3}
	if len(rep.Broken) != len(want) {
		t.Fatalf("broken %+v, want agent-b at 6 and agent-t at 3", rep.Broken)
	}
	for _, b := range rep.Broken {
		if want[b.AgentID] != b.Seq {
			t.Errorf("broken %+v, want agent-b at 6 and agent-t at 3", b)
		}
	}
	for agent, head := range w.heads {
		a, err := s.Agent(ctx, agent)
		if err != nil || a.ChainHead != head || a.ChainLength != 6 {
			t.Errorf("%s after migration: %+v %v, want head %x", agent, a, err, head)
		}
	}
	if err := db.Exec("DELETE FROM ledger_records WHERE agent_id = 'agent-a'"); err == nil {
		t.Error("the migrated ledger_records accepted a DELETE")
	}

	// Ingest continues agent-a's migrated chain with the same hashes the
	// old code (and the other back end) would compute.
	end := time.Date(2026, 3, 17, 15, 0, 0, 0, time.UTC)
	next := []ledger.Event{
		{Type: ledger.AP2Transaction, ID: "agent-a-t2", AgentID: "agent-a", BuyerID: "buyer.1", Status: ledger.Settled, EscrowAmountCents: 5, StartedAt: end.Add(-time.Hour), EndedAt: end},
		{Type: ledger.ConduitSession, ID: "agent-a-c1", AgentID: "agent-a", Status: ledger.Verified, StartedAt: reports[0].Event.StartedAt, EndedAt: reports[2].Event.EndedAt},
	}
	out, err := s.Ingest(ctx, ledger.Batch{Operator: "op-1", Events: next})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Status != ledger.OutcomeAccepted || out[1].Status != ledger.OutcomeDuplicate {
		t.Fatalf("outcomes %+v", out)
	}
	w.seqs["agent-a"]++
	wantHead := ledger.Link(w.heads["agent-a"], (&ledger.Record{Event: next[0], Operator: "op-1", Seq: w.seqs["agent-a"]}).Canonical())
	if a, err := s.Agent(ctx, "agent-a"); err != nil || a.ChainHead != wantHead || a.ChainLength != 7 {
		t.Errorf("agent-a after ingest: %+v %v, want head %x", a, err, wantHead)
	}
	if rep, err := s.VerifyLedger(ctx); err != nil || len(rep.Broken) != 2 {
		t.Errorf("verify after ingest: %+v %v", rep, err)
	}

	// Down rebuilds content byte for byte from the rows; up again verifies.
	if err := db.Down(); err != nil {
		t.Fatal(err)
	}
	got, err := db.Contents()
	if err != nil {
		t.Fatal(err)
	}
	expect := Contents(append(reports, Report{Operator: "op-1", Event: next[0]}))
	for key, content := range got {
		switch key {
		case "agent-t/3", "agent-b/6": // rebuilt from the back-dated row; unreadable, so status ''
			if bytes.Equal(content, expect[key]) {
				t.Errorf("%s: down migration hid the tampering", key)
			}
		default:
			if !bytes.Equal(content, expect[key]) {
				t.Errorf("%s: down content\n%s\nwant\n%s", key, content, expect[key])
			}
		}
	}
	if len(got) != len(expect) {
		t.Errorf("%d records after down, want %d", len(got), len(expect))
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = s.VerifyLedger(ctx)
	if err != nil || len(rep.Broken) != 2 || rep.Records != int64(len(expect)) {
		t.Errorf("verify after down and up: %+v %v", rep, err)
	}
}
