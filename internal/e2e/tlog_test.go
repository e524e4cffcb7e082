package e2e

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// TestTransparencyLog is issue 23's end-to-end test, on both back ends:
// ingest, a checkpoint note, more ingest, a correction, an erasure, a
// prune, a second note; the consistency proof between them (from the
// public tiles) verifies with transparency-dev/merkle and the notes with
// sumdb/note; after `key retire` the archived note still verifies from the
// key history; a rewritten record breaks consistency.
func TestTransparencyLog(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
			if backend == "postgres" {
				dsn = pgtest.NewDatabase(t)
			}
			testTransparencyLog(t, dsn)
		})
	}
}

func testTransparencyLog(t *testing.T, db string) {
	ctx := context.Background()
	dir := t.TempDir()
	const origin = "e2e.example/swarmscore"
	env := []string{"SWARMSCORE_LOG_ORIGIN=" + origin, "SWARMSCORE_MASTER_KEY=" + masterKey}
	s := startArgs(t, db, []string{"--signing-alg", "Ed25519"}, append(env, "SWARMSCORE_ADMIN_TOKEN="+adminToken)...)
	op := s.client(adminToken)
	pub := s.client("")
	cli := func(want int, args ...string) string {
		t.Helper()
		code, out, errs := run(t, env, "", append(args, "--db", db)...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, out, errs)
		}
		return out
	}
	save := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Ingest, with a history old enough to be pruned later.
	if _, err := op.IngestEvents(ctx, history("agent-a")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().UTC().Add(-200 * 24 * time.Hour).Truncate(time.Second)
	var olds []client.Event
	for i := range 6 {
		olds = append(olds, client.ConduitSession(fmt.Sprintf("old-%d", i), "agent-old", "VERIFIED", old, old.Add(time.Minute)))
	}
	if _, err := op.IngestEvents(ctx, olds); err != nil {
		t.Fatal(err)
	}
	note1 := cli(0, "ledger", "checkpoint")
	first, err := client.ParseCheckpoint([]byte(note1))
	if err != nil || first.Origin != origin || first.Size != 126 {
		t.Fatalf("first note: %+v %v\n%s", first, err, note1)
	}
	// The note is what the server publishes, as text; JSON on request.
	if b, ct := getAccept(t, s.url+"/swarmscore/checkpoints/latest", ""); string(b) != note1 || ct != "text/plain; charset=utf-8" {
		t.Fatalf("latest: %s %q", ct, b)
	}
	if b, ct := getAccept(t, s.url+"/swarmscore/log/checkpoint", ""); string(b) != note1 || ct != "text/plain; charset=utf-8" {
		t.Fatalf("log/checkpoint: %s %q", ct, b)
	}
	if b, ct := getAccept(t, s.url+"/swarmscore/checkpoints/latest", "application/json"); ct != "application/json" || !strings.HasPrefix(string(b), `{"agents":2,`) {
		t.Fatalf("latest as JSON: %s %q", ct, b)
	}
	file1 := save("note1", note1)

	// More ingest, a correction, an erasure, a prune.
	if _, err := op.IngestEvents(ctx, history("agent-b")); err != nil {
		t.Fatal(err)
	}
	cli(0, "correct", "conduit_session", "agent-a-c3", "--status", "FAILED", "--reason", "proof failed on review", "--operator", "admin")
	cli(0, "agent", "erase", "agent-b", "--reason", "GDPR request")
	if out := cli(0, "ledger", "prune", "--keep", "90d", "--json"); !strings.Contains(out, `"agents":1`) {
		t.Fatalf("prune: %s", out)
	}
	note2 := cli(0, "ledger", "checkpoint")
	second, err := client.ParseCheckpoint([]byte(note2))
	// 120 more reports, a correction's record, an erasure's, a summary's.
	if err != nil || second.Size != 126+120+3 {
		t.Fatalf("second note: %+v %v\n%s", second, err, note2)
	}
	file2 := save("note2", note2)

	// The notes verify with sumdb/note and the key history's key.
	keys, err := pub.KeyHistory(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("key history: %v %v", keys, err)
	}
	v, err := tlog.Ed25519Verifier(origin, keys[0].Public())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{note1, note2} {
		if _, err := note.Open([]byte(n), note.VerifierList(v)); err != nil {
			t.Fatalf("sumdb/note: %v\n%s", err, n)
		}
	}
	// The consistency proof, from the public tiles, with
	// transparency-dev/merkle.
	r := &tileHashes{c: pub, size: second.Size}
	p, err := tlog.ConsistencyProof(ctx, r, first.Size, second.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, first.Size, second.Size, p, first.Root, second.Root); err != nil {
		t.Fatalf("consistency: %v", err)
	}
	if err := pub.ProveConsistency(ctx, first, second); err != nil {
		t.Fatalf("client: %v", err)
	}
	if code, out, errs := run(t, env, "", "log", "verify-consistency", file1, file2, "--server", s.url); code != 0 || !strings.Contains(out, "consistent") {
		t.Fatalf("log verify-consistency --server: %d %s %s", code, out, errs)
	}
	cli(0, "log", "verify-consistency", file1, file2)
	cli(0, "ledger", "verify", "--checkpoint", file1)
	if out := cli(0, "log", "inclusion", "conduit_session", "agent-a-c3"); strings.Count(out, "included") != 2 {
		t.Fatalf("inclusion of a corrected event (its report and its correction): %s", out)
	}
	if resp := head(t, s.url+"/swarmscore/log/tile/0/000.p/249"); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("partial tile: %v", resp.Header)
	}

	// An audit bundle proves the agent's head record to be in the log,
	// offline, from the key history.
	bundle := cli(0, "audit", "export", "agent-a")
	bundleFile := save("agent-a.audit.json", bundle)
	if !strings.Contains(bundle, `"log_inclusion":{"checkpoint":"`+origin) {
		t.Fatalf("the bundle carries no log inclusion proof:\n%s", bundle[len(bundle)-600:])
	}
	if code, out, errs := run(t, env, "", "audit", "verify", bundleFile, "--keys", s.url+client.KeyHistoryPath); code != 0 || !strings.Contains(out, "of the transparency log of") {
		t.Fatalf("audit verify: %d %s %s", code, out, errs)
	}

	// The Go client: the audit route and VerifyBundle, offline.
	raw, err := op.Audit(ctx, "agent-a", client.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := os.ReadFile(save("history.json", string(mustGet(t, s.url+client.KeyHistoryPath))))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := client.VerifyBundle(raw, hist); err != nil || !rep.Valid || rep.LogSize != second.Size {
		t.Fatalf("VerifyBundle: %+v %v", rep, err)
	}

	// After the key is retired, the archived note verifies from the key
	// history.
	k2, k1 := rotate(t, env, db, "--signing-alg", "Ed25519")
	cli(0, "key", "retire", k1)
	within(t, 3*time.Second, "the server publishes the retired key", func() bool {
		ks, err := pub.KeyHistory(ctx)
		return err == nil && len(ks) == 2 && ks[0].Status() == passport.KeyRetired
	})
	ks, _ := pub.KeyHistory(ctx)
	if c, err := client.VerifyCheckpoint([]byte(note1), ks); err != nil || !c.Verified {
		t.Fatalf("archived note after key retire: %v", err)
	}
	if code, out, errs := run(t, env, "", "log", "verify-consistency", file1, file2, "--server", s.url); code != 0 {
		t.Fatalf("log verify-consistency after the key retired (%s): %d %s %s", k2, code, out, errs)
	}
	if code, out, errs := run(t, env, "", "audit", "verify", bundleFile, "--keys", s.url+client.KeyHistoryPath); code != 0 || !strings.Contains(out, "of the transparency log of") {
		t.Fatalf("audit verify after the key retired: %d %s %s", code, out, errs)
	}

	// A record rewritten, its leaf with it and the log's hashes above
	// recomputed: the log no longer extends the archived notes.
	tamper(t, db)
	if _, err := op.IngestEvents(ctx, history("agent-c")); err != nil {
		t.Fatal(err)
	}
	// A full tile is immutable.
	if resp := head(t, s.url+"/swarmscore/log/tile/0/000"); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("full tile: %v", resp.Header)
	}
	note3 := cli(0, "ledger", "checkpoint")
	file3 := save("note3", note3)
	third, _ := client.ParseCheckpoint([]byte(note3))
	if err := pub.ProveConsistency(ctx, first, third); err == nil {
		t.Fatal("a rewritten record proves consistent")
	}
	if code, out, errs := run(t, env, "", "log", "verify-consistency", file1, file3, "--server", s.url); code != 1 || !strings.Contains(errs, "NOT CONSISTENT") {
		t.Fatalf("log verify-consistency of a rewritten log: %d %s %s", code, out, errs)
	}
	cli(1, "ledger", "verify", "--checkpoint", file1)
}

// tileHashes reads the log's hashes from its public tiles alone, as a
// stranger would.
type tileHashes struct {
	c    *client.Client
	size uint64
}

func (r *tileHashes) Hashes(ctx context.Context, level int, from, to uint64) ([][]byte, error) {
	entries := r.size
	for range level {
		entries /= tlog.TileWidth
	}
	var out [][]byte
	for i := from; i < to; i++ {
		idx := i / tlog.TileWidth
		b, err := r.c.Tile(ctx, level, idx, int(min(entries-idx*tlog.TileWidth, tlog.TileWidth)))
		if err != nil {
			return nil, err
		}
		off := int(i%tlog.TileWidth) * tlog.HashSize
		out = append(out, b[off:off+tlog.HashSize])
	}
	return out, nil
}

func getAccept(t *testing.T, url, accept string) ([]byte, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return b, resp.Header.Get("Content-Type")
}

func head(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// tamper rewrites the first record's leaf and drops the subtree hashes
// above it (the log recomputes them), as someone with write access who
// rewrote that record would.
func tamper(t *testing.T, dsn string) {
	t.Helper()
	driver, source := "sqlite", strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(10000)"
	stmts := []string{`DROP TRIGGER log_leaves_no_update`, `DROP TRIGGER log_subtrees_no_delete`}
	if strings.HasPrefix(dsn, "postgres") {
		driver, source = "pgx", dsn
		stmts = []string{`ALTER TABLE log_leaves DISABLE TRIGGER USER`, `ALTER TABLE log_subtrees DISABLE TRIGGER USER`}
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := sha256.Sum256([]byte("rewritten"))
	for _, q := range append(stmts, `DELETE FROM log_subtrees`) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.Exec(`UPDATE log_leaves SET hash = $1 WHERE idx = 0`, h[:]); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, url string) []byte {
	t.Helper()
	b, _ := getAccept(t, url, "")
	return b
}
