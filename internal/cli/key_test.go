package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

func listKeys(t *testing.T, env map[string]string, db string) []keyJSON {
	t.Helper()
	code, out, errs := runCLI(t, env, "key", "list", "--json", "--db", db)
	if code != ExitOK {
		t.Fatalf("key list: %d %s", code, errs)
	}
	var keys []keyJSON
	if err := json.Unmarshal([]byte(out), &keys); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return keys
}

func TestKeyCommands(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.db")
	db := "sqlite:" + path
	if code, _, errs := runCLI(t, nil, "key", "list", "--db", db); code != ExitNotFound || !strings.Contains(errs, "does not exist") {
		t.Fatalf("key list on a missing database: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, nil, "migrate", "--db", db); code != ExitOK {
		t.Fatal(errs)
	}
	if keys := listKeys(t, nil, db); len(keys) != 0 {
		t.Fatalf("a new database has keys: %+v", keys)
	}

	// The first rotation of an empty keyring gives it a key, then a new one.
	code, out, errs := runCLI(t, nil, "key", "rotate", "--db", db, "--json")
	if code != ExitOK {
		t.Fatalf("rotate: %d %s", code, errs)
	}
	var rot struct {
		KID, Alg, Environment, Previous string
		Reissued                        int
	}
	if err := json.Unmarshal([]byte(out), &rot); err != nil || rot.Alg != "HS256" || rot.Environment != "production" || rot.Previous == "" || rot.Previous == rot.KID {
		t.Fatalf("rotate said %s (%v)", out, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "k.master-key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("master key file: %v %v", fi, err)
	}
	keys := listKeys(t, nil, db)
	if len(keys) != 2 || keys[0].KID != rot.Previous || keys[0].State != "verify-only" || keys[1].KID != rot.KID || keys[1].State != "active" ||
		keys[1].Source != "database" || keys[1].AgeSeconds == nil || *keys[1].AgeSeconds > 60 || keys[1].CreatedAt == nil {
		t.Fatalf("keys %+v", keys)
	}
	// To Ed25519, in a named environment the server must then be started
	// with.
	if code, out, errs = runCLI(t, map[string]string{"SWARMSCORE_SIGNING_ALG": "ed25519"}, "key", "rotate", "--db", db, "--json"); code != ExitOK || !strings.Contains(out, `"alg":"EdDSA"`) {
		t.Fatalf("rotate to Ed25519: %d %s %s", code, out, errs)
	}
	if code, _, errs = runCLI(t, nil, "key", "rotate", "--db", db, "--signing-alg", "RSA"); code != ExitUsage {
		t.Fatalf("an unknown algorithm: %d %s", code, errs)
	}

	// Retire and revoke: the old keys only, forward only.
	if code, _, errs = runCLI(t, nil, "key", "retire", rot.Previous, "--db", db); code != ExitOK || !strings.Contains(errs, "retired") {
		t.Fatalf("retire: %d %s", code, errs)
	}
	if code, out, _ = runCLI(t, nil, "key", "revoke", rot.Previous, "--db", db, "--json"); code != ExitOK || !strings.Contains(out, `"state":"revoked"`) {
		t.Fatalf("revoke: %d %s", code, out)
	}
	if code, _, errs = runCLI(t, nil, "key", "retire", rot.Previous, "--db", db); code != ExitConflict {
		t.Fatalf("un-revoking: %d %s", code, errs)
	}
	active := listKeys(t, nil, db)[2]
	if code, _, errs = runCLI(t, nil, "key", "retire", active.KID, "--db", db); code != ExitConflict || !strings.Contains(errs, "rotate first") {
		t.Fatalf("retiring the active key: %d %s", code, errs)
	}
	if code, _, _ = runCLI(t, nil, "key", "revoke", "eddsa-0000000000000000", "--db", db); code != ExitNotFound {
		t.Fatalf("an unknown key: %d", code)
	}
	if code, _, _ = runCLI(t, nil, "key", "retire", "--db", db); code != ExitUsage {
		t.Fatalf("no KID: %d", code)
	}

	// Static keys: listed beside the database's, never rotated here.
	static := map[string]string{"SWARMSCORE_SIGNING_KEY": testSecret, "SWARMSCORE_VERIFY_KEYS": otherSecret}
	keys = listKeys(t, static, db)
	if len(keys) != 5 || keys[3].Source != "environment" || keys[3].State != "active" || keys[4].State != "verify-only" || keys[3].AgeSeconds != nil {
		t.Fatalf("with static keys: %+v", keys)
	}
	if code, _, errs = runCLI(t, static, "key", "rotate", "--db", db); code != ExitUsage || !strings.Contains(errs, "SWARMSCORE_VERIFY_KEYS") {
		t.Fatalf("rotating static keys: %d %s", code, errs)
	}
	code, out, errs = runCLI(t, nil, "key", "list", "--db", db)
	if code != ExitOK || !strings.HasPrefix(out, "KID") || strings.Count(out, "\n") != 4 || errs != "" {
		t.Fatalf("table: %d %q %q", code, out, errs)
	}
}

// A key older than a year draws a warning from key list.
func TestKeyListWarnsOldKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	st, err := sqlite.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	created := time.Now().Add(-400 * 24 * time.Hour)
	if err := st.AddKey(context.Background(), keyring.Record{ID: "hs256-0123456789abcdef", Alg: keyring.HS256, Environment: "production",
		State: keyring.Active, CreatedAt: created, Sealed: []byte("sealed")}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "key", "list", "--db", "sqlite:"+path)
	if code != ExitOK || !strings.Contains(out, "400d") || !strings.Contains(errs, "warning: the active key hs256-0123456789abcdef is 400 days old") {
		t.Fatalf("%d %q %q", code, out, errs)
	}
}

// passport verify --keys: an Ed25519 passport verifies offline, from a JWK
// set in a file or at a server, with no secret in the environment.
func TestPassportVerifyWithKeySet(t *testing.T) {
	seed := make([]byte, ed25519.SeedSize)
	seed[0] = 7
	key, err := passport.NewEd25519Key(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	key, _ = key.WithID("eddsa-test")
	r, _ := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	p, _ := passport.New("agent-42", "test", r, time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC))
	doc, err := p.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := passport.PublicJWK(key, "active", time.Time{}, time.Time{})
	set, _ := json.Marshal(passport.JWKSet{Keys: []passport.JWK{j}})
	dir := t.TempDir()
	docFile, setFile, badSet := filepath.Join(dir, "p.json"), filepath.Join(dir, "keys.json"), filepath.Join(dir, "bad.json")
	os.WriteFile(docFile, doc, 0o600)
	os.WriteFile(setFile, set, 0o600)
	os.WriteFile(badSet, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"}]}`), 0o600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/swarmscore-keys.json" {
			http.NotFound(w, r)
			return
		}
		w.Write(set)
	}))
	defer srv.Close()
	at := []string{"--at", "2026-03-20T00:00:00Z"}
	for _, src := range []string{setFile, srv.URL, srv.URL + "/", srv.URL + "/.well-known/swarmscore-keys.json"} {
		code, out, errs := runCLI(t, nil, append([]string{"passport", "verify", docFile, "--keys", src}, at...)...)
		if code != ExitOK || !strings.Contains(out, `"valid":true`) {
			t.Fatalf("--keys %s: %d %s %s", src, code, out, errs)
		}
	}
	// A changed passport is tampering; an HMAC passport cannot be checked
	// with public keys (its key is unknown here, which is not tampering).
	os.WriteFile(docFile, []byte(strings.Replace(string(doc), `"value":760`, `"value":761`, 1)), 0o600)
	if code, out, _ := runCLI(t, nil, append([]string{"passport", "verify", docFile, "--keys", setFile}, at...)...); code != ExitFailure || !strings.Contains(out, `"detected_tampering":true`) {
		t.Fatalf("tampered: %d %s", code, out)
	}
	_, hmacDoc, _ := runCLI(t, keyEnv, issueArgs...)
	os.WriteFile(docFile, []byte(hmacDoc), 0o600)
	if code, out, _ := runCLI(t, nil, append([]string{"passport", "verify", docFile, "--keys", setFile}, at...)...); code != ExitFailure || !strings.Contains(out, `"code":"unknown_key"`) || !strings.Contains(out, `"detected_tampering":false`) {
		t.Fatalf("an HMAC passport: %d %s", code, out)
	}
	for src, want := range map[string]int{badSet: ExitUsage, filepath.Join(dir, "missing.json"): ExitUsage, srv.URL + "/nope": ExitUsage, "http://127.0.0.1:1": ExitUnavailable} {
		if code, _, errs := runCLI(t, nil, "passport", "verify", docFile, "--keys", src); code != want || strings.Count(errs, "\n") != 1 {
			t.Errorf("--keys %s: %d %q, want %d", src, code, errs, want)
		}
	}
}
