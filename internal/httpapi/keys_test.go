package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
)

// TestKeysRoute: the JWK set is public, readable from any origin, cached
// briefly, and exactly what the service publishes.
func TestKeysRoute(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.keySet = passport.JWKSet{Keys: []passport.JWK{{Kty: "OKP", Crv: "Ed25519", X: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
		Kid: "eddsa-0123456789abcdef", Alg: "EdDSA", Use: "sig", Status: "active", NotBefore: now.Unix()}}}
	r := h.do("GET", "/.well-known/swarmscore-keys.json", nil, "Origin", "https://market.example")
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "application/jwk-set+json" ||
		r.header.Get("Cache-Control") != "public, max-age=60" || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%d %v", r.code, r.header)
	}
	keys, err := passport.ParseJWKSet(r.body)
	if err != nil || len(keys) != 1 || keys[0].ID() != "eddsa-0123456789abcdef" {
		t.Fatalf("set %s: %v %v", r.body, keys, err)
	}
	want, _ := json.Marshal(h.f.keySet)
	if !bytes.Equal(bytes.TrimSpace(r.body), want) {
		t.Fatalf("body %s, want %s", r.body, want)
	}
	// An HMAC-only server publishes an empty set, never null.
	h.f.keySet = passport.JWKSet{Keys: []passport.JWK{}}
	if r := h.do("GET", "/.well-known/swarmscore-keys.json", nil); string(bytes.TrimSpace(r.body)) != `{"keys":[]}` {
		t.Fatalf("empty set: %s", r.body)
	}
}

// TestKeyHistoryRoute: the key history is public, readable from any
// origin, cached as the key set is, and exactly what the service gives;
// it reads as a JWK set whose keys are bound to their intervals.
func TestKeyHistoryRoute(t *testing.T) {
	h := newHarness(t, Options{})
	until := now.Add(-time.Hour)
	revoked := now.Add(-time.Minute)
	h.f.keyHistory = passport.KeyHistory{Keys: []passport.HistoryKey{
		{Kty: "OKP", Crv: "Ed25519", X: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", Kid: "eddsa-0123456789abcdef", Alg: "EdDSA", Use: "sig",
			Status: "revoked", ActiveFrom: now.Add(-48 * time.Hour), ActiveUntil: &until, RevokedAt: &revoked}}}
	r := h.do("GET", "/.well-known/swarmscore-key-history.json", nil, "Origin", "https://market.example")
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "application/jwk-set+json" ||
		r.header.Get("Cache-Control") != "public, max-age=60" || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%d %v", r.code, r.header)
	}
	want, _ := json.Marshal(h.f.keyHistory)
	if !bytes.Equal(bytes.TrimSpace(r.body), want) {
		t.Fatalf("body %s, want %s", r.body, want)
	}
	keys, err := passport.ParseJWKSet(r.body)
	if err != nil || len(keys) != 1 || keys[0].Status() != passport.KeyRevoked {
		t.Fatalf("history %s: %v %v", r.body, keys, err)
	}
	if iv, ok := keys[0].Interval(); !ok || !iv.Until.Equal(until) || !iv.RevokedAt.Equal(revoked) {
		t.Fatalf("interval %+v %v", iv, ok)
	}
	h.f.keyHistory = passport.KeyHistory{Keys: []passport.HistoryKey{}}
	if r := h.do("GET", "/.well-known/swarmscore-key-history.json", nil); string(bytes.TrimSpace(r.body)) != `{"keys":[]}` {
		t.Fatalf("empty history: %s", r.body)
	}
}

// TestKeyMetrics: the active key's id, algorithm and age, and whether it
// is due for rotation; no age for a static key, whose age is not known.
func TestKeyMetrics(t *testing.T) {
	h := newHarness(t, Options{})
	h.f.keyStats = service.KeyringStats{ActiveID: "hs256-0123456789abcdef", ActiveAlg: "HS256", ActiveSince: time.Now().Add(-400 * 24 * time.Hour)}
	met := h.do("GET", "/metrics", nil).body
	for _, want := range []string{`swarmscore_signing_key_info{alg="HS256",kid="hs256-0123456789abcdef"} 1`, "swarmscore_signing_key_rotation_due 1", "swarmscore_signing_key_age_seconds 3.456"} {
		if !bytes.Contains(met, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, grep(met, "signing_key"))
		}
	}
	h.f.keyStats.ActiveSince = time.Now().Add(-time.Hour)
	if met := h.do("GET", "/metrics", nil).body; !bytes.Contains(met, []byte("swarmscore_signing_key_rotation_due 0")) {
		t.Errorf("a new key is due:\n%s", grep(met, "signing_key"))
	}
	h.f.keyStats.ActiveSince = time.Time{}
	if met := h.do("GET", "/metrics", nil).body; bytes.Contains(met, []byte("swarmscore_signing_key_age")) || bytes.Contains(met, []byte("rotation_due")) {
		t.Errorf("an age for a static key:\n%s", grep(met, "signing_key"))
	}
}
