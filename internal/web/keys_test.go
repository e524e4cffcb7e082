package web

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/service"
)

const testMasterKey = "00112233445566778899aabbccddeeff0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// withKeyring gives the site's use cases a keyring in the database, as
// serve opens one without SWARMSCORE_SIGNING_KEY.
func withKeyring(t *testing.T) func(service.Backend, *service.Config, *clock) {
	return func(st service.Backend, cfg *service.Config, c *clock) {
		k, err := service.OpenKeyring(t.Context(), st, service.KeyConfig{MasterKey: testMasterKey, Now: c.now})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Keys = k
	}
}

func TestConsoleKeys(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{}, withKeyring(t))
	first := s.u.Keys.KeyringStats().ActiveID
	c := openConsole(t, s)

	body := c.get("/operator/keys", 200)
	mustContain(t, body, `<a href="/operator/keys" aria-current="page">Signing keys</a>`,
		"<tr><th scope=\"row\"><code>"+first+"</code> <span class=\"muted\">(signs here)</span></th><td data-label=\"Algorithm\">HS256</td><td data-label=\"Environment\">production</td><td data-label=\"State\"><strong>active</strong></td><td data-label=\"Created (UTC)\">2026-06-15 12:00 UTC <span class=\"muted\">(under 2 minutes ago)</span></td>",
		`<form method="get" action="/operator/keys/rotate">`, "Rotate…")
	mustNotContain(t, body, "Rotation due")

	// A year and a day on, the active key is due for rotation.
	s.clock.advance(366 * 24 * time.Hour)
	c = openConsole(t, s)
	body = c.get("/operator/keys", 200)
	mustContain(t, body, `<p class="warning" role="alert"><strong>Rotation due:</strong> the active key <code>`+first+`</code> is 12 months old, older than a year.`)

	// Rotate leads to a confirmation; nothing changes until it is sent.
	body = c.get("/operator/keys/rotate", 200)
	mustContain(t, body, "<h1>Rotate the signing key?</h1>", `<input type="hidden" name="from" value="`+first+`">`,
		`<option value="HS256" selected>`, `<label for="alg">Algorithm of the new key</label>`, `<a class="button secondary" href="/operator/keys">Cancel</a>`)
	if s.u.Keys.KeyringStats().ActiveID != first {
		t.Fatal("the confirmation page rotated")
	}
	// Without the session's CSRF token: refused.
	r := s.postForm("/operator/keys/rotate", url.Values{"from": {first}, "alg": {"HS256"}}, "Cookie", c.cookie)
	r.page(t, http.StatusForbidden)
	// For another key than the active one (sent twice, or rotated by
	// someone else since): refused, with why.
	body = c.post("/operator/keys/rotate", url.Values{"from": {"hs256-stale"}, "alg": {"HS256"}}).page(t, http.StatusConflict)
	mustContain(t, body, "it was rotated since (the active key is now "+first+"). Nothing was changed")
	mustContain(t, c.post("/operator/keys/rotate", url.Values{"from": {first}, "alg": {"RSA"}}).page(t, http.StatusBadRequest), "Choose HMAC-SHA256 or Ed25519.")
	if s.u.Keys.KeyringStats().ActiveID != first {
		t.Fatal("a refused form rotated")
	}

	// A passport signed by the old key, re-issued by the rotation.
	if _, err := s.u.Certificates.Certificate(t.Context(), "agent-7"); err != nil {
		t.Fatal(err)
	}
	r = c.post("/operator/keys/rotate", url.Values{"from": {first}, "alg": {"EdDSA"}})
	second := s.u.Keys.KeyringStats().ActiveID
	if second == first || s.u.Keys.KeyringStats().ActiveAlg != "EdDSA" {
		t.Fatalf("not rotated: %+v", s.u.Keys.KeyringStats())
	}
	loc := r.header.Get("Location")
	if r.code != http.StatusSeeOther || !regexp.MustCompile(`^/operator/keys\?reissued=[1-9][0-9]*&rotated=`+regexp.QuoteMeta(url.QueryEscape(second))+`$`).MatchString(loc) {
		t.Fatalf("rotate: %d %q", r.code, loc)
	}
	body = c.get(loc, 200)
	mustContain(t, body, `<p class="notice" role="status" id="notice" tabindex="-1" autofocus>Rotated: `+second+` (EdDSA) signs new passports from now on`, "Re-issued ",
		`<td data-label="Algorithm">EdDSA</td><td data-label="Environment">production</td><td data-label="State"><strong>active</strong></td>`, "<code>"+first+`</code></th><td data-label="Algorithm">HS256</td><td data-label="Environment">production</td><td data-label="State">verify-only</td>`)
	mustNotContain(t, body, "Rotation due", "cut short")
	if !regexp.MustCompile(`"msg":"signing key rotated","operator":"admin","kid":"` + regexp.QuoteMeta(second)).MatchString(s.logs.String()) {
		t.Fatalf("the rotation is not logged:\n%s", s.logs)
	}
	// The form sent again does not rotate again.
	c.post("/operator/keys/rotate", url.Values{"from": {first}, "alg": {"EdDSA"}}).page(t, http.StatusConflict)
	if s.u.Keys.KeyringStats().ActiveID != second {
		t.Fatal("a second send rotated again")
	}
	// No key material reaches a page.
	recs, err := s.store.Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		for _, secret := range []string{hex.EncodeToString(rec.Sealed), base64.StdEncoding.EncodeToString(rec.Sealed), base64.RawURLEncoding.EncodeToString(rec.Sealed)} {
			mustNotContain(t, body, secret[:16])
		}
		if rec.Public != nil {
			mustNotContain(t, body, base64.RawURLEncoding.EncodeToString(rec.Public)[:16])
		}
	}
	mustNotContain(t, body, testMasterKey[:16])
}

// TestConsoleStaticKeys: with SWARMSCORE_SIGNING_KEY (here the fixed key)
// the console names the key and says how to rotate it, offering no
// rotation.
func TestConsoleStaticKeys(t *testing.T) {
	s := newSite(t, testNow, httpapi.Options{})
	c := openConsole(t, s)
	kid := s.u.Keys.KeyringStats().ActiveID
	body := c.get("/operator/keys", 200)
	mustContain(t, body, "This server signs with <code>SWARMSCORE_SIGNING_KEY</code> (key <code>"+kid+"</code>, HS256)",
		"The database's keyring holds no key.")
	mustNotContain(t, body, "/operator/keys/rotate", testKey)
	mustContain(t, c.get("/operator/keys/rotate", http.StatusConflict), "which the console cannot rotate", "SWARMSCORE_VERIFY_KEYS")
	mustContain(t, c.post("/operator/keys/rotate", url.Values{"from": {kid}, "alg": {"HS256"}}).page(t, http.StatusConflict), "which the console cannot rotate")
}
