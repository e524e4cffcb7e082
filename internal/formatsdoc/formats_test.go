// Package formatsdoc keeps docs/FORMATS.md true: every example in it is a
// named block that a function here computes with the code that writes and
// checks the format, and the test fails when the document says otherwise
// (go test ./internal/formatsdoc -update rewrites the blocks). It also runs
// the README's Python snippet against a passport with a rate of 0.00005.
package formatsdoc

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	notepkg "golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/internal/webhook"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

var update = flag.Bool("update", false, "rewrite docs/FORMATS.md's examples from the code")

const formatsPath = "../../docs/FORMATS.md"

// The example keys. The HMAC secret is an example, never a deployment's;
// the Ed25519 key is RFC 8037 Appendix A's.
const (
	exampleSecret = "example-secret-0123456789abcdef-not-for-use"
	exampleSeed   = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
)

var exampleAt = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

// examplePassport is agent-7's passport for 1 verified session of 20,000
// (a success rate of 0.00005) and 38 settled transactions of 40, signed
// with k.
func examplePassport(t *testing.T, k passport.Key) (doc []byte, p *passport.Passport) {
	t.Helper()
	r, err := score.Compute(score.Counts{ConduitTotal: 20000, ConduitSuccess: 1, AP2Total: 40, AP2Success: 38})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = passport.New("agent-7", "swarmscore", r, exampleAt); err != nil {
		t.Fatal(err)
	}
	p.AgentPassportID = "4f1c2b8e-9a3d-4e5f-8a7b-6c5d4e3f2a1b"
	if doc, err = p.Sign(k); err != nil {
		t.Fatal(err)
	}
	return doc, p
}

func hmacKey(t *testing.T) passport.Key {
	t.Helper()
	k, err := passport.NewKey([]byte(exampleSecret))
	if err == nil {
		k, err = k.WithID(keyring.KeyID(keyring.HS256, []byte(exampleSecret)))
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func edKey(t *testing.T) (passport.Key, ed25519.PrivateKey) {
	t.Helper()
	seed, _ := hex.DecodeString(exampleSeed)
	priv := ed25519.NewKeyFromSeed(seed)
	k, err := passport.NewEd25519Key(priv)
	if err == nil {
		k, err = k.WithID(keyring.KeyID(keyring.EdDSA, priv.Public().(ed25519.PublicKey)))
	}
	if err != nil {
		t.Fatal(err)
	}
	return k, priv
}

// message is the signed bytes of a passport: its RFC 8785 form without
// issuer.signature, computed here by gowebpki/jcs from a generic tree.
func message(t *testing.T, doc []byte) []byte {
	t.Helper()
	i := bytes.Index(doc, []byte(`,"signature":"`))
	if i < 0 {
		t.Fatalf("no signature in %s", doc)
	}
	j := bytes.IndexByte(doc[i+len(`,"signature":"`):], '"') + i + len(`,"signature":"`) + 1
	msg, err := jcs.Transform(append(append([]byte(nil), doc[:i]...), doc[j:]...))
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func hash(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// examples computes every example block of docs/FORMATS.md, by name.
func examples(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	hk := hmacKey(t)
	ek, priv := edKey(t)
	pub := priv.Public().(ed25519.PublicKey)

	out["key-ids"] = fmt.Sprintf(`HS256 secret (its UTF-8 bytes):  %s
SHA-256 of the secret:           %s
kid:                             %s

Ed25519 public key (32 bytes):   %s
  as JWK x (base64url):          %s
SHA-256 of the public key:       %s
kid:                             %s`,
		exampleSecret, hash([]byte(exampleSecret)), hk.ID(),
		hex.EncodeToString(pub), base64.RawURLEncoding.EncodeToString(pub), hash(pub), ek.ID())

	doc, p := examplePassport(t, hk)
	out["passport-hs256"] = string(doc)
	msg := message(t, doc)
	out["passport-message"] = string(msg)
	out["passport-hs256-signature"] = fmt.Sprintf(`key:        the bytes of %q
message:    the %d bytes above (SHA-256 %s)
signature:  %s`, exampleSecret, len(msg), hash(msg), p.Issuer.Signature)
	if v := passport.Verify(doc, []passport.Key{hk}, exampleAt); !v.Valid {
		t.Fatalf("the HS256 example does not verify: %v", v.Errors)
	}

	edDoc, ep := examplePassport(t, ek)
	edMsg := message(t, edDoc)
	out["passport-eddsa-signature"] = fmt.Sprintf(`Ed25519 seed (private):  %s
public key (JWK x):      %s
issuer:                  {"alg":"EdDSA","computed_at":"%s","kid":"%s","platform":"swarmscore","signature":"…"}
message SHA-256:         %s
signature:               %s`, exampleSeed, base64.RawURLEncoding.EncodeToString(pub), exampleAt.Format(time.RFC3339), ek.ID(), hash(edMsg), ep.Issuer.Signature)
	if v := passport.Verify(edDoc, []passport.Key{ek}, exampleAt); !v.Valid {
		t.Fatalf("the EdDSA example does not verify: %v", v.Errors)
	}

	var nums strings.Builder
	fmt.Fprintf(&nums, "%-24s %s\n", "value", "canonical form")
	for _, v := range []string{"0.00005", "5e-05", "0.80", "1.0", "0.3928", "0.000001", "0.0000001", "1e21", "123456789012345680000", "9007199254740991", "-0"} {
		c, err := jcs.Transform([]byte("[" + v + "]"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&nums, "%-24s %s\n", v, bytes.Trim(c, "[]"))
	}
	out["numbers"] = strings.TrimSuffix(nums.String(), "\n")

	// A chain: a session reported running, then verified.
	start := exampleAt.Add(-90 * time.Minute).Add(123456 * time.Microsecond)
	r1 := ledger.Record{Event: ledger.Event{Type: ledger.ConduitSession, ID: "s-1", AgentID: "agent-7", Status: ledger.Running, StartedAt: start},
		Operator: "market-1", Seq: 1, ReceivedAt: start.Add(time.Second)}
	r2 := r1
	r2.Seq, r2.Event.Status, r2.Event.EndedAt, r2.ReceivedAt = 2, ledger.Verified, exampleAt.Add(-time.Minute), exampleAt
	h1 := ledger.Link(ledger.Hash{}, r1.Canonical())
	h2 := ledger.Link(h1, r2.Canonical())
	var manual [2 * ledger.HashSize]byte // the link by hand: raw bytes, not hex
	copy(manual[:], h1[:])
	if got := sha256.Sum256(append(manual[:ledger.HashSize:ledger.HashSize], r2.Canonical()...)); got != h2 {
		t.Fatal("the link is not SHA-256 of the raw previous hash and the content")
	}
	out["chain"] = fmt.Sprintf(`record 1 content:  %s
record 1 hash:     SHA-256(32 zero bytes ‖ content) = %s
record 2 content:  %s
record 2 hash:     SHA-256(record 1 hash, 32 raw bytes ‖ content) = %s
the head:          {"seq":2,"hash":"%s"}`, r1.Canonical(), hex.EncodeToString(h1[:]), r2.Canonical(), hex.EncodeToString(h2[:]), hex.EncodeToString(h2[:]))

	req := ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "s-1", Action: ledger.ActionStatus, Status: ledger.Failed,
		Reason: "the buyer's logs show it failed", By: "market-1", At: exampleAt.Add(time.Hour)}
	var pre strings.Builder
	for _, f := range []string{string(req.EventType), req.EventID, string(req.Action), string(req.Status), req.AgentID, req.Reason, req.AppealID, req.By} {
		fmt.Fprintf(&pre, "%d:%s", len(f), f)
	}
	if want := "cor-" + hash([]byte(pre.String()))[:24]; want != req.ID() {
		t.Fatalf("correction id %s, by the documented rule %s", req.ID(), want)
	}
	out["correction-id"] = fmt.Sprintf(`fields:     event_type %q, event_id %q, action %q, status %q, agent_id %q,
            reason %q, appeal_id %q, by %q
hashed:     %s
SHA-256:    %s
id:         %s`, req.EventType, req.EventID, req.Action, req.Status, req.AgentID, req.Reason, req.AppealID, req.By, pre.String(), hash([]byte(pre.String())), req.ID())

	cor := ledger.Correction{ID: req.ID(), CorrectionRequest: req, FromAgent: "agent-7", ToAgent: "agent-7", FromStatus: ledger.Verified, ToStatus: ledger.Failed}
	corContent := cor.AppendCanonical(nil, "agent-7", 3)
	h3 := ledger.Link(h2, corContent)
	out["record-correction"] = fmt.Sprintf("content:  %s\nhash:     SHA-256(record 2 hash ‖ content) = %s", corContent, hex.EncodeToString(h3[:]))

	d1, d2 := sha256.Sum256([]byte("a sealed record's content, as it reads after the rename")), sha256.Sum256([]byte("another one"))
	digests := []ledger.Hash{d1, d2}
	slices.SortFunc(digests, func(a, b ledger.Hash) int { return bytes.Compare(a[:], b[:]) })
	var salt [audit.SaltSize]byte
	copy(salt[:], "0123456789abcdef")
	identity := audit.Commit(audit.Agents, salt, "agent-42")
	er := ledger.Erasure{ID: "era-0123456789abcdef", Pseudonym: "erased-0123456789abcdef", Identity: identity, By: "market-1", At: exampleAt, Digests: digests}
	c := er.Commitment()
	out["record-erasure"] = fmt.Sprintf(`sealed digests (sorted):  %s
                          %s
sealed:                   SHA-256(the digests' raw bytes, in order) = %s
identity:                 SHA-256("swarmscore-audit-withheld/v1" ‖ 0x00 ‖ "agents" ‖ 0x00 ‖ salt ‖ "agent-42")
                          with the 16-byte salt %q = %s
content:                  %s`, hex.EncodeToString(digests[0][:]), hex.EncodeToString(digests[1][:]), hex.EncodeToString(c[:]), salt[:], identity, er.AppendCanonical(nil, 5))

	sum := ledger.Summary{AgentID: "agent-7", Seq: 9, At: exampleAt, PrunedThrough: 8, Anchor: h2, Rows: []ledger.SummaryRow{
		{Type: ledger.ConduitSession, Status: ledger.Verified, Month: "2025-10", Count: 3},
		{Type: ledger.AP2Transaction, Status: ledger.Settled, Month: "2025-10", Count: 2, EscrowCents: 250000},
	}}
	out["record-summary"] = "content:  " + string(sum.AppendCanonical(nil))

	leaf := checkpoint.Leaf{AgentID: "agent-7", Seq: 2, Hash: h2}
	enc, err := leaf.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	lh, _ := leaf.MerkleHash()
	if len(enc) != 2+len("agent-7")+8+32 || binary.BigEndian.Uint16(enc) != 7 {
		t.Fatal("leaf encoding")
	}
	out["checkpoint-leaf"] = fmt.Sprintf(`leaf:       agent-7, seq 2, hash %x
encoding:   %x
            (00 07: the id's length; the id; seq as 8 bytes; the hash)
leaf hash:  SHA-256(0x00 ‖ encoding) = %x`, h2[:], enc, lh[:])

	out["audit-bundle"] = string(exampleBundle(t))
	out["audit-holds"] = exampleHolds(t)

	hookAt := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hook := webhook.ScoreEvents(webhook.ScoreData{AgentID: "agent-7", Score: 760, Tier: "STANDARD", PreviousScore: 640, PreviousTier: "NONE",
		ComputedAt: ledger.FormatTime(hookAt), EscrowModifierBP: 3920}, hookAt)
	body, err := hook[0].Payload()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := webhook.ParseSecret(exampleHookSecret)
	if err != nil {
		t.Fatal(err)
	}
	const hookID = "msg_2n3wbkbm6ytqk6a3n7ojrhndvi"
	sig := webhook.Signature(secret, hookID, hookAt.Unix(), body)
	if !webhook.Verify(secret, hookID, hookAt.Unix(), body, sig, hookAt, time.Minute) {
		t.Fatal("the webhook example does not verify")
	}
	out["webhook-delivery"] = fmt.Sprintf(`POST /hooks HTTP/1.1
content-type: application/json
webhook-id: %s
webhook-timestamp: %d
webhook-signature: %s

%s

secret:            %s
key:               base64-decode(secret after "whsec_"), %d bytes
signed content:    "%s.%d." followed by the body`, hookID, hookAt.Unix(), sig, body, exampleHookSecret, len(mustB64(t, exampleHookSecret[6:])), hookID, hookAt.Unix())
	logExamples(t, out, priv)
	out["witness-request"], out["witness-cosignature"] = exampleWitness(t)
	return out
}

// exampleHookSecret is the webhook example's secret (not for use).
const exampleHookSecret = "whsec_ZXhhbXBsZS13ZWJob29rLXNlY3JldC0wMTIz"

func mustB64(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleOrigin is the origin of the example log.
const exampleOrigin = "scores.example.com/swarmscore"

// memoryLog is a log of a few leaves, for tlog.
type memoryLog [][]byte

func (m memoryLog) Hashes(_ context.Context, level int, from, to uint64) ([][]byte, error) {
	if level != 0 || to > uint64(len(m)) {
		return nil, fmt.Errorf("not stored")
	}
	var out [][]byte
	for _, d := range m[from:to] {
		out = append(out, tlog.LeafHash(d))
	}
	return out, nil
}

// logExamples are the transparency log's: a leaf, a checkpoint note of
// the example bundle's four records signed with RFC 8037's Ed25519 key,
// tile paths, and the bundle's log inclusion proof of its head record.
func logExamples(t *testing.T, out map[string]string, priv ed25519.PrivateKey) {
	t.Helper()
	ctx := context.Background()
	b, err := audit.Parse(exampleBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	var log memoryLog
	for i, r := range b.Chains[0].Records {
		log = append(log, ledger.LogLeaf{Hash: r.Hash, Seq: int64(i + 1)}.Data())
	}
	l2 := ledger.LogLeaf{Hash: b.Chains[0].Records[1].Hash, Seq: 2}
	out["log-leaf"] = fmt.Sprintf(`record:     seq 2, hash %x
leaf:       %x
            (the chain hash's 32 raw bytes; the seq as 8 bytes, big-endian)
leaf hash:  SHA-256(0x00 ‖ leaf) = %x`, l2.Hash[:], l2.Data(), tlog.LeafHash(l2.Data()))

	pub := priv.Public().(ed25519.PublicKey)
	signer, err := tlog.Ed25519Signer(exampleOrigin, pub, func(m []byte) ([]byte, error) { return ed25519.Sign(priv, m), nil })
	if err != nil {
		t.Fatal(err)
	}
	root, err := tlog.RootHash(ctx, log, 4)
	if err != nil {
		t.Fatal(err)
	}
	note, err := tlog.Sign(tlog.Checkpoint{Origin: exampleOrigin, Size: 4, Root: root}, signer)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := notepkg.NewEd25519VerifierKey(exampleOrigin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := notepkg.NewVerifier(vkey)
	if _, err := notepkg.Open(note, notepkg.VerifierList(v)); err != nil {
		t.Fatal(err)
	}
	var kh [4]byte
	binary.BigEndian.PutUint32(kh[:], signer.KeyHash())
	out["log-note"] = fmt.Sprintf(`%s
key hash:      %x = the first 4 bytes of SHA-256(origin ‖ "\n" ‖ 0x01 ‖ public key)
verifier key:  %s`, note, kh, vkey)

	out["log-tiles"] = fmt.Sprintf(`%s   tile 0 of level 0, full: leaf hashes 0 to 255
%s   tile 1234 of level 0, full: leaf hashes 315904 to 316159
%s   tile 1 of level 0, its first 52 hashes: leaves 256 to 307 of a log of 308
%s   tile 0 of level 1, full: the roots of leaves 0 to 65535, 256 at a time`,
		tlog.Tile{Level: 0, Index: 0, Width: 256}.Path(), tlog.Tile{Level: 0, Index: 1234, Width: 256}.Path(),
		tlog.Tile{Level: 0, Index: 1, Width: 52}.Path(), tlog.Tile{Level: 1, Index: 0, Width: 256}.Path())

	p, err := tlog.InclusionProof(ctx, log, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	b.Log = &audit.LogInclusion{Note: note, Index: 3, Seq: 4, Proof: p}
	j := string(b.AppendJSON(nil))
	member := j[strings.Index(j, `"log_inclusion":`):]
	keys, err := audit.NewKeys([]byte(audittest.Secret), []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"`+base64.RawURLEncoding.EncodeToString(pub)+`","kid":"rfc8037-a","alg":"EdDSA","use":"sig"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep := audit.VerifyDocument([]byte(j), keys); !rep.Valid || rep.LogSize != 4 || rep.LogIndex != 3 {
		t.Fatalf("the example bundle with its log inclusion: %+v %v", rep, rep.Discrepancy)
	}
	out["audit-log-inclusion"] = strings.TrimSuffix(member, "}\n")
}

// exampleBundle is the audit bundle of a small ledger: agent-7 with two
// sessions (one corrected) and a transaction, a passport and a checkpoint
// signed with audittest's HMAC key.
func exampleBundle(t *testing.T) []byte {
	t.Helper()
	asOf := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	m := audittest.NewLedger()
	m.Ingest(t, "market-1",
		audittest.Conduit("s-1", "agent-7", ledger.Verified, asOf.Add(-48*time.Hour)),
		audittest.Conduit("s-2", "agent-7", ledger.Verified, asOf.Add(-24*time.Hour)),
		audittest.AP2("t-1", "agent-7", "buyer-1", ledger.Settled, asOf.Add(-20*time.Hour)))
	m.Correct(t, ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "s-2", Action: ledger.ActionStatus, Status: ledger.Failed,
		Reason: "the buyer's logs show it failed", By: "market-1", At: asOf.Add(-10 * time.Hour)})
	ckpt := audittest.SignCheckpoint(t, 1, asOf.Add(-time.Hour), m.Leaves())
	r, err := score.Compute(m.Counts("agent-7", asOf.Add(-2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := passport.New("agent-7", "test.example", r, asOf.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p.AgentPassportID = "0b6a3f52-7c1e-4d8a-9f2b-3e4d5c6b7a81"
	k, _ := passport.NewKey([]byte(audittest.Secret))
	doc, err := p.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := audit.Build(m.Source("agent-7", asOf, doc, ckpt, m.Leaves()))
	if err != nil {
		t.Fatal(err)
	}
	j := b.AppendJSON(nil)
	parsed, err := audit.Parse(j)
	if err != nil {
		t.Fatal(err)
	}
	if rep := audit.Verify(parsed, audittest.Keys(t)); !rep.Valid || len(rep.Warnings) != 0 {
		t.Fatalf("the example bundle: %+v", rep)
	}
	return j
}

// exampleHolds is the "holds" and "hold_passports" members of agent-7's
// bundle after a hold of $1,000 priced by its passport (score 16: 98.72%
// held) and released less a fee of $25.
func exampleHolds(t *testing.T) string {
	t.Helper()
	asOf := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	m := audittest.NewLedger()
	m.Ingest(t, "market-1",
		audittest.Conduit("s-1", "agent-7", ledger.Verified, asOf.Add(-48*time.Hour)),
		audittest.AP2("t-1", "agent-7", "buyer-1", ledger.Settled, asOf.Add(-20*time.Hour)))
	r, err := score.Compute(m.Counts("agent-7", asOf.Add(-2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := passport.New("agent-7", "test.example", r, asOf.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p.AgentPassportID = "5d2c7e90-3b1a-4f6e-8c2d-9a7b6e5f4d31"
	k, _ := passport.NewKey([]byte(audittest.Secret))
	doc, err := p.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	m.Hold(t, doc, ledger.HoldRequest{Action: ledger.HoldCreate, TransactionID: "t-2", ProviderID: "agent-7", BuyerID: "buyer-2", AmountCents: 100000,
		Currency: ledger.HoldCurrency, At: asOf.Add(-90 * time.Minute)},
		ledger.HoldRequest{Action: ledger.HoldRelease, HasFee: true, FeeCents: 2500, At: asOf.Add(-80 * time.Minute)})
	ckpt := audittest.SignCheckpoint(t, 1, asOf.Add(-time.Hour), m.Leaves())
	b, err := audit.Build(m.Source("agent-7", asOf, doc, ckpt, m.Leaves()))
	if err != nil {
		t.Fatal(err)
	}
	j := string(b.AppendJSON(nil))
	if rep := audit.VerifyDocument([]byte(j), audittest.Keys(t)); !rep.Valid || rep.Holds != 1 {
		t.Fatalf("the example bundle with a hold: %+v %v", rep, rep.Discrepancy)
	}
	return strings.TrimSuffix(j[strings.Index(j, `"holds":`):], "}\n")
}

var block = regexp.MustCompile("(?s)<!-- example ([a-z0-9-]+) -->\n```[a-z]*\n(.*?)```")

// TestFormats: every example of docs/FORMATS.md is what the code computes,
// and every example is one the code computes (none is left unchecked).
func TestFormats(t *testing.T) {
	doc, err := os.ReadFile(formatsPath)
	if err != nil {
		t.Fatal(err)
	}
	want := examples(t)
	seen := map[string]bool{}
	updated := block.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := block.FindSubmatch(m)
		name, got := string(sub[1]), string(sub[2])
		seen[name] = true
		w, ok := want[name]
		w += "\n"
		switch {
		case !ok:
			t.Errorf("example %s of docs/FORMATS.md is checked by nothing: add it to examples() in internal/formatsdoc", name)
			return m
		case got != w && !*update:
			t.Errorf("example %s of docs/FORMATS.md is\n%s\nthe code gives\n%s\n(go test ./internal/formatsdoc -update rewrites it)", name, got, w)
		}
		return append(m[:len(m)-len(sub[2])-3:len(m)-len(sub[2])-3], w+"```"...)
	})
	for name := range want {
		if !seen[name] {
			t.Errorf("docs/FORMATS.md has no example %s", name)
		}
	}
	if *update && !bytes.Equal(updated, doc) {
		if err := os.WriteFile(formatsPath, updated, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestREADMEPython runs the README's "few lines of any language" with
// python3 against an HMAC passport whose success_rate is 0.00005 (JSON's
// 5e-05, which Python prints in exponent form and RFC 8785 does not), and
// against the same passport altered.
func TestREADMEPython(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)a few lines of any language verify it\\..*?```python\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal(`the README has no python snippet after "a few lines of any language verify it."`)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required in CI: %v", err)
		}
		t.Skipf("python3 not installed: %v (it is required when CI=true)", err)
	}
	doc, _ := examplePassport(t, hmacKey(t))
	if !bytes.Contains(doc, []byte(`"success_rate":0.00005`)) {
		t.Fatalf("the example passport has no rate of 0.00005: %s", doc)
	}
	run := func(doc []byte) string {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "passport.json"), doc, 0o600)
		os.WriteFile(filepath.Join(dir, "verify.py"), m[1], 0o600)
		cmd := exec.Command(py, "verify.py")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SWARMSCORE_SIGNING_KEY="+exampleSecret)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(doc); got != "True" {
		t.Fatalf("the README's snippet says %q for a genuine passport", got)
	}
	if got := run(bytes.Replace(doc, []byte(`"value":`), []byte(`"value":1`), 1)); got != "False" {
		t.Fatalf("the README's snippet says %q for an altered passport", got)
	}
	// Rates in exponent form (1e-7), with many digits, and whole.
	for _, c := range []score.Counts{
		{ConduitTotal: 10000000, ConduitSuccess: 1, AP2Total: 3, AP2Success: 2},
		{ConduitTotal: 7, ConduitSuccess: 7, AP2Total: 300, AP2Success: 299},
	} {
		r, err := score.Compute(c)
		if err != nil {
			t.Fatal(err)
		}
		p, err := passport.New("agent-7", "swarmscore", r, exampleAt)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := p.Sign(hmacKey(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := run(doc); got != "True" {
			t.Fatalf("the README's snippet says %q for %s", got, doc)
		}
	}
}
