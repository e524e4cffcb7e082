package passport

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The test key is RFC 8037 Appendix A's: its JWK is that RFC's, and a
// passport it signs verifies offline from the published set alone.
func TestJWKSetRoundTrip(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j, err := PublicJWK(testEdKey(t), "active", created, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got := string(mustMarshal(t, JWKSet{Keys: []JWK{j}}))
	want := `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ed-test","alg":"EdDSA","use":"sig","status":"active","nbf":1767323045}]}`
	if got != want {
		t.Fatalf("set\n%s\nwant\n%s", got, want)
	}
	keys, err := ParseJWKSet([]byte(got))
	if err != nil || len(keys) != 1 || keys[0].ID() != testEdID || keys[0].Alg() != AlgEdDSA || keys[0].CanSign() {
		t.Fatalf("parsed %v %v", keys, err)
	}
	doc, err := newPassport(t, testExample).Sign(testEdKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if v, fast := verifyBoth(t, doc, keys, testComputedAt); !v.Valid || !fast {
		t.Fatalf("offline verification: %v", v.Errors)
	}
	// An HMAC passport cannot be verified from a public set, and is not
	// called tampered for it.
	v := Verify(signedExample(t), keys, testComputedAt)
	if v.Valid || v.DetectedTampering || !hasCode(v.Errors, CodeNoKeys) {
		t.Fatalf("HMAC passport against the set: %+v", v)
	}
	for _, k := range []Key{testKey(t), testIDKey(t), {}} {
		if _, err := PublicJWK(k, "active", created, time.Time{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("published a key that is not an Ed25519 key with an id: %v", err)
		}
	}
	if _, err := PublicJWK(testEdPublic(t).WithStatus(KeyAccepted), "verify-only", created, created.Add(Validity)); err != nil {
		t.Fatal(err)
	}
}

func TestParseJWKSet(t *testing.T) {
	t.Parallel()
	const x = `"x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"`
	ok := `{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":"k1"}`
	cases := []struct {
		name string
		set  string
		n    int    // keys read, when valid
		bad  string // part of the error, when not
	}{
		{"minimal", `{"keys":[` + ok + `]}`, 1, ""},
		{"other types ignored", `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"},{"kty":"OKP","crv":"X25519",` + x + `,"kid":"x"},{"kty":"RSA","kid":"r"},` + ok + `]}`, 1, ""},
		{"unknown members ignored", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":"k1","x5t":"abc"}],"extra":1}`, 1, ""},
		{"empty", `{"keys":[]}`, 0, ""},
		{"not JSON", `keys`, 0, "not a JWK set"},
		{"no keys", `{}`, 0, "no \"keys\""},
		{"trailing data", `{"keys":[]} {}`, 0, "data after"},
		{"x too short", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUR","kid":"k1"}]}`, 0, "x must be"},
		{"x padded", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=","kid":"k1"}]}`, 0, "x must be"},
		{"x standard base64", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k1"}]}`, 0, "x must be"},
		{"private part", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":"k1","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}`, 0, "private part"},
		{"HMAC alg on a public key", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":"k1","alg":"HS256"}]}`, 0, "key confusion"},
		{"use enc", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":"k1","use":"enc"}]}`, 0, "use"},
		{"no kid", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `}]}`, 0, "kid"},
		{"bad kid", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":"a b"}]}`, 0, "kid"},
		{"kid twice", `{"keys":[` + ok + `,` + ok + `]}`, 0, "twice"},
		{"kid not a string", `{"keys":[{"kty":"OKP","crv":"Ed25519",` + x + `,"kid":1}]}`, 0, "kid must be a string"},
		{"too large", `{"keys":[],"pad":"` + strings.Repeat("x", MaxKeySetSize) + `"}`, 0, "limit"},
	}
	for _, c := range cases {
		keys, err := ParseJWKSet([]byte(c.set))
		switch {
		case c.bad == "" && (err != nil || len(keys) != c.n):
			t.Errorf("%s: %d keys, %v; want %d", c.name, len(keys), err, c.n)
		case c.bad != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%s: %v; want an error with %q", c.name, err, c.bad)
		}
	}
	// What ParseJWKSet reads, PublicJWK writes back unchanged.
	keys, err := ParseJWKSet([]byte(`{"keys":[` + ok + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	j, err := PublicJWK(keys[0], "", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var want JWK
	if err := json.Unmarshal([]byte(ok), &want); err != nil {
		t.Fatal(err)
	}
	want.Alg, want.Use = AlgEdDSA, "sig"
	if !bytes.Equal(mustMarshal(t, j), mustMarshal(t, want)) {
		t.Fatalf("%s\n%s", mustMarshal(t, j), mustMarshal(t, want))
	}
}
