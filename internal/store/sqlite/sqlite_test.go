package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
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
	if err := s.Migrate(t.Context()); err != nil {
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

func (h *harness) exec(t *testing.T, s service.Backend, query string, args ...any) {
	t.Helper()
	res, err := h.raw(t, s).ExecContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("tamper %q: %v", query, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tamper %q changed %d rows", query, n)
	}
}

func (h *harness) SetEndedAt(t *testing.T, s service.Backend, typ ledger.Type, id string, at time.Time) {
	q := "UPDATE conduit_sessions SET completed_at = ? WHERE id = ?"
	if typ == ledger.AP2Transaction {
		q = "UPDATE ap2_transactions SET settled_at = ? WHERE id = ?"
	}
	h.exec(t, s, q, at.UnixMicro(), id)
}

func (h *harness) DeleteEvent(t *testing.T, s service.Backend, typ ledger.Type, id string) {
	q := "DELETE FROM conduit_sessions WHERE id = ?"
	if typ == ledger.AP2Transaction {
		q = "DELETE FROM ap2_transactions WHERE id = ?"
	}
	h.exec(t, s, q, id)
}

// SetRecordContent makes chain record (agent, seq) rebuild to content. A
// record keeps only its event reference and status (migration 00003); the
// other hashed fields live in the event row, so the attacker edits them
// there, as nothing else would change what verification hashes.
func (h *harness) SetRecordContent(t *testing.T, s service.Backend, agentID string, seq int64, content []byte) {
	t.Helper()
	r, err := ledger.ParseCanonical(content)
	if err != nil {
		t.Fatalf("tamper: content %s: %v", content, err)
	}
	if r.Event.AgentID != agentID || r.Seq != seq {
		t.Fatalf("tamper: content %s names another record than %s/%d", content, agentID, seq)
	}
	// The append-only triggers stop honest mistakes, not an attacker.
	h.exec(t, s, "DROP TRIGGER IF EXISTS ledger_records_no_update; UPDATE ledger_records SET event_type = ?, event_id = ?, status = ? WHERE agent_id = ? AND seq = ?",
		string(r.Event.Type), r.Event.ID, string(r.Event.Status), agentID, seq)
	var ended any
	if !r.Event.EndedAt.IsZero() {
		ended = r.Event.EndedAt.UnixMicro()
	}
	var buyer any
	if r.Event.BuyerID != "" {
		buyer = r.Event.BuyerID
	}
	// Only fields the content changes are written: an ended_at the content
	// omits (a non-terminal record) is not the row's to lose.
	if r.Event.Type == ledger.AP2Transaction {
		h.exec(t, s, `UPDATE ap2_transactions SET buyer_id = ?, operator_id = ?, escrow_amount_cents = ?, started_at = ?,
		  settled_at = COALESCE(?, settled_at) WHERE id = ?`,
			buyer, r.Operator, r.Event.EscrowAmountCents, r.Event.StartedAt.UnixMicro(), ended, r.Event.ID)
	} else {
		h.exec(t, s, `UPDATE conduit_sessions SET buyer_id = ?, operator_id = ?, started_at = ?,
		  completed_at = COALESCE(?, completed_at) WHERE id = ?`,
			buyer, r.Operator, r.Event.StartedAt.UnixMicro(), ended, r.Event.ID)
	}
}

func (h *harness) SetCacheVersion(t *testing.T, s service.Backend, agentID string, ledgerSeq int64, validUntil time.Time) {
	h.exec(t, s, "UPDATE swarmscore_cache SET ledger_seq = ?, valid_until = ? WHERE agent_id = ?", ledgerSeq, validUntil.UnixMicro(), agentID)
}

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
		if err := s.Migrate(t.Context()); err != nil {
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

// TestVerifyTamperingLayout edits the SQLite layout directly, field by field
// (migration 00003 keeps each hashed field in exactly one place, the record
// or its event row), and checks that VerifyLedger reports the first broken
// link of each affected chain.
func TestVerifyTamperingLayout(t *testing.T) {
	base := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	start, end := base.Add(-48*time.Hour), base.Add(-24*time.Hour)
	cases := []struct {
		name   string
		tamper string
		want   map[string]int64 // agent -> first broken seq
	}{
		{"event row buyer", "UPDATE ap2_transactions SET buyer_id = 'buyer-2' WHERE id = 'b-t1'", map[string]int64{"b": 3}},
		{"event row escrow", "UPDATE ap2_transactions SET escrow_amount_cents = 1 WHERE id = 'b-t1'", map[string]int64{"b": 3}},
		{"event row started_at", "UPDATE conduit_sessions SET started_at = started_at - 1 WHERE id = 'b-c1'", map[string]int64{"b": 1}},
		{"event row absent buyer", "UPDATE conduit_sessions SET buyer_id = NULL WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row operator", "UPDATE conduit_sessions SET operator_id = 'op-z' WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row status", "UPDATE conduit_sessions SET status = 'VERIFIED' WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row completion removed", "PRAGMA ignore_check_constraints = ON; UPDATE conduit_sessions SET completed_at = NULL WHERE id = 'b-c2'", map[string]int64{"b": 4}},
		{"event row rolled back", "UPDATE conduit_sessions SET seq = 1, status = 'RUNNING', completed_at = NULL WHERE id = 'b-c1'", map[string]int64{"b": 2}},
		{"event row moved to another agent", "UPDATE conduit_sessions SET agent_id = 'a' WHERE id = 'b-c2'", map[string]int64{"a": 4, "b": 4}},
		{"event row deleted", "DELETE FROM conduit_sessions WHERE id = 'b-c1'", map[string]int64{"b": 1}},
		{"record status", "DROP TRIGGER ledger_records_no_update; UPDATE ledger_records SET status = 'PENDING' WHERE agent_id = 'b' AND seq = 1", map[string]int64{"b": 1}},
		{"record hash", "DROP TRIGGER ledger_records_no_update; UPDATE ledger_records SET hash = zeroblob(32) WHERE agent_id = 'b' AND seq = 2", map[string]int64{"b": 2}},
		{"record event", "DROP TRIGGER ledger_records_no_update; UPDATE ledger_records SET event_id = 'b-c2' WHERE agent_id = 'b' AND seq = 1", map[string]int64{"b": 1}},
		{"records reordered", `DROP TRIGGER ledger_records_no_update; UPDATE ledger_records SET seq = 100 WHERE agent_id = 'b' AND seq = 3;
		  UPDATE ledger_records SET seq = 3 WHERE agent_id = 'b' AND seq = 4; UPDATE ledger_records SET seq = 4 WHERE agent_id = 'b' AND seq = 100`, map[string]int64{"b": 3}},
		{"record deleted", "DROP TRIGGER ledger_records_no_delete; DELETE FROM ledger_records WHERE agent_id = 'b' AND seq = 2", map[string]int64{"b": 2}},
		{"last record deleted", "DROP TRIGGER ledger_records_no_delete; DELETE FROM ledger_records WHERE agent_id = 'b' AND seq = 4", map[string]int64{"b": 3}},
		{"every record deleted", "DROP TRIGGER ledger_records_no_delete; DELETE FROM ledger_records WHERE agent_id = 'b'", map[string]int64{"b": 0}},
		{"head moved", "UPDATE agents SET head_hash = zeroblob(32) WHERE id = 'b'", map[string]int64{"b": 4}},
		{"agent deleted", "DELETE FROM agents WHERE id = 'b'", map[string]int64{"b": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &harness{files: make(map[service.Backend]string)}
			s := h.open(t)
			for _, a := range []string{"a", "b", "c"} {
				out, err := s.Ingest(t.Context(), ledger.Batch{Operator: "op-a", Events: []ledger.Event{
					{Type: ledger.ConduitSession, ID: a + "-c1", AgentID: a, BuyerID: "buyer-1", Status: ledger.Running, StartedAt: start},
					{Type: ledger.ConduitSession, ID: a + "-c1", AgentID: a, BuyerID: "buyer-1", Status: ledger.Verified, StartedAt: start, EndedAt: end},
					{Type: ledger.AP2Transaction, ID: a + "-t1", AgentID: a, BuyerID: "buyer-1", Status: ledger.Settled, EscrowAmountCents: 100000, StartedAt: start, EndedAt: end},
					{Type: ledger.ConduitSession, ID: a + "-c2", AgentID: a, BuyerID: "buyer-1", Status: ledger.Failed, StartedAt: start, EndedAt: end},
				}})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range out {
					if o.Status != ledger.OutcomeAccepted {
						t.Fatalf("outcome %+v", o)
					}
				}
			}
			if r, err := s.VerifyLedger(t.Context()); err != nil || len(r.Broken) != 0 || r.Records != 12 || r.Events != 9 || r.Agents != 3 {
				t.Fatalf("before tampering: %+v %v", r, err)
			}
			if _, err := h.raw(t, s).Exec(tc.tamper); err != nil {
				t.Fatalf("tamper: %v", err)
			}
			r, err := s.VerifyLedger(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, b := range r.Broken {
				got[b.AgentID] = b.Seq
				if b.Reason == "" {
					t.Errorf("break %+v without a reason", b)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("broken %+v, want first breaks %v", r.Broken, tc.want)
			}
		})
	}
}
