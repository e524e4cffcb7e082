package passport

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
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
// minus its signature, that the document is its own canonical form (the
// message with the signature member spliced in), that json.Marshal(p) (§6.1
// order, Go escaping) carries the same signed content, and that the document
// verifies on the fast path, as issued and as json.Marshal writes it.
func checkEncoding(t *testing.T, p *Passport, doc []byte) {
	t.Helper()
	msg, at := appendMessage(nil, p)
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
	if canonicalDoc, err := jcs.Transform(doc); err != nil || !bytes.Equal(doc, canonicalDoc) {
		t.Fatalf("document is not canonical (%v):\n got %s\nwant %s", err, doc, canonicalDoc)
	}
	member := `,"signature":"` + p.Issuer.Signature + `"`
	if want := string(msg[:at]) + member + string(msg[at:]); string(doc) != want {
		t.Fatalf("document is not the message with the signature spliced in:\n got %s\nwant %s", doc, want)
	}
	if p.Issuer.Signature != hmacHex(testSecret, msg) {
		t.Fatal("signature is not HMAC-SHA256 of the message")
	}
	marshalled := mustMarshal(t, p)
	if want := naiveMessage(t, decodeTree(t, marshalled)); !bytes.Equal(msg, want) {
		t.Fatalf("json.Marshal(p) signs other content:\n got %s\nwant %s", want, msg)
	}
	// encoding/json escapes these with \u, JCS does not.
	wantFast := !strings.ContainsAny(p.Issuer.Platform, "<>&\u2028\u2029")
	for _, d := range [][]byte{marshalled, doc} {
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
	t.Parallel()
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
// time and checks the encoding against jcs.
func FuzzEncoding(f *testing.F) {
	f.Add(uint64(80), uint64(76), uint64(40), uint64(38), "swarmsync.ai", "agent-7", int64(1773757800))
	f.Add(uint64(1<<53-1), uint64(3), uint64(0), uint64(0), "a\"b\\c\u2028<>&é", "A.b_c:d-0", int64(-62135596800))
	f.Add(uint64(7), uint64(7), uint64(1<<40), uint64(12345), "\x00\x1f\x7f\u0080\u009f", "x", int64(253401696000))
	f.Fuzz(func(t *testing.T, ct, cs, at, as uint64, platform, agent string, sec int64) {
		c := score.Counts{ConduitTotal: int64(ct % (MaxCount + 1)), AP2Total: int64(at % (MaxCount + 1))}
		c.ConduitSuccess = int64(cs % uint64(c.ConduitTotal+1))
		c.AP2Success = int64(as % uint64(c.AP2Total+1))
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

// appendFloat's shortcut for k/100 gives what jcs gives, for every k, for
// every rate s/t with t ≤ 400, and for random rates.
func TestAppendFloat(t *testing.T) {
	t.Parallel()
	check := func(f float64) {
		want, err := jcs.NumberToJSON(f)
		if got := appendFloat(nil, f); err != nil || string(got) != want {
			t.Fatalf("%v: got %s, jcs %s", f, got, want)
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
	check(0.29) // 0.29*100 is 28.999999999999996
}

// Every escrow modifier renders as its ECMAScript form, so the fast path may
// compare text instead of parsing it.
func TestModifierText(t *testing.T) {
	t.Parallel()
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
		old = err == nil && u.String() == strings.ToLower(id) && u.Version() == 4 && u.Variant() == uuid.RFC4122
		if isUUIDv4(id) != old {
			t.Fatalf("isUUIDv4(%q) = %v", id, !old)
		}
	})
}

// Documents in other layouts, as other issuers write them, take the fast
// path and agree with the slow path: canonical member order, indentation,
// whitespace anywhere, signature first.
func TestFastPathLayouts(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	doc := signedExample(t)
	s := string(doc)
	i := strings.Index(s, `"signature":"`) + len(`"signature":"`)
	upperSig := s[:i] + strings.ToUpper(s[i:i+64]) + s[i+64:]
	cases := map[string]string{
		"escape in agent":     strings.Replace(s, `"agent-7"`, `"agent\u002d7"`, 1),
		"number spelling":     strings.Replace(s, `"sessions_90d":80`, `"sessions_90d":80.0`, 1),
		"rate spelling":       strings.Replace(s, `"success_rate":0.95`, `"success_rate":0.950`, 1),
		"escrow spelling":     strings.Replace(s, `0.392`, `3.92e-1`, 1),
		"unknown member":      strings.Replace(s, `{"agent_id"`, `{"x":1,"agent_id"`, 1),
		"duplicate":           strings.Replace(s, `{"agent_id":"agent-7"`, `{"agent_id":"agent-7","agent_id":"agent-7"`, 1),
		"trailing":            s + "x",
		"negative":            strings.Replace(s, `"value":760`, `"value":-760`, 1),
		"wrong type":          strings.Replace(s, `"value":760`, `"value":"760"`, 1),
		"bad time":            strings.Replace(s, `2026-03-17T14:30:00Z`, `2026-02-30T14:30:00Z`, 1),
		"upper signature":     upperSig,
		"inconsistent rate":   strings.Replace(s, `"success_rate":0.95`, `"success_rate":0.9`, 1),
		"four gaps":           strings.Replace(s, `],"score":{`, `,{"actual":760,"required":850,"requirement":"score","tier":"ELITE"}],"score":{`, 1),
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

// fastDoc.time reads exactly what time.Parse reads for the one layout it
// accepts, every day (and impossible day) of leap, common and century years
// and random instants over years 0–9999.
func TestFastTime(t *testing.T) {
	t.Parallel()
	check := func(text string) {
		t.Helper()
		d := fastDoc{doc: []byte(`"` + text + `"`)}
		var got time.Time
		ok := d.time(mkSpan(0, len(d.doc)), &got)
		want, err := time.Parse(time.RFC3339, text)
		wantOK := err == nil && want.Format(time.RFC3339) == text
		if ok != wantOK || ok && got != want.UTC() {
			t.Fatalf("%s: got %v %v, time.Parse %v %v", text, got, ok, want, err)
		}
	}
	for _, y := range []int{0, 1, 4, 100, 400, 1900, 1970, 2000, 2023, 2024, 2100, 9999} {
		for mo := 0; mo <= 13; mo++ {
			for day := 0; day <= 32; day++ {
				check(fmt.Sprintf("%04d-%02d-%02dT23:59:59Z", y, mo, day))
			}
		}
	}
	// Every byte value in every position, around a valid time.
	for pos := range 20 {
		for c := range 256 {
			b := []byte("2024-02-29T23:59:59Z")
			b[pos] = byte(c)
			check(string(b))
		}
	}
	for _, s := range []string{"2026-03-17T24:00:00Z", "2026-03-17T14:60:00Z", "2026-03-17T14:30:60Z", "2026-03-17T14:30:00z", "2026-03-17t14:30:00Z", "2026-03-1714:30:00Z", "-026-03-17T14:30:00Z"} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const first, last = -62167219200, 253402300799 // 0000-01-01 to 9999-12-31
	for range 200000 {
		check(time.Unix(first+rng.Int64N(last-first+1), 0).UTC().Format(time.RFC3339))
	}
}

// decodeSignature accepts exactly 64 or 128 lowercase hex digits and
// decodes them as encoding/hex does.
func TestDecodeSignature(t *testing.T) {
	t.Parallel()
	for _, valid := range []string{strings.Repeat("0123456789abcdef", 4), strings.Repeat("fedcba9876543210", 8)} {
		for pos := range len(valid) {
			for c := range 256 {
				s := []byte(valid)
				s[pos] = byte(c)
				var raw [64]byte
				n, ok := decodeSignature(s, &raw)
				want, err := hex.DecodeString(string(s))
				wantOK := err == nil && strings.ToLower(string(s)) == string(s)
				if ok != wantOK || ok && !bytes.Equal(raw[:n], want) {
					t.Fatalf("%q: %x %v, want %x %v", s, raw[:n], ok, want, wantOK)
				}
			}
		}
		for _, s := range []string{"", valid[:len(valid)-1], valid + "0", (valid + valid)[:96]} {
			var raw [64]byte
			if _, ok := decodeSignature(s, &raw); ok {
				t.Fatalf("%q accepted", s)
			}
		}
	}
}

// numVal reads as an integer exactly the canonical integers in [0, MaxCount]
// ("0" or digits without a leading zero) and ends a number where the loose
// number scan ends it, whatever follows.
func TestNumVal(t *testing.T) {
	t.Parallel()
	check := func(text string) {
		t.Helper()
		var want int64 = -1
		if n, err := strconv.ParseInt(text, 10, 64); err == nil && n >= 0 && n <= MaxCount && strconv.FormatInt(n, 10) == text {
			want = n
		}
		end := 0
		for end < len(text) && strings.IndexByte("0123456789.eE+-", text[end]) >= 0 {
			end++
		}
		for _, tail := range []string{"", ",", "}", `"`, " ", "x", `},"x":"12345678"}`, ",1234567890", "        "} {
			d := fastDoc{doc: []byte(text + tail)}
			var s span
			ok := d.numVal(&s)
			n, isInt := d.integer(s)
			if ok != (end > 0) || d.i != end || s.lo != 0 || int(s.hi) != end || isInt != (want >= 0 && end == len(text)) || isInt && n != want {
				t.Fatalf("%q: ok=%v end=%d span=%+v integer %d %v, want end %d integer %d", text+tail, ok, d.i, s, n, isInt, end, want)
			}
		}
	}
	for _, s := range []string{"", "0", "00", "01", "1", "10", "-1", "-0", "0.5", "1e3", "80.0", "9007199254740991", "9007199254740992",
		"9999999999999999", "10000000000000000", "1234567890123456", "12345678901234567", "+1", "1-", "1.", "18446744073709551616", "x1"} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200000 {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = "0123456789012345678901234567890123456789.e-"[rng.IntN(43)]
		}
		check(string(b))
	}
}

// isUUIDv4 agrees with uuid.Parse for every byte value in every position of
// a valid version 4 UUID, in either case (RFC 9562 reads UUIDs
// case-insensitively), in the hyphenated form only.
func TestIsUUIDv4(t *testing.T) {
	t.Parallel()
	for pos := range 36 {
		for c := range 256 {
			b := []byte(testUUID)
			b[pos] = byte(c)
			u, err := uuid.Parse(string(b))
			want := err == nil && u.String() == strings.ToLower(string(b)) && u.Version() == 4 && u.Variant() == uuid.RFC4122
			if isUUIDv4(string(b)) != want {
				t.Fatalf("isUUIDv4(%q) = %v", b, !want)
			}
		}
	}
}

// A fuzz find from CI: a 256-byte platform with a quote, "&", "<" and
// characters of every UTF-8 length, on a 2^40 AP2 count in year 8030.
func TestEncodingLongPlatform(t *testing.T) {
	t.Parallel()
	platform := "p?Ro?M?????\"? *???&S?DZ???????+??93???`WL?m'H??Ƴ?UH??H?d?Hᓇ??.?:???=,??z?K?????V??ǐ*?9D??'ru??v?ŭ#Z?T????p^LAvY???Y??e?;????n?@2^?<?#????Tv??`Ώ ????X?1????t?99?DyQ???ΰ????????2;???n???Bp?{?r?/?b?Eo?N?֒[Q馁?F????%??K@?y??aX񗚣&)?2??l??RA?F????^g??"
	at := time.Date(8030, 12, 25, 0, 0, 0, 0, time.UTC)
	p, doc := signed(t, "agent-7", platform, score.Counts{ConduitTotal: 4, ConduitSuccess: 2, AP2Total: 1 << 40, AP2Success: 12313}, at)
	checkEncoding(t, p, doc)
}
