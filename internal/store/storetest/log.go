package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// testLog: every chain record is appended to the transparency log in its
// transaction, numbered without gaps in commit order; leaves cannot be
// rewritten or deleted; checkpoint notes and cosignatures are kept; a
// ledger from before the log is backfilled chain by chain in order, a
// batch at a time, and ingest then goes on after it.
func testLog(t *testing.T, h Harness) {
	s := h.Open(t)
	c := ctx(t)
	end := base.Add(-time.Hour)
	var all []ledger.Event
	for i := range 9 {
		agent := []string{"agent-b", "agent-a", "agent-c"}[i%3]
		all = append(all, conduit(fmt.Sprintf("log-%d", i), agent, ledger.Verified, end.Add(-time.Minute), end))
	}
	for _, b := range [][]ledger.Event{all[:4], all[4:5], all[5:]} {
		if _, err := s.Ingest(c, ledger.Batch{Operator: "op-a", Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	size, err := s.LogSize(c)
	if err != nil || size != 9 {
		t.Fatalf("log size %d %v, want 9", size, err)
	}
	leaves, err := s.LogLeaves(c, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	// Each batch's records take the indexes after the batch before (a
	// batch orders its own records by agent).
	batchOf := func(i int) int {
		switch {
		case i < 4:
			return 0
		case i == 4:
			return 1
		}
		return 2
	}
	seen := map[int64]bool{}
	for i, e := range all {
		recs, err := s.LoggedRecords(c, ledger.ConduitSession, e.ID)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %+v %v", e.ID, recs, err)
		}
		r := recs[0]
		lo, hi := []int64{0, 4, 5}[batchOf(i)], []int64{4, 5, 9}[batchOf(i)]
		if r.Index < lo || r.Index >= hi || seen[r.Index] || leaves[r.Index] != r.Leaf() {
			t.Fatalf("%s: index %d (want %d to %d), leaf %+v, want %+v", e.ID, r.Index, lo, hi-1, leaves[r.Index], r.Leaf())
		}
		seen[r.Index] = true
	}
	if _, err := s.LogLeaves(c, 5, 10); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("leaves past the end: %v", err)
	}
	for _, q := range []string{`UPDATE log_leaves SET seq = 7 WHERE idx = 0`, `DELETE FROM log_leaves WHERE idx = 8`,
		`UPDATE ledger_records SET log_index = 40 WHERE event_id = 'log-0'`} {
		if h.Tamper.Guarded(t, s, q) == nil {
			t.Errorf("%s: allowed", q)
		}
	}

	// Subtrees, checkpoint notes, cosignatures.
	hash := func(b byte) []byte { return slices.Repeat([]byte{b}, 32) }
	if err := s.AddLogSubtrees(c, 1, 0, [][]byte{hash(1), hash(2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddLogSubtrees(c, 1, 1, [][]byte{hash(9), hash(3)}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.LogSubtreeCount(c, 1); err != nil || n != 3 {
		t.Fatalf("subtrees: %d %v", n, err)
	}
	if hs, err := s.LogSubtrees(c, 1, 0, 3); err != nil || string(hs[1]) != string(hash(2)) || string(hs[2]) != string(hash(3)) {
		t.Fatalf("subtrees kept: %x %v", hs, err)
	}
	if _, err := s.LogCheckpoint(c, -1); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("no checkpoint yet: %v", err)
	}
	for _, n := range []int64{4, 9} {
		cp := ledger.LogCheckpoint{Size: n, Note: []byte(fmt.Sprintf("o\n%d\nroot\n\n— o sig\n", n)), CreatedAt: base}
		cp.Root[0] = byte(n)
		if err := s.AddLogCheckpoint(c, cp); err != nil {
			t.Fatal(err)
		}
	}
	if cp, err := s.LogCheckpoint(c, -1); err != nil || cp.Size != 9 || cp.Root[0] != 9 || !cp.CreatedAt.Equal(base) || !strings.Contains(string(cp.Note), "\n9\n") {
		t.Fatalf("latest: %+v %v", cp, err)
	}
	if err := s.AddCosignature(c, 5, ledger.Cosignature{KeyName: "w", Line: "— w x", At: base}); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("cosignature of no checkpoint: %v", err)
	}
	for _, line := range []string{"— w1 first", "— w1 second"} {
		if err := s.AddCosignature(c, 9, ledger.Cosignature{KeyName: "w1", Line: line, At: base}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddCosignature(c, 9, ledger.Cosignature{KeyName: "w0", Line: "— w0 z", At: base}); err != nil {
		t.Fatal(err)
	}
	if cs, err := s.Cosignatures(c, 9); err != nil || len(cs) != 2 || cs[0].KeyName != "w0" || cs[1].Line != "— w1 second" {
		t.Fatalf("cosignatures: %+v %v", cs, err)
	}

	// A ledger from before the log: its records have no index and the log
	// is empty, as right after the migration.
	pre := h.Open(t)
	for _, b := range [][]ledger.Event{all[:4], all[4:5], all[5:]} {
		if _, err := pre.Ingest(c, ledger.Batch{Operator: "op-a", Events: b}); err != nil {
			t.Fatal(err)
		}
	}
	h.Tamper.Exec(t, pre, `UPDATE ledger_records SET log_index = NULL; DELETE FROM log_leaves; DELETE FROM log_subtrees`)
	_ = h.Tamper.Guarded(t, pre, `UPDATE log_state SET size = 0`) // PostgreSQL's counter; SQLite has none
	if n, err := pre.UnloggedRecords(c); err != nil || n != 9 {
		t.Fatalf("unlogged: %d %v", n, err)
	}
	if n, err := pre.BackfillLog(c, 2); err != nil || n != 2 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	var reports []service.BackfillReport
	rep, err := service.New(pre, service.Config{}).Log.Backfill(c, 3, func(r service.BackfillReport) { reports = append(reports, r) })
	if err != nil || rep.Appended != 7 || rep.Left != 0 || len(reports) != 3 || reports[0] != (service.BackfillReport{Appended: 3, Left: 4}) {
		t.Fatalf("backfill: %+v %+v %v", rep, reports, err)
	}
	if n, err := pre.BackfillLog(c, 2); err != nil || n != 0 {
		t.Fatalf("nothing left: %d %v", n, err)
	}
	// Chain order: agent-a's records, then agent-b's, then agent-c's.
	got, err := pre.LogLeaves(c, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"log-1", "log-4", "log-7", "log-0", "log-3", "log-6", "log-2", "log-5", "log-8"} {
		recs, err := pre.LoggedRecords(c, ledger.ConduitSession, id)
		if err != nil || recs[0].Index != int64(i) || got[i] != recs[0].Leaf() {
			t.Fatalf("backfilled %s: %+v %v, want index %d", id, recs, err, i)
		}
	}
	next := conduit("log-9", "agent-a", ledger.Verified, end.Add(-time.Minute), end)
	if _, err := pre.Ingest(c, ledger.Batch{Operator: "op-a", Events: []ledger.Event{next}}); err != nil {
		t.Fatal(err)
	}
	if r, err := pre.LoggedRecord(c, "agent-a", 4); err != nil || r.Index != 9 || r.EventID != "log-9" {
		t.Fatalf("after the backfill: %+v %v", r, err)
	}
}
