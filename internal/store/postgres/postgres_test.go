package postgres

import (
	"context"
	"encoding/hex"
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
	if _, err := s.Migrate(context.Background()); err != nil {
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

// tamperer edits the database directly, as an attacker with database access
// would: with triggers (and so foreign keys) off and check constraints
// dropped.
type tamperer struct{}

// Exec implements storetest.Tamperer.
func (tamperer) Exec(t *testing.T, s service.Backend, sql string) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), s.(*Store).pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `SET LOCAL session_replication_role = replica;
			DO $$ DECLARE c record; BEGIN
				FOR c IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
					WHERE contype = 'c' AND conrelid IN ('conduit_sessions'::regclass, 'ap2_transactions'::regclass, 'ledger_records'::regclass, 'agents'::regclass)
				LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname); END LOOP;
			END $$;
			`+sql)
		return err
	})
	if err != nil {
		t.Fatalf("tamper %q: %v", sql, err)
	}
}

// Guarded implements storetest.Tamperer.
func (tamperer) Guarded(t *testing.T, s service.Backend, sql string) error {
	t.Helper()
	_, err := s.(*Store).pool.Exec(context.Background(), sql)
	return err
}

// Time implements storetest.Tamperer.
func (tamperer) Time(at time.Time) string {
	return "'" + at.UTC().Format(time.RFC3339Nano) + "'::timestamptz"
}

// Bytes implements storetest.Tamperer.
func (tamperer) Bytes(b []byte) string { return `'\x` + hex.EncodeToString(b) + "'::bytea" }

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
		go func() { _, err := s.Migrate(ctx); errs <- err }()
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
	if _, err := stores[0].Migrate(ctx); err != nil {
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

// Dump implements storetest.Tamperer: every row of every table in the
// store's schema, as PostgreSQL renders a row as text.
func (tamperer) Dump(t *testing.T, s service.Backend) string {
	t.Helper()
	ctx := context.Background()
	pool := s.(*Store).pool
	// Tables that hold rows: partitions, not the partitioned tables they
	// make up (which would show each row twice).
	rows, err := pool.Query(ctx, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	    WHERE n.nspname = current_schema() AND c.relkind = 'r'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		rows, err := pool.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			b.WriteString(table + ": " + l + "\n")
		}
	}
	return b.String()
}

// Schema implements storetest.Tamperer: information_schema.columns of the
// store's schema.
func (tamperer) Schema(t *testing.T, s service.Backend) []ledger.SchemaColumn {
	t.Helper()
	// A partition's columns are its partitioned table's: partitions are
	// left out.
	rows, err := s.(*Store).pool.Query(context.Background(), `SELECT c.table_name, c.column_name, c.data_type
		FROM information_schema.columns c JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		JOIN pg_class k ON k.relname = c.table_name AND k.relnamespace = current_schema()::regnamespace
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND NOT k.relispartition ORDER BY c.table_name, c.ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.SchemaColumn, error) {
		var c ledger.SchemaColumn
		return c, r.Scan(&c.Table, &c.Column, &c.Type)
	})
	if err != nil {
		t.Fatal(err)
	}
	return cols
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

// TestRefusedConnectionsAreUnavailable: a database that stops accepting
// connections (ALTER DATABASE … ALLOW_CONNECTIONS false, SQLSTATE 55000) is
// an outage, not a bug, on every port; the store recovers by itself once
// connections are allowed again.
func TestRefusedConnectionsAreUnavailable(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	s, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	admin := pgtest.NewAdmin(t, dsn)
	admin.AllowConnections(false)
	admin.Terminate("swarmscore")
	at := time.Date(2026, 3, 17, 0, 0, 0, 0, time.UTC)
	for name, call := range map[string]func() error{
		"Ready":        func() error { return s.Ready(t.Context()) },
		"Counts":       func() error { _, err := s.Counts(t.Context(), "a", at); return err },
		"CacheStamp":   func() error { _, err := s.CacheStamp(t.Context(), "a"); return err },
		"VerifyLedger": func() error { _, err := s.VerifyLedger(t.Context()); return err },
		"Ingest": func() error {
			_, err := s.Ingest(t.Context(), ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "c1", AgentID: "a", Status: ledger.Running, StartedAt: at}}})
			return err
		},
	} {
		if err := call(); errkind.Of(err) != errkind.Unavailable {
			t.Errorf("%s while refused: %v (kind %v), want unavailable", name, err, errkind.Of(err))
		}
	}
	admin.AllowConnections(true)
	if err := s.Ready(t.Context()); err != nil {
		t.Errorf("Ready after connections are allowed again: %v", err)
	}
}

func TestUnavailableCodes(t *testing.T) {
	for code, want := range map[string]bool{
		"08006": true, "28P01": true, "28000": true, "53100": true, "53300": true, "57P01": true, "57P03": true,
		"3D000": true, "55000": true, "57014": true, "25006": true,
		"23505": false, "42P01": false, "22P02": false, "40001": false, "P0001": false,
	} {
		if got := unavailableCode(code); got != want {
			t.Errorf("unavailableCode(%s) = %v, want %v", code, got, want)
		}
	}
}

// TestErasureLocksEveryAgentTable: every table of the catalogue with a
// column naming agents is covered against writes racing an erasure,
// either by a foreign key to agents on each such column or by the
// erasure's table lock (erasureLocked). A table added without either
// could keep an erased id.
func TestErasureLocksEveryAgentTable(t *testing.T) {
	s := openTest(t)
	fk := map[[2]string]bool{}
	rows, err := s.pool.Query(t.Context(), `SELECT kcu.table_name, kcu.column_name
		FROM information_schema.table_constraints tc
		JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
		JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name AND ccu.table_schema = tc.table_schema
		WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema() AND ccu.table_name = 'agents'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		fk[[2]string{tbl, col}] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	locked := map[string]bool{"agents": true}
	for _, n := range erasureLocked {
		locked[n] = true
	}
	for _, tbl := range ledger.Catalogue() {
		if locked[tbl.Name] {
			continue
		}
		for _, c := range tbl.Columns {
			if c.Role.NamesAgent() && !fk[[2]string{tbl.Name, c.Name}] {
				t.Errorf("%s.%s names agents with no foreign key to agents, and the erasure does not lock %s", tbl.Name, c.Name, tbl.Name)
			}
		}
	}
}

// TestErasureWaitsForAWriterNamingTheAgent: a token for the agent written
// in a transaction that is still open when the erasure starts is renamed
// by it (the erasure waits for the writer), not left with the erased id.
func TestErasureWaitsForAWriterNamingTheAgent(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := ledger.Event{Type: ledger.ConduitSession, ID: "c1", AgentID: "victim", Status: ledger.Verified,
		StartedAt: at, EndedAt: at.Add(time.Hour)}
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: []ledger.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO operators (id) VALUES ('op') ON CONFLICT DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, operator_id, token_sha256, created_at, agent_id) VALUES ('tok-1', 'op', $1, $2, 'victim')`,
		make([]byte, 32), at); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Erase(ctx, ledger.ErasureRequest{AgentID: "victim", Pseudonym: "erased-0000000000000001",
			Identity: strings.Repeat("ab", 32), ID: "era-1", By: "op", At: at.Add(2 * time.Hour)})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the erasure did not wait for the open writer: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE agent_id = 'victim'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tokens still name the erased agent (%v)", n, err)
	}
}
