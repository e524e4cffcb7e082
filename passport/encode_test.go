package passport

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/score"
)

// checkEncoding asserts, with jcs as the oracle, that the signed message Sign
// wrote for p is canonical JSON and is the canonical form of the document
// minus its signature, that the document is json.Marshal(p), and that the
// document verifies on the fast path, in its own layout and canonicalized.
func checkEncoding(t *testing.T, p *Passport, doc []byte) {
	t.Helper()
	var ns numbers
	ns.fill(p)
	msg := appendMessage(nil, p, &ns)
	canonical, err := jcs.Transform(msg)
	if err != nil {
		t.Fatalf("message is not JSON: %v\n%s", err, msg)
	}
	if !bytes.Equal(canonical, msg) {
		t.Fatalf("message is not canonical:\n got %s\nwant %s", msg, canonical)
	}
	if want := naiveMessage(t, decodeTree(t, doc)); !bytes.Equal(msg, want) {
		t.Fatalf("message is not the canonical document minus signature:\n got %s\nwant %s", msg, want)
	}
	if want := mustMarshal(t, p); !bytes.Equal(doc, want) {
		t.Fatalf("document is not json.Marshal(p):\n got %s\nwant %s", doc, want)
	}
	if p.Issuer.Signature != hmacHex(testSecret, msg) {
		t.Fatal("signature is not HMAC-SHA256 of the message")
	}
	canonicalDoc, err := jcs.Transform(doc)
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json escapes these with \u, JCS does not.
	wantFast := !strings.ContainsAny(p.Issuer.Platform, "<>&\u2028\u2029")
	for _, d := range [][]byte{doc, canonicalDoc} {
		v, fast := verifyBoth(t, d, []Key{testKey(t)}, p.Issuer.ComputedAt)
		if !v.Valid || fast != wantFast {
			t.Fatalf("valid=%v fast=%v (want %v) %v\n%s", v.Valid, fast, wantFast, v.Errors, d)
		}
		wantFast = true
	}
}

func signed(t *testing.T, agent, platform string, c score.Counts, at time.Time) (*Passport, []byte) {
	t.Helper()
	r, err := score.Compute(c)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(agent, platform, r, at)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := p.Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return p, doc
}

func TestEncoding(t *testing.T) {
	platforms := []string{"swarmsync.ai", `q"uo\te\\`, "<a&b>", "Zürich — 東京 😀", "line\u2028sep\u2029", "~ \u00a0", "x"}
	counts := []score.Counts{testExample, {}, {ConduitTotal: 100, ConduitSuccess: 100, AP2Total: 50, AP2Success: 50},
		{ConduitTotal: MaxCount, ConduitSuccess: 1, AP2Total: MaxCount, AP2Success: MaxCount - 1},
		{ConduitTotal: 3, ConduitSuccess: 1, AP2Total: 7, AP2Success: 3}, {ConduitTotal: 10_000_000, ConduitSuccess: 1}}
	times := []time.Time{testComputedAt, time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), time.Date(9999, 12, 24, 23, 59, 59, 0, time.UTC)}
	for i, platform := range platforms {
		for j, c := range counts {
			p, doc := signed(t, "agent-7", platform, c, times[(i+j)%len(times)])
			checkEncoding(t, p, doc)
		}
	}
}

// FuzzEncoding issues passports from fuzzed counts, platform, agent ID and
// time and checks the encodings against jcs and encoding/json.
func FuzzEncoding(f *testing.F) {
	f.Add(uint64(80), uint64(76), uint64(40), uint64(38), "swarmsync.ai", "agent-7", int64(1773757800))
	f.Add(uint64(1<<53-1), uint64(3), uint64(0), uint64(0), "a\"b\\c\u2028<>&é", "A.b_c:d-0", int64(-62135596800))
	f.Add(uint64(7), uint64(7), uint64(1<<40), uint64(12345), "\x00\x1f\x7f\u0080\u009f", "x", int64(253401696000))
	f.Fuzz(func(t *testing.T, ct, cs, at, as uint64, platform, agent string, sec int64) {
		c := score.Counts{ConduitTotal: int64(ct % (MaxCount + 1)), AP2Total: int64(at % (MaxCount + 1))}
		c.ConduitSuccess = int64(cs % uint64(c.ConduitTotal+1))
		c.AP2Success = int64(as % uint64(c.AP2Total+1))
		// Every string, control characters included, is escaped as JCS does.
		if utf8.ValidString(platform) {
			q := appendStringJCS(nil, platform)
			if canon, err := jcs.Transform(q); err != nil || !bytes.Equal(canon, q) {
				t.Fatalf("appendStringJCS(%q) = %s, jcs: %s %v", platform, q, canon, err)
			}
			if want := mustMarshal(t, platform); !bytes.Equal(appendStringGo(nil, platform), want) {
				t.Fatalf("appendStringGo(%q) = %s, want %s", platform, appendStringGo(nil, platform), want)
			}
		}
		if checkPlatform(platform) != nil {
			platform = "p" + strings.Map(func(r rune) rune {
				if r < 0x20 || r >= 0x7f && r < 0xa0 || r == utf8.RuneError {
					return '?'
				}
				return r
			}, platform)
			if len(platform) > maxPlatformLen {
				platform = strings.ToValidUTF8(platform[:maxPlatformLen], "")
			}
		}
		if checkAgentID(agent) != nil {
			agent = "agent-7"
		}
		const first, last = -62135596800, 253402300799 - 7*24*3600 // years 1 to 9999
		computed := time.Unix(first+int64(uint64(sec)%uint64(last-first)), 0).UTC()
		p, doc := signed(t, agent, platform, c, computed)
		checkEncoding(t, p, doc)
	})
}

// The shortcut for k/100 gives what the general ECMAScript formatter gives.
func TestNumberShortcut(t *testing.T) {
	var ns numbers
	check := func(f float64) {
		ns.set(0, f)
		want, err := jcs.NumberToJSON(f)
		if err != nil || string(ns.get(0)) != want || string(score.AppendJSONFloat(nil, f)) != want {
			t.Fatalf("%v: got %s, AppendJSONFloat %s, jcs %s", f, ns.get(0), score.AppendJSONFloat(nil, f), want)
		}
	}
	for k := range 101 {
		check(float64(k) / 100)
		check(float64(k) / 50)
	}
	for total := int64(1); total <= 400; total++ {
		for s := int64(0); s <= total; s++ {
			check(float64(s) / float64(total))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		total := 1 + rng.Int64N(MaxCount)
		check(float64(rng.Int64N(total+1)) / float64(total))
	}
	check(1.0 / MaxCount)
	check(math.SmallestNonzeroFloat64)
}

// Every escrow modifier renders as its ECMAScript form, so the fast path may
// compare text instead of parsing it.
func TestModifierText(t *testing.T) {
	for m := score.Modifier(0); m <= score.ModifierOne; m++ {
		got, _ := m.AppendText(nil)
		want, _ := jcs.NumberToJSON(float64(m) / 10000)
		if string(got) != want {
			t.Fatalf("%d: %s, want %s", m, got, want)
		}
	}
}

// wireTime and isUUIDv4 are allocation-free forms of the definitions below.
func FuzzWireChecks(f *testing.F) {
	f.Add(int64(1773757800), int64(0), int32(0), "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d90")
	f.Add(int64(-62167219200), int64(1), int32(3600), "3F1C9A52-7D4E-4B8A-9C61-2E5F0A7B8D90")
	f.Add(int64(253402300800), int64(0), int32(-1), "{3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d90}")
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int32, id string) {
		tm := time.Unix(sec, nsec%2e9).In(time.FixedZone("Z", int(offset%(25*3600))))
		old := tm.Format(time.RFC3339Nano) == tm.UTC().Format(time.RFC3339) && tm.Year() >= 0 && tm.Year() <= 9999
		if wireTime(tm) != old {
			t.Fatalf("wireTime(%v) = %v", tm, !old)
		}
		u, err := uuid.Parse(id)
		old = err == nil && u.String() == id && u.Version() == 4 && u.Variant() == uuid.RFC4122
		if isUUIDv4(id) != old {
			t.Fatalf("isUUIDv4(%q) = %v", id, !old)
		}
	})
}

// Documents in other layouts, as other issuers write them, take the fast
// path and agree with the slow path: canonical member order, indentation,
// whitespace anywhere, signature first.
func TestFastPathLayouts(t *testing.T) {
	p, doc := signed(t, "agent-7", `swarm "sync" \ Zürich`, testExample, testComputedAt)
	canonical, err := jcs.Transform(doc)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, doc, "\r\n", "\t")
	sigFirst := bytes.Replace(canonical, []byte(`"issuer":{`), []byte(`"issuer":{"signature":"`+p.Issuer.Signature+`",`), 1)
	sigFirst = bytes.Replace(sigFirst, []byte(`,"signature":"`+p.Issuer.Signature+`"}`), []byte(`}`), 1)
	spaced := bytes.NewBuffer(nil)
	inString := false
	for i, c := range canonical {
		spaced.WriteByte(c)
		if c == '"' && canonical[i-1] != '\\' {
			inString = !inString
		}
		if !inString && (c == ',' || c == ':' || c == '{' || c == '[') {
			spaced.WriteString(" \n")
		}
	}
	for name, d := range map[string][]byte{"issued": doc, "canonical": canonical, "indented": pretty.Bytes(),
		"signature first": sigFirst, "spaced": append(append([]byte(" \t"), spaced.Bytes()...), "\n"...)} {
		v, fast := verifyBoth(t, d, []Key{testKey(t)}, testComputedAt)
		if !v.Valid || !fast {
			t.Errorf("%s: valid=%v fast=%v %v\n%s", name, v.Valid, fast, v.Errors, d)
		}
	}
}

// Documents the fast path must hand to the slow path, which agrees.
func TestFastPathDeclines(t *testing.T) {
	doc := signedExample(t)
	s := string(doc)
	i := strings.Index(s, `"signature":"`) + len(`"signature":"`)
	upperSig := s[:i] + strings.ToUpper(s[i:i+64]) + s[i+64:]
	cases := map[string]string{
		"escape in agent":     strings.Replace(s, `"agent-7"`, `"agent\u002d7"`, 1),
		"number spelling":     strings.Replace(s, `"sessions_90d":80`, `"sessions_90d":80.0`, 1),
		"rate spelling":       strings.Replace(s, `"success_rate":0.95`, `"success_rate":0.950`, 1),
		"escrow spelling":     strings.Replace(s, `0.392`, `3.92e-1`, 1),
		"unknown member":      strings.Replace(s, `{"swarmscore_version"`, `{"x":1,"swarmscore_version"`, 1),
		"duplicate":           strings.Replace(s, `{"swarmscore_version":"1.0"`, `{"swarmscore_version":"1.0","swarmscore_version":"1.0"`, 1),
		"trailing":            s + "x",
		"negative":            strings.Replace(s, `"value":760`, `"value":-760`, 1),
		"wrong type":          strings.Replace(s, `"value":760`, `"value":"760"`, 1),
		"bad time":            strings.Replace(s, `2026-03-17T14:30:00Z`, `2026-02-30T14:30:00Z`, 1),
		"upper signature":     upperSig,
		"inconsistent rate":   strings.Replace(s, `"success_rate":0.95`, `"success_rate":0.9`, 1),
		"four gaps":           strings.Replace(s, `],"formula`, `,{"tier":"ELITE","requirement":"score","required":850,"actual":760}],"formula`, 1),
		"invalid UTF-8":       strings.Replace(s, `swarmsync.ai`, "swarm\xffsync.ai", 1),
		"null":                strings.Replace(s, `"value":760`, `"value":null`, 1),
		"escaped member name": strings.Replace(s, `"agent_id"`, `"agent\u005fid"`, 1),
	}
	for name, d := range cases {
		if d == s {
			t.Fatalf("%s: no change", name)
		}
		if _, fast := verifyBoth(t, []byte(d), []Key{testKey(t)}, testComputedAt); fast {
			t.Errorf("%s: took the fast path", name)
		}
	}
	// Inconsistent but well-formed documents are decided on the fast path,
	// with the slow path's findings.
	tree := decodeTree(t, doc)
	obj(tree, "score")["value"] = json.Number("761")
	tampered := strings.Replace(s, `"value":760`, `"value":761`, 1)
	for _, d := range [][]byte{resign(t, tree), []byte(tampered)} {
		v, fast := verifyBoth(t, d, []Key{testKey(t)}, testComputedAt)
		if v.Valid || v.ScoreValid || !fast {
			t.Errorf("valid=%v score_valid=%v fast=%v %v", v.Valid, v.ScoreValid, fast, v.Errors)
		}
	}
}
