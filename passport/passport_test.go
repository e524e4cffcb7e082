package passport

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/score"
)

var update = flag.Bool("update", false, "rewrite the golden files in passport/testdata (go test ./passport -run TestGolden -update)")

// The §6.1 example's dimension counts, 80/76 and 40/38, give 304 + 456 = 760
// and escrow 0.392; the example's own 455, 759 and 0.3928 are inconsistent
// with its dimensions (docs/ERRATA.md).
func TestExampleCounts(t *testing.T) {
	t.Parallel()
	p := newPassport(t, testExample)
	te, cr := p.Dimensions.TechnicalExecution, p.Dimensions.CommercialReliability
	checks := []struct {
		name      string
		got, want any
	}{
		{"swarmscore_version", p.SwarmScoreVersion, "1.0"},
		{"formula_version", p.FormulaVersion, "1.0"},
		{"agent_id", p.AgentID, "agent-7"},
		{"platform", p.Issuer.Platform, "swarmsync.ai"},
		{"value", p.Score.Value, 760},
		{"tier", p.Score.Tier, score.TierStandard},
		{"conduit_contribution", p.Score.ConduitContribution, 304},
		{"ap2_contribution", p.Score.AP2Contribution, 456},
		{"escrow_modifier", p.EscrowModifier.String(), "0.392"},
		{"conduit label", te.Label, "Conduit Execution"},
		{"conduit sessions", te.Sessions90d, int64(80)},
		{"conduit successes", te.SuccessfulSessions90d, int64(76)},
		{"conduit success_rate", te.SuccessRate, 0.95},
		{"conduit volume_factor", te.VolumeFactor, 0.8},
		{"conduit max", te.MaxContribution, 400},
		{"conduit actual", te.ActualContribution, 304},
		{"ap2 label", cr.Label, "AP2 Reliability"},
		{"ap2 sessions", cr.Sessions90d, int64(40)},
		{"ap2 successes", cr.SuccessfulSessions90d, int64(38)},
		{"ap2 success_rate", cr.SuccessRate, 0.95},
		{"ap2 volume_factor", cr.VolumeFactor, 0.8},
		{"ap2 max", cr.MaxContribution, 600},
		{"ap2 actual", cr.ActualContribution, 456},
		{"computed_at", p.Issuer.ComputedAt, testComputedAt},
		{"expires_at", p.ExpiresAt, time.Date(2026, 3, 24, 14, 30, 0, 0, time.UTC)},
		{"signature", p.Issuer.Signature, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	wantGaps := []score.Gap{
		{Tier: score.TierElite, Requirement: "score", Required: 850, Actual: 760},
		{Tier: score.TierElite, Requirement: "conduit_sessions_90d", Required: 100, Actual: 80},
		{Tier: score.TierElite, Requirement: "ap2_sessions_90d", Required: 50, Actual: 40},
	}
	if !equalGaps(p.QualificationGaps, wantGaps) {
		t.Errorf("gaps = %+v, want %+v", p.QualificationGaps, wantGaps)
	}
	doc := mustMarshal(t, p)
	for _, frag := range []string{`"escrow_modifier":0.392,`, `"success_rate":0.95,`, `"volume_factor":0.8,`,
		`"computed_at":"2026-03-17T14:30:00Z"`, `"expires_at":"2026-03-24T14:30:00Z"`,
		`{"tier":"ELITE","requirement":"conduit_sessions_90d","required":100,"actual":80}`} {
		if !bytes.Contains(doc, []byte(frag)) {
			t.Errorf("document lacks %s:\n%s", frag, doc)
		}
	}
	if id, err := uuid.Parse(p.AgentPassportID); err != nil || id.Version() != 4 || id.String() != p.AgentPassportID {
		t.Errorf("agent_passport_id %q is not a canonical UUIDv4 (%v)", p.AgentPassportID, err)
	}
}

func TestGapsAreAnArrayAtElite(t *testing.T) {
	t.Parallel()
	p := newPassport(t, score.Counts{ConduitTotal: 100, ConduitSuccess: 100, AP2Total: 50, AP2Success: 50})
	if p.Score.Tier != score.TierElite {
		t.Fatalf("tier = %v", p.Score.Tier)
	}
	if doc := mustMarshal(t, p); !bytes.Contains(doc, []byte(`"qualification_gaps":[]`)) {
		t.Fatalf("want an empty array of gaps: %s", doc)
	}
}

func TestZeroSessions(t *testing.T) {
	t.Parallel()
	doc, err := newPassport(t, score.Counts{}).Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{`"success_rate":0,"successful_sessions_90d":0,"volume_factor":0}`, `"escrow_modifier":1,`, `"tier":"NONE"`} {
		if !bytes.Contains(doc, []byte(frag)) {
			t.Errorf("document lacks %s: %s", frag, doc)
		}
	}
	if v := Verify(doc, []Key{testKey(t)}, testComputedAt); !v.Valid {
		t.Fatalf("not valid: %+v", v.Errors)
	}
}

func TestNewNormalisesTime(t *testing.T) {
	t.Parallel()
	r, _ := score.Compute(testExample)
	at := time.Date(2026, 3, 17, 16, 30, 0, 999_999_999, time.FixedZone("CEST", 2*3600))
	p, err := New("a", "p", r, at)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Issuer.ComputedAt.Equal(testComputedAt) || p.Issuer.ComputedAt.Location() != time.UTC {
		t.Fatalf("computed_at = %v, want %v in UTC", p.Issuer.ComputedAt, testComputedAt)
	}
	if got := p.ExpiresAt.Sub(p.Issuer.ComputedAt); got != 7*24*time.Hour {
		t.Fatalf("validity = %v", got)
	}
}

func TestNewIssuesFreshIDs(t *testing.T) {
	t.Parallel()
	a, b := newPassport(t, testExample), newPassport(t, testExample)
	if a.AgentPassportID == b.AgentPassportID {
		t.Fatalf("two passports share the ID %s", a.AgentPassportID)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	good, _ := score.Compute(testExample)
	forged := good
	forged.Score = 759
	huge, _ := score.Compute(score.Counts{ConduitTotal: MaxCount + 1, ConduitSuccess: 1})
	cases := []struct {
		name, agent, platform string
		r                     score.Result
		at                    time.Time
	}{
		{"empty agent", "", "p", good, testComputedAt},
		{"long agent", strings.Repeat("a", 129), "p", good, testComputedAt},
		{"space in agent", "agent 7", "p", good, testComputedAt},
		{"slash in agent", "agent/7", "p", good, testComputedAt},
		{"non-ASCII agent", "agént", "p", good, testComputedAt},
		{"empty platform", "a", "", good, testComputedAt},
		{"control in platform", "a", "swarm\nsync", good, testComputedAt},
		{"bad UTF-8 platform", "a", "swarm\xffsync", good, testComputedAt},
		{"long platform", "a", strings.Repeat("p", 257), good, testComputedAt},
		{"inconsistent result", "a", "p", forged, testComputedAt},
		{"counts beyond 2^53", "a", "p", huge, testComputedAt},
		{"zero time", "a", "p", good, time.Time{}},
		{"expiry beyond 9999", "a", "p", good, time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		if _, err := New(c.agent, c.platform, c.r, c.at); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}
	for _, ok := range []string{"a", strings.Repeat("a", 128), "agent-7.v2_x:Y"} {
		if _, err := New(ok, "swarmsync.ai — Zürich", good, testComputedAt); err != nil {
			t.Errorf("agent %q: %v", ok, err)
		}
	}
}

// Sign's output is canonical JSON (jcs.Transform leaves it unchanged), signed
// over the same content as json.Marshal of the signed passport, which
// verifies too: member order and escaping are not signed.
func TestSignOutputIsCanonical(t *testing.T) {
	t.Parallel()
	for _, c := range []score.Counts{testExample, {}, {ConduitTotal: 1000, ConduitSuccess: 999, AP2Total: 77, AP2Success: 70}} {
		r, _ := score.Compute(c)
		p, err := New("agent-7", `swarm "sync" Z"},"score": <&>`, r, testComputedAt)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := p.Sign(testKey(t))
		if err != nil {
			t.Fatal(err)
		}
		if want, err := jcs.Transform(doc); err != nil || !bytes.Equal(doc, want) {
			t.Fatalf("Sign returned\n%s\nwant\n%s (%v)", doc, want, err)
		}
		for _, d := range [][]byte{doc, mustMarshal(t, p)} {
			if v := Verify(d, []Key{testKey(t)}, testComputedAt); !v.Valid {
				t.Fatalf("not valid: %v\n%s", v.Errors, d)
			}
		}
	}
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	if _, err := newPassport(t, testExample).Sign(Key{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero key: err = %v", err)
	}
	mutations := map[string]func(p *Passport){
		"score value":      func(p *Passport) { p.Score.Value++ },
		"tier":             func(p *Passport) { p.Score.Tier = score.TierElite },
		"escrow":           func(p *Passport) { p.EscrowModifier = 3928 },
		"gaps":             func(p *Passport) { p.QualificationGaps = nil },
		"rate":             func(p *Passport) { p.Dimensions.TechnicalExecution.SuccessRate = 0.9 },
		"version":          func(p *Passport) { p.SwarmScoreVersion = "2.0" },
		"formula":          func(p *Passport) { p.FormulaVersion = "2.0" },
		"agent":            func(p *Passport) { p.AgentID = "" },
		"passport id":      func(p *Passport) { p.AgentPassportID = "x" },
		"expiry":           func(p *Passport) { p.ExpiresAt = p.ExpiresAt.Add(time.Hour) },
		"local time":       func(p *Passport) { p.Issuer.ComputedAt = p.Issuer.ComputedAt.In(time.FixedZone("X", 3600)) },
		"fractional time":  func(p *Passport) { p.Issuer.ComputedAt = p.Issuer.ComputedAt.Add(1) },
		"success > total":  func(p *Passport) { p.Dimensions.CommercialReliability.SuccessfulSessions90d = 41 },
		"label":            func(p *Passport) { p.Dimensions.CommercialReliability.Label = "AP2" },
		"max contribution": func(p *Passport) { p.Dimensions.TechnicalExecution.MaxContribution = 500 },
	}
	for name, mutate := range mutations {
		p := newPassport(t, testExample)
		mutate(p)
		if _, err := p.Sign(testKey(t)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// TestGolden pins a signed passport: fixed key, UUID and time. Run with
// -update to regenerate after an intended change to the wire format; the
// signature is also checked against an HMAC computed here independently.
func TestGolden(t *testing.T) {
	key := testKey(t)
	p := newPassport(t, testExample)
	p.AgentPassportID = testUUID
	doc, err := p.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	message := naiveMessage(t, decodeTree(t, doc))
	if want := hmacHex(testSecret, message); p.Issuer.Signature != want {
		t.Fatalf("signature %s, independent HMAC %s", p.Issuer.Signature, want)
	}
	v := Verify(doc, []Key{key}, testComputedAt.Add(time.Hour))
	if !v.Valid || len(v.Warnings) != 0 {
		t.Fatalf("golden passport does not verify cleanly: %+v", v)
	}
	verification, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	// The indented form must verify too: whitespace is not signed.
	if v := Verify(pretty.Bytes(), []Key{key}, testComputedAt); !v.Valid {
		t.Fatalf("indented golden passport: %v", v.Errors)
	}
	files := map[string][]byte{
		"signed.json":        append(doc, '\n'),
		"signed.pretty.json": append(pretty.Bytes(), '\n'),
		"message.json":       append(message, '\n'), // the exact bytes HMACed (no trailing newline in the MAC)
		"verification.json":  append(verification, '\n'),
	}
	for name, got := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./passport -run TestGolden -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file:\n got %s\nwant %s", name, got, want)
		}
	}
}

// TestErrorKind: the edges classify the package's errors, Problem
// included, as errkind.Invalid; ErrInvalid keeps its message.
func TestErrorKind(t *testing.T) {
	_, short := NewKey([]byte("short"))
	_, unreadable := Parse([]byte("{"))
	_, agent := New("bad agent", "swarmsync.ai", score.Result{}, testComputedAt)
	for _, err := range []error{ErrInvalid, short, unreadable, agent, Problem{CodeMissingField, "no score"}, fmt.Errorf("issue: %w", agent)} {
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, errkind.ErrInvalid) || errkind.Of(err) != errkind.Invalid {
			t.Errorf("%v: of kind %v", err, errkind.Of(err))
		}
	}
	if ErrInvalid.Error() != "invalid passport" || !strings.HasPrefix(agent.Error(), "invalid passport: ") {
		t.Errorf("messages changed: %q, %q", ErrInvalid, agent)
	}
	if _, counts := score.Compute(score.Counts{ConduitTotal: -1}); errors.Is(counts, ErrInvalid) || errors.Is(short, score.ErrInvalid) {
		t.Error("a score error matches passport.ErrInvalid, or the reverse")
	}
}

// TestPassportID: New draws a fresh version 4 UUID each time; a caller may
// set its own before signing, which Sign checks.
func TestPassportID(t *testing.T) {
	a, b := newPassport(t, testExample), newPassport(t, testExample)
	if u, err := uuid.Parse(a.AgentPassportID); err != nil || u.Version() != 4 || u.String() != a.AgentPassportID || a.AgentPassportID == b.AgentPassportID {
		t.Fatalf("ids %q, %q: %v", a.AgentPassportID, b.AgentPassportID, err)
	}
	a.AgentPassportID = testUUID
	doc, err := a.Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if v := Verify(doc, []Key{testKey(t)}, testComputedAt); !v.Valid || v.Passport.AgentPassportID != testUUID {
		t.Fatalf("caller's id: %+v", v)
	}
	for _, id := range []string{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", strings.ReplaceAll(testUUID, "-", "")} { // version 1; not hyphenated
		b.AgentPassportID = id
		if _, err := b.Sign(testKey(t)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Sign with id %q: %v", id, err)
		}
	}
}
