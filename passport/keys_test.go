package passport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// A key with an id writes issuer.kid and issuer.alg inside the signature;
// the document stays canonical and takes the fast path.
func TestSignWithKeyID(t *testing.T) {
	t.Parallel()
	for _, k := range []Key{testIDKey(t), testEdKey(t)} {
		p := newPassport(t, testExample)
		doc, err := p.Sign(k)
		if err != nil {
			t.Fatal(err)
		}
		want := `"issuer":{"alg":"` + k.Alg() + `","computed_at":"2026-03-17T14:30:00Z","kid":"` + k.ID() + `","platform":"swarmsync.ai","signature":"`
		if !bytes.Contains(doc, []byte(want)) || p.Issuer.KID != k.ID() || p.Issuer.Alg != k.Alg() {
			t.Fatalf("%s: issuer is not %s…:\n%s", k.Alg(), want, doc)
		}
		if c, err := jcs.Transform(doc); err != nil || !bytes.Equal(c, doc) {
			t.Fatalf("%s: not canonical: %v", k.Alg(), err)
		}
		v, fast := verifyBoth(t, doc, []Key{testKey(t), testIDKey(t), testEdPublic(t)}, testComputedAt)
		checkVerification(t, v)
		if !v.Valid || !fast || v.Passport.Issuer.KID != k.ID() || v.Passport.Issuer.Alg != k.Alg() {
			t.Fatalf("%s: valid=%v fast=%v %v %+v", k.Alg(), v.Valid, fast, v.Errors, v.Passport.Issuer)
		}
		// A kid is checked with its key only: the first HMAC key of the
		// ring has the same secret and no id, and is not the one used.
		if want := map[string]int{AlgHS256: 1, AlgEdDSA: 2}[k.Alg()]; v.KeyIndex != want {
			t.Fatalf("%s: KeyIndex %d, want %d", k.Alg(), v.KeyIndex, want)
		}
	}
	// A key without an id writes neither: the §6.1 issuer.
	doc := signedExample(t)
	if bytes.Contains(doc, []byte(`"kid"`)) || bytes.Contains(doc, []byte(`"alg"`)) {
		t.Fatalf("a key without an id wrote kid or alg:\n%s", doc)
	}
}

// Ed25519 passports are the Ed25519 signature, in lowercase hex, of the
// same canonical bytes an HMAC signs: checked here with crypto/ed25519 over
// a message built independently of the package.
func TestEd25519Signature(t *testing.T) {
	t.Parallel()
	doc, err := newPassport(t, testExample).Sign(testEdKey(t))
	if err != nil {
		t.Fatal(err)
	}
	tree := decodeTree(t, doc)
	sig, err := hex.DecodeString(tree["issuer"].(map[string]any)["signature"].(string))
	if err != nil || len(sig) != ed25519.SignatureSize {
		t.Fatalf("signature %x: %v", sig, err)
	}
	if !ed25519.Verify(testEdKey(t).Public(), naiveMessage(t, tree), sig) {
		t.Fatal("crypto/ed25519 does not verify the signature over the canonical message")
	}
	// The public half verifies, and cannot sign.
	if v := Verify(doc, []Key{testEdPublic(t)}, testComputedAt); !v.Valid {
		t.Fatalf("public key: %v", v.Errors)
	}
	if _, err := newPassport(t, testExample).Sign(testEdPublic(t)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a public key signed: %v", err)
	}
	for _, bad := range [][]byte{nil, make([]byte, 31), make([]byte, 65)} {
		if _, err := NewEd25519PublicKey(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("public key of %d bytes: %v", len(bad), err)
		}
		if _, err := NewEd25519Key(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("private key of %d bytes: %v", len(bad), err)
		}
	}
	mismatched := append(ed25519.PrivateKey(nil), ed25519.NewKeyFromSeed(make([]byte, 32))...)
	copy(mismatched[32:], testEdKey(t).Public())
	if _, err := NewEd25519Key(mismatched); !errors.Is(err, ErrInvalid) {
		t.Errorf("a private key whose public half is another key's: %v", err)
	}
	if _, err := testKey(t).WithID("not a kid"); !errors.Is(err, ErrInvalid) {
		t.Errorf("an invalid key id: %v", err)
	}
}

// signWith sets the issuer's kid and alg in tree (none when empty), signs
// its canonical message with sign and returns the document: forgeries and
// documents from other issuers, built without the package.
func signWith(t *testing.T, tree map[string]any, kid, alg string, sign func(msg []byte) []byte) []byte {
	t.Helper()
	iss := tree["issuer"].(map[string]any)
	delete(iss, "kid")
	delete(iss, "alg")
	if kid != "" {
		iss["kid"] = kid
	}
	if alg != "" {
		iss["alg"] = alg
	}
	iss["signature"] = hex.EncodeToString(sign(naiveMessage(t, tree)))
	return mustMarshal(t, tree)
}

func hmacWith(secret []byte) func([]byte) []byte {
	return func(msg []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(msg)
		return m.Sum(nil)
	}
}

// Which key verifies a passport, and each way one can be refused, with its
// own code and tampering flag, on both paths.
func TestVerifyKeyRouting(t *testing.T) {
	t.Parallel()
	tree := func() map[string]any { return decodeTree(t, signedExample(t)) }
	pub := []byte(testEdKey(t).Public())
	edSign := func(msg []byte) []byte { return ed25519.Sign(ed25519.NewKeyFromSeed(mustHex(t, testEdSeed)), msg) }
	hs := hmacWith([]byte(testSecret))
	other, _ := NewKey([]byte(strings.Repeat("other-key-", 4)))
	otherID, _ := other.WithID("hs-other")
	ring := []Key{testIDKey(t), testEdPublic(t)}

	cases := []struct {
		name      string
		doc       []byte
		keys      []Key
		code      string // "" for valid
		keyIndex  int
		tampering bool
	}{
		{"HMAC, kid", signWith(t, tree(), testHSID, AlgHS256, hs), ring, "", 0, false},
		{"HMAC, kid without alg", signWith(t, tree(), testHSID, "", hs), ring, "", 0, false},
		{"Ed25519, kid", signWith(t, tree(), testEdID, AlgEdDSA, edSign), ring, "", 1, false},
		{"Ed25519, no kid", signWith(t, tree(), "", AlgEdDSA, edSign), ring, "", 1, false},
		{"HMAC, no kid, alg", signWith(t, tree(), "", AlgHS256, hs), ring, "", 0, false},
		{"HMAC, no kid: every accepted key tried", signWith(t, tree(), "", "", hs), []Key{otherID, testIDKey(t)}, "", 1, false},

		{"unknown kid", signWith(t, tree(), "hs-gone", AlgHS256, hs), ring, CodeUnknownKey, -1, false},
		{"unsupported alg", signWith(t, tree(), testHSID, "none", hs), ring, CodeUnsupportedAlg, -1, false},
		{"alg switched to EdDSA on an HMAC key", signWith(t, tree(), testHSID, AlgEdDSA, hs), ring, CodeAlgMismatch, -1, true},
		{"alg switched to HS256 on an Ed25519 key", signWith(t, tree(), testEdID, AlgHS256, edSign), ring, CodeKeyConfusion, -1, true},
		{"public key as HMAC secret, kid", signWith(t, tree(), testEdID, AlgHS256, hmacWith(pub)), ring, CodeKeyConfusion, -1, true},
		{"public key as HMAC secret, no alg", signWith(t, tree(), testEdID, "", hmacWith(pub)), ring, CodeKeyConfusion, -1, true},
		{"public key (x) as HMAC secret, no kid", signWith(t, tree(), "", AlgHS256, hmacWith([]byte(base64.RawURLEncoding.EncodeToString(pub)))), ring, CodeKeyConfusion, -1, true},
		{"public key (hex) as HMAC secret, no kid", signWith(t, tree(), "", "", hmacWith([]byte(hex.EncodeToString(pub)))), ring, CodeKeyConfusion, -1, true},
		{"EdDSA claimed, HMAC length", signWith(t, tree(), "", AlgEdDSA, hs), ring, CodeSignatureMalformed, -1, false},
		{"forged under a known kid", signWith(t, tree(), testHSID, AlgHS256, hmacWith([]byte(strings.Repeat("forger-", 6)))), ring, CodeSignatureMismatch, -1, true},

		{"retired key, kid", signWith(t, tree(), testHSID, AlgHS256, hs), []Key{testIDKey(t).WithStatus(KeyRetired)}, CodeKeyRetired, 0, false},
		{"revoked key, kid", signWith(t, tree(), testEdID, AlgEdDSA, edSign), []Key{testEdPublic(t).WithStatus(KeyRevoked)}, CodeKeyRevoked, 0, false},
		{"retired key, no kid", signWith(t, tree(), "", "", hs), []Key{otherID, testKey(t).WithStatus(KeyRetired)}, CodeKeyRetired, 1, false},
		{"revoked key, no kid", signWith(t, tree(), "", "", hs), []Key{testKey(t).WithStatus(KeyRevoked)}, CodeKeyRevoked, 0, false},
		{"forged under a retired kid", signWith(t, tree(), testHSID, AlgHS256, hmacWith([]byte(strings.Repeat("forger-", 6)))), []Key{testIDKey(t).WithStatus(KeyRetired)}, CodeSignatureMismatch, -1, true},

		{"HMAC passport, Ed25519 keys only", signWith(t, tree(), "", "", hs), []Key{testEdPublic(t)}, CodeNoKeys, -1, false},
		{"Ed25519 passport, HMAC keys only", signWith(t, tree(), "", "", edSign), []Key{testKey(t)}, CodeNoKeys, -1, false},
	}
	for _, c := range cases {
		v, _ := verifyBoth(t, c.doc, c.keys, testComputedAt)
		checkVerification(t, v)
		if c.code == "" {
			if !v.Valid || v.KeyIndex != c.keyIndex {
				t.Errorf("%s: valid=%v KeyIndex=%d (want %d) %v", c.name, v.Valid, v.KeyIndex, c.keyIndex, v.Errors)
			}
			continue
		}
		if v.Valid || v.SignatureValid || !v.ScoreValid || !slices.Equal(codes(v.Errors), []string{c.code}) ||
			v.DetectedTampering != c.tampering || v.KeyIndex != c.keyIndex || v.Checks.Signature != CheckFailed {
			t.Errorf("%s: valid=%v signature_valid=%v tampering=%v KeyIndex=%d checks %+v errors %v; want %s, tampering %v, KeyIndex %d",
				c.name, v.Valid, v.SignatureValid, v.DetectedTampering, v.KeyIndex, v.Checks, v.Errors, c.code, c.tampering, c.keyIndex)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A passport computed after the verification instant by more than the
// clock-skew allowance is not yet valid (issue 12); within it, valid.
func TestVerifyNotYetValid(t *testing.T) {
	t.Parallel()
	for _, doc := range [][]byte{signedExample(t), mustMarshal(t, decodeTree(t, signedExample(t)))} {
		v, _ := verifyBoth(t, doc, []Key{testKey(t)}, testComputedAt.Add(-MaxClockSkew))
		checkVerification(t, v)
		if !v.Valid || v.Checks.Expiry != CheckOK {
			t.Fatalf("within the allowance: %+v", v)
		}
		v, _ = verifyBoth(t, doc, []Key{testKey(t)}, testComputedAt.Add(-MaxClockSkew-time.Second))
		checkVerification(t, v)
		if v.Valid || !v.SignatureValid || !v.ScoreValid || v.DetectedTampering || v.Checks.Expiry != CheckNotYetValid ||
			!slices.Equal(codes(v.Errors), []string{CodeNotYetValid}) {
			t.Fatalf("beyond the allowance: %+v", v)
		}
	}
}

// Checks says what ran and what it found.
func TestVerifyChecks(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	tree := decodeTree(t, doc)
	delete(tree["score"].(map[string]any), "tier")
	cases := []struct {
		name string
		doc  []byte
		at   time.Time
		want Checks
	}{
		{"valid", doc, testComputedAt, Checks{CheckOK, CheckOK, CheckOK}},
		{"expired", doc, testComputedAt.Add(Validity), Checks{CheckOK, CheckOK, CheckExpired}},
		{"tampered", bytes.Replace(doc, []byte(`"value":760`), []byte(`"value":761`), 1), testComputedAt, Checks{CheckFailed, CheckFailed, CheckOK}},
		{"malformed, signed", resign(t, tree), testComputedAt, Checks{CheckOK, CheckFailed, CheckOK}},
		{"no expires_at", bytes.Replace(doc, []byte(`"expires_at":"2026-03-24T14:30:00Z",`), nil, 1), testComputedAt, Checks{CheckFailed, CheckFailed, CheckFailed}},
		{"not JSON", []byte("passport"), testComputedAt, Checks{CheckFailed, CheckFailed, CheckFailed}},
		{"too large", bytes.Repeat([]byte(" "), MaxDocumentSize+1), testComputedAt, Checks{CheckFailed, CheckFailed, CheckFailed}},
	}
	for _, c := range cases {
		v, _ := verifyBoth(t, c.doc, []Key{testKey(t)}, c.at)
		checkVerification(t, v)
		if v.Checks != c.want {
			t.Errorf("%s: checks %+v, want %+v (errors %v)", c.name, v.Checks, c.want, v.Errors)
		}
	}
}
