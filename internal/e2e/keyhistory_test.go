package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/passport"
)

// TestKeyHistoryArchive: an Ed25519 deployment's passport and audit bundle
// (with its signed checkpoint) are archived; the key that signed them is
// rotated out and retired. The key set no longer verifies them, the key
// history does, by the interval the key signed in, with `passport verify
// --keys` and `audit verify --keys` given the history's URL, and the Go
// client's VerifyArchived. Once the key is revoked, neither verifies.
func TestKeyHistoryArchive(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	s := startArgs(t, db, []string{"--signing-alg", "Ed25519"}, "SWARMSCORE_ADMIN_TOKEN="+adminToken)
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-arch")); err != nil {
		t.Fatal(err)
	}
	pub := s.client("")
	cert, err := pub.Certificate(ctx, "agent-arch")
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := issuer(t, cert.Raw)
	p, err := passport.Parse(cert.Raw)
	if err != nil {
		t.Fatal(err)
	}
	at := p.Issuer.ComputedAt.Format(time.RFC3339)
	certFile := filepath.Join(dir, "cert.json")
	os.WriteFile(certFile, cert.Raw, 0o600)
	if code, out, errs := run(t, nil, "", "ledger", "checkpoint", "--json", "--db", db); code != 0 || !strings.Contains(out, k1) {
		t.Fatalf("ledger checkpoint: %d %s %s", code, out, errs)
	}
	code, bundle, errs := run(t, nil, "", "audit", "export", "agent-arch", "--db", db)
	if code != 0 {
		t.Fatalf("audit export: %d %s", code, errs)
	}
	bundleFile := filepath.Join(dir, "agent-arch.audit.json")
	os.WriteFile(bundleFile, []byte(bundle), 0o600)

	keySet, keyHistory := s.url+"/.well-known/swarmscore-keys.json", s.url+"/.well-known/swarmscore-key-history.json"
	verify := func(keys string) (passportOK, auditOK bool, out string) {
		t.Helper()
		pc, pout, perr := run(t, nil, "", "passport", "verify", certFile, "--at", at, "--keys", keys)
		ac, aout, aerr := run(t, nil, "", "audit", "verify", bundleFile, "--keys", keys)
		return pc == 0, ac == 0, pout + perr + aout + aerr
	}
	if p, a, out := verify(keyHistory); !p || !a {
		t.Fatalf("before the rotation, from the history: %s", out)
	}
	k2, previous := rotate(t, nil, db, "--signing-alg", "Ed25519")
	if previous != k1 || k2 == k1 {
		t.Fatalf("rotated %s -> %s", previous, k2)
	}
	if code, _, errs := run(t, nil, "", "key", "retire", k1, "--db", db); code != 0 {
		t.Fatalf("key retire: %d %s", code, errs)
	}
	within(t, 3*time.Second, "the server publishes the retired key in its history", func() bool {
		b, err := pubGet(keyHistory)
		return err == nil && strings.Contains(string(b), `"kid":"`+k1+`","alg":"EdDSA","use":"sig","status":"retired"`)
	})
	if p, a, out := verify(keySet); p || a {
		t.Fatalf("the key set still verifies what a retired key signed: %s", out)
	}
	if p, a, out := verify(keyHistory); !p || !a {
		t.Fatalf("after retiring the key, from the history: %s", out)
	}
	if v, err := pub.VerifyArchived(ctx, cert.Raw, time.Time{}); err != nil || !v.Valid {
		t.Fatalf("VerifyArchived after retiring the key: %+v %v", v, err)
	}

	if code, _, errs := run(t, nil, "", "key", "revoke", k1, "--db", db); code != 0 {
		t.Fatalf("key revoke: %d %s", code, errs)
	}
	within(t, 3*time.Second, "the server publishes the revocation", func() bool {
		b, err := pubGet(keyHistory)
		return err == nil && strings.Contains(string(b), `"status":"revoked"`)
	})
	p2, a2, out := verify(keyHistory)
	if p2 || a2 || !strings.Contains(out, passport.CodeKeyRevoked) || !strings.Contains(out, "revoked (compromised)") {
		t.Fatalf("after revoking the key, from the history: %s", out)
	}
	if v, err := pub.VerifyArchived(ctx, cert.Raw, time.Time{}); err != nil || v.Valid || v.Errors[0].Code != passport.CodeKeyRevoked {
		t.Fatalf("VerifyArchived after revoking the key: %+v %v", v, err)
	}
}
