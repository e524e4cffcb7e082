package e2e

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/passport"
)

// masterKey seals the keyring of the PostgreSQL tests.
const masterKey = "3b9f0c2e8d417a56c1e09f3b7d2a4c6e8f0a1b3c5d7e9f2a4b6c8d0e1f3a5b7c"

// issuer returns a passport's issuer.kid and issuer.alg.
func issuer(t *testing.T, doc []byte) (kid, alg string) {
	t.Helper()
	p, err := passport.Parse(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return p.Issuer.KID, p.Issuer.Alg
}

// within polls ok until it holds, for at most d (a server sees another
// process's rotation within a second).
func within(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
	}
}

// rotate runs `swarmscore key rotate --json` and returns the new and the
// previous key ids.
func rotate(t *testing.T, env []string, db string, args ...string) (kid, previous string) {
	t.Helper()
	code, out, errs := run(t, env, "", append([]string{"key", "rotate", "--db", db, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("key rotate: exit %d\n%s", code, errs)
	}
	var r struct{ KID, Previous string }
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.KID == "" || r.Previous == "" {
		t.Fatalf("key rotate said %q: %v", out, err)
	}
	return r.KID, r.Previous
}

func verifyCodes(v *client.Verification) []string {
	var out []string
	for _, e := range v.Errors {
		out = append(out, e.Code)
	}
	return out
}

// rotationScenario runs issue 13's proof on running servers: a rotation
// while they serve gives the next certificate a new kid on each; the old
// passport stays valid until its key is retired, then fails with
// key_retired and no tampering flag, on each.
func rotationScenario(t *testing.T, env []string, db string, servers ...*server) {
	ctx := context.Background()
	op := servers[0].client(adminToken)
	if res, err := op.IngestEvents(ctx, history("agent-rot")); err != nil || res.Accepted != 120 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	old, err := servers[0].client("").Certificate(ctx, "agent-rot")
	if err != nil {
		t.Fatal(err)
	}
	k1, alg := issuer(t, old.Raw)
	if !strings.HasPrefix(k1, "hs256-") || alg != "HS256" {
		t.Fatalf("first passport signed by %s (%s)", k1, alg)
	}
	k2, previous := rotate(t, env, db)
	if previous != k1 {
		t.Fatalf("rotated from %s, not %s", previous, k1)
	}
	for i, s := range servers {
		c := s.client("")
		within(t, 3*time.Second, fmt.Sprintf("server %d serves the new key's passport", i), func() bool {
			cert, err := c.Certificate(ctx, "agent-rot")
			if err != nil {
				t.Fatal(err)
			}
			kid, _ := issuer(t, cert.Raw)
			return kid == k2
		})
		v, err := c.Verify(ctx, old.Raw, "agent-rot")
		if err != nil || !v.Valid {
			t.Fatalf("server %d: the old passport under a verify-only key: %+v %v", i, v, err)
		}
	}
	if code, _, errs := run(t, env, "", "key", "retire", k1, "--db", db); code != 0 {
		t.Fatalf("key retire: %d %s", code, errs)
	}
	for i, s := range servers {
		c := s.client("")
		var v *client.Verification
		within(t, 3*time.Second, fmt.Sprintf("server %d refuses the retired key", i), func() bool {
			if v, err = c.Verify(ctx, old.Raw, "agent-rot"); err != nil {
				t.Fatal(err)
			}
			return !v.Valid
		})
		if v.DetectedTampering || v.SignatureValid || strings.Join(verifyCodes(v), ",") != passport.CodeKeyRetired || v.Checks.Result(client.CheckSignature) != client.CheckFailed {
			t.Fatalf("server %d: the retired key's passport: %+v", i, v)
		}
	}
}

// TestKeyRotationWhileServing: SQLite, keys generated at the first start
// and rotated by `swarmscore key rotate` while `serve` runs.
func TestKeyRotationWhileServing(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, db, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	rotationScenario(t, nil, db, s)
	if !s.logged(`"msg":"signing with a new key"`) {
		t.Fatalf("no log of the new key:\n%s", s.logs)
	}
}

// TestKeyRotationTwoServersPostgres: the same on two `serve` processes
// sharing one PostgreSQL database, the keyring sealed under
// SWARMSCORE_MASTER_KEY.
func TestKeyRotationTwoServersPostgres(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_MASTER_KEY=" + masterKey}
	a := start(t, dsn, env...)
	b := start(t, dsn, env...)
	rotationScenario(t, env, dsn, a, b)
	// A master key that does not open the keyring is refused at start.
	code, _, errs := run(t, []string{"SWARMSCORE_MASTER_KEY=" + strings.Repeat("9e", 16) + masterKey[32:]}, "", "serve", "--db", dsn, "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, "cannot be unsealed") || strings.Contains(errs, masterKey[32:]) {
		t.Fatalf("a wrong master key: %d %s", code, errs)
	}
}

// TestReissueResumes: an eager re-issue killed in the middle (kill -9 while
// a passport's row is locked) loses nothing, and `key reissue` finishes
// it, doing nothing twice.
func TestReissueResumes(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_MASTER_KEY=" + masterKey}
	s := start(t, dsn, env...)
	var agents []string
	for i := range 20 {
		agents = append(agents, fmt.Sprintf("agent-r%02d", i))
	}
	for _, a := range agents {
		if _, err := s.client(adminToken).IngestEvents(ctx, history(a)[:5]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.client("").Certificate(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	s.stop() // no server re-issues on request here: only the command does

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	kids := func() map[string]string {
		rows, _ := conn.Query(ctx, `SELECT agent_id, coalesce(passport_kid, '') FROM swarmscore_cache`)
		m := map[string]string{}
		var a, k string
		if _, err := pgx.ForEachRow(rows, []any{&a, &k}, func() error { m[a] = k; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	old := kids()["agent-r00"]
	lock, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM swarmscore_cache WHERE agent_id = 'agent-r10' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "key", "rotate", "--db", dsn, "--batch-size", "3")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			progress <- sc.Text()
		}
		close(progress)
	}()
	deadline := time.After(30 * time.Second)
	for waiting := true; waiting; {
		select {
		case line, ok := <-progress:
			if !ok {
				t.Fatal("key rotate ended before the locked passport")
			}
			waiting = !strings.Contains(line, "through agent agent-r08")
		case <-deadline:
			t.Fatal("no progress from key rotate")
		}
	}
	// agent-r09 is re-issued next; agent-r10 waits for the lock.
	within(t, 10*time.Second, "agent-r09 re-issued", func() bool { return kids()["agent-r09"] != old })
	cmd.Process.Kill()
	cmd.Wait()
	tx.Rollback(ctx)

	m := kids()
	active := m["agent-r00"]
	for i, a := range agents {
		if done := m[a] == active; done != (i < 10) || m[a] != active && m[a] != old {
			t.Fatalf("after the kill: %v", m)
		}
	}
	code, out, errs := run(t, env, "", "key", "reissue", "--db", dsn, "--batch-size", "3", "--json")
	if code != 0 || strings.TrimSpace(out) != fmt.Sprintf(`{"kid":%q,"reissued":10}`, active) {
		t.Fatalf("key reissue: %d %s %s", code, out, errs)
	}
	for a, k := range kids() {
		if k != active {
			t.Fatalf("%s still signed by %s", a, k)
		}
	}
	if code, out, _ := run(t, env, "", "key", "reissue", "--db", dsn, "--json"); code != 0 || !strings.Contains(out, `"reissued":0`) {
		t.Fatalf("a second reissue: %d %s", code, out)
	}
}

// forge re-signs a passport with HMAC-SHA256 under secret after setting
// its issuer's kid and alg (as an attacker with the document and a public
// key would), computing the canonical message independently.
func forge(t *testing.T, doc []byte, kid, alg string, secret []byte) []byte {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(string(doc)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	iss := m["issuer"].(map[string]any)
	iss["kid"], iss["alg"] = kid, alg
	delete(iss, "signature")
	b, _ := json.Marshal(m)
	msg, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, secret)
	h.Write(msg)
	iss["signature"] = hex.EncodeToString(h.Sum(nil))
	out, _ := json.Marshal(m)
	return out
}

// TestEd25519Passports: a server started with --signing-alg Ed25519 signs
// passports anyone verifies offline from its JWK set, with no secret (the
// Go client, and `passport verify --keys`); a forged kid, a wrong alg and
// key confusion are refused, by the server and offline.
func TestEd25519Passports(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	s := startArgs(t, db, []string{"--signing-alg", "Ed25519"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-ed")); err != nil {
		t.Fatal(err)
	}
	pub := s.client("")
	cert, err := pub.Certificate(ctx, "agent-ed")
	if err != nil {
		t.Fatal(err)
	}
	kid, alg := issuer(t, cert.Raw)
	if alg != "EdDSA" || !strings.HasPrefix(kid, "eddsa-") {
		t.Fatalf("signed by %s (%s)", kid, alg)
	}
	keys, err := pub.Keys(ctx)
	if err != nil || len(keys) != 1 || keys[0].ID() != kid {
		t.Fatalf("the published keys: %v %v", keys, err)
	}
	if v, err := pub.VerifyOffline(ctx, cert.Raw, time.Time{}); err != nil || !v.Valid {
		t.Fatalf("offline: %+v %v", v, err)
	}
	file := filepath.Join(dir, "cert.json")
	os.WriteFile(file, cert.Raw, 0o600)
	if code, out, errs := run(t, nil, "", "passport", "verify", file, "--keys", s.url); code != 0 || !strings.Contains(out, `"valid":true`) {
		t.Fatalf("passport verify --keys with no secret: %d %s %s", code, out, errs)
	}

	var set struct {
		Keys []struct{ X string } `json:"keys"`
	}
	code, out, _ := run(t, nil, "", "passport", "verify", file, "--keys", s.url+"/.well-known/swarmscore-keys.json")
	if code != 0 {
		t.Fatalf("by the key set's URL: %d %s", code, out)
	}
	resp, err := pubGet(s.url + "/.well-known/swarmscore-keys.json")
	if err != nil || json.Unmarshal(resp, &set) != nil || len(set.Keys) != 1 {
		t.Fatalf("the key set: %s %v", resp, err)
	}
	swap := func(old, new string) []byte { return []byte(strings.Replace(string(cert.Raw), old, new, 1)) }
	for _, c := range []struct {
		name, code string
		doc        []byte
		tampering  bool
	}{
		{"forged kid", passport.CodeUnknownKey, swap(`"kid":"`+kid+`"`, `"kid":"eddsa-ffffffffffffffff"`), false},
		{"alg switched to HMAC", passport.CodeKeyConfusion, swap(`"alg":"EdDSA"`, `"alg":"HS256"`), true},
		{"unknown alg", passport.CodeUnsupportedAlg, swap(`"alg":"EdDSA"`, `"alg":"none"`), false},
		{"public key as HMAC secret", passport.CodeKeyConfusion, forge(t, cert.Raw, kid, "HS256", []byte(set.Keys[0].X)), true},
	} {
		v, err := pub.Verify(ctx, c.doc, "agent-ed")
		if err != nil || v.Valid || v.DetectedTampering != c.tampering || strings.Join(verifyCodes(v), ",") != c.code {
			t.Errorf("%s, by the server: %+v %v", c.name, v, err)
		}
		off, err := pub.VerifyOffline(ctx, c.doc, time.Time{})
		if err != nil || off.Valid || off.DetectedTampering != c.tampering || len(off.Errors) != 1 || off.Errors[0].Code != c.code {
			t.Errorf("%s, offline: %+v %v", c.name, off, err)
		}
	}
}

func pubGet(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		return nil, fmt.Errorf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return io.ReadAll(resp.Body)
}

// TestStaticKeyRestart: a server restarted with a new static key (the old
// one among SWARMSCORE_VERIFY_KEYS) re-issues on the next request, and
// still accepts the old passport; an alg that does not match the key is
// refused as tampering.
func TestStaticKeyRestart(t *testing.T) {
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	newKey := "5c1e9a0f3b7d2e4c6a8f0b1d3e5c7a9f2b4d6e8a0c1f3b5d7e9a2c4f6b8d0e1a"
	s := start(t, db, "SWARMSCORE_ADMIN_TOKEN="+adminToken, "SWARMSCORE_SIGNING_KEY="+signingKey)
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-st")); err != nil {
		t.Fatal(err)
	}
	old, err := s.client("").Certificate(ctx, "agent-st")
	if err != nil {
		t.Fatal(err)
	}
	s.stop()
	s = start(t, db, "SWARMSCORE_ADMIN_TOKEN="+adminToken, "SWARMSCORE_SIGNING_KEY="+newKey, "SWARMSCORE_VERIFY_KEYS="+signingKey)
	c := s.client("")
	cert, err := c.Certificate(ctx, "agent-st")
	if err != nil {
		t.Fatal(err)
	}
	if k1, _ := issuer(t, old.Raw); func() bool { k2, _ := issuer(t, cert.Raw); return k2 == k1 }() {
		t.Fatalf("the old key's passport is still served after the restart:\n%s", cert.Raw)
	}
	if v, err := c.Verify(ctx, old.Raw, "agent-st"); err != nil || !v.Valid {
		t.Fatalf("the old passport under SWARMSCORE_VERIFY_KEYS: %+v %v", v, err)
	}
	wrongAlg := []byte(strings.Replace(string(cert.Raw), `"alg":"HS256"`, `"alg":"EdDSA"`, 1))
	if v, err := c.Verify(ctx, wrongAlg, "agent-st"); err != nil || v.Valid || !v.DetectedTampering || strings.Join(verifyCodes(v), ",") != passport.CodeAlgMismatch {
		t.Fatalf("a wrong alg: %+v %v", v, err)
	}
}

// TestKeyStartupErrors: a key with almost no entropy, and a keyring of
// another environment, stop the server at start with one clear line.
func TestKeyStartupErrors(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	code, _, errs := run(t, []string{"SWARMSCORE_SIGNING_KEY=" + strings.Repeat("x", 32)}, "", "serve", "--db", db, "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, "almost no entropy") || strings.Contains(errs, strings.Repeat("x", 32)) {
		t.Fatalf("a weak key: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "swarmscore.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused configuration left a database behind: %v", err)
	}
	s := startArgs(t, db, []string{"--environment", "staging"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	if !s.logged(`"msg":"signing keys"`, `"environment":"staging"`) {
		t.Fatalf("the key's environment is not logged:\n%s", s.logs)
	}
	// The environment names itself in the passport's platform.
	ctx := context.Background()
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-stg")); err != nil {
		t.Fatal(err)
	}
	cert, err := s.client("").Certificate(ctx, "agent-stg")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := passport.Parse(cert.Raw); err != nil || p.Issuer.Platform != "swarmscore-staging" {
		t.Fatalf("platform: %+v %v", p, err)
	}
	s.stop()
	code, _, errs = run(t, nil, "", "serve", "--db", db, "--addr", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errs, `registered to environment "staging", not "production"`) || strings.Count(errs, "\n") != 1 {
		t.Fatalf("production on staging's keys: %d %s", code, errs)
	}
}
