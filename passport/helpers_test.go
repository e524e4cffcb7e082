package passport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/score"
)

// Fixtures shared by the tests. The secret is 39 ASCII bytes, used literally.
const (
	testSecret = "swarmscore-example-key-0123456789abcdef"
	testUUID   = "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d90"
)

var (
	testComputedAt = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	testExample    = score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38}
)

// The Ed25519 test key: a fixed seed, so documents are reproducible.
const (
	testEdSeed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60" // RFC 8032 §7.1 test 1
	testEdID   = "ed-test"
	testHSID   = "hs-test"
)

// testEdKey is the Ed25519 test key, with id testEdID.
func testEdKey(t testing.TB) Key {
	t.Helper()
	seed, _ := hex.DecodeString(testEdSeed)
	k, err := NewEd25519Key(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	if k, err = k.WithID(testEdID); err != nil {
		t.Fatal(err)
	}
	return k
}

// testEdPublic is the public half of testEdKey, with the same id.
func testEdPublic(t testing.TB) Key {
	t.Helper()
	k, err := NewEd25519PublicKey(testEdKey(t).Public())
	if err != nil {
		t.Fatal(err)
	}
	if k, err = k.WithID(testEdID); err != nil {
		t.Fatal(err)
	}
	return k
}

// testIDKey is the HMAC test key with id testHSID.
func testIDKey(t testing.TB) Key {
	t.Helper()
	k, err := testKey(t).WithID(testHSID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testKey(t testing.TB) Key {
	t.Helper()
	k, err := NewKey([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newPassport(t testing.TB, c score.Counts) *Passport {
	t.Helper()
	r, err := score.Compute(c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New("agent-7", "swarmsync.ai", r, testComputedAt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// signedExample is the §6.1 example's counts, issued and signed.
func signedExample(t testing.TB) []byte {
	t.Helper()
	doc, err := newPassport(t, testExample).Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// signedElite is an ELITE passport, whose qualification_gaps are empty.
func signedElite(t testing.TB) []byte {
	t.Helper()
	doc, err := newPassport(t, score.Counts{ConduitTotal: 100, ConduitSuccess: 100, AP2Total: 50, AP2Success: 50}).Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// decodeTree decodes doc into maps and slices, keeping number text.
func decodeTree(t testing.TB, doc []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	return m
}

// naiveMessage is the signed message computed independently of the package:
// the document as a generic tree, issuer.signature deleted, re-encoded and
// canonicalized. It must equal what Verify signs for documents without
// duplicate keys.
func naiveMessage(t testing.TB, tree map[string]any) []byte {
	t.Helper()
	cp := decodeTree(t, mustMarshal(t, tree))
	if iss, ok := cp["issuer"].(map[string]any); ok {
		delete(iss, "signature")
	}
	canonical, err := jcs.Transform(mustMarshal(t, cp))
	if err != nil {
		t.Fatal(err)
	}
	return canonical
}

func hmacHex(secret string, msg []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// resign signs a tree (if it has an issuer object) with the test secret, independently of Sign, so that
// tests can build documents whose signature is valid but whose content is
// not.
func resign(t testing.TB, tree map[string]any) []byte {
	t.Helper()
	sig := hmacHex(testSecret, naiveMessage(t, tree))
	if iss, ok := tree["issuer"].(map[string]any); ok {
		iss["signature"] = sig
	}
	return mustMarshal(t, tree)
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func codes(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Code
	}
	return out
}

func hasCode(ps []Problem, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

// verifyBoth verifies doc with Verify and with each path alone, fails the
// test unless Verify's verdict is the slow path's in every respect (and the
// fast path's, when the fast path decides), and returns Verify's result. fast
// reports whether the fast path decided.
func verifyBoth(t testing.TB, doc []byte, keys []Key, at time.Time) (v *Verification, fast bool) {
	t.Helper()
	return verifyBothWith(t, doc, keys, at, Acceptance{})
}

// verifyBothWith is verifyBoth with acc.Verify.
func verifyBothWith(t testing.TB, doc []byte, keys []Key, at time.Time, acc Acceptance) (v *Verification, fast bool) {
	t.Helper()
	v = acc.Verify(doc, keys, at)
	slow := verifySlow(doc, keys, at, acc)
	f := verifyFast(doc, keys, at, acc)
	others := []struct {
		name string
		v    *Verification
	}{{"the slow path", slow}}
	if f != nil {
		others = append(others, struct {
			name string
			v    *Verification
		}{"the fast path", f})
	}
	for _, other := range others {
		if got, want := mustMarshal(t, v), mustMarshal(t, other.v); !bytes.Equal(got, want) {
			t.Fatalf("Verify (fast path decided: %v) says\n%s\n%s says\n%s\nfor %q", f != nil, got, other.name, want, doc)
		}
		if (v.Passport == nil) != (other.v.Passport == nil) || v.KeyIndex != other.v.KeyIndex || !bytes.Equal(v.Document, other.v.Document) {
			t.Fatalf("Verify and %s disagree: passport %v/%v, key %d/%d, for %q", other.name, v.Passport != nil, other.v.Passport != nil, v.KeyIndex, other.v.KeyIndex, doc)
		}
		if v.Passport != nil && !bytes.Equal(mustMarshal(t, v.Passport), mustMarshal(t, other.v.Passport)) {
			t.Fatalf("Verify and %s read different passports:\n%s\n%s", other.name, mustMarshal(t, v.Passport), mustMarshal(t, other.v.Passport))
		}
	}
	return v, f != nil
}
