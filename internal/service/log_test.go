package service

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// newLogging returns use cases over a fresh SQLite file signing with an
// Ed25519 key, the key's public half, and a raw connection for tampering.
func newLogging(t *testing.T) (*UseCases, ed25519.PublicKey, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.db")
	st, err := sqlite.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("log test key"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	key, err := passport.NewEd25519Key(priv)
	if err != nil {
		t.Fatal(err)
	}
	if key, err = key.WithID("log-key-1"); err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	a := New(st, Config{Key: key, Platform: "test.example", Now: c.now, LogOrigin: "test.example/swarmscore"})
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return a, priv.Public().(ed25519.PublicKey), db
}

// independentRoot recomputes the log's root from the chain records
// alone, with transparency-dev/merkle's compact range: each record's
// leaf is its hash and its seq as 8 big-endian bytes, in log index order.
func independentRoot(t *testing.T, db *sql.DB, size int64) []byte {
	t.Helper()
	rows, err := db.Query(`SELECT hash, seq FROM ledger_records WHERE log_index < ? ORDER BY log_index`, size)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	cr := rf.NewEmptyRange(0)
	for rows.Next() {
		var h []byte
		var seq int64
		if err := rows.Scan(&h, &seq); err != nil {
			t.Fatal(err)
		}
		data := append(append([]byte(nil), h...), byte(seq>>56), byte(seq>>48), byte(seq>>40), byte(seq>>32), byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq))
		if err := cr.Append(rfc6962.DefaultHasher.HashLeaf(data), nil); err != nil {
			t.Fatal(err)
		}
	}
	root, err := cr.GetRootHash(nil)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestLog: every record is a leaf; a checkpoint note verifies with
// sumdb/note and its root is recomputed from the records alone; a second
// checkpoint past a full tile is consistent with the first
// (transparency-dev/merkle); an event's record is proved included; tiles
// are the leaf hashes and subtree roots; a rewritten leaf breaks
// consistency.
func TestLog(t *testing.T) {
	ctx := context.Background()
	a, pub, db := newLogging(t)
	ingest(t, a, conduit("agent-1", "a", 5, 4, t0))
	ingest(t, a, conduit("agent-2", "b", 3, 3, t0))
	first, created, err := a.Log.Checkpoint(ctx)
	if err != nil || !created || first.Size != 8 {
		t.Fatalf("first checkpoint: %+v %v %v", first, created, err)
	}
	v, err := tlog.Ed25519Verifier("test.example/swarmscore", pub)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(first.Note(), note.VerifierList(v))
	if err != nil || len(n.Sigs) != 1 {
		t.Fatalf("the note does not verify with sumdb/note: %v\n%s", err, first.Note())
	}
	if string(first.Root) != string(independentRoot(t, db, 8)) {
		t.Fatal("the note's root is not the records' root")
	}
	again, created, err := a.Log.Checkpoint(ctx)
	if err != nil || created || string(again.Signed) != string(first.Signed) {
		t.Fatalf("unchanged log: %v %v", created, err)
	}

	ingest(t, a, conduit("agent-3", "c", 300, 280, t0))
	second, created, err := a.Log.Checkpoint(ctx)
	if err != nil || !created || second.Size != 308 {
		t.Fatalf("second checkpoint: %+v %v", second.Size, err)
	}
	if string(second.Root) != string(independentRoot(t, db, 308)) {
		t.Fatal("the second note's root is not the records' root")
	}
	p, err := a.Log.ConsistencyProof(ctx, 8, 308)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 8, 308, p, first.Root, second.Root); err != nil {
		t.Fatalf("consistency: %v", err)
	}
	inc, err := a.Log.Inclusion(ctx, ledger.ConduitSession, "c-7")
	if err != nil || len(inc) != 1 {
		t.Fatalf("inclusion: %+v %v", inc, err)
	}
	r := inc[0]
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(r.Record.Index), r.Checkpoint.Size, tlog.LeafHash(r.Record.Leaf().Data()), r.Proof, r.Checkpoint.Root); err != nil {
		t.Fatalf("inclusion proof: %v", err)
	}
	if _, err := a.Log.Inclusion(ctx, ledger.ConduitSession, "nope"); errkind.Of(err) != errkind.NotFound {
		t.Fatalf("unknown event: %v", err)
	}

	tile, full, err := a.Log.Tile(ctx, "tile/0/000")
	if err != nil || !full || len(tile) != 256*32 {
		t.Fatalf("tile 0/000: %d %v %v", len(tile), full, err)
	}
	part, full, err := a.Log.Tile(ctx, "tile/0/001.p/52")
	if err != nil || full || len(part) != 52*32 {
		t.Fatalf("tile 0/001.p/52: %d %v", len(part), err)
	}
	up, _, err := a.Log.Tile(ctx, "tile/1/000.p/1")
	if err != nil {
		t.Fatal(err)
	}
	var hs [][]byte
	for i := 0; i < 256; i++ {
		hs = append(hs, tile[i*32:(i+1)*32])
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	cr, _ := rf.NewRange(0, 0, nil)
	for _, h := range hs {
		cr.Append(h, nil)
	}
	if sub, _ := cr.GetRootHash(nil); string(sub) != string(up) {
		t.Fatal("tile 1/000.p/1 is not the root of tile 0/000")
	}
	for _, bad := range []string{"tile/0/001.p/53", "tile/0/002", "tile/1/000"} {
		if _, _, err := a.Log.Tile(ctx, bad); errkind.Of(err) != errkind.NotFound {
			t.Fatalf("%s: %v", bad, err)
		}
	}

	// A leaf rewritten by someone with write access, with the subtree
	// hashes above it: the log no longer extends the first checkpoint.
	exec(t, db, `DROP TRIGGER log_leaves_no_update`)
	exec(t, db, `DROP TRIGGER log_subtrees_no_delete`)
	exec(t, db, `UPDATE log_leaves SET hash = zeroblob(32) WHERE idx = 3`)
	exec(t, db, `DELETE FROM log_subtrees`)
	ingest(t, a, conduit("agent-4", "d", 1, 1, t0))
	third, _, err := a.Log.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err = a.Log.ConsistencyProof(ctx, 8, int64(third.Size))
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 8, third.Size, p, first.Root, third.Root); err == nil {
		t.Fatal("a rewritten leaf still proves consistent")
	}
}

// TestAuditBundleLogInclusion: a bundle proves the agent's head record to
// be in the log; audit.Verify checks it offline with the key set, and
// refuses a false proof, another leaf, a note signed by another key, and
// no Ed25519 key.
func TestAuditBundleLogInclusion(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newLogging(t)
	ingest(t, a, conduit("agent-1", "a", 5, 4, t0))
	ingest(t, a, conduit("agent-2", "b", 3, 3, t0))
	ingest(t, a, conduit("agent-1", "c", 2, 2, t0))
	b, _, err := a.Audit.AuditBundle(ctx, "agent-1", AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Log == nil || b.Log.Seq != 7 || b.Log.Index != 9 {
		t.Fatalf("log inclusion: %+v", b.Log)
	}
	set, err := json.Marshal(a.Keys.PublicKeys(ctx))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := audit.NewKeys(nil, set)
	if err != nil {
		t.Fatal(err)
	}
	doc := b.AppendJSON(nil)
	r := audit.VerifyDocument(doc, keys)
	if !r.Valid || r.LogSize != 10 || r.LogIndex != 9 {
		t.Fatalf("verify: %+v %v", r, r.Discrepancy)
	}
	other := ed25519.NewKeyFromSeed(make([]byte, 32))
	otherKey, _ := passport.NewEd25519Key(other)
	otherKey, _ = otherKey.WithID("other-key")
	otherSet, _ := json.Marshal(passport.JWKSet{Keys: []passport.JWK{mustJWK(t, otherKey)}})
	otherKeys, _ := audit.NewKeys(nil, otherSet)
	signer, _ := tlog.Ed25519Signer("test.example/swarmscore", other.Public().(ed25519.PublicKey), otherKey.SignMessage)
	cp, _ := tlog.ParseCheckpoint(strings.SplitN(string(b.Log.Note), "\n\n", 2)[0] + "\n")
	forged, _ := tlog.Sign(cp, signer)
	for name, tc := range map[string]struct {
		edit func(l *audit.LogInclusion)
		keys audit.Keys
	}{
		"false proof":    {func(l *audit.LogInclusion) { l.Proof[0] = make([]byte, 32) }, keys},
		"another leaf":   {func(l *audit.LogInclusion) { l.Index-- }, keys},
		"another record": {func(l *audit.LogInclusion) { l.Seq-- }, keys},
		"another key":    {func(l *audit.LogInclusion) { l.Note = forged }, keys},
		"no Ed25519 key": {func(*audit.LogInclusion) {}, audit.Keys{}},
		"other keys":     {func(*audit.LogInclusion) {}, otherKeys},
	} {
		c, err := audit.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(c.Log)
		r := audit.VerifyDocument(c.AppendJSON(nil), tc.keys)
		if r.Valid || (r.Discrepancy.Code != audit.CodeLogInclusion && r.Discrepancy.Code != audit.CodeCheckpoint && r.Discrepancy.Code != audit.CodePassport) {
			t.Errorf("%s: %+v", name, r.Discrepancy)
		}
		if name != "no Ed25519 key" && name != "other keys" && r.Discrepancy.Code != audit.CodeLogInclusion {
			t.Errorf("%s: %+v", name, r.Discrepancy)
		}
	}
}

func mustJWK(t *testing.T, k passport.Key) passport.JWK {
	t.Helper()
	j, err := passport.PublicJWK(k, passport.StatusActive, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestLogOrigin: without a configured origin, the log keeps the origin of
// its latest note (a command run without --log-origin names the log as the
// server did), and DefaultLogOrigin before any note.
func TestLogOrigin(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newLogging(t)
	bare := New(a.store, Config{Key: a.cfg.Key, Now: a.cfg.Now})
	if o, err := bare.Log.Origin(ctx); err != nil || o != DefaultLogOrigin {
		t.Fatalf("before any note: %q %v", o, err)
	}
	ingest(t, a, conduit("agent-1", "a", 2, 2, t0))
	if _, _, err := a.Log.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	ingest(t, a, conduit("agent-1", "b", 1, 1, t0))
	c, created, err := bare.Log.Checkpoint(ctx)
	if err != nil || !created || c.Origin != "test.example/swarmscore" {
		t.Fatalf("unconfigured: %+v %v %v", c.Checkpoint, created, err)
	}
}
