package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// openTest returns a migrated store on a fresh database, closed when the
// test ends.
func openTest(tb testing.TB) *Store {
	tb.Helper()
	dsn := pgtest.NewDatabase(tb)
	s, err := Open(context.Background(), dsn)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Open:   func(t *testing.T) service.Backend { return openTest(t) },
		Tamper: tamperer{},
	})
}

// tamperer edits the database directly, with triggers off, as an attacker
// with database access would.
type tamperer struct{}

func (tamperer) exec(t *testing.T, s service.Backend, sql string, args ...any) {
	t.Helper()
	pool := s.(*Store).pool
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		ct, err := tx.Exec(context.Background(), sql, args...)
		if err != nil {
			return err
		}
		if ct.RowsAffected() != 1 {
			t.Fatalf("tamper: %d rows changed, want 1: %s", ct.RowsAffected(), sql)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}
}

func eventTable(typ ledger.Type) (table, endColumn string) {
	if typ == ledger.AP2Transaction {
		return "ap2_transactions", "settled_at"
	}
	return "conduit_sessions", "completed_at"
}

func (tp tamperer) SetEndedAt(t *testing.T, s service.Backend, typ ledger.Type, id string, at time.Time) {
	table, col := eventTable(typ)
	tp.exec(t, s, `UPDATE `+table+` SET `+col+` = $2 WHERE id = $1`, id, at)
}

func (tp tamperer) DeleteEvent(t *testing.T, s service.Backend, typ ledger.Type, id string) {
	table, _ := eventTable(typ)
	tp.exec(t, s, `DELETE FROM `+table+` WHERE id = $1`, id)
}

func (tp tamperer) SetRecordContent(t *testing.T, s service.Backend, agentID string, seq int64, content []byte) {
	tp.exec(t, s, `UPDATE ledger_records SET content = $3 WHERE agent_id = $1 AND seq = $2`, agentID, seq, content)
}

func TestMigrateConcurrentlyAndReady(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctx := t.Context()
	stores := make([]*Store, 3)
	for i := range stores {
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	err := stores[0].Ready(ctx)
	if errkind.Of(err) != errkind.Unavailable || !strings.Contains(err.Error(), "migrations pending") {
		t.Fatalf("Ready before Migrate = %v, want unavailable: migrations pending", err)
	}
	// Replicas starting at once: each migration is applied exactly once.
	errs := make(chan error, len(stores))
	for _, s := range stores {
		go func() { errs <- s.Migrate(ctx) }()
	}
	for range stores {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	for _, s := range stores {
		if err := s.Ready(ctx); err != nil {
			t.Fatalf("Ready after Migrate: %v", err)
		}
	}
	var applied int
	if err := stores[0].pool.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if want := len(mustMigrationNames(t)); applied != want {
		t.Fatalf("goose_db_version has %d applied migrations, want %d", applied, want)
	}
	if err := stores[0].Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
}

func mustMigrationNames(t *testing.T) []string {
	t.Helper()
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	_, err := Open(ctx, "postgres://user:s3cret@127.0.0.1:5432/db?sslmode=bogus")
	if errkind.Of(err) != errkind.Invalid {
		t.Errorf("malformed DSN: %v, want invalid", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
	// Port 1 on loopback refuses connections.
	_, err = Open(ctx, "postgres://user:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if errkind.Of(err) != errkind.Unavailable {
		t.Errorf("unreachable server: %v, want unavailable", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestClosedStoreFails(t *testing.T) {
	s := openTest(t)
	s.Close()
	_, err := s.Counts(t.Context(), "a", time.Now())
	if err == nil {
		t.Fatal("Counts on a closed store succeeded")
	}
}

func TestLedgerRecordsAreAppendOnly(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	ev := ledger.Event{Type: ledger.ConduitSession, ID: "c1", AgentID: "a1", Status: ledger.Verified,
		StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: []ledger.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE ledger_records SET event_id = 'x'`,
		`DELETE FROM ledger_records`,
		`TRUNCATE ledger_records CASCADE`,
	} {
		if _, err := s.pool.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want the append-only error", q, err)
		}
	}
}

// TestIngestLargeBatchUsesCopyPath checks that a batch above copyThreshold,
// which inserts by COPY, has the same effect and outcomes as small ones,
// including a transition and a duplicate inside the batch.
func TestIngestLargeBatchUsesCopyPath(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	evs := benchEvents("big", 3*copyThreshold, 10, 9)
	first := evs[0]
	running := first
	running.Status, running.EndedAt = ledger.Running, time.Time{}
	if first.Type == ledger.AP2Transaction {
		running.Status = ledger.Held
	}
	batch := append([]ledger.Event{running}, evs...)
	batch = append(batch, first)
	out, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: batch})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		want := ledger.OutcomeAccepted
		if i == len(out)-1 {
			want = ledger.OutcomeDuplicate
		}
		if o.Status != want {
			t.Fatalf("event %d: %v (%v), want %v", i, o.Status, o.Err, want)
		}
	}
	rep, err := s.VerifyLedger(ctx)
	if err != nil || len(rep.Broken) != 0 {
		t.Fatalf("VerifyLedger: %v %v", rep.Broken, err)
	}
	if rep.Records != int64(len(evs)+1) || rep.Events != int64(len(evs)) {
		t.Fatalf("records %d events %d, want %d and %d", rep.Records, rep.Events, len(evs)+1, len(evs))
	}
}

// TestVerifyFindsRecordsOfUnregisteredAgent covers the check that stands in
// for the foreign key ledger_records does not have.
func TestVerifyFindsRecordsOfUnregisteredAgent(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	ev := ledger.Event{Type: ledger.ConduitSession, ID: "c1", AgentID: "ghost", Status: ledger.Verified,
		StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
	rec := ledger.Record{Event: ev, Operator: "op", Seq: 1}
	content := rec.Canonical()
	hash := ledger.Link(ledger.Hash{}, content)
	if _, err := s.pool.Exec(ctx, `INSERT INTO ledger_records (agent_id, seq, event_type, event_id, content, hash) VALUES ('ghost', 1, 'conduit_session', 'c1', $1, $2)`,
		content, hash[:]); err != nil {
		t.Fatal(err)
	}
	rep, err := s.VerifyLedger(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Broken) != 1 || rep.Broken[0].AgentID != "ghost" || !strings.Contains(rep.Broken[0].Reason, "not registered") {
		t.Fatalf("Broken = %v, want the unregistered agent ghost", rep.Broken)
	}
}

func (tp tamperer) SetCacheVersion(t *testing.T, s service.Backend, agentID string, ledgerSeq int64, validUntil time.Time) {
	tp.exec(t, s, `UPDATE swarmscore_cache SET ledger_seq = $2, valid_until = $3 WHERE agent_id = $1`, agentID, ledgerSeq, validUntil)
}

func (tamperer) CacheVersion(t *testing.T, s service.Backend, agentID string) (ledgerSeq, terminalSeq int64) {
	t.Helper()
	err := s.(*Store).pool.QueryRow(context.Background(), `SELECT c.ledger_seq, a.terminal_seq
		FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id WHERE c.agent_id = $1`, agentID).Scan(&ledgerSeq, &terminalSeq)
	if err != nil {
		t.Fatalf("cache version of %s: %v", agentID, err)
	}
	return ledgerSeq, terminalSeq
}
