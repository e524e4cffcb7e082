package passport

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

// checkVerification asserts what holds for every verification.
func checkVerification(t *testing.T, v *Verification) {
	t.Helper()
	if v.Errors == nil || v.Warnings == nil {
		t.Fatal("nil errors or warnings")
	}
	if v.Valid != (v.SignatureValid && v.ScoreValid && !hasAny(v.Errors, CodeExpired, CodeNotYetValid)) {
		t.Fatalf("valid=%v but signature_valid=%v score_valid=%v errors %v", v.Valid, v.SignatureValid, v.ScoreValid, v.Errors)
	}
	if (v.Checks.Signature == CheckOK) != v.SignatureValid || (v.Checks.Consistency == CheckOK) != v.ScoreValid ||
		(v.Checks.Expiry == CheckExpired) != hasCode(v.Errors, CodeExpired) && !hasCode(v.Errors, CodeNotYetValid) ||
		(v.Checks.Expiry == CheckNotYetValid) != hasCode(v.Errors, CodeNotYetValid) ||
		(v.Checks.Expiry == CheckFailed) != (v.ExpiresAt == nil) {
		t.Fatalf("checks %+v with signature_valid=%v score_valid=%v errors %v", v.Checks, v.SignatureValid, v.ScoreValid, v.Errors)
	}
	if v.Valid != (len(v.Errors) == 0) {
		t.Fatalf("valid=%v with errors %v", v.Valid, v.Errors)
	}
	if v.ScoreValid && v.Passport == nil {
		t.Fatal("score_valid without a passport")
	}
	if v.DetectedTampering != hasAny(v.Errors, CodeSignatureMismatch, CodeAlgMismatch, CodeKeyConfusion) {
		t.Fatalf("detected_tampering=%v with errors %v", v.DetectedTampering, v.Errors)
	}
	for _, p := range append(v.Errors, v.Warnings...) {
		if p.Code == "" || p.Message == "" {
			t.Fatalf("empty problem %+v", p)
		}
	}
	if _, err := json.Marshal(v); err != nil {
		t.Fatal(err)
	}
}

func FuzzParse(f *testing.F) {
	doc := signedExample(f)
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, doc, "", " ")
	p, err := Parse(doc)
	if err != nil {
		f.Fatal(err)
	}
	spec := mustMarshal(f, p) // §6.1 order
	// Issue 12: a trailing comma in qualification_gaps is invalid JSON.
	trailingComma := bytes.Replace(doc, []byte(`}],"score"`), []byte(`},],"score"`), 1)
	ed, err := newPassport(f, testExample).Sign(testEdKey(f))
	if err != nil {
		f.Fatal(err)
	}
	// Issue 28: a signature in upper case (ERRATA E11).
	upper := bytes.Replace(doc, []byte(p.Issuer.Signature), bytes.ToUpper([]byte(p.Issuer.Signature)), 1)
	for _, seed := range [][]byte{doc, spec, pretty.Bytes(), ed, nil, []byte("{}"), []byte(`{"issuer":{"signature":1}}`),
		[]byte(`{"a":1,"a":2}`), []byte(`[{"\ud800":1e400}]`), doc[:len(doc)/2], trailingComma, upper} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		v, _ := verifyBoth(t, data, []Key{testKey(t), testEdKey(t).WithStatus(KeyRetired)}, testComputedAt)
		checkVerification(t, v)
		if err != nil {
			if _, ok := err.(Problem); !ok {
				t.Fatalf("error %v is not a Problem", err)
			}
			if !hasCode(v.Errors, err.(Problem).Code) {
				t.Fatalf("Parse says %v, Verify says %v", err, v.Errors)
			}
			return
		}
		if p == nil || v.Passport == nil || !json.Valid(data) || len(data) > MaxDocumentSize {
			t.Fatalf("Parse accepted %q", data)
		}
		// What Parse read re-encodes to a document Parse reads the same.
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(again)
		if err != nil {
			t.Fatalf("re-encoded passport: %v\n%s", err, again)
		}
		if b, _ := json.Marshal(q); !bytes.Equal(b, again) {
			t.Fatalf("round trip:\n%s\n%s", again, b)
		}
	})
}

// fuzzAcceptance is a §10.3 transition to the test formula: V1 is accepted
// for passports computed before fuzzV1Until.
var (
	fuzzAcceptance, _ = Transition(scoretest.V11Test, testComputedAt, score.V1)
	fuzzV1Until       = testComputedAt.Add(TransitionPeriod)
)

// FuzzVerify issues passports from fuzzed counts and times, signed by an
// HMAC key without an id, one with an id or an Ed25519 key (chosen by sec):
// each must verify. It then changes one byte (replaces, inserts or deletes
// it): the result must not verify with a valid signature unless the change
// left the signed content the same (layout, an escape, a number's
// spelling), in which case the passport read must be the same too; and both
// paths must agree on it.
func FuzzVerify(f *testing.F) {
	f.Add(uint64(80), uint64(76), uint64(40), uint64(38), uint64(1773757800), uint(40), byte('x'))
	f.Add(uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint(0), byte(' '))
	f.Add(uint64(1<<53-1), uint64(1<<52), uint64(49), uint64(49), uint64(253401696000), uint(200), byte('0'))
	f.Add(uint64(100), uint64(100), uint64(50), uint64(50), uint64(1e9), uint(1000), byte('"'))
	f.Fuzz(func(t *testing.T, ct, cs, at, as uint64, sec uint64, pos uint, b byte) {
		c := score.Counts{ConduitTotal: int64(ct % (MaxCount + 1)), AP2Total: int64(at % (MaxCount + 1))}
		c.ConduitSuccess = int64(cs % uint64(c.ConduitTotal+1))
		c.AP2Success = int64(as % uint64(c.AP2Total+1))
		const lastSecond = 253402300799 - 7*24*3600 // expiry within year 9999
		computed := time.Unix(int64(sec%lastSecond), 0).UTC()
		r, err := score.Compute(c)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New("agent-7", "swarmsync.ai", r, computed)
		if err != nil {
			t.Fatal(err)
		}
		signer := [...]Key{testKey(t), testIDKey(t), testEdKey(t)}[sec%3]
		keys := []Key{testKey(t), testIDKey(t), testEdPublic(t)}
		doc, err := p.Sign(signer)
		if err != nil {
			t.Fatal(err)
		}
		v, fast := verifyBoth(t, doc, keys, computed)
		checkVerification(t, v)
		if !v.Valid || len(v.Warnings) != 0 || !fast {
			t.Fatalf("a passport from Sign does not verify: %v %v\n%s", v.Errors, v.Warnings, doc)
		}
		// Under a transition, V1 is accepted for passports computed before
		// fuzzAcceptance's end only; both paths agree either way.
		if w, _ := verifyBothWith(t, doc, keys, computed, fuzzAcceptance); w.Valid != computed.Before(fuzzV1Until) {
			t.Fatalf("computed at %s, V1 accepted until %s: valid %v %v", computed, fuzzV1Until, w.Valid, w.Errors)
		}

		// The byte at pos replaced, a byte inserted there, and the byte there
		// deleted: the last two shift what follows, as a longer or shorter
		// value would.
		i := int(pos % uint(len(doc)))
		replaced := bytes.Clone(doc)
		replaced[i] = b
		inserted := append(append(append([]byte(nil), doc[:i]...), b), doc[i:]...)
		deleted := append(append([]byte(nil), doc[:i]...), doc[i+1:]...)
		for _, mutated := range [][]byte{replaced, inserted, deleted} {
			if bytes.Equal(mutated, doc) {
				continue
			}
			m, _ := verifyBoth(t, mutated, keys, computed)
			checkVerification(t, m)
			verifyBothWith(t, mutated, keys, computed, fuzzAcceptance)
			if !m.SignatureValid {
				continue
			}
			same := naiveMessage(t, decodeTree(t, mutated))
			if want := naiveMessage(t, decodeTree(t, doc)); !bytes.Equal(same, want) {
				t.Fatalf("signature still valid after a change to the signed content:\n%s\n%s", doc, mutated)
			}
			if m.Valid {
				if got, want := mustMarshal(t, m.Passport), mustMarshal(t, v.Passport); !bytes.Equal(got, want) {
					t.Fatalf("same signed content, different passport:\n%s\n%s", got, want)
				}
			}
		}
	})
}

// FuzzParseJWKSet: a key set or key history from anywhere is read or
// refused (ErrInvalid), never a panic; every key read is an Ed25519 public
// key with a valid id, a key history's interval does not end before it
// starts, only a revoked key has a revocation time, and a key read from a
// history is published back as it was read. A passport signed by the
// example key verifies against the keys read exactly when they accept a
// signature on its date.
func FuzzParseJWKSet(f *testing.F) {
	const x = `"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ed-test"`
	for _, s := range []string{
		`{"keys":[{` + x + `}]}`,
		`{"keys":[{` + x + `,"alg":"EdDSA","use":"sig","status":"verify-only","nbf":1,"exp":2}]}`,
		`{"keys":[{` + x + `,"status":"retired","active_from":"2026-01-01T00:00:00Z","active_until":"2026-03-18T00:00:00.5Z"}]}`,
		`{"keys":[{` + x + `,"status":"revoked","active_from":"2026-01-01T00:00:00Z","active_until":"2026-02-01T00:00:00Z","revoked_at":"2026-02-02T00:00:00Z"}]}`,
		`{"keys":[{"kty":"oct","k":"c2VjcmV0"},{` + x + `,"status":"active","active_from":"2026-03-17T14:35:00+00:00"}]}`,
	} {
		f.Add([]byte(s))
	}
	edDoc, err := newPassport(f, testExample).Sign(testEdKey(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := ParseJWKSet(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("an error that is not ErrInvalid: %v", err)
			}
			return
		}
		for _, k := range keys {
			if k.Alg() != AlgEdDSA || len(k.Public()) != 32 || !validKeyID(k.ID()) || k.CanSign() {
				t.Fatalf("key %q read as %s, %d-byte public key", k.ID(), k.Alg(), len(k.Public()))
			}
			iv, ok := k.Interval()
			if !ok {
				continue
			}
			if iv.From.IsZero() || !iv.Until.IsZero() && iv.Until.Before(iv.From) || (k.Status() == KeyRevoked) != !iv.RevokedAt.IsZero() {
				t.Fatalf("key %q: interval %+v, status %v", k.ID(), iv, k.Status())
			}
			status := StatusActive
			switch {
			case k.Status() == KeyRevoked:
				status = StatusRevoked
			case k.Status() == KeyRetired:
				status = StatusRetired
			case !iv.Until.IsZero():
				status = StatusVerifyOnly
			}
			if _, err := PublicHistoryKey(k, status, iv); err != nil {
				t.Fatalf("key %q read from a history cannot be published back: %v", k.ID(), err)
			}
		}
		v := Verify(edDoc, keys, testComputedAt)
		checkVerification(t, v)
		if v.SignatureValid {
			if k := keys[v.KeyIndex]; !k.acceptsAt(testComputedAt) {
				t.Fatalf("a signature accepted from key %q, which does not accept %s", k.ID(), testComputedAt)
			}
		}
	})
}
