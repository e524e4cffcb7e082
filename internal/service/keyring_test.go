package service

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

func TestWeakSecret(t *testing.T) {
	t.Parallel()
	for _, weak := range []string{
		strings.Repeat("a", 32), strings.Repeat(" ", 40), "\t\n \r" + strings.Repeat(" ", 30),
		strings.Repeat("ab", 20), "passwordpasswordpasswordpassword", strings.Repeat("0123456789abcdef", 2),
		strings.Repeat("0123456789abcdef", 4),
	} {
		if weakSecret([]byte(weak)) == "" {
			t.Errorf("%q is not refused", weak)
		}
	}
	for _, ok := range []string{
		"066ea5522a00c6ba71a534b2801c94e618452eb2920c1a0c58e1f280fbd627a7", // keygen's form
		testKey, "correct horse battery staple, twice over",
		strings.Repeat("0123456789abcdef", 2) + "-and-more", // a repeat, then not
	} {
		if why := weakSecret([]byte(ok)); why != "" {
			t.Errorf("%q refused: %s", ok, why)
		}
	}
}

func keyLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// keyStore opens a migrated SQLite store in dir.
func keyStore(t *testing.T, dir string) (Backend, string) {
	t.Helper()
	db := filepath.Join(dir, "swarmscore.db")
	st, err := sqlite.Open(context.Background(), "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, db
}

func TestStaticKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := "f3c6f0a1d2b4e5c7a8b9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5"
	k, err := OpenKeyring(ctx, nil, KeyConfig{SigningKey: testKey, VerifyKeys: " " + old + " ,, " + testKey + ",", Logger: keyLog()})
	if err != nil {
		t.Fatal(err)
	}
	recs := k.Records()
	if !k.Static() || len(recs) != 2 || recs[0].State != keyring.Active || recs[1].State != keyring.VerifyOnly ||
		recs[0].ID != keyID(passport.AlgHS256, []byte(testKey)) || recs[1].ID != keyID(passport.AlgHS256, []byte(old)) ||
		!strings.HasPrefix(recs[0].ID, "hs256-") || recs[0].Environment != DefaultEnvironment {
		t.Fatalf("records %+v", recs)
	}
	if _, err := k.Rotate(ctx, passport.AlgHS256); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("a static keyring rotated: %v", err)
	}
	for name, c := range map[string]KeyConfig{
		"short":                 {SigningKey: "short"},
		"identical":             {SigningKey: strings.Repeat("x", 32)},
		"whitespace":            {SigningKey: strings.Repeat(" ", 33)},
		"weak verify key":       {SigningKey: testKey, VerifyKeys: old + "," + strings.Repeat("y", 40)},
		"verify without active": {VerifyKeys: old, DBFile: "x.db"},
		"Ed25519 required":      {SigningKey: testKey, Alg: passport.AlgEdDSA, RequireAlg: true},
		"bad environment":       {SigningKey: testKey, Environment: "pro duction"},
		"server without master": {},
		"master not hex":        {MasterKey: strings.Repeat("z", 64)},
		"master weak":           {MasterKey: strings.Repeat("0", 64)},
	} {
		_, err := OpenKeyring(ctx, nil, c)
		if !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, secret := range []string{c.SigningKey, c.MasterKey, "yyyyyyyy"} {
			if secret != "" && strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error shows the key: %v", name, err)
			}
		}
	}
}

// The embedded store: the first start generates a key and a master key
// file beside the database (0600, written under a random temporary name);
// the next starts unseal the same keyring; a lost, readable or wrong master
// key is refused.
func TestKeyringEmbedded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, db := keyStore(t, dir)
	var logs bytes.Buffer
	k1, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a := k1.Active()
	if a.Alg != passport.AlgHS256 || a.Environment != DefaultEnvironment || a.Sealed != nil || k1.Static() {
		t.Fatalf("first key %+v", a)
	}
	master := MasterKeyFile(db)
	fi, err := os.Stat(master)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("master key file: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(master)
	if entries, _ := os.ReadDir(dir); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.Contains(e.Name(), "tmp") }) {
		t.Fatalf("a temporary file was left: %v", entries)
	}
	if !strings.Contains(logs.String(), master) || strings.Contains(logs.String(), strings.TrimSpace(string(raw))) {
		t.Fatalf("log: %s", logs.String())
	}
	recs, _ := st.Keys(ctx)
	if len(recs) != 1 || bytes.Contains(recs[0].Sealed, bytes.TrimSpace(raw)) {
		t.Fatalf("stored %+v", recs)
	}

	k2, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Logger: keyLog()})
	if err != nil || k2.Active().ID != a.ID {
		t.Fatalf("second start: %v %v", k2, err)
	}
	// The same master key given in the environment opens it too; another
	// does not.
	if _, err := OpenKeyring(ctx, st, KeyConfig{MasterKey: strings.TrimSpace(string(raw))}); err != nil {
		t.Fatalf("SWARMSCORE_MASTER_KEY: %v", err)
	}
	other := "8a1f0c3e5d7b9a2c4e6f8d0b1a3c5e7f9d2b4a6c8e0f1d3b5a7c9e2f4d6b8a01"
	if _, err := OpenKeyring(ctx, st, KeyConfig{MasterKey: other}); !errors.Is(err, keyring.ErrSealed) {
		t.Fatalf("another master key: %v", err)
	}
	os.Chmod(master, 0o644)
	if _, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db}); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("readable master key file: %v", err)
	}
	os.Remove(master)
	if _, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db}); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing master key file: %v", err)
	}
	if _, err := os.Stat(master); err == nil {
		t.Fatal("a new master key was made for a keyring sealed under another")
	}
}

// The key file of an embedded store from before keyrings becomes the first
// active key: passports it signed (with no kid) keep verifying, and are
// served without re-issue.
func TestKeyringImportsKeyFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, db := keyStore(t, dir)
	secret := "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff"
	if err := os.WriteFile(KeyFile(db), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	legacy, _ := passport.NewKey([]byte(secret))
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	old := New(st, Config{Key: legacy, Platform: "test.example", Now: c.now})
	ingest(t, old, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	before, err := old.Certificates.Certificate(ctx, "agent-1")
	if err != nil || bytes.Contains(before.Passport, []byte(`"kid"`)) {
		t.Fatalf("a passport from before keyrings: %v\n%s", err, before.Passport)
	}

	k, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Logger: keyLog()})
	if err != nil {
		t.Fatal(err)
	}
	if k.Active().ID != keyID(passport.AlgHS256, []byte(secret)) {
		t.Fatalf("active key %s, not the key file's", k.Active().ID)
	}
	u := New(st, Config{Keys: k, Platform: "test.example", Now: c.now})
	if v, err := u.Verifier.Verify(ctx, before.Passport, "agent-1"); err != nil || !v.Valid {
		t.Fatalf("the old passport: %+v %v", v, err)
	}
	again, err := u.Certificates.Certificate(ctx, "agent-1")
	if err != nil || again.Issued || !bytes.Equal(again.Passport, before.Passport) {
		t.Fatalf("the old passport was not served as it is: issued=%v %v", again.Issued, err)
	}
}

// keyringUseCases is a UseCases over SQLite with a keyring in the database
// (alg), and a second one over the same database, as another process.
func keyringUseCases(t *testing.T, alg string) (a, b *UseCases, c *testClock) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, db := keyStore(t, dir)
	c = &testClock{t0.Add(10 * 24 * time.Hour)}
	open := func(st Backend) *UseCases {
		k, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Alg: alg, Logger: keyLog(), Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		return New(st, Config{Keys: k, Platform: "test.example", Now: c.now})
	}
	a = open(st)
	stb, err := sqlite.Open(ctx, "sqlite:"+db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stb.Close() })
	return a, open(stb), c
}

func kidOf(t *testing.T, doc []byte) string {
	t.Helper()
	p, err := passport.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return p.Issuer.KID
}

// stale makes a keyring's copy older than keyReload, as a second's wait
// would.
func stale(k *Keyring) { k.attempt.Store(int64(time.Since(k.base) - 2*keyReload)) }

// A rotation by another process: the next certificate after the reload has
// the new kid, although the old one was remembered; the old passport stays
// valid until its key is retired, then fails with key_retired, and with
// key_revoked once revoked, never as tampering.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{passport.AlgHS256, passport.AlgEdDSA} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b, _ := keyringUseCases(t, alg)
			ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
			first, err := a.Certificates.Certificate(ctx, "agent-1")
			if err != nil {
				t.Fatal(err)
			}
			k1 := a.cfg.Keys.Active().ID
			if kidOf(t, first.Passport) != k1 || !strings.HasPrefix(k1, strings.ToLower(alg)+"-") {
				t.Fatalf("kid %s, active %s", kidOf(t, first.Passport), k1)
			}
			if c, _ := a.Certificates.Certificate(ctx, "agent-1"); c.Issued {
				t.Fatal("re-issued before any rotation")
			}

			rec, err := b.Keys.RotateKey(ctx, alg)
			if err != nil || rec.ID == k1 || rec.Sealed != nil || b.cfg.Keys.Active().ID != rec.ID {
				t.Fatalf("rotate: %+v %v", rec, err)
			}
			// Within keyReload A may still serve what it remembers; then
			// it signs anew.
			stale(a.cfg.Keys)
			second, err := a.Certificates.Certificate(ctx, "agent-1")
			if err != nil || !second.Issued || kidOf(t, second.Passport) != rec.ID {
				t.Fatalf("after the rotation: issued=%v kid %s %v", second.Issued, kidOf(t, second.Passport), err)
			}
			if third, _ := b.Certificates.Certificate(ctx, "agent-1"); third.Issued || !bytes.Equal(third.Passport, second.Passport) {
				t.Fatal("B does not serve the passport A re-issued")
			}

			v, err := a.Verifier.Verify(ctx, first.Passport, "agent-1")
			if err != nil || !v.Valid {
				t.Fatalf("the old passport under a verify-only key: %+v %v", v, err)
			}
			if err := b.Keys.SetKeyState(ctx, k1, keyring.Retired); err != nil {
				t.Fatal(err)
			}
			stale(a.cfg.Keys)
			v, _ = a.Verifier.Verify(ctx, first.Passport, "agent-1")
			if v.Valid || v.DetectedTampering || !slices.Equal(codes(v), []string{passport.CodeKeyRetired}) {
				t.Fatalf("retired: %+v", v)
			}
			if err := b.Keys.SetKeyState(ctx, k1, keyring.Revoked); err != nil {
				t.Fatal(err)
			}
			if err := a.cfg.Keys.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			v, _ = a.Verifier.Verify(ctx, first.Passport, "agent-1")
			if v.Valid || v.DetectedTampering || !slices.Equal(codes(v), []string{passport.CodeKeyRevoked}) {
				t.Fatalf("revoked: %+v", v)
			}
			if err := b.Keys.SetKeyState(ctx, rec.ID, keyring.Retired); !errors.Is(err, errkind.ErrConflict) {
				t.Fatalf("retiring the active key: %v", err)
			}
			if err := b.Keys.SetKeyState(ctx, k1, keyring.VerifyOnly); !errors.Is(err, errkind.ErrInvalid) {
				t.Fatalf("bringing a key back: %v", err)
			}
		})
	}
}

// An eager re-issue in batches: interrupted, it resumes where it stopped,
// and a finished one finds nothing more.
func TestReissuePassports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, _ := keyringUseCases(t, passport.AlgHS256)
	agents := []string{"agent-1", "agent-2", "agent-3", "agent-4", "agent-5"}
	for _, ag := range agents {
		ingest(t, a, conduit(ag, ag+"-c", 10, 9, t0))
		if _, err := a.Certificates.Certificate(ctx, ag); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := b.Keys.RotateKey(ctx, passport.AlgHS256)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Keys.ReissuePassports(ctx, 0, nil); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("batch 0: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	rep, err := b.Keys.ReissuePassports(cctx, 2, func(ReissueReport) { cancel() })
	if !errors.Is(err, context.Canceled) || rep.Reissued != 2 || rep.Batches != 1 || rep.Last != "agent-2" {
		t.Fatalf("interrupted: %+v %v", rep, err)
	}
	var seen []int
	rep, err = b.Keys.ReissuePassports(ctx, 2, func(r ReissueReport) { seen = append(seen, r.Reissued) })
	if err != nil || rep.Reissued != 3 || !slices.Equal(seen, []int{2, 3}) {
		t.Fatalf("resumed: %+v %v (progress %v)", rep, err, seen)
	}
	if rep, err := b.Keys.ReissuePassports(ctx, 2, nil); err != nil || rep.Reissued != 0 {
		t.Fatalf("a third run: %+v %v", rep, err)
	}
	stale(a.cfg.Keys)
	for _, ag := range agents {
		c, err := a.Certificates.Certificate(ctx, ag)
		if err != nil || c.Issued || kidOf(t, c.Passport) != rec.ID {
			t.Fatalf("%s: issued=%v kid %s %v", ag, c.Issued, kidOf(t, c.Passport), err)
		}
	}
}

// Ed25519 public keys are published while their passports may be valid;
// HMAC keys never are, and the set verifies Ed25519 passports offline.
func TestPublicKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, c := keyringUseCases(t, passport.AlgEdDSA)
	ingest(t, a, conduit("agent-1", "c", 10, 9, t0))
	cert, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	ed := a.cfg.Keys.Active()
	set := a.Keys.PublicKeys(ctx)
	if len(set.Keys) != 1 || set.Keys[0].Kid != ed.ID || set.Keys[0].Status != "active" || set.Keys[0].Expires != 0 ||
		set.Keys[0].X != base64.RawURLEncoding.EncodeToString(ed.Public) {
		t.Fatalf("set %+v", set)
	}
	keys, err := passport.ParseJWKSet(mustJSON(t, set))
	if err != nil {
		t.Fatal(err)
	}
	if v := passport.Verify(cert.Passport, keys, c.t); !v.Valid {
		t.Fatalf("offline: %v", v.Errors)
	}
	// Rotating to HMAC: the Ed25519 key stays published, verify-only, until
	// its last passport's lifetime is over; the HMAC key never is.
	if _, err := a.Keys.RotateKey(ctx, passport.AlgHS256); err != nil {
		t.Fatal(err)
	}
	set = a.Keys.PublicKeys(ctx)
	if len(set.Keys) != 1 || set.Keys[0].Kid != ed.ID || set.Keys[0].Status != string(keyring.VerifyOnly) ||
		set.Keys[0].Expires != c.t.Add(passport.Validity+passport.MaxClockSkew).Unix() {
		t.Fatalf("after the rotation: %+v", set)
	}
	c.t = c.t.Add(passport.Validity + passport.MaxClockSkew)
	if set = a.Keys.PublicKeys(ctx); len(set.Keys) != 0 {
		t.Fatalf("an Ed25519 key whose passports have all expired is published: %+v", set)
	}
	if st := a.Keys.KeyringStats(); st.ActiveAlg != passport.AlgHS256 || st.ActiveID != a.cfg.Keys.Active().ID || st.ActiveSince.IsZero() {
		t.Fatalf("stats %+v", st)
	}
}

// The key history lists every Ed25519 key ever active, with the interval
// it signed in, whatever became of it: after a rotation and a retirement,
// a passport the first key signed still verifies from the history at its
// date, and one dated after its interval does not; a revoked key is listed
// with its revocation time and its passports are refused. HMAC keys never
// appear.
func TestKeyHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, c := keyringUseCases(t, passport.AlgEdDSA)
	ingest(t, a, conduit("agent-1", "c", 10, 9, t0))
	cert, err := a.Certificates.Certificate(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	first := a.cfg.Keys.Active()
	h := a.Keys.KeyHistory(ctx)
	if len(h.Keys) != 1 || h.Keys[0].Kid != first.ID || h.Keys[0].Status != "active" || !h.Keys[0].ActiveFrom.Equal(first.CreatedAt) || h.Keys[0].ActiveUntil != nil {
		t.Fatalf("history %+v", h)
	}
	c.t = c.t.Add(time.Hour)
	if _, err := a.Keys.RotateKey(ctx, passport.AlgHS256); err != nil {
		t.Fatal(err)
	}
	rotated := c.t
	c.t = c.t.Add(time.Hour)
	second, err := a.Keys.RotateKey(ctx, passport.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(30 * 24 * time.Hour)
	if err := a.Keys.SetKeyState(ctx, first.ID, keyring.Retired); err != nil {
		t.Fatal(err)
	}
	h = a.Keys.KeyHistory(ctx)
	if len(h.Keys) != 2 || h.Keys[0].Kid != first.ID || h.Keys[0].Status != "retired" || h.Keys[0].ActiveUntil == nil || !h.Keys[0].ActiveUntil.Equal(rotated) ||
		h.Keys[1].Kid != second.ID || h.Keys[1].Status != "active" || !h.Keys[1].ActiveFrom.Equal(second.CreatedAt) {
		t.Fatalf("history after rotations and a retirement: %+v", h)
	}
	keys, err := passport.ParseJWKSet(mustJSON(t, h))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := passport.Parse(cert.Passport)
	if v := passport.Verify(cert.Passport, keys, p.Issuer.ComputedAt); !v.Valid {
		t.Fatalf("an archived passport of the retired key, from the history: %v", v.Errors)
	}
	// The keys published for now no longer verify it.
	set, _ := passport.ParseJWKSet(mustJSON(t, a.Keys.PublicKeys(ctx)))
	if v := passport.Verify(cert.Passport, set, p.Issuer.ComputedAt); v.Valid {
		t.Fatal("the key set verifies a retired key's passport")
	}
	c.t = c.t.Add(time.Hour)
	if err := a.Keys.SetKeyState(ctx, first.ID, keyring.Revoked); err != nil {
		t.Fatal(err)
	}
	h = a.Keys.KeyHistory(ctx)
	if h.Keys[0].Status != "revoked" || h.Keys[0].RevokedAt == nil || !h.Keys[0].RevokedAt.Equal(c.t) {
		t.Fatalf("history after revoking: %+v", h.Keys[0])
	}
	keys, _ = passport.ParseJWKSet(mustJSON(t, h))
	if v := passport.Verify(cert.Passport, keys, p.Issuer.ComputedAt); v.Valid || v.Errors[0].Code != passport.CodeKeyRevoked {
		t.Fatalf("a revoked key's passport: %v", v.Errors)
	}
}

// A key of another environment never signs here: a keyring whose active
// key is staging's does not open in production, and a static key the
// database registers to staging is refused; so is a static "HMAC key" that
// is an Ed25519 public key of the keyring.
func TestKeyEnvironments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, db := keyStore(t, dir)
	staging, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Environment: "staging", Alg: passport.AlgEdDSA, Logger: keyLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Logger: keyLog()}); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "staging") {
		t.Fatalf("production over a staging keyring: %v", err)
	}
	if _, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Environment: "staging", Alg: passport.AlgHS256, RequireAlg: true}); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("HMAC required over an Ed25519 keyring: %v", err)
	}
	pub := staging.Active().Public
	for _, confused := range []string{base64.RawURLEncoding.EncodeToString(pub), hex.EncodeToString(pub)} {
		if _, err := OpenKeyring(ctx, st, KeyConfig{SigningKey: testKey, VerifyKeys: confused, Environment: "staging"}); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "key confusion") {
			t.Fatalf("a public key as an HMAC key: %v", err)
		}
	}
	// A static key once imported into staging's keyring.
	secret := "00f1e2d3c4b5a69788796a5b4c3d2e1f0112233445566778899aabbccddeeff0"
	master, _ := os.ReadFile(MasterKeyFile(db))
	m, _ := hex.DecodeString(strings.TrimSpace(string(master)))
	rec := keyring.Record{ID: keyID(passport.AlgHS256, []byte(secret)), Alg: keyring.HS256, Environment: "staging", State: keyring.VerifyOnly, CreatedAt: t0}
	if rec.Sealed, err = keyring.Seal(m, rec.ID, []byte(secret)); err != nil {
		t.Fatal(err)
	}
	if err := st.AddKey(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenKeyring(ctx, st, KeyConfig{SigningKey: secret}); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "staging") {
		t.Fatalf("a staging key as production's static key: %v", err)
	}
	if _, err := OpenKeyring(ctx, st, KeyConfig{SigningKey: secret, Environment: "staging"}); err != nil {
		t.Fatalf("the same key in its environment: %v", err)
	}
	// An Ed25519 record whose public key is not its seed's is refused.
	active := staging.Active()
	bad := active
	bad.ID, bad.State = "eddsa-altered", keyring.VerifyOnly
	bad.Public = ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	if bad.Sealed, err = keyring.Seal(m, bad.ID, bytes.Repeat([]byte{1}, 32)); err != nil {
		t.Fatal(err)
	}
	if err := st.AddKey(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := staging.Reload(ctx); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("an altered record: %v", err)
	}
	if staging.Active().ID != active.ID {
		t.Fatal("a failed reload changed the keys in use")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Checkpoints are signed by the keyring's active key (HMAC or Ed25519) and
// checked against every key but a revoked one; a checkpoint signed before
// keyrings, named by the bare fingerprint of the secret the keyring
// imported, still verifies.
func TestKeyringCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, db := keyStore(t, dir)
	secret := "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff"
	if err := os.WriteFile(KeyFile(db), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	ingest(t, New(st, Config{Now: c.now}), conduit("agent-1", "c1", 10, 9, t0))
	// Before keyrings: the checkpoint key of the same secret.
	legacyKey, err := NewCheckpointKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	old := New(st, Config{Now: c.now, CheckpointKey: legacyKey})
	before, err := old.Audit.MakeCheckpoint(ctx, false)
	if err != nil {
		t.Fatal(err)
	}

	k, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Logger: keyLog(), Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	u := New(st, Config{Keys: k, Now: c.now})
	if _, err := u.Audit.VerifyCheckpoint(ctx, before.Document); err != nil {
		t.Fatalf("a checkpoint from before keyrings: %v", err)
	}
	ingest(t, u, conduit("agent-2", "c2", 10, 9, t0))
	hs, err := u.Audit.MakeCheckpoint(ctx, true)
	if err != nil || hs.Checkpoint.Issuer.KeyID != k.Active().ID || hs.Checkpoint.Issuer.Alg != "HS256" {
		t.Fatalf("HMAC checkpoint %+v %v", hs.Checkpoint, err)
	}
	imported := k.Active().ID
	if _, err := u.Keys.RotateKey(ctx, passport.AlgEdDSA); err != nil {
		t.Fatal(err)
	}
	ingest(t, u, conduit("agent-3", "c3", 10, 9, t0))
	ed, err := u.Audit.MakeCheckpoint(ctx, true)
	if err != nil || ed.Checkpoint.Issuer.KeyID != k.Active().ID || ed.Checkpoint.Issuer.Alg != "EdDSA" {
		t.Fatalf("EdDSA checkpoint %+v %v", ed.Checkpoint, err)
	}
	if err := u.Keys.SetKeyState(ctx, imported, keyring.Retired); err != nil {
		t.Fatal(err)
	}
	for _, doc := range [][]byte{before.Document, hs.Document, ed.Document} {
		if _, err := u.Audit.VerifyCheckpoint(ctx, doc); err != nil {
			t.Fatalf("after retiring the HMAC key: %v\n%s", err, doc)
		}
	}
	if err := u.Keys.SetKeyState(ctx, imported, keyring.Revoked); err != nil {
		t.Fatal(err)
	}
	for _, doc := range [][]byte{before.Document, hs.Document} {
		if _, err := u.Audit.VerifyCheckpoint(ctx, doc); !errors.Is(err, checkpoint.ErrSignature) {
			t.Fatalf("a revoked key's checkpoint: %v", err)
		}
	}
	if _, err := u.Audit.VerifyCheckpoint(ctx, ed.Document); err != nil {
		t.Fatalf("the active key's checkpoint: %v", err)
	}
}

// TestKeyringDerive: a derived key is the same on every server of a
// deployment and across rotations, differs by purpose and by root, and is
// no signing secret.
func TestKeyringDerive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db := keyStore(t, t.TempDir())
	k1, err := OpenKeyring(ctx, st, KeyConfig{DBFile: db, Logger: keyLog()})
	if err != nil {
		t.Fatal(err)
	}
	d := k1.Derive(PseudonymLabel)
	if len(d) != 32 || bytes.Equal(d, k1.Derive("another purpose")) {
		t.Fatalf("derived %x", d)
	}
	if _, err := k1.Rotate(ctx, passport.AlgEdDSA); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(MasterKeyFile(db))
	k2, err := OpenKeyring(ctx, st, KeyConfig{MasterKey: strings.TrimSpace(string(raw)), Logger: keyLog()})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k1.Derive(PseudonymLabel), d) || !bytes.Equal(k2.Derive(PseudonymLabel), d) {
		t.Error("the derived key changed with a rotation or another server")
	}
	static, err := OpenKeyring(ctx, nil, KeyConfig{SigningKey: testKey, Logger: keyLog()})
	if err != nil {
		t.Fatal(err)
	}
	if s := static.Derive(PseudonymLabel); bytes.Equal(s, d) || bytes.Contains(s, []byte(testKey)) {
		t.Errorf("static derived %x", s)
	}
}
