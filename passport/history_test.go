package passport

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// A key history binds each key to the interval it signed in: what a key
// signed while active verifies whatever became of it since (verify-only,
// retired), what it signed outside is key_inactive, and a revoked key's
// signatures are refused whatever date they bear.
func TestKeyHistory(t *testing.T) {
	t.Parallel()
	from := testComputedAt.Add(-30 * 24 * time.Hour)
	until := testComputedAt.Add(24 * time.Hour)
	revoked := testComputedAt.Add(48 * time.Hour)
	doc := func(at time.Time, kid bool) []byte {
		t.Helper()
		p := newPassport(t, testExample)
		p.Issuer.ComputedAt, p.ExpiresAt = at, at.Add(Validity)
		k := testEdKey(t)
		if !kid {
			seed, _ := hex.DecodeString(testEdSeed)
			k, _ = NewEd25519Key(ed25519.NewKeyFromSeed(seed))
		}
		b, err := p.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	entry := func(status string, iv SigningInterval) []Key {
		t.Helper()
		h, err := PublicHistoryKey(testEdKey(t), status, iv)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := ParseJWKSet(mustMarshal(t, KeyHistory{Keys: []HistoryKey{h}}))
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	cases := []struct {
		name   string
		status string
		iv     SigningInterval
		signed time.Time
		code   string // "" when the signature is accepted
	}{
		{"active, signed after it became active", StatusActive, SigningInterval{From: from}, testComputedAt, ""},
		{"active, signed before it became active", StatusActive, SigningInterval{From: from}, from.Add(-time.Hour), CodeKeyInactive},
		{"active, just within the clock-skew allowance", StatusActive, SigningInterval{From: from}, from.Add(-MaxClockSkew), ""},
		{"verify-only, signed while active", StatusVerifyOnly, SigningInterval{From: from, Until: until}, testComputedAt, ""},
		{"verify-only, signed after it was replaced", StatusVerifyOnly, SigningInterval{From: from, Until: until}, until.Add(time.Hour), CodeKeyInactive},
		{"retired, signed while active", StatusRetired, SigningInterval{From: from, Until: until}, testComputedAt, ""},
		{"retired, signed at the end of its interval", StatusRetired, SigningInterval{From: from, Until: until}, until.Add(MaxClockSkew), ""},
		{"retired, signed after it was replaced", StatusRetired, SigningInterval{From: from, Until: until}, until.Add(MaxClockSkew + time.Second), CodeKeyInactive},
		{"revoked, signed after its revocation", StatusRevoked, SigningInterval{From: from, Until: until, RevokedAt: revoked}, revoked.Add(time.Hour), CodeKeyRevoked},
		{"revoked, signed while active", StatusRevoked, SigningInterval{From: from, Until: until, RevokedAt: revoked}, testComputedAt, CodeKeyRevoked},
	}
	for _, c := range cases {
		keys := entry(c.status, c.iv)
		for _, kid := range []bool{true, false} {
			v, _ := verifyBoth(t, doc(c.signed, kid), keys, c.signed)
			switch {
			case c.code == "" && (!v.Valid || v.KeyIndex != 0):
				t.Errorf("%s (kid %v): %v", c.name, kid, v.Errors)
			case c.code != "" && (v.SignatureValid || v.DetectedTampering || v.KeyIndex != 0 || !hasCode(v.Errors, c.code)):
				t.Errorf("%s (kid %v): signature %v, tampering %v, key %d, %v; want %s", c.name, kid, v.SignatureValid, v.DetectedTampering, v.KeyIndex, v.Errors, c.code)
			}
		}
	}
	// The messages say when.
	v := Verify(doc(revoked.Add(time.Hour), true), entry(StatusRevoked, SigningInterval{From: from, Until: until, RevokedAt: revoked}), revoked.Add(time.Hour))
	if msg := v.Errors[0].Message; !strings.Contains(msg, "dated after the revocation") || !strings.Contains(msg, revoked.Format(time.RFC3339)) {
		t.Errorf("revoked: %s", msg)
	}
	v = Verify(doc(testComputedAt, true), entry(StatusRevoked, SigningInterval{From: from, Until: until, RevokedAt: revoked}), testComputedAt)
	if msg := v.Errors[0].Message; !strings.Contains(msg, "whatever date they bear") {
		t.Errorf("revoked, dated before: %s", msg)
	}
	late := until.Add(time.Hour)
	v = Verify(doc(late, true), entry(StatusRetired, SigningInterval{From: from, Until: until}), late)
	if msg := v.Errors[0].Message; !strings.Contains(msg, "until "+until.Format(time.RFC3339)) || !strings.Contains(msg, late.Format(time.RFC3339)) {
		t.Errorf("inactive: %s", msg)
	}
	// A retired key without an interval (a plain JWK set) is refused as
	// retired, as before.
	keys, err := ParseJWKSet([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ed-test","status":"retired"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := verifyBoth(t, doc(testComputedAt, true), keys, testComputedAt); !hasCode(v.Errors, CodeKeyRetired) {
		t.Errorf("retired key of a JWK set: %v", v.Errors)
	}
}

// The document a key history is: its members and their RFC 3339 times.
func TestKeyHistoryDocument(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	until := from.Add(90 * 24 * time.Hour)
	revoked := until.Add(time.Hour)
	h, err := PublicHistoryKey(testEdKey(t), StatusRevoked, SigningInterval{From: from, Until: until, RevokedAt: revoked})
	if err != nil {
		t.Fatal(err)
	}
	got := string(mustMarshal(t, KeyHistory{Keys: []HistoryKey{h}}))
	want := `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ed-test","alg":"EdDSA","use":"sig","status":"revoked","active_from":"2026-01-02T03:04:05.123456Z","active_until":"2026-04-02T03:04:05.123456Z","revoked_at":"2026-04-02T04:04:05.123456Z"}]}`
	if got != want {
		t.Fatalf("history\n%s\nwant\n%s", got, want)
	}
	keys, err := ParseJWKSet([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	iv, ok := keys[0].Interval()
	if !ok || !iv.From.Equal(from) || !iv.Until.Equal(until) || !iv.RevokedAt.Equal(revoked) || keys[0].Status() != KeyRevoked {
		t.Fatalf("parsed %+v %v %v", iv, ok, keys[0].Status())
	}
	for _, c := range []struct {
		status string
		iv     SigningInterval
	}{
		{"lost", SigningInterval{From: from}},
		{StatusActive, SigningInterval{}},
		{StatusActive, SigningInterval{From: from, Until: until}},
		{StatusRetired, SigningInterval{From: from}},
		{StatusRetired, SigningInterval{From: until, Until: from}},
		{StatusRetired, SigningInterval{From: from, Until: until, RevokedAt: revoked}},
		{StatusRevoked, SigningInterval{From: from, Until: until}},
	} {
		if _, err := PublicHistoryKey(testEdKey(t), c.status, c.iv); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s %+v: %v", c.status, c.iv, err)
		}
	}
	if _, err := PublicHistoryKey(testKey(t), StatusActive, SigningInterval{From: from}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an HMAC key in a key history: %v", err)
	}
	const x = `"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1"`
	for _, c := range []struct{ set, bad string }{
		{`{"keys":[{` + x + `,"status":"lost"}]}`, "status"},
		{`{"keys":[{` + x + `,"status":1}]}`, "status must be a string"},
		{`{"keys":[{` + x + `,"active_from":"yesterday"}]}`, "RFC 3339"},
		{`{"keys":[{` + x + `,"status":"retired","active_until":"2026-01-01T00:00:00Z"}]}`, "no active_from"},
		{`{"keys":[{` + x + `,"status":"retired","active_from":"2026-02-01T00:00:00Z","active_until":"2026-01-01T00:00:00Z"}]}`, "before active_from"},
		{`{"keys":[{` + x + `,"status":"active","active_from":"2026-01-01T00:00:00Z","active_until":"2026-02-01T00:00:00Z"}]}`, "no longer active"},
		{`{"keys":[{` + x + `,"status":"revoked","active_from":"2026-01-01T00:00:00Z","active_until":"2026-02-01T00:00:00Z"}]}`, "revoked_at"},
	} {
		if _, err := ParseJWKSet([]byte(c.set)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.bad) {
			t.Errorf("%s: %v; want an error with %q", c.set, err, c.bad)
		}
	}
}
