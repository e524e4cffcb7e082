package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// harness opens each store in a fresh file and tampers with it through a
// separate connection to the same file, as an attacker with file access.
type harness struct {
	mu    sync.Mutex
	files map[service.Backend]string
}

func (h *harness) open(t *testing.T) service.Backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	s, err := sqlite.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.files[s] = path
	h.mu.Unlock()
	return s
}

// raw opens a connection of its own to the file behind s, as a process
// editing the database behind the store's back would; it closes when the
// test ends.
func (h *harness) raw(t *testing.T, s service.Backend) *sql.DB {
	t.Helper()
	h.mu.Lock()
	path := h.files[s]
	h.mu.Unlock()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Exec implements storetest.Tamperer on a connection of its own, with the
// append-only triggers dropped and foreign keys and check constraints off.
func (h *harness) Exec(t *testing.T, s service.Backend, query string) {
	t.Helper()
	db := h.raw(t, s)
	db.SetMaxOpenConns(1)
	guards := "PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON; " +
		"DROP TRIGGER IF EXISTS ledger_records_no_update; DROP TRIGGER IF EXISTS ledger_records_no_delete; " +
		"DROP TRIGGER IF EXISTS operator_actions_no_update; DROP TRIGGER IF EXISTS operator_actions_no_delete; " +
		"DROP TRIGGER IF EXISTS log_leaves_no_update; DROP TRIGGER IF EXISTS log_leaves_no_delete; " +
		"DROP TRIGGER IF EXISTS log_subtrees_no_update; DROP TRIGGER IF EXISTS log_subtrees_no_delete; "
	if _, err := db.ExecContext(context.Background(), guards+query); err != nil {
		t.Fatalf("tamper %q: %v", query, err)
	}
}

// Guarded implements storetest.Tamperer.
func (h *harness) Guarded(t *testing.T, s service.Backend, query string) error {
	t.Helper()
	_, err := h.raw(t, s).ExecContext(context.Background(), query)
	return err
}

// Time implements storetest.Tamperer: times are unix microseconds.
func (h *harness) Time(at time.Time) string { return strconv.FormatInt(at.UnixMicro(), 10) }

// Bytes implements storetest.Tamperer.
func (h *harness) Bytes(b []byte) string { return "X'" + hex.EncodeToString(b) + "'" }

func (h *harness) CacheVersion(t *testing.T, s service.Backend, agentID string) (ledgerSeq, terminalSeq int64) {
	t.Helper()
	h.mu.Lock()
	path := h.files[s]
	h.mu.Unlock()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.QueryRowContext(context.Background(), `SELECT c.ledger_seq, a.terminal_seq
	  FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id WHERE c.agent_id = ?`, agentID).Scan(&ledgerSeq, &terminalSeq)
	if err != nil {
		t.Fatalf("cache version of %s: %v", agentID, err)
	}
	return ledgerSeq, terminalSeq
}

// Schema implements storetest.Tamperer: pragma_table_info of every table
// but SQLite's own.
func (h *harness) Schema(t *testing.T, s service.Backend) []ledger.SchemaColumn {
	t.Helper()
	rows, err := h.raw(t, s).QueryContext(context.Background(), `SELECT m.name, c.name, c.type
	  FROM sqlite_schema m JOIN pragma_table_info(m.name) c WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'
	  ORDER BY m.name, c.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ledger.SchemaColumn
	for rows.Next() {
		var c ledger.SchemaColumn
		if err := rows.Scan(&c.Table, &c.Column, &c.Type); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Dump implements storetest.Tamperer: every row of every table, blobs as
// text.
func (h *harness) Dump(t *testing.T, s service.Backend) string {
	t.Helper()
	db := h.raw(t, s)
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			b.WriteString(table + ":")
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, " %v", v)
			}
			b.WriteByte('\n')
		}
		rows.Close()
	}
	return b.String()
}

func TestConformance(t *testing.T) {
	h := &harness{files: make(map[service.Backend]string)}
	storetest.Run(t, storetest.Harness{Open: h.open, Tamper: h})
}

// TestTwoHandles opens the same file twice (two independent pools, as two
// processes would) and ingests overlapping streams through both at once:
// no event is lost or counted twice, the chains stay intact, and a write
// through one handle invalidates the cache the other reads.
func TestTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	open := func() service.Backend {
		s, err := sqlite.Open(t.Context(), "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	base := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	const n = 400
	events := make([]ledger.Event, n)
	for i := range events {
		st := ledger.Verified
		if i%4 == 0 {
			st = ledger.Failed
		}
		end := base.Add(-time.Duration(i) * time.Minute)
		events[i] = ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprintf("c%d", i), AgentID: fmt.Sprintf("agent-%d", i%5),
			Status: st, StartedAt: end.Add(-time.Minute), EndedAt: end}
	}
	var wg sync.WaitGroup
	accepted := make([]int, 2)
	for w, s := range []service.Backend{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < n; k += 25 {
				// Writer 0 goes forward, writer 1 backward: every event is sent twice.
				lo := k
				if w == 1 {
					lo = n - k - 25
				}
				out, err := s.Ingest(context.Background(), ledger.Batch{Operator: "op", Events: events[lo : lo+25]})
				if err != nil {
					t.Error(err)
					return
				}
				for _, o := range out {
					switch o.Status {
					case ledger.OutcomeAccepted:
						accepted[w]++
					case ledger.OutcomeRejected:
						t.Errorf("rejected: %v", o.Err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if accepted[0]+accepted[1] != n {
		t.Errorf("accepted %d+%d events, want %d in total", accepted[0], accepted[1], n)
	}
	for i := range 5 {
		agent := fmt.Sprintf("agent-%d", i)
		c, err := b.Counts(t.Context(), agent, base)
		if err != nil {
			t.Fatal(err)
		}
		if c.ConduitTotal != n/5 || c.ConduitSuccess != n/5-n/20 {
			t.Errorf("%s: counts %+v, want %d/%d", agent, c, n/5-n/20, n/5)
		}
	}
	if r, err := a.VerifyLedger(t.Context()); err != nil || len(r.Broken) != 0 || r.Records != n {
		t.Errorf("verify: %+v %v", r, err)
	}
	if _, err := a.RefreshScore(t.Context(), "agent-0", base, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.CachedScore(t.Context(), "agent-0", base); !ok {
		t.Error("the other handle does not see the cache entry")
	}
	if _, err := b.Ingest(t.Context(), ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "late", AgentID: "agent-0",
		Status: ledger.Verified, StartedAt: base.Add(-time.Hour), EndedAt: base.Add(-time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := a.CachedScore(t.Context(), "agent-0", base); ok {
		t.Error("a write through one handle did not invalidate the cache read through the other")
	}
}

// TestFileModes: a new database and the files SQLite keeps beside it are
// readable by their owner only, whatever the umask.
func TestFileModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "private.db")
	s, err := sqlite.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(t.Context(), ledger.Batch{Operator: "op", Events: []ledger.Event{{Type: ledger.ConduitSession, ID: "c1", AgentID: "a",
		Status: ledger.Running, StartedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(f), m)
		}
	}
}
