package audit_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
)

var (
	hash0 = strings.Repeat("0", 64)
	hash1 = strings.Repeat("1", 64)
)

// TestParseStrict: every way a document can be other than a bundle is a
// *ParseError, matching errkind.ErrInvalid.
func TestParseStrict(t *testing.T) {
	_, src := audittest.Scenario(t)
	doc := string(build(t, src).AppendJSON(nil))
	withheldDoc := func() string {
		b := build(t, src)
		if _, err := b.Withhold([]audit.Category{audit.Buyers}, bytes.NewReader(make([]byte, 1024))); err != nil {
			t.Fatal(err)
		}
		return string(b.AppendJSON(nil))
	}()
	replace := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("the document has no %q", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	deep := strings.Repeat("[", 70) + strings.Repeat("]", 70)
	for _, tc := range []struct{ name, doc string }{
		{"empty", ""},
		{"not an object", "[]"},
		{"duplicate member", replace(doc, `"agent_id":"a",`, `"agent_id":"a","agent_id":"a",`)},
		{"unknown member", replace(doc, `"withheld":[]`, `"withheld":[],"extra":1`)},
		{"missing member", replace(doc, `"withheld":[],`, ``)},
		{"trailing data", doc + "{}"},
		{"byte order mark", "\uFEFF" + doc},
		{"another type", replace(doc, `swarmscore-audit/v1`, `swarmscore-audit/v2`)},
		{"invalid agent", replace(doc, `"agent_id":"a",`, `"agent_id":"a b",`)},
		{"leading zero", replace(doc, `"from_seq":1`, `"from_seq":01`)},
		{"exponent", replace(doc, `"from_seq":1`, `"from_seq":1e0`)},
		{"fraction", replace(doc, `"from_seq":1`, `"from_seq":1.0`)},
		{"negative", replace(doc, `"from_seq":1`, `"from_seq":-1`)},
		{"above 2^53", replace(doc, `"from_seq":1`, `"from_seq":9007199254740992`)},
		{"upper-case hash", replace(doc, `"prev":"0000`, `"prev":"000A`)},
		{"short hash", replace(doc, `"prev":"0000`, `"prev":"000`)},
		{"time with an offset", replace(doc, `"as_of":"2026-11-22T00:00:00Z"`, `"as_of":"2026-11-22T01:00:00+01:00"`)},
		{"time with a zero fraction", replace(doc, `"as_of":"2026-11-22T00:00:00Z"`, `"as_of":"2026-11-22T00:00:00.000Z"`)},
		{"window not 90 days", replace(doc, `"start":"2026-08-24T00:00:00Z"`, `"start":"2026-08-25T00:00:00Z"`)},
		{"lone surrogate", replace(doc, `"id":"c1"`, `"id":"c1\ud800"`)},
		{"invalid UTF-8", replace(doc, `"id":"c1"`, "\"id\":\"c1\xff\"")},
		{"raw control character", replace(doc, `"id":"c1"`, "\"id\":\"c1\x01\"")},
		{"nested too deep", replace(doc, `"checkpoint":{`, `"checkpoint":{"x":`+deep+`,`)},
		{"content member name", replace(doc, `"buyer_id":""`, `"Buyer_id":""`)},
		{"content of another type", replace(doc, `"escrow_amount_cents":0`, `"escrow_amount_cents":true`)},
		{"unknown outcome", replace(doc, `"outcome":"counted"`, `"outcome":"maybe"`)},
		{"tier", replace(doc, `"tier":"NONE"`, `"tier":"GOLD"`)},
		{"modifier", replace(doc, `"escrow_modifier":0.9808}`, `"escrow_modifier":"0.9808"}`)},
		{"proof", replace(doc, `"leaf_index":0`, `"leaf_index":7`)},
		{"passport not an object", replace(doc, `"passport":{`, `"passport":[{`)},
		{"categories unsorted", replace(doc, `"withheld":[]`, `"withheld":["reasons","buyers"]`)},
		{"unknown category", replace(doc, `"withheld":[]`, `"withheld":["emails"]`)},
		{"short commitment", strings.Replace(withheldDoc, `"buyer_id":{"withheld":"`, `"buyer_id":{"withheld":"0`, 1)},
		{"withheld with more", strings.Replace(withheldDoc, `"buyer_id":{"withheld":`, `"buyer_id":{"salt":"","withheld":`, 1)},
		{"sealed_by not an id", replace(doc, `{"hash":"`, `{"sealed_by":"e 1","hash":"`)},
		{"sealed_by not a string", replace(doc, `{"hash":"`, `{"sealed_by":1,"hash":"`)},
		{"digests unsorted", replace(doc, `"chains":[`, `"sealings":[{"erasure":"e-1","digests":["`+hash1+`","`+hash0+`"]}],"chains":[`)},
		{"digest twice", replace(doc, `"chains":[`, `"sealings":[{"erasure":"e-1","digests":["`+hash0+`","`+hash0+`"]}],"chains":[`)},
		{"sealings unsorted", replace(doc, `"chains":[`, `"sealings":[{"erasure":"e-2","digests":[]},{"erasure":"e-1","digests":[]}],"chains":[`)},
		{"sealing not an id", replace(doc, `"chains":[`, `"sealings":[{"erasure":"e 1","digests":[]}],"chains":[`)},
		{"sealing with more", replace(doc, `"chains":[`, `"sealings":[{"erasure":"e-1","digests":[],"pseudonym":"x"}],"chains":[`)},
		{"no hold", replace(doc, `"chains":[`, `"holds":[],"hold_passports":[],"chains":[`)},
		{"holds without their passports", replace(doc, `"chains":[`, `"holds":[{"transaction_id":"t","head":{"seq":0,"hash":"`+hash0+`"},"steps":[]}],"chains":[`)},
		{"hold id not an id", replace(doc, `"chains":[`, `"holds":[{"transaction_id":"t 1","head":{"seq":0,"hash":"`+hash0+`"},"steps":[]}],"hold_passports":[],"chains":[`)},
		{"hold passport not an object", replace(doc, `"chains":[`, `"holds":[{"transaction_id":"t","head":{"seq":0,"hash":"`+hash0+`"},"steps":[]}],"hold_passports":[null],"chains":[`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Parse([]byte(tc.doc))
			var pe *audit.ParseError
			if !errors.As(err, &pe) || !errors.Is(err, errkind.ErrInvalid) {
				t.Fatalf("Parse: %v", err)
			}
			if r := audit.VerifyDocument([]byte(tc.doc), audittest.Keys(t)); r.Valid || r.Discrepancy.Code != audit.CodeMalformed {
				t.Fatalf("VerifyDocument: %+v", r)
			}
		})
	}
}

// TestVerifyWarnings: what a verifying bundle cannot show is said.
func TestVerifyWarnings(t *testing.T) {
	m, src := audittest.Scenario(t)

	bare := src
	bare.Checkpoint, bare.Leaves, bare.Passport = nil, nil, nil
	r := mustVerify(t, build(t, bare))
	if !hasWarning(r, audit.WarnNoCheckpoint) || !hasWarning(r, audit.WarnNoPassport) || r.Checkpoint != 0 || r.PassportID != "" {
		t.Errorf("bare bundle %+v", r)
	}

	// Records appended after the checkpoint are not anchored by it.
	m.Ingest(t, "op-1", audittest.Conduit("late", "a", ledger.Failed, audittest.AsOf.Add(-30*time.Minute)))
	later := m.Source("a", audittest.AsOf, nil, src.Checkpoint, src.Leaves)
	r = mustVerify(t, build(t, later))
	if r.Anchored != src.Chain[0].HeadSeq || !hasWarning(r, audit.WarnNotAnchored) {
		t.Errorf("later bundle %+v", r)
	}

	// A checkpoint with no key to check it does not verify.
	noKey, err := audit.NewKeys(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := audit.Verify(build(t, src), noKey); r.Valid || r.Discrepancy.Code != audit.CodeCheckpoint {
		t.Errorf("no key: %+v", r.Discrepancy)
	}
}

// TestEd25519Checkpoint: an EdDSA checkpoint verifies with the public key
// of a JWK set, and not with another.
func TestEd25519Checkpoint(t *testing.T) {
	m, src := audittest.Scenario(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := checkpoint.NewEd25519Signer("ckpt-ed", priv)
	if err != nil {
		t.Fatal(err)
	}
	leaves := m.Leaves()
	tree, err := checkpoint.NewTree(leaves)
	if err != nil {
		t.Fatal(err)
	}
	c := checkpoint.Checkpoint{Number: 7, Time: audittest.AsOf.Add(-time.Minute), Agents: tree.Size(), Root: tree.Root(),
		Environment: "test", Issuer: checkpoint.Issuer{Platform: "test.example"}}
	if err := c.Sign(signer); err != nil {
		t.Fatal(err)
	}
	src.Checkpoint, err = c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	src.Leaves = leaves
	b := build(t, src)
	set := func(pub ed25519.PublicKey) []byte {
		return []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"OKP","crv":"Ed25519","kid":"ckpt-ed","alg":"EdDSA","use":"sig","x":"` +
			base64.RawURLEncoding.EncodeToString(pub) + `"}]}`)
	}
	keys, err := audit.NewKeys([]byte(audittest.Secret), set(pub))
	if err != nil {
		t.Fatal(err)
	}
	if r := audit.Verify(b, keys); !r.Valid || r.Checkpoint != 7 {
		t.Fatalf("EdDSA checkpoint: %+v", r)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	keys, err = audit.NewKeys([]byte(audittest.Secret), set(other))
	if err != nil {
		t.Fatal(err)
	}
	if r := audit.Verify(b, keys); r.Valid || r.Discrepancy.Code != audit.CodeCheckpoint {
		t.Fatalf("another key: %+v", r.Discrepancy)
	}
	// The secret alone cannot check an EdDSA checkpoint.
	if r := audit.Verify(b, audittest.Keys(t)); r.Valid || r.Discrepancy.Code != audit.CodeCheckpoint {
		t.Fatalf("secret only: %+v", r.Discrepancy)
	}
	// From a key history, the key verifies the checkpoint it signed while
	// active, retired since or not; not one dated outside its interval, and
	// nothing once it is revoked.
	pk, err := passport.NewEd25519PublicKey(pub)
	if err == nil {
		pk, err = pk.WithID("ckpt-ed")
	}
	if err != nil {
		t.Fatal(err)
	}
	history := func(status string, iv passport.SigningInterval) audit.Keys {
		t.Helper()
		h, err := passport.PublicHistoryKey(pk, status, iv)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal(passport.KeyHistory{Keys: []passport.HistoryKey{h}})
		keys, err := audit.NewKeys([]byte(audittest.Secret), doc)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	from, until := c.Time.Add(-24*time.Hour), c.Time.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		status string
		iv     passport.SigningInterval
		ok     bool
	}{
		{"active", passport.StatusActive, passport.SigningInterval{From: from}, true},
		{"retired, signed while active", passport.StatusRetired, passport.SigningInterval{From: from, Until: until}, true},
		{"retired before the checkpoint", passport.StatusRetired, passport.SigningInterval{From: from, Until: c.Time.Add(-time.Hour)}, false},
		{"active after the checkpoint", passport.StatusActive, passport.SigningInterval{From: c.Time.Add(time.Hour)}, false},
		{"revoked after the checkpoint", passport.StatusRevoked, passport.SigningInterval{From: from, Until: until, RevokedAt: until.Add(time.Hour)}, false},
	} {
		r := audit.Verify(b, history(tc.status, tc.iv))
		if r.Valid != tc.ok || !tc.ok && r.Discrepancy.Code != audit.CodeCheckpoint {
			t.Errorf("%s: valid %v, %+v", tc.name, r.Valid, r.Discrepancy)
		}
	}
}

func TestNewKeys(t *testing.T) {
	x := base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for _, tc := range []struct {
		name         string
		secret, keys string
		want         string
	}{
		{"short secret", "short", "", "at least 32"},
		{"not JSON", "", `{"keys":`, "not a JWK set"},
		{"no keys", "", `{}`, "not a JWK set"},
		{"private part", "", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `","d":"` + x + `"}]}`, "private part"},
		{"repeated kid", "", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `"},{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `"}]}`, "twice"},
		{"bad kid", "", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"a b","x":"` + x + `"}]}`, "kid"},
		{"bad x", "", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `=="}]}`, "32-byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var secret, keys []byte
			if tc.secret != "" {
				secret = []byte(tc.secret)
			}
			if tc.keys != "" {
				keys = []byte(tc.keys)
			}
			_, err := audit.NewKeys(secret, keys)
			if !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	m, src := audittest.Scenario(t)
	for _, tc := range []struct {
		name   string
		change func(s *audit.Source)
		kind   errkind.Kind
	}{
		{"invalid agent", func(s *audit.Source) { s.AgentID = "a b" }, errkind.Invalid},
		{"no chain", func(s *audit.Source) { s.Chain = nil }, errkind.NotFound},
		{"event row missing", func(s *audit.Source) { s.Chain[0].HasEvent = false }, errkind.Conflict},
		{"origin chain not read", func(s *audit.Source) { s.Origins = nil }, errkind.Conflict},
		{"rule broken", func(s *audit.Source) {
			// c1's second report (RUNNING, then VERIFIED) moves back.
			for i := len(s.Chain) - 1; i >= 0; i-- {
				if r := &s.Chain[i].Record; r.EventID == "c1" && r.CorrectionID == "" {
					r.Status = ledger.Pending
					return
				}
			}
		}, errkind.Conflict},
		{"impossible counts", func(s *audit.Source) { s.Counts.ConduitSuccess = s.Counts.ConduitTotal + 1 }, errkind.Conflict},
		{"leaves out of order", func(s *audit.Source) { s.Leaves[0], s.Leaves[1] = s.Leaves[1], s.Leaves[0] }, errkind.Conflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := m.Source("a", audittest.AsOf, src.Passport, src.Checkpoint, m.Leaves())
			tc.change(&s)
			if _, err := audit.Build(s); errkind.Of(err) != tc.kind {
				t.Fatalf("%v, want %v", err, tc.kind)
			}
		})
	}
}

// TestCommit pins the commitment: SHA-256 of the domain, the category and
// the salt and value (a vector computed with Python's hashlib).
func TestCommit(t *testing.T) {
	var salt [audit.SaltSize]byte
	for i := range salt {
		salt[i] = byte(i)
	}
	if got := audit.Commit(audit.Buyers, salt, "buyer-1"); got != "a3f38f5273581e55426f6601c5c1bc8ef401910b062a798448267d2078a62315" {
		t.Fatalf("commitment %s", got)
	}
	if audit.Commit(audit.Operators, salt, "buyer-1") == audit.Commit(audit.Buyers, salt, "buyer-1") {
		t.Fatal("the category is not committed to")
	}
}

// TestOpenWrongCategory: an opening of one category does not open a
// member of another, even where its commitment was planted.
func TestOpenWrongCategory(t *testing.T) {
	_, src := audittest.Scenario(t)
	b := build(t, src)
	o, err := b.Withhold([]audit.Category{audit.Buyers, audit.Operators}, bytes.NewReader(bytes.Repeat([]byte{7}, 4096)))
	if err != nil {
		t.Fatal(err)
	}
	var operator string
	for c, op := range o {
		if op.Category == audit.Operators {
			operator = c
		}
	}
	planted := false
	for k := range b.Chains[0].Records {
		for m := range b.Chains[0].Records[k].Content {
			if mem := &b.Chains[0].Records[k].Content[m]; mem.Name == "buyer_id" && mem.Str.Withheld && !planted {
				mem.Str.S, planted = operator, true
			}
		}
	}
	if _, err := b.Open(o); !planted || !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "category") {
		t.Fatalf("planted %v: %v", planted, err)
	}
}

// TestWithheldUnlisted: a bundle says what it withholds.
func TestWithheldUnlisted(t *testing.T) {
	_, src := audittest.Scenario(t)
	b := build(t, src)
	if _, err := b.Withhold([]audit.Category{audit.Buyers, audit.Agents}, bytes.NewReader(bytes.Repeat([]byte{1}, 4096))); err != nil {
		t.Fatal(err)
	}
	b.Withheld = []audit.Category{audit.Agents}
	if r := audit.Verify(b, audittest.Keys(t)); r.Valid || r.Discrepancy.Code != audit.CodeChainContent || !strings.Contains(r.Discrepancy.Message, "buyers") {
		t.Fatalf("buyers withheld unsaid: %+v", r.Discrepancy)
	}
	b.Withheld = []audit.Category{audit.Buyers}
	if r := audit.Verify(b, audittest.Keys(t)); r.Valid || r.Discrepancy.Code != audit.CodeChainContent || !strings.Contains(r.Discrepancy.Message, "agents") {
		t.Fatalf("agents withheld unsaid: %+v", r.Discrepancy)
	}
}

func TestFindingError(t *testing.T) {
	f := audit.Finding{Code: "chain_link", Message: "m", AgentID: "a", Seq: 3, EventID: "e"}
	if got := f.Error(); got != "chain_link: agent a seq 3 event e: m" {
		t.Errorf("%q", got)
	}
	if got := (&audit.Finding{Code: "x", Message: "m"}).Error(); got != "x: m" {
		t.Errorf("%q", got)
	}
}
