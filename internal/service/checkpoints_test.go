package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

// newCheckpointing returns use cases over a fresh SQLite file with a
// checkpoint key, and a raw connection to that file for tampering.
func newCheckpointing(t testing.TB) (*UseCases, *testClock, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cp.db")
	st, err := sqlite.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	ck, err := NewCheckpointKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	a := New(st, Config{Key: key, Platform: "test.example", Now: c.now, CheckpointKey: ck})
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return a, c, db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// rewriteChain rewrites agent's whole chain as someone with write access
// to the database could: edit applies to its rows (the event rows and the
// chain records), then every record's hash is recomputed from the first
// (ledger.Link) and the head set to the last, so that the chain walks.
func rewriteChain(t *testing.T, a *UseCases, db *sql.DB, agent string, edit func(rows []ledger.ChainRow) []ledger.ChainRow) {
	t.Helper()
	rows, err := a.store.Chain(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	rows = edit(rows)
	exec(t, db, `DROP TRIGGER IF EXISTS ledger_records_no_update`)
	exec(t, db, `DROP TRIGGER IF EXISTS ledger_records_no_delete`)
	exec(t, db, `DELETE FROM ledger_records WHERE agent_id = ?`, agent)
	var prev ledger.Hash
	for _, r := range rows {
		rec := ledger.RebuildRecord(&r.Record, &r.Event)
		prev = ledger.Link(prev, rec.Canonical())
		exec(t, db, `INSERT INTO ledger_records (agent_id, seq, event_type, event_id, status, hash, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			agent, r.Record.Seq, string(r.Record.Type), r.Record.EventID, string(r.Record.Status), prev[:], r.Record.ReceivedAt.UnixMicro())
		table, end := "conduit_sessions", "completed_at"
		if r.Record.Type == ledger.AP2Transaction {
			table, end = "ap2_transactions", "settled_at"
		}
		exec(t, db, fmt.Sprintf(`UPDATE %s SET status = ?, %s = ?, seq = ? WHERE id = ?`, table, end),
			string(r.Event.Event.Status), r.Event.Event.EndedAt.UnixMicro(), r.Record.Seq, r.Record.EventID)
	}
	exec(t, db, `UPDATE agents SET head_seq = ?, head_hash = ? WHERE id = ?`, int64(len(rows)), prev[:], agent)
}

func TestMakeCheckpoint(t *testing.T) {
	ctx := context.Background()
	a, c, _ := newCheckpointing(t)
	ingest(t, a, conduit("agent-1", "c", 3, 2, t0))
	ingest(t, a, conduit("agent-2", "d", 2, 2, t0))
	nc, err := a.Audit.MakeCheckpoint(ctx, true)
	if err != nil || !nc.Created || nc.Checkpoint.Number != 1 || nc.Checkpoint.Agents != 2 || !nc.Checkpoint.Time.Equal(c.t) ||
		nc.Checkpoint.Environment != DefaultEnvironment || nc.Checkpoint.Issuer.Platform != "test.example" ||
		nc.Checkpoint.Issuer.KeyID != keyring.Fingerprint([]byte(testKey)) || nc.Checkpoint.Issuer.Alg != checkpoint.HS256 {
		t.Fatalf("first: %+v %v", nc, err)
	}
	parsed, err := checkpoint.Parse(nc.Document)
	if err != nil || parsed.Verify(a.cfg.CheckpointKey) != nil {
		t.Fatalf("the document does not parse or verify: %v\n%s", err, nc.Document)
	}
	heads, _ := a.store.Heads(ctx)
	if checkpoint.Extends(parsed, heads) != nil {
		t.Fatal("checkpoint 1 does not commit to the heads")
	}
	if doc, err := a.Audit.PublishedCheckpoint(ctx, 0); err != nil || string(doc) != string(nc.Document) {
		t.Fatalf("latest published: %s %v", doc, err)
	}

	// Unchanged heads: a schedule makes nothing, an explicit request does.
	c.t = c.t.Add(time.Hour)
	same, err := a.Audit.MakeCheckpoint(ctx, true)
	if err != nil || same.Created || same.Checkpoint.Number != 1 || string(same.Document) != string(nc.Document) {
		t.Fatalf("unchanged, only if changed: %+v %v", same, err)
	}
	forced, err := a.Audit.MakeCheckpoint(ctx, false)
	if err != nil || !forced.Created || forced.Checkpoint.Number != 2 || forced.Checkpoint.Root != nc.Checkpoint.Root {
		t.Fatalf("unchanged, forced: %+v %v", forced, err)
	}
	ingest(t, a, conduit("agent-3", "e", 1, 1, t0))
	third, err := a.Audit.MakeCheckpoint(ctx, true)
	if err != nil || !third.Created || third.Checkpoint.Number != 3 || third.Checkpoint.Agents != 3 {
		t.Fatalf("changed: %+v %v", third, err)
	}
	if doc, err := a.Audit.PublishedCheckpoint(ctx, 1); err != nil || string(doc) != string(nc.Document) {
		t.Fatalf("number 1: %v", err)
	}
	if _, err := a.Audit.PublishedCheckpoint(ctx, 9); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("number 9: %v", err)
	} else if d, _ := errkind.PublicDetail(err); d != "no checkpoint 9" {
		t.Fatalf("number 9 detail %q", d)
	}
	if _, err := a.Audit.PublishedCheckpoint(ctx, -1); errkind.Of(err) != errkind.Invalid {
		t.Fatalf("number -1: %v", err)
	}
	nokey := New(a.store, Config{})
	if _, err := nokey.Audit.MakeCheckpoint(ctx, false); errkind.Of(err) != errkind.Invalid {
		t.Fatalf("no key: %v", err)
	}
}

// TestVerifyCheckpoint: an archived checkpoint against the ledger as it
// grows (still extended), then after a consistent whole-chain rewrite, a
// truncation and a dropped agent, each named; a forged signature, another
// key, and a checkpoint this ledger never stored.
func TestVerifyCheckpoint(t *testing.T) {
	ctx := context.Background()
	a, _, db := newCheckpointing(t)
	ingest(t, a, conduit("agent-1", "c", 4, 2, t0))
	ingest(t, a, conduit("agent-2", "d", 3, 3, t0))
	ingest(t, a, conduit("agent-3", "e", 2, 2, t0))
	ingest(t, a, conduit("agent-4", "f", 2, 1, t0))
	archived, err := a.Audit.MakeCheckpoint(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string) CheckpointCheck {
		t.Helper()
		r, err := a.Audit.VerifyCheckpoint(ctx, archived.Document)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if r := check("fresh"); !r.Intact() || r.Ledger.Agents != 4 {
		t.Fatalf("fresh: %+v", r)
	}
	// Appends and a correction extend the checkpoint.
	ingest(t, a, conduit("agent-1", "g", 2, 2, t0))
	ingest(t, a, conduit("agent-5", "h", 1, 1, t0))
	if _, _, err := a.Corrections.Correct(ctx, statusCorrection(ledger.ConduitSession, "d-0", ledger.Failed, "ops", "the buyer's proof was forged")); err != nil {
		t.Fatal(err)
	}
	if r := check("grown"); !r.Intact() {
		t.Fatalf("grown: %+v", r)
	}

	// A whole-chain rewrite that walks: agent-1's FAILED sessions become
	// VERIFIED, every hash recomputed, the head moved.
	rewriteChain(t, a, db, "agent-1", func(rows []ledger.ChainRow) []ledger.ChainRow {
		for i := range rows {
			if rows[i].Record.Status == ledger.Failed {
				rows[i].Record.Status, rows[i].Event.Event.Status = ledger.Verified, ledger.Verified
			}
		}
		return rows
	})
	// Truncation: agent-3 loses its last record, consistently.
	rewriteChain(t, a, db, "agent-3", func(rows []ledger.ChainRow) []ledger.ChainRow {
		exec(t, db, `DELETE FROM conduit_sessions WHERE id = ?`, rows[len(rows)-1].Record.EventID)
		return rows[:len(rows)-1]
	})
	// A dropped agent: every trace of agent-4 deleted.
	exec(t, db, `DELETE FROM ledger_records WHERE agent_id = 'agent-4'`)
	exec(t, db, `DELETE FROM conduit_sessions WHERE agent_id = 'agent-4'`)
	exec(t, db, `DELETE FROM swarmscore_cache WHERE agent_id = 'agent-4'`)
	exec(t, db, `DELETE FROM passports WHERE agent_id = 'agent-4'`)
	exec(t, db, `DELETE FROM agents WHERE id = 'agent-4'`)

	plain, err := a.Signals.VerifyLedger(ctx)
	if err != nil || len(plain.Broken) != 0 {
		t.Fatalf("the tampering is not consistent enough to pass the walk: %+v %v", plain.Broken, err)
	}
	r := check("tampered")
	if r.Intact() || r.Extends() || len(r.Problems) != 0 {
		t.Fatalf("tampered: %+v", r)
	}
	var got []string
	for _, ch := range r.Changes {
		got = append(got, ch.AgentID+" "+string(ch.Kind))
	}
	if strings.Join(got, ", ") != "agent-1 rewritten, agent-3 truncated, agent-4 dropped" {
		t.Fatalf("changes: %v", got)
	}

	// Signatures: a flipped byte of the root, and another deployment's key.
	root := archived.Checkpoint.Root.String()
	flipped := "0" + root[1:]
	if root[0] == '0' {
		flipped = "1" + root[1:]
	}
	forged := strings.Replace(string(archived.Document), root, flipped, 1)
	if _, err := a.Audit.VerifyCheckpoint(ctx, []byte(forged)); !errors.Is(err, checkpoint.ErrSignature) {
		t.Fatalf("forged root: %v", err)
	}
	otherKey, _ := NewCheckpointKey([]byte("another-key-of-32-bytes-or-more-0000"))
	other := New(a.store, Config{Now: a.cfg.Now, CheckpointKey: otherKey})
	if _, err := other.Audit.VerifyCheckpoint(ctx, archived.Document); !errors.Is(err, checkpoint.ErrSignature) {
		t.Fatalf("another key: %v", err)
	}
	if _, err := a.Audit.VerifyCheckpoint(ctx, []byte(`{"checkpoint":1}`)); errkind.Of(err) != errkind.Invalid || errors.Is(err, checkpoint.ErrSignature) {
		t.Fatalf("not a checkpoint: %v", err)
	}
}

// TestVerifyCheckpointNotStored: a checkpoint this ledger does not hold
// (lost, or signed elsewhere with the key) extends only while no head
// moved; stored leaves altered are reported, never trusted.
func TestVerifyCheckpointNotStored(t *testing.T) {
	ctx := context.Background()
	a, c, db := newCheckpointing(t)
	ingest(t, a, conduit("agent-1", "c", 2, 2, t0))
	heads, _ := a.store.Heads(ctx)
	tree, _ := checkpoint.NewTree(heads)
	cp := checkpoint.Checkpoint{Number: 7, Time: c.t, Agents: tree.Size(), Root: tree.Root(), Environment: "production",
		Issuer: checkpoint.Issuer{Platform: "test.example"}}
	if err := cp.Sign(a.cfg.CheckpointKey); err != nil {
		t.Fatal(err)
	}
	doc, _ := cp.MarshalJSON()
	if r, err := a.Audit.VerifyCheckpoint(ctx, doc); err != nil || !r.Intact() {
		t.Fatalf("unchanged ledger, checkpoint not stored: %+v %v", r, err)
	}
	ingest(t, a, conduit("agent-1", "d", 1, 1, t0))
	if r, err := a.Audit.VerifyCheckpoint(ctx, doc); err != nil || r.Extends() || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "holds no checkpoint 7") {
		t.Fatalf("moved ledger, checkpoint not stored: %+v %v", r, err)
	}

	stored, err := a.Audit.MakeCheckpoint(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, db, `UPDATE checkpoint_leaves SET seq = seq - 1`)
	r, err := a.Audit.VerifyCheckpoint(ctx, stored.Document)
	if err != nil || r.Extends() || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "stored leaves of checkpoint 1") {
		t.Fatalf("altered stored leaves: %+v %v", r, err)
	}
}

// TestCutAt covers the cases the store-backed tests reach only by chance:
// an agent registered without records, and a chain that reaches its
// checkpointed seq without a record there.
func TestCutAt(t *testing.T) {
	h := func(b byte) ledger.Hash { return ledger.Hash{b} }
	archived := []checkpoint.Leaf{{AgentID: "a", Seq: 2, Hash: h(1)}, {AgentID: "b"}, {AgentID: "c", Seq: 3, Hash: h(3)},
		{AgentID: "d", Seq: 5, Hash: h(5)}, {AgentID: "e", Seq: 1, Hash: h(6)}}
	heads := []checkpoint.Leaf{{AgentID: "a", Seq: 4, Hash: h(9)}, {AgentID: "b", Seq: 1, Hash: h(8)}, {AgentID: "c", Seq: 2, Hash: h(2)},
		{AgentID: "d", Seq: 7, Hash: h(7)}, {AgentID: "z", Seq: 1}}
	at := []checkpoint.Leaf{{AgentID: "a", Seq: 2, Hash: h(1)}}
	got, pruned := cutAt(archived, heads, at, nil)
	want := []checkpoint.Leaf{{AgentID: "a", Seq: 2, Hash: h(1)}, {AgentID: "b"}, {AgentID: "c", Seq: 2, Hash: h(2)}, {AgentID: "d", Seq: 5}}
	if fmt.Sprint(got) != fmt.Sprint(want) || pruned != 0 {
		t.Fatalf("cut\n%v\nwant\n%v", got, want)
	}
	// Pruned chains: a at its anchor, d before it.
	anchors := map[string]ledger.Anchor{"a": {Seq: 2, Hash: h(4)}, "d": {Seq: 6, Hash: h(6)}}
	got, pruned = cutAt(archived, heads, nil, anchors)
	want = []checkpoint.Leaf{{AgentID: "a", Seq: 2, Hash: h(4)}, {AgentID: "b"}, {AgentID: "c", Seq: 2, Hash: h(2)}, {AgentID: "d", Seq: 5, Hash: h(5)}}
	if fmt.Sprint(got) != fmt.Sprint(want) || pruned != 1 {
		t.Fatalf("cut with anchors (%d pruned)\n%v\nwant\n%v", pruned, got, want)
	}
}
