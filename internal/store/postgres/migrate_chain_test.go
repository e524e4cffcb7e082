package postgres

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// legacyWriter writes reports the way Ingest did before migration 00004:
// event rows, full-content chain records and moved heads, one accepted
// report at a time. It is the test's own port of that layout, so the
// migration is tested on data laid out exactly as old versions left it.
type legacyWriter struct {
	t     *testing.T
	pool  *pgxpool.Pool
	heads map[string]ledger.Hash
	seqs  map[string]int64
}

func (w *legacyWriter) exec(q string, args ...any) {
	w.t.Helper()
	if _, err := w.pool.Exec(context.Background(), q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

func (w *legacyWriter) report(operator string, e ledger.Event) {
	w.t.Helper()
	if err := e.Validate(); err != nil {
		w.t.Fatal(err)
	}
	w.exec("INSERT INTO operators (id) VALUES ($1) ON CONFLICT DO NOTHING", operator)
	w.exec("INSERT INTO agents (id) VALUES ($1) ON CONFLICT DO NOTHING", e.AgentID)
	w.seqs[e.AgentID]++
	rec := ledger.Record{Event: e, Operator: operator, Seq: w.seqs[e.AgentID]}
	var ended *time.Time
	if !e.EndedAt.IsZero() {
		ended = &e.EndedAt
	}
	var buyer *string
	if e.BuyerID != "" {
		buyer = &e.BuyerID
	}
	if e.Type == ledger.ConduitSession {
		w.exec(`INSERT INTO conduit_sessions (id, agent_id, buyer_id, operator_id, started_at, completed_at, status, seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE SET status = excluded.status, completed_at = excluded.completed_at, seq = excluded.seq`,
			e.ID, e.AgentID, buyer, operator, e.StartedAt, ended, string(e.Status), rec.Seq)
	} else {
		w.exec(`INSERT INTO ap2_transactions (id, provider_id, buyer_id, operator_id, status, escrow_amount_cents, started_at, settled_at, seq)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO UPDATE SET status = excluded.status, settled_at = excluded.settled_at, seq = excluded.seq`,
			e.ID, e.AgentID, e.BuyerID, operator, string(e.Status), e.EscrowAmountCents, e.StartedAt, ended, rec.Seq)
	}
	content := rec.Canonical()
	hash := ledger.Link(w.heads[e.AgentID], content)
	w.heads[e.AgentID] = hash
	w.exec("INSERT INTO ledger_records (agent_id, seq, event_type, event_id, content, hash) VALUES ($1, $2, $3, $4, $5, $6)",
		e.AgentID, rec.Seq, string(e.Type), e.ID, content, hash[:])
	terminal := int64(0)
	if e.Status.Terminal() {
		terminal = rec.Seq
	}
	w.exec("UPDATE agents SET head_seq = $1, head_hash = $2, terminal_seq = greatest(terminal_seq, $3) WHERE id = $4", rec.Seq, hash[:], terminal, e.AgentID)
}

// TestMigrateSlimChainRecords populates a database at schema version 3 the
// way old versions wrote it, migrates it, and checks that every chain still
// verifies with the same hashes, that tampering done before the migration
// is still reported, that ingest continues the migrated chains, and that
// the down migration restores the old content byte for byte.
func TestMigrateSlimChainRecords(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p, db, err := newMigrator(s.pool)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	w := &legacyWriter{t: t, pool: s.pool, heads: map[string]ledger.Hash{}, seqs: map[string]int64{}}
	reports := storetest.LegacyHistory()
	for _, r := range reports {
		w.report(r.Operator, r.Event)
	}
	// Tampering before the migration: agent-t's Conduit session is
	// back-dated in its row (the hashed content is as reported), and
	// agent-b's last record is made unreadable.
	w.exec("UPDATE conduit_sessions SET completed_at = completed_at - interval '1 second' WHERE id = 'agent-t-c1'")
	w.exec("ALTER TABLE ledger_records DISABLE TRIGGER ledger_records_no_update")
	w.exec(`UPDATE ledger_records SET content = '\x7b'::bytea WHERE agent_id = 'agent-b' AND seq = 6`)

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
	// The append-only guard is back on the new table.
	if _, err := s.pool.Exec(ctx, "DELETE FROM ledger_records WHERE agent_id = 'agent-a'"); err == nil {
		t.Error("the migrated ledger_records accepted a DELETE")
	}

	// Ingest continues agent-a's migrated chain with the same hashes the
	// old code (and the SQLite store) would compute.
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
	if _, err := p.DownTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT agent_id, seq, content FROM ledger_records ORDER BY agent_id, seq`)
	if err != nil {
		t.Fatal(err)
	}
	expect := storetest.Contents(append(reports, storetest.Report{Operator: "op-1", Event: next[0]}))
	n := 0
	for rows.Next() {
		var agent string
		var seq int64
		var content []byte
		if err := rows.Scan(&agent, &seq, &content); err != nil {
			t.Fatal(err)
		}
		n++
		key := fmt.Sprintf("%s/%d", agent, seq)
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
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(expect) {
		t.Errorf("%d records after down, want %d", n, len(expect))
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = s.VerifyLedger(ctx)
	if err != nil || len(rep.Broken) != 2 || rep.Records != int64(len(expect)) {
		t.Errorf("verify after down and up: %+v %v", rep, err)
	}
}
