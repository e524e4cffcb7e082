package vc

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/site"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// A published Multikey: 1EdTech's Open Badges 3.0 Data Integrity test
// vector (public key 4bdeafde… as z6MkjZRZ…).
func TestMultikeyVector(t *testing.T) {
	pub, _ := hex.DecodeString("4bdeafde2ea8beefadd8c699b5c7e0704cf51154d52e17b20b71337ca04cc5a5")
	if got := Multikey(pub); got != "z6MkjZRZv3aez3r18pB1RBFJR1kwUVJ5jHt92JmQwXbd5hwi" {
		t.Fatalf("Multikey = %s", got)
	}
	for _, b := range [][]byte{nil, {0}, {0, 0, 1}, []byte("Hello World!"), pub} {
		got, ok := unbase58(base58(b))
		if !ok || !bytes.Equal(got, b) && !(len(b) == 0 && len(got) == 0) {
			t.Errorf("base58 round trip of %x: %x %v", b, got, ok)
		}
	}
	if base58([]byte("Hello World!")) != "2NEpo7TZRRrLZSi2U" {
		t.Errorf("base58(Hello World!) = %s", base58([]byte("Hello World!")))
	}
}

var testSite = site.MustNew("https://scores.example.com")

func testKey(t *testing.T) passport.Key {
	t.Helper()
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	k, err := passport.NewEd25519Key(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	k, err = k.WithID("eddsa-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testPassport(t *testing.T, k passport.Key, at time.Time) []byte {
	t.Helper()
	r, err := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	if err != nil {
		t.Fatal(err)
	}
	p, err := passport.New("agent-7", "swarmscore", r, at)
	if err != nil {
		t.Fatal(err)
	}
	p.AgentPassportID = "c8e0a5d1-c2ae-435e-9f74-2619d7edb4aa"
	doc, err := p.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestCredential(t *testing.T) {
	k := testKey(t)
	doc := testPassport(t, k, time.Date(2026, 11, 28, 11, 16, 2, 0, time.UTC))
	cred, err := Credential(doc, k, testSite, 1, 41)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Credential(doc, k, testSite, 1, 41)
	if !bytes.Equal(cred, again) {
		t.Error("the same passport gave two credentials")
	}
	if err := Verify(cred, k.Public()); err != nil {
		t.Fatalf("Verify: %v\n%s", err, cred)
	}
	var c struct {
		Context           []string        `json:"@context"`
		ID                string          `json:"id"`
		Type              []string        `json:"type"`
		Issuer            string          `json:"issuer"`
		ValidFrom         string          `json:"validFrom"`
		ValidUntil        string          `json:"validUntil"`
		CredentialSubject json.RawMessage `json:"credentialSubject"`
		CredentialStatus  map[string]string
		Proof             map[string]any
	}
	if err := json.Unmarshal(cred, &c); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Context, []string{ContextV2}) || c.ID != "urn:uuid:c8e0a5d1-c2ae-435e-9f74-2619d7edb4aa" ||
		!slices.Equal(c.Type, []string{"VerifiableCredential", "SwarmScoreCredential"}) || c.Issuer != "did:web:scores.example.com" ||
		c.ValidFrom != "2026-11-28T11:16:02Z" || c.ValidUntil != "2026-12-05T11:16:02Z" {
		t.Errorf("credential %s", cred)
	}
	if !bytes.Equal(c.CredentialSubject, doc) {
		t.Errorf("credentialSubject %s\nis not the passport %s", c.CredentialSubject, doc)
	}
	st := c.CredentialStatus
	if st["type"] != "BitstringStatusListEntry" || st["statusPurpose"] != "revocation" || st["statusListIndex"] != "41" ||
		st["statusListCredential"] != "https://scores.example.com/swarmscore/credentials/status/1" ||
		st["id"] != "https://scores.example.com/swarmscore/credentials/status/1#41" {
		t.Errorf("credentialStatus %v", st)
	}
	p := c.Proof
	if p["type"] != "DataIntegrityProof" || p["cryptosuite"] != "eddsa-jcs-2022" || p["created"] != "2026-11-28T11:16:02Z" ||
		p["verificationMethod"] != "did:web:scores.example.com#eddsa-0123456789abcdef" || p["proofPurpose"] != "assertionMethod" ||
		!strings.HasPrefix(p["proofValue"].(string), "z") {
		t.Errorf("proof %v", p)
	}
	// Every change to what the proof covers is caught.
	for _, tamper := range []struct{ from, to string }{
		{`"value":760`, `"value":761`},
		{`"statusListIndex":"41"`, `"statusListIndex":"42"`},
		{`"validUntil":"2026-12-05T11:16:02Z"`, `"validUntil":"2027-12-05T11:16:02Z"`},
		{`"created":"2026-11-28T11:16:02Z"`, `"created":"2026-11-28T11:16:03Z"`},
		{`"proofPurpose":"assertionMethod"`, `"proofPurpose":"authentication"`},
	} {
		bad := bytes.Replace(cred, []byte(tamper.from), []byte(tamper.to), 1)
		if bytes.Equal(bad, cred) {
			t.Fatalf("%s is not in the credential", tamper.from)
		}
		if err := Verify(bad, k.Public()); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("%s -> %s: %v", tamper.from, tamper.to, err)
		}
	}
	other, _, _ := ed25519.GenerateKey(nil)
	if err := Verify(cred, other); err == nil {
		t.Error("another key verified the credential")
	}
	hk, _ := passport.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if _, err := Credential(doc, hk, testSite, 1, 41); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("an HMAC key: %v", err)
	}
}

func TestStatusList(t *testing.T) {
	k := testKey(t)
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	revoked := []int64{0, 7, 8, 41, service.StatusListSize - 1}
	doc, err := StatusListCredential(testSite, service.StatusList{List: 1, Revoked: revoked, Key: k, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(doc, k.Public()); err != nil {
		t.Fatal(err)
	}
	var c struct {
		ID                string
		Type              []string
		CredentialSubject map[string]string
	}
	json.Unmarshal(doc, &c)
	if c.ID != "https://scores.example.com/swarmscore/credentials/status/1" || c.CredentialSubject["type"] != "BitstringStatusList" ||
		c.CredentialSubject["statusPurpose"] != "revocation" || !slices.Contains(c.Type, "BitstringStatusListCredential") {
		t.Errorf("status list %s", doc)
	}
	got, err := Revoked(c.CredentialSubject["encodedList"])
	if err != nil || !slices.Equal(got, revoked) {
		t.Errorf("Revoked = %v, %v; want %v", got, err, revoked)
	}
	if _, err := StatusListCredential(testSite, service.StatusList{List: 1, Revoked: []int64{service.StatusListSize}, Key: k, Now: now}); err == nil {
		t.Error("an index past the list was accepted")
	}
}

func TestDIDDocument(t *testing.T) {
	k := testKey(t)
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	keys := []service.VerificationKey{
		{ID: "eddsa-old", Public: k.Public(), State: keyring.Revoked, StateChangedAt: at},
		{ID: "eddsa-retired", Public: k.Public(), State: keyring.Retired},
		{ID: "eddsa-0123456789abcdef", Public: k.Public(), State: keyring.Active},
	}
	doc, err := DIDDocument(testSite, keys)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Context            []string `json:"@context"`
		ID                 string
		VerificationMethod []map[string]string
		AssertionMethod    []string
	}
	json.Unmarshal(doc, &d)
	if d.ID != "did:web:scores.example.com" || len(d.VerificationMethod) != 3 ||
		!slices.Equal(d.AssertionMethod, []string{"did:web:scores.example.com#eddsa-0123456789abcdef"}) {
		t.Fatalf("DID document %s", doc)
	}
	if vm := d.VerificationMethod[0]; vm["revoked"] != "2026-11-01T00:00:00Z" || vm["type"] != "Multikey" ||
		vm["controller"] != d.ID || vm["publicKeyMultibase"] != Multikey(k.Public()) {
		t.Errorf("revoked method %v", vm)
	}
	if _, ok := d.VerificationMethod[2]["revoked"]; ok {
		t.Error("the active key is marked revoked")
	}
}
