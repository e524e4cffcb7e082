package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var testTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const testSecret = "0123456789abcdef0123456789abcdef"

func testHMAC(t testing.TB) *HMACKey {
	t.Helper()
	k, err := NewHMACKey("ckpt-hs-1", []byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testEd25519(t testing.TB) *Ed25519Signer {
	t.Helper()
	s, err := NewEd25519Signer("ckpt-ed-1", ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unsigned returns checkpoint 17 over testLeaves(5), not yet signed.
func unsigned(t testing.TB) Checkpoint {
	t.Helper()
	tr, err := NewTree(testLeaves(5))
	if err != nil {
		t.Fatal(err)
	}
	return Checkpoint{Number: 17, Time: testTime, Agents: tr.Size(), Root: tr.Root(), Environment: "production",
		Issuer: Issuer{Platform: "SwarmScore"}}
}

func signed(t testing.TB, s Signer) Checkpoint {
	t.Helper()
	c := unsigned(t)
	if err := c.Sign(s); err != nil {
		t.Fatal(err)
	}
	return c
}

func marshal(t testing.TB, c Checkpoint) []byte {
	t.Helper()
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oracle is the RFC 8785 form of c as gowebpki/jcs computes it from a
// generic encoding/json document.
func oracle(t testing.TB, c *Checkpoint, withSignature bool) []byte {
	t.Helper()
	issuer := map[string]any{"platform": c.Issuer.Platform, "kid": c.Issuer.KeyID, "alg": c.Issuer.Alg}
	if withSignature {
		if c.Issuer.Alg == HS256 {
			issuer["signature"] = hex.EncodeToString(c.Issuer.Signature)
		} else {
			issuer["signature"] = base64.RawURLEncoding.EncodeToString(c.Issuer.Signature)
		}
	}
	doc := map[string]any{"type": Type, "checkpoint": c.Number, "time": c.Time.UTC().Format(time.RFC3339),
		"agents": c.Agents, "root": hex.EncodeToString(c.Root[:]), "environment": c.Environment, "issuer": issuer}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSignParseVerify(t *testing.T) {
	ed := testEd25519(t)
	for _, k := range []struct {
		s Signer
		v Verifier
	}{{testHMAC(t), testHMAC(t)}, {ed, ed.Verifier()}} {
		t.Run(k.s.Alg(), func(t *testing.T) {
			c := signed(t, k.s)
			if c.Issuer.KeyID != k.s.KeyID() || c.Issuer.Alg != k.s.Alg() || len(c.Issuer.Signature) != sigSize(k.s.Alg()) {
				t.Fatalf("issuer %+v", c.Issuer)
			}
			if err := c.Verify(k.v); err != nil {
				t.Fatal(err)
			}
			doc := marshal(t, c)
			if want := oracle(t, &c, true); !bytes.Equal(doc, want) {
				t.Fatalf("document\n%s\nRFC 8785 form\n%s", doc, want)
			}
			msg, err := c.SignedMessage()
			if err != nil {
				t.Fatal(err)
			}
			if want := oracle(t, &c, false); !bytes.Equal(msg, want) {
				t.Fatalf("signed message\n%s\nRFC 8785 form\n%s", msg, want)
			}
			got, err := Parse(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Time.Equal(c.Time) || got.Time.Location() != time.UTC {
				t.Fatalf("time %v", got.Time)
			}
			got.Time = c.Time
			if fmt.Sprint(got) != fmt.Sprint(c) {
				t.Fatalf("parsed\n%+v\nsigned\n%+v", got, c)
			}
			if err := got.Verify(k.v); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "checkpoint-"+strings.ToLower(k.s.Alg())+".json", doc)
		})
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, '\n'), want) {
		t.Fatalf("%s changed: the format, the leaf encoding, the tree or the signature moved (go test -update if intended)\ngot  %s\nwant %s", path, got, want)
	}
}

// TestGoldenVerifies reads the archived documents as a verifier would: from
// the bytes alone.
func TestGoldenVerifies(t *testing.T) {
	ed := testEd25519(t)
	for name, v := range map[string]Verifier{"checkpoint-hs256.json": testHMAC(t), "checkpoint-eddsa.json": ed.Verifier()} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.Verify(v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := Extends(c, testLeaves(5)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Audit bundles: each agent's head is provably in the archived tree.
		leaves := testLeaves(5)
		tr, _ := NewTree(leaves)
		for i, l := range leaves {
			p, _ := tr.Prove(int64(i))
			if err := c.VerifyInclusion(l, p); err != nil {
				t.Fatalf("%s: leaf %d: %v", name, i, err)
			}
			p.Index = (p.Index + 1) % 5
			if err := c.VerifyInclusion(l, p); !errors.Is(err, ErrProof) || !strings.HasPrefix(err.Error(), "checkpoint 17: ") {
				t.Fatalf("%s: leaf %d at another index: %v", name, i, err)
			}
		}
	}
}

// TestTamperedFails: changing any member after signing breaks the signature.
func TestTamperedFails(t *testing.T) {
	ed := testEd25519(t)
	for _, k := range []struct {
		s Signer
		v Verifier
	}{{testHMAC(t), testHMAC(t)}, {ed, ed.Verifier()}} {
		c := signed(t, k.s)
		edits := map[string]func(*Checkpoint){
			"number":      func(c *Checkpoint) { c.Number++ },
			"time":        func(c *Checkpoint) { c.Time = c.Time.Add(time.Second) },
			"agents":      func(c *Checkpoint) { c.Agents-- },
			"root":        func(c *Checkpoint) { c.Root[31] ^= 1 },
			"environment": func(c *Checkpoint) { c.Environment = "staging" },
			"platform":    func(c *Checkpoint) { c.Issuer.Platform += " " },
			"kid":         func(c *Checkpoint) { c.Issuer.KeyID += "x" },
			"signature": func(c *Checkpoint) {
				c.Issuer.Signature = append([]byte{c.Issuer.Signature[0] ^ 1}, c.Issuer.Signature[1:]...)
			},
		}
		for name, edit := range edits {
			bad := c
			bad.Issuer.Signature = append([]byte(nil), c.Issuer.Signature...)
			edit(&bad)
			if err := bad.Verify(k.v); !errors.Is(err, ErrSignature) || !errors.Is(err, errkind.ErrInvalid) {
				t.Errorf("%s: %s edited: %v", k.s.Alg(), name, err)
			}
			// The same through the published bytes.
			parsed, err := Parse(marshal(t, bad))
			if err != nil {
				t.Fatal(err)
			}
			if err := parsed.Verify(k.v); !errors.Is(err, ErrSignature) {
				t.Errorf("%s: %s edited in the document: %v", k.s.Alg(), name, err)
			}
		}
	}
}

func TestVerifierRefusesOtherKeys(t *testing.T) {
	hs := signed(t, testHMAC(t))
	ed := testEd25519(t)
	other, _ := NewHMACKey("ckpt-hs-1", []byte(strings.Repeat("z", 32)))
	otherKid, _ := NewHMACKey("ckpt-hs-2", []byte(testSecret))
	edSameKid, _ := NewEd25519Verifier("ckpt-hs-1", ed.Verifier().pub)
	for name, v := range map[string]Verifier{"another secret": other, "another kid": otherKid, "an Ed25519 key of the same kid": edSameKid} {
		if err := hs.Verify(v); !errors.Is(err, ErrSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// An HS256 key must not accept an EdDSA document that names it.
	e := signed(t, ed)
	e.Issuer.KeyID = "ckpt-hs-1"
	if err := e.Verify(testHMAC(t)); !errors.Is(err, ErrSignature) {
		t.Errorf("EdDSA document under an HS256 key: %v", err)
	}
}

type fakeSigner struct {
	kid, alg string
	sig      []byte
	err      error
}

func (f fakeSigner) KeyID() string               { return f.kid }
func (f fakeSigner) Alg() string                 { return f.alg }
func (f fakeSigner) Sign([]byte) ([]byte, error) { return f.sig, f.err }

func TestSignRefuses(t *testing.T) {
	good := fakeSigner{kid: "k", alg: HS256, sig: make([]byte, 32)}
	fields := map[string]func(*Checkpoint){
		"number 0":           func(c *Checkpoint) { c.Number = 0 },
		"number above 2^53":  func(c *Checkpoint) { c.Number = MaxInteger + 1 },
		"negative agents":    func(c *Checkpoint) { c.Agents = -1 },
		"agents above 2^53":  func(c *Checkpoint) { c.Agents = MaxInteger + 1 },
		"no time":            func(c *Checkpoint) { c.Time = time.Time{} },
		"fractional time":    func(c *Checkpoint) { c.Time = testTime.Add(time.Millisecond) },
		"year 10000":         func(c *Checkpoint) { c.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"no environment":     func(c *Checkpoint) { c.Environment = "" },
		"spaced environment": func(c *Checkpoint) { c.Environment = "prod env" },
		"no platform":        func(c *Checkpoint) { c.Issuer.Platform = "" },
		"long platform":      func(c *Checkpoint) { c.Issuer.Platform = strings.Repeat("p", 257) },
		"control platform":   func(c *Checkpoint) { c.Issuer.Platform = "a\nb" },
		"DEL platform":       func(c *Checkpoint) { c.Issuer.Platform = "a\x7f" },
		"U+FFFD platform":    func(c *Checkpoint) { c.Issuer.Platform = "a\ufffd" },
		"bad UTF-8 platform": func(c *Checkpoint) { c.Issuer.Platform = "a\xff" },
	}
	for name, edit := range fields {
		c := unsigned(t)
		edit(&c)
		before := fmt.Sprint(c)
		if err := c.Sign(good); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if fmt.Sprint(c) != before {
			t.Errorf("%s: the failed Sign changed the checkpoint", name)
		}
	}
	boom := errors.New("keyring down")
	signers := map[string]fakeSigner{
		"bad kid":        {kid: "a b", alg: HS256, sig: make([]byte, 32)},
		"bad alg":        {kid: "k", alg: "none", sig: make([]byte, 32)},
		"short HS256":    {kid: "k", alg: HS256, sig: make([]byte, 31)},
		"HS256-size Ed":  {kid: "k", alg: EdDSA, sig: make([]byte, 32)},
		"failing signer": {kid: "k", alg: EdDSA, err: boom},
	}
	for name, s := range signers {
		c := unsigned(t)
		err := c.Sign(s)
		if s.err != nil {
			if !errors.Is(err, boom) || errkind.Of(err) != errkind.Unknown {
				t.Errorf("%s: %v", name, err)
			}
		} else if !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
		if c.Issuer.KeyID != "" || c.Issuer.Signature != nil {
			t.Errorf("%s: the failed Sign changed the issuer to %+v", name, c.Issuer)
		}
	}
	c := unsigned(t)
	c.Issuer.Alg, c.Issuer.KeyID = HS256, "k"
	if _, err := json.Marshal(c); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("marshalling an unsigned checkpoint: %v", err)
	}
	if err := c.Verify(testHMAC(t)); !errors.Is(err, ErrSignature) {
		t.Errorf("verifying an unsigned checkpoint: %v", err)
	}
	c = signed(t, testHMAC(t))
	c.Environment = ""
	if err := c.Verify(testHMAC(t)); !errors.Is(err, errkind.ErrInvalid) || errors.Is(err, ErrSignature) {
		t.Errorf("verifying an invalid checkpoint: %v", err)
	}
}

// TestPlatformCanonical: platforms that need JSON escapes or are not ASCII
// sign the RFC 8785 form.
func TestPlatformCanonical(t *testing.T) {
	for _, p := range []string{`quote " and \ backslash`, "<&> html", "é ü 日本 😀", "\u2028\u2029 separators", "/slash"} {
		c := unsigned(t)
		c.Issuer.Platform = p
		if err := c.Sign(testHMAC(t)); err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if doc, want := marshal(t, c), oracle(t, &c, true); !bytes.Equal(doc, want) {
			t.Errorf("%q:\n%s\nwant\n%s", p, doc, want)
		}
		// encoding/json re-escapes some characters; the document still
		// reads and verifies.
		escaped, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range [][]byte{marshal(t, c), escaped} {
			back, err := Parse(doc)
			if err != nil || back.Issuer.Platform != p || back.Verify(testHMAC(t)) != nil {
				t.Errorf("%q: %s parsed %q, %v", p, doc, back.Issuer.Platform, err)
			}
		}
	}
}

// TestLargestDocument: every member at its longest (a platform of quotes,
// each escaped) still fits MaxDocumentSize and reads back.
func TestLargestDocument(t *testing.T) {
	c := Checkpoint{Number: MaxInteger, Agents: MaxInteger, Time: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		Environment: strings.Repeat("e", 128), Issuer: Issuer{Platform: strings.Repeat(`"`, maxPlatformLen)}}
	s, err := NewEd25519Signer(strings.Repeat("k", 128), ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sign(s); err != nil {
		t.Fatal(err)
	}
	doc := marshal(t, c)
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, doc, "", "    ")
	for _, b := range [][]byte{doc, pretty.Bytes()} {
		got, err := Parse(b)
		if err != nil || got.Verify(s.Verifier()) != nil {
			t.Fatalf("%d-byte document: %v", len(b), err)
		}
	}
}

func TestKeysDoNotPrintSecrets(t *testing.T) {
	hs := testHMAC(t)
	ed := testEd25519(t)
	for _, v := range []any{hs, ed, *hs, *ed} {
		out := fmt.Sprintf("%v %+v %#v %s %x %q", v, v, v, v, v, v)
		for _, secret := range []string{testSecret, hex.EncodeToString([]byte(testSecret)), hex.EncodeToString(ed.priv[:8]), fmt.Sprint([]byte(testSecret)[:4])} {
			if strings.Contains(out, secret) {
				t.Fatalf("%T prints its secret: %s", v, out)
			}
		}
	}
}

func TestNewKeysRefuse(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	cases := map[string]error{}
	_, cases["short HMAC secret"] = NewHMACKey("k", make([]byte, 31))
	_, cases["HMAC kid"] = NewHMACKey("", make([]byte, 32))
	_, cases["short private key"] = NewEd25519Signer("k", priv[:32])
	_, cases["Ed25519 signer kid"] = NewEd25519Signer("k k", priv)
	_, cases["long public key"] = NewEd25519Verifier("k", append(pub, 0))
	_, cases["Ed25519 verifier kid"] = NewEd25519Verifier(strings.Repeat("k", 129), pub)
	for name, err := range cases {
		if !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := fmt.Sprint(cases["short HMAC secret"]); strings.Contains(err, "\x00") {
		t.Errorf("the error shows key bytes: %q", err)
	}
	// Keys copy their material: the caller's buffer may be wiped.
	secret := []byte(testSecret)
	k, _ := NewHMACKey("k", secret)
	sig, _ := k.Sign([]byte("m"))
	clear(secret)
	if k.Verify("k", HS256, []byte("m"), sig) != nil {
		t.Error("the HMAC key shares the caller's secret")
	}
	s, _ := NewEd25519Signer("k", priv)
	v, _ := NewEd25519Verifier("k", pub)
	sig, _ = s.Sign([]byte("m"))
	clear(priv)
	clear(pub)
	if v.Verify("k", EdDSA, []byte("m"), sig) != nil || s.Verifier().Verify("k", EdDSA, []byte("m"), sig) != nil {
		t.Error("the Ed25519 keys share the caller's key")
	}
}
