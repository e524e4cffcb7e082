package passport

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/score"
)

func obj(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		m = m[p].(map[string]any)
	}
	return m
}

func TestVerifyValid(t *testing.T) {
	p := newPassport(t, testExample)
	p.AgentPassportID = testUUID
	doc, err := p.Sign(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	v, fast := verifyBoth(t, doc, []Key{testKey(t)}, testComputedAt)
	if !fast {
		t.Error("a passport as issued did not take the fast path")
	}
	if !v.Valid || !v.SignatureValid || !v.ScoreValid || v.DetectedTampering || len(v.Errors) != 0 || len(v.Warnings) != 0 {
		t.Fatalf("verification = %+v", v)
	}
	if v.KeyIndex != 0 || !bytes.Equal(v.Document, doc) {
		t.Errorf("KeyIndex = %d, Document = %s", v.KeyIndex, v.Document)
	}
	if v.ExpiresAt == nil || !v.ExpiresAt.Equal(p.ExpiresAt) {
		t.Errorf("ExpiresAt = %v", v.ExpiresAt)
	}
	if got, want := mustMarshal(t, v.Passport), mustMarshal(t, p); !bytes.Equal(got, want) {
		t.Errorf("parsed passport\n%s\nwant\n%s", got, want)
	}
	// Document is the caller's slice; what was read from it is a copy.
	if &v.Document[0] != &doc[0] {
		t.Error("Document is not the input")
	}
	before := mustMarshal(t, v.Passport)
	for i := range doc {
		doc[i] = ' '
	}
	if got := mustMarshal(t, v.Passport); !bytes.Equal(got, before) {
		t.Errorf("the passport read changed with the input:\n%s", got)
	}
}

func TestVerifyExpiry(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	expires := testComputedAt.Add(Validity)
	if v := Verify(doc, []Key{testKey(t)}, expires.Add(-time.Second)); !v.Valid {
		t.Fatalf("a second before expiry: %v", v.Errors)
	}
	v := Verify(doc, []Key{testKey(t)}, expires)
	if v.Valid || !v.SignatureValid || !v.ScoreValid || v.DetectedTampering || !slices.Equal(codes(v.Errors), []string{CodeExpired}) {
		t.Fatalf("at expiry: %+v", v)
	}
}

func TestVerifyKeyring(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	other, _ := NewKey([]byte(strings.Repeat("o", 40)))
	v := Verify(doc, []Key{other, testKey(t)}, testComputedAt)
	if !v.Valid || v.KeyIndex != 1 {
		t.Fatalf("rotated keyring: valid=%v KeyIndex=%d %v", v.Valid, v.KeyIndex, v.Errors)
	}
	v = Verify(doc, []Key{other}, testComputedAt)
	if v.Valid || v.SignatureValid || !v.ScoreValid || !v.DetectedTampering || !slices.Equal(codes(v.Errors), []string{CodeSignatureMismatch}) {
		t.Fatalf("wrong key: %+v", v)
	}
	for _, ring := range [][]Key{nil, {}, {{}}} {
		v = Verify(doc, ring, testComputedAt)
		if v.Valid || v.SignatureValid || v.DetectedTampering || !slices.Equal(codes(v.Errors), []string{CodeNoKeys}) {
			t.Fatalf("keyring %v: %+v", ring, v)
		}
	}
}

// Changing any signed content, including the order-independent, whitespace-
// independent canonical form, breaks the signature; changing only layout
// does not.
func TestVerifyLayoutIsNotSigned(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	tree := decodeTree(t, doc)
	p, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	spec := mustMarshal(t, p) // §6.1 order
	var indented bytes.Buffer
	_ = json.Indent(&indented, doc, "\t", "   ")
	sigFirst := bytes.Replace(doc, []byte(`"issuer":{`), []byte(`"issuer":{"signature":"`+tree["issuer"].(map[string]any)["signature"].(string)+`",`), 1)
	sigFirst = bytes.Replace(sigFirst, []byte(`,"signature":"`+tree["issuer"].(map[string]any)["signature"].(string)+`"}`), []byte(`}`), 1)
	sigOnly := bytes.Replace(sigFirst, []byte(`,"computed_at":"2026-03-17T14:30:00Z","platform":"swarmsync.ai"`), nil, 1)
	spaced := bytes.ReplaceAll(doc, []byte(`,`), []byte(" ,\r\n "))
	escaped := bytes.Replace(doc, []byte(`"signature"`), []byte(`"sign\u0061ture"`), 1)
	numbers := bytes.Replace(doc, []byte(`"escrow_modifier":0.392`), []byte(`"escrow_modifier":3.920E-1`), 1)
	numbers = bytes.Replace(numbers, []byte(`"volume_factor":0.8`), []byte(`"volume_factor":0.80`), 1)
	numbers = bytes.Replace(numbers, []byte(`"value":760`), []byte(`"value":760.0`), 1)
	numbers = bytes.Replace(numbers, []byte(`"sessions_90d":80`), []byte(`"sessions_90d":8e1`), 1)
	numbers = bytes.Replace(numbers, []byte(`"success_rate":0.95`), []byte(`"success_rate":0.95000000000000000001`), 1)
	for name, d := range map[string][]byte{"§6.1 order": spec, "indented": indented.Bytes(), "signature first": sigFirst, "spaced": spaced, "escaped name": escaped, "number spelling": numbers} {
		if bytes.Equal(d, doc) {
			t.Fatalf("%s: mutation did not apply", name)
		}
		if v, _ := verifyBoth(t, d, []Key{testKey(t)}, testComputedAt); !v.Valid {
			t.Errorf("%s: %v\n%s", name, v.Errors, d)
		}
	}
	// Only the signature left in issuer: the rest of issuer was removed, so
	// the signature must fail (and the passport is malformed).
	if v := Verify(sigOnly, []Key{testKey(t)}, testComputedAt); v.SignatureValid || !hasCode(v.Errors, CodeMissingField) {
		t.Errorf("signature-only issuer: %+v", v)
	}
}

func TestVerifyTampering(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	for name, d := range map[string][]byte{
		"score":     bytes.Replace(doc, []byte(`"value":760`), []byte(`"value":761`), 1),
		"agent":     bytes.Replace(doc, []byte(`"agent_id":"agent-7"`), []byte(`"agent_id":"agent-8"`), 1),
		"expiry":    bytes.Replace(doc, []byte(`"expires_at":"2026-03-24`), []byte(`"expires_at":"2027-03-24`), 1),
		"extension": bytes.Replace(doc, []byte(`"agent_id"`), []byte(`"x":{"y":[1,null]},"agent_id"`), 1),
		"Signature": bytes.Replace(doc, []byte(`"platform"`), []byte(`"Signature":"x","platform"`), 1),
	} {
		v, _ := verifyBoth(t, d, []Key{testKey(t)}, testComputedAt)
		if v.Valid || v.SignatureValid || !v.DetectedTampering || !hasCode(v.Errors, CodeSignatureMismatch) {
			t.Errorf("%s: %+v", name, v)
		}
	}
}

// TestVerifyProblems covers each problem code: each case builds a document,
// (re-signed with the right key when the point is the content, not the
// signature), and states the code and the three flags expected.
func TestVerifyProblems(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	sig := decodeTree(t, doc)["issuer"].(map[string]any)["signature"].(string)
	edit := func(f func(m map[string]any)) []byte { // change content, keep a valid signature
		m := decodeTree(t, doc)
		f(m)
		return resign(t, m)
	}
	replace := func(old, new string) []byte { // change bytes, keep the old signature
		d := bytes.Replace(doc, []byte(old), []byte(new), 1)
		if bytes.Equal(d, doc) {
			t.Fatalf("%q not in document", old)
		}
		return d
	}
	missing := decodeTree(t, doc)
	delete(obj(missing, "issuer"), "signature")
	unsigned := mustMarshal(t, missing)
	deep := `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,`
	cases := []struct {
		name           string
		doc            []byte
		code           string
		sigOK, scoreOK bool
		warning        bool // code is a warning; the document is valid
	}{
		{"too large", append(bytes.Repeat([]byte(" "), MaxDocumentSize-len(doc)+1), doc...), CodeTooLarge, false, false, false},
		{"empty", nil, CodeInvalidJSON, false, false, false},
		{"not JSON", []byte("passport"), CodeInvalidJSON, false, false, false},
		{"truncated", doc[:len(doc)-1], CodeInvalidJSON, false, false, false},
		{"array", []byte(`[` + string(doc) + `]`), CodeWrongType, false, false, false},
		{"string", []byte(`"x"`), CodeWrongType, false, false, false},
		{"trailing object", append(append([]byte{}, doc...), "{}"...), CodeTrailingData, false, false, false},
		{"trailing garbage", append(append([]byte{}, doc...), " x"...), CodeTrailingData, false, false, false},
		{"duplicate top member", replace(`"agent_id":"agent-7"`, `"agent_id":"agent-7","agent_id":"agent-9"`), CodeDuplicateKey, false, false, false},
		{"duplicate via escape", replace(`"platform"`, `"sign\u0061ture":"`+sig+`","platform"`), CodeDuplicateKey, false, false, false},
		{"duplicate in extension", replace(`"agent_id"`, `"x":[{"a":1,"a":1}],"agent_id"`), CodeDuplicateKey, false, false, false},
		{"too deep", replace(`{`, deep), CodeTooDeep, false, false, false},
		{"lone surrogate", replace(`"agent_id"`, `"x":"\ud800","agent_id"`), CodeInvalidJSON, false, false, false},
		{"bad UTF-8", replace(`swarmsync`, "swarm\xffsync"), CodeInvalidJSON, false, false, false},
		{"number beyond double", replace(`"agent_id"`, `"x":1e400,"agent_id"`), CodeInvalidJSON, false, false, false},

		{"value as string", edit(func(m map[string]any) { obj(m, "score")["value"] = "760" }), CodeWrongType, true, false, false},
		{"value as fraction", edit(func(m map[string]any) { obj(m, "score")["value"] = json.Number("760.5") }), CodeWrongType, true, false, false},
		{"count 1e21", edit(func(m map[string]any) {
			obj(m, "dimensions", "technical_execution")["sessions_90d"] = json.Number("1e21")
		}), CodeWrongType, true, false, false},
		{"count beyond 2^53", edit(func(m map[string]any) {
			obj(m, "dimensions", "technical_execution")["sessions_90d"] = json.Number("9007199254740993")
		}), CodeInvalidValue, true, false, false},
		{"issuer as array", edit(func(m map[string]any) { m["issuer"] = []any{m["issuer"]} }), CodeWrongType, false, false, false},
		{"gaps null", edit(func(m map[string]any) { m["qualification_gaps"] = nil }), CodeWrongType, true, false, false},
		{"gap as number", edit(func(m map[string]any) { m["qualification_gaps"].([]any)[0] = json.Number("1") }), CodeGapsMismatch, true, true, true},
		{"dimension as string", edit(func(m map[string]any) { obj(m, "dimensions")["technical_execution"] = "x" }), CodeWrongType, true, false, false},
		{"tier missing", edit(func(m map[string]any) { delete(obj(m, "score"), "tier") }), CodeMissingField, true, false, false},
		{"agent_id missing", edit(func(m map[string]any) { delete(m, "agent_id") }), CodeAgentIDMissing, true, true, true},
		{"gap field missing", edit(func(m map[string]any) { delete(m["qualification_gaps"].([]any)[2].(map[string]any), "actual") }), CodeGapsMismatch, true, true, true},
		{"tier lower case", edit(func(m map[string]any) { obj(m, "score")["tier"] = "standard" }), CodeInvalidValue, true, false, false},
		{"offset time", edit(func(m map[string]any) { obj(m, "issuer")["computed_at"] = "2026-03-17T14:30:00+00:00" }), CodeInvalidValue, true, false, false},
		{"fractional time", edit(func(m map[string]any) { m["expires_at"] = "2026-03-24T14:30:00.000Z" }), CodeInvalidValue, true, false, false},
		{"bad agent_id", edit(func(m map[string]any) { m["agent_id"] = "agent 7" }), CodeInvalidValue, true, false, false},
		{"braced UUID", edit(func(m map[string]any) { m["agent_passport_id"] = "{" + m["agent_passport_id"].(string) + "}" }), CodeInvalidValue, true, false, false},
		{"UUID version 1", edit(func(m map[string]any) { m["agent_passport_id"] = "3f1c9a52-7d4e-1b8a-9c61-2e5f0a7b8d90" }), CodeInvalidValue, true, false, false},
		{"empty platform", edit(func(m map[string]any) { obj(m, "issuer")["platform"] = "" }), CodeInvalidValue, true, false, false},
		{"label", edit(func(m map[string]any) { obj(m, "dimensions", "commercial_reliability")["label"] = "AP2" }), CodeInvalidValue, true, false, false},
		{"escrow not in basis points", edit(func(m map[string]any) { m["escrow_modifier"] = json.Number("0.39201") }), CodeInvalidValue, true, false, false},
		{"unknown field", edit(func(m map[string]any) { m["extension"] = map[string]any{"a": []any{"ü", json.Number("1e21")}} }), CodeUnknownField, true, true, true},
		{"unknown issuer field", edit(func(m map[string]any) { obj(m, "issuer")["Signature"] = "x" }), CodeUnknownField, true, true, true},

		{"signature missing", unsigned, CodeSignatureMissing, false, true, false},
		{"signature upper case", replace(sig, strings.ToUpper(sig)), CodeSignatureMalformed, false, true, false},
		{"signature short", replace(sig, sig[1:]), CodeSignatureMalformed, false, true, false},
		{"signature not hex", replace(sig, "g"+sig[1:]), CodeSignatureMalformed, false, true, false},
		{"signature number", replace(`"`+sig+`"`, `1`), CodeSignatureMalformed, false, true, false},
		{"signature object", replace(`"`+sig+`"`, `{"a":{"a":1}}`), CodeSignatureMalformed, false, true, false},
		{"signature altered", replace(sig, map[bool]string{true: "1", false: "0"}[sig[0] == '0']+sig[1:]), CodeSignatureMismatch, false, true, false},

		{"swarmscore_version", edit(func(m map[string]any) { m["swarmscore_version"] = "2.0" }), CodeUnsupportedVersion, true, false, false},
		{"formula_version", edit(func(m map[string]any) { m["formula_version"] = "2.0"; obj(m, "score")["value"] = json.Number("1") }), CodeUnsupportedFormulaVersion, true, false, false},
		{"success above total", edit(func(m map[string]any) {
			obj(m, "dimensions", "technical_execution")["successful_sessions_90d"] = json.Number("81")
		}), CodeInvalidCounts, true, false, false},
		{"negative count", edit(func(m map[string]any) {
			obj(m, "dimensions", "technical_execution")["sessions_90d"] = json.Number("-80")
		}), CodeInvalidCounts, true, false, false},
		{"score", edit(func(m map[string]any) { obj(m, "score")["value"] = json.Number("759") }), CodeScoreMismatch, true, false, false},
		{"tier", edit(func(m map[string]any) { obj(m, "score")["tier"] = "ELITE" }), CodeTierMismatch, true, false, false},
		{"score contribution", edit(func(m map[string]any) { obj(m, "score")["ap2_contribution"] = json.Number("455") }), CodeContributionMismatch, true, false, false},
		{"dimension contribution", edit(func(m map[string]any) {
			obj(m, "dimensions", "technical_execution")["actual_contribution"] = json.Number("303")
		}), CodeContributionMismatch, true, false, false},
		{"max contribution", edit(func(m map[string]any) {
			obj(m, "dimensions", "commercial_reliability")["max_contribution"] = json.Number("400")
		}), CodeContributionMismatch, true, false, false},
		{"success rate", edit(func(m map[string]any) {
			obj(m, "dimensions", "technical_execution")["success_rate"] = json.Number("0.9500000000000001")
		}), CodeRateMismatch, true, false, false},
		{"volume factor", edit(func(m map[string]any) {
			obj(m, "dimensions", "commercial_reliability")["volume_factor"] = json.Number("1")
		}), CodeVolumeFactorMismatch, true, false, false},
		{"escrow", edit(func(m map[string]any) { m["escrow_modifier"] = json.Number("0.3928") }), CodeEscrowMismatch, true, false, false},
		{"gaps reordered", edit(func(m map[string]any) { g := m["qualification_gaps"].([]any); g[0], g[1] = g[1], g[0] }), CodeGapsMismatch, true, true, true},
		{"gaps empty", edit(func(m map[string]any) { m["qualification_gaps"] = []any{} }), CodeGapsMismatch, true, true, true},
		{"expiry", edit(func(m map[string]any) { m["expires_at"] = "2026-03-25T14:30:00Z" }), CodeInvalidExpiry, true, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v, fast := verifyBoth(t, c.doc, []Key{testKey(t)}, testComputedAt)
			if fast && (v.Passport == nil || hasAny(v.Warnings, CodeUnknownField, CodeAgentIDMissing) || hasAny(v.Errors, CodeSignatureMissing, CodeSignatureMalformed)) {
				t.Errorf("the fast path decided a malformed document: %v %v", v.Errors, v.Warnings)
			}
			list := v.Errors
			if c.warning {
				list = v.Warnings
			}
			if !hasCode(list, c.code) {
				t.Fatalf("want %s; errors %v warnings %v", c.code, v.Errors, v.Warnings)
			}
			if v.SignatureValid != c.sigOK || v.ScoreValid != c.scoreOK || v.Valid != (c.sigOK && c.scoreOK) {
				t.Errorf("valid=%v signature_valid=%v score_valid=%v, want signature_valid=%v score_valid=%v; errors %v",
					v.Valid, v.SignatureValid, v.ScoreValid, c.sigOK, c.scoreOK, v.Errors)
			}
			if v.DetectedTampering != (c.code == CodeSignatureMismatch) {
				t.Errorf("detected_tampering = %v", v.DetectedTampering)
			}
			for _, p := range append(v.Errors, v.Warnings...) {
				if p.Message == "" || strings.Contains(p.Message, testSecret) {
					t.Errorf("bad message %+v", p)
				}
			}
			// Parse agrees on what is well-formed: it fails with one of
			// Verify's codes exactly when Verify has no Passport to offer,
			// or for the signature's form, which Verify reports separately.
			_, err := Parse(c.doc)
			var pe Problem
			errors.As(err, &pe)
			sigForm := pe.Code == CodeSignatureMissing || pe.Code == CodeSignatureMalformed
			if (err == nil || sigForm) != (v.Passport != nil) || (err != nil && !hasCode(v.Errors, pe.Code)) {
				t.Errorf("Parse: err = %v; Verify: Passport %v, errors %v", err, v.Passport != nil, v.Errors)
			}
			var pr Problem
			if err != nil && (!errors.Is(err, ErrInvalid) || !errors.As(err, &pr) || pr.Code == "") {
				t.Errorf("Parse error %v is not a coded Problem matching ErrInvalid", err)
			}
		})
	}
}

func hasAny(ps []Problem, codes ...string) bool {
	return slices.ContainsFunc(codes, func(c string) bool { return hasCode(ps, c) })
}

// The §6.1 example document, given an agent_id and signed, is not internally
// consistent: its dimensions give 304 + 456 = 760 and escrow 0.392.
func TestSpecExampleIsInconsistent(t *testing.T) {
	t.Parallel()
	const example = `{
     "swarmscore_version": "1.0",
     "agent_passport_id": "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d90",
     "agent_id": "agent-7",
     "issuer": {"platform": "swarmsync.ai", "computed_at": "2026-03-17T14:30:00Z", "signature": ""},
     "score": {"value": 759, "tier": "STANDARD", "conduit_contribution": 304, "ap2_contribution": 455},
     "dimensions": {
       "technical_execution": {"label": "Conduit Execution", "sessions_90d": 80, "successful_sessions_90d": 76,
         "success_rate": 0.95, "volume_factor": 0.80, "max_contribution": 400, "actual_contribution": 304},
       "commercial_reliability": {"label": "AP2 Reliability", "sessions_90d": 40, "successful_sessions_90d": 38,
         "success_rate": 0.95, "volume_factor": 0.80, "max_contribution": 600, "actual_contribution": 456}
     },
     "escrow_modifier": 0.3928,
     "qualification_gaps": [],
     "formula_version": "1.0",
     "expires_at": "2026-03-24T14:30:00Z"
   }`
	v := Verify(resign(t, decodeTree(t, []byte(example))), []Key{testKey(t)}, testComputedAt)
	want := []string{CodeScoreMismatch, CodeContributionMismatch, CodeEscrowMismatch}
	if !v.SignatureValid || v.ScoreValid || v.Valid || !slices.Equal(codes(v.Errors), want) {
		t.Fatalf("errors %v, want %v (signature_valid %v)", codes(v.Errors), want, v.SignatureValid)
	}
	// The gaps §6.1 leaves undefined are a warning (ERRATA E9, E10a).
	if !slices.Equal(codes(v.Warnings), []string{CodeGapsMismatch}) {
		t.Fatalf("warnings %v", codes(v.Warnings))
	}
}

// A passport from another issuer that follows §6.1 exactly (its member
// order, no agent_id, qualification_gaps [], an upper-case UUID) with
// consistent numbers is judged on what the spec defines: valid, with the
// agent binding and the gaps as warnings, on either path.
func TestVerifySpecShapedPassport(t *testing.T) {
	t.Parallel()
	const doc = `{
     "swarmscore_version": "1.0",
     "agent_passport_id": "3F1C9A52-7D4E-4B8A-9C61-2E5F0A7B8D90",
     "issuer": {"platform": "other.example", "computed_at": "2026-03-17T14:30:00Z", "signature": ""},
     "score": {"value": 760, "tier": "STANDARD", "conduit_contribution": 304, "ap2_contribution": 456},
     "dimensions": {
       "technical_execution": {"label": "Conduit Execution", "sessions_90d": 80, "successful_sessions_90d": 76,
         "success_rate": 0.95, "volume_factor": 0.80, "max_contribution": 400, "actual_contribution": 304},
       "commercial_reliability": {"label": "AP2 Reliability", "sessions_90d": 40, "successful_sessions_90d": 38,
         "success_rate": 0.95, "volume_factor": 0.80, "max_contribution": 600, "actual_contribution": 456}
     },
     "escrow_modifier": 0.392,
     "qualification_gaps": [],
     "formula_version": "1.0",
     "expires_at": "2026-03-24T14:30:00Z"
   }`
	signed := resign(t, decodeTree(t, []byte(doc)))
	for name, d := range map[string][]byte{
		"as signed": signed,
		"gaps not objects": resign(t, func() map[string]any {
			m := decodeTree(t, []byte(doc))
			m["qualification_gaps"] = []any{"needs 850", 1.5}
			return m
		}()),
		"gaps of other form": resign(t, func() map[string]any {
			m := decodeTree(t, []byte(doc))
			m["qualification_gaps"] = []any{map[string]any{"tier": "elite"}}
			return m
		}()),
	} {
		v, _ := verifyBoth(t, d, []Key{testKey(t)}, testComputedAt)
		if !v.Valid || !v.SignatureValid || !v.ScoreValid || len(v.Errors) != 0 || v.Checks != (Checks{CheckOK, CheckOK, CheckOK}) {
			t.Fatalf("%s: %+v", name, v)
		}
		if want := []string{CodeAgentIDMissing, CodeGapsMismatch}; !slices.Equal(codes(v.Warnings), want) {
			t.Fatalf("%s: warnings %v, want %v", name, v.Warnings, want)
		}
		if v.Passport.AgentID != "" || v.Passport.AgentPassportID != "3F1C9A52-7D4E-4B8A-9C61-2E5F0A7B8D90" {
			t.Fatalf("%s: read %+v", name, v.Passport)
		}
		if _, err := Parse(d); err != nil {
			t.Fatalf("%s: Parse: %v", name, err)
		}
	}
	// An agent_id that is there must still be valid.
	m := decodeTree(t, []byte(doc))
	m["agent_id"] = ""
	if v := Verify(resign(t, m), []Key{testKey(t)}, testComputedAt); v.Valid || !hasCode(v.Errors, CodeInvalidValue) {
		t.Fatalf("empty agent_id: %+v", v)
	}
}

func TestVerificationJSON(t *testing.T) {
	t.Parallel()
	for _, doc := range [][]byte{signedExample(t), []byte("garbage")} {
		b := mustMarshal(t, Verify(doc, []Key{testKey(t)}, testComputedAt))
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if want := []string{"checks", "detected_tampering", "errors", "expires_at", "score_valid", "signature_valid", "valid", "warnings"}; !slices.Equal(keys, want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
		if string(m["errors"])[0] != '[' || string(m["warnings"])[0] != '[' {
			t.Fatalf("errors/warnings not arrays: %s", b)
		}
	}
	b := mustMarshal(t, Verify([]byte("garbage"), nil, testComputedAt))
	if !bytes.Contains(b, []byte(`"expires_at":null`)) || !bytes.Contains(b, []byte(`"code":"invalid_json"`)) {
		t.Fatalf("garbage: %s", b)
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	v := Verify(signedExample(t), []Key{testKey(t)}, testComputedAt)
	v.Warn("ledger_unavailable", "no ledger")
	if !v.Valid {
		t.Fatal("a warning made the verification invalid")
	}
	v.Fail("agent_mismatch", "certificate is for agent-7, not agent-8", false)
	if v.Valid || v.DetectedTampering || !v.SignatureValid {
		t.Fatalf("after Fail: %+v", v)
	}
	v.Fail("ledger_mismatch", "counts differ from the ledger", true)
	if !v.DetectedTampering || len(v.Errors) != 2 || len(v.Warnings) != 1 {
		t.Fatalf("after Fail with tampering: %+v", v)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	doc := signedExample(t)
	p, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	// Sign publishes the canonical form; json.Marshal writes §6.1 order.
	if got, err := jcs.Transform(mustMarshal(t, p)); err != nil || !bytes.Equal(got, doc) {
		t.Fatalf("Parse then Marshal, canonicalized:\n%s\nwant\n%s (%v)", got, doc, err)
	}
	if c := p.Counts(); c != testExample {
		t.Fatalf("Counts = %+v", c)
	}
	// Parse does not check the signature or the score.
	if _, err := Parse(bytes.Replace(doc, []byte(`"value":760`), []byte(`"value":1`), 1)); err != nil {
		t.Fatalf("Parse checked the score: %v", err)
	}
	_, err = Parse(bytes.Repeat([]byte(" "), MaxDocumentSize+1))
	if pr, ok := err.(Problem); !ok || pr.Code != CodeTooLarge {
		t.Fatalf("oversized: %v", err)
	}
}

// Documents the fast path cannot decide exactly still verify, on the slow path.
func TestVerifySlowPathDocuments(t *testing.T) {
	t.Parallel()
	r, _ := score.Compute(testExample)
	p, err := New("agent-7", "swarm\u2028sync", r, testComputedAt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sign(testKey(t)); err != nil {
		t.Fatal(err)
	}
	lineSep := mustMarshal(t, p) // encoding/json escapes U+2028, JCS does not
	doc := signedExample(t)
	tree := decodeTree(t, doc)
	tree["zz_extension"] = map[string]any{"k": "v"}
	for name, d := range map[string][]byte{
		"U+2028 in platform": lineSep,
		"unknown member":     resign(t, tree),
	} {
		v, fast := verifyBoth(t, d, []Key{testKey(t)}, testComputedAt)
		if !v.Valid || fast {
			t.Errorf("%s: valid=%v fast=%v %v", name, v.Valid, fast, v.Errors)
		}
	}
}

// Keys and Verify are safe for concurrent use (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	doc := signedExample(t)
	done := make(chan error)
	for range 4 {
		go func() {
			for range 50 {
				if v := Verify(doc, []Key{k}, testComputedAt); !v.Valid {
					done <- errors.New(v.Errors[0].Error())
					return
				}
				r, _ := score.Compute(testExample)
				p, _ := New("a", "p", r, testComputedAt)
				if _, err := p.Sign(k); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 12: a comma where JSON allows none is invalid JSON, never tampering.
// The issued path (since removed) accepted a trailing comma in
// qualification_gaps, MACed it as content and reported a signature
// mismatch; the inputs are in testdata/fuzz/FuzzVerify too. Every sibling
// (trailing and leading commas in each object and array, doubled commas,
// with and without whitespace) must leave the fast path and be reported by
// the slow path as CodeInvalidJSON.
func TestVerifyStrayCommas(t *testing.T) {
	t.Parallel()
	doc := string(signedExample(t))
	elite := string(signedElite(t))
	cases := []struct{ name, doc, old, new string }{
		{"trailing comma in qualification_gaps", doc, `}],"score"`, `},],"score"`},
		{"trailing comma in a gap", doc, `"tier":"ELITE"}]`, `"tier":"ELITE",}]`},
		{"trailing comma at top level", doc, `"1.0"}`, `"1.0",}`},
		{"trailing comma in issuer", doc, `"},"qualification_gaps"`, `",},"qualification_gaps"`},
		{"trailing comma in score", doc, `"value":760}`, `"value":760,}`},
		{"trailing comma in a dimension", doc, `"volume_factor":0.8}}`, `"volume_factor":0.8,}}`},
		{"trailing comma in dimensions", doc, `0.8}},"escrow_modifier"`, `0.8},},"escrow_modifier"`},
		{"trailing comma in gaps, spaced", doc, `}],"score"`, "} ,\n],\"score\""},
		{"leading comma in qualification_gaps", doc, `[{"actual"`, `[,{"actual"`},
		{"leading comma at top level", doc, `{"agent_id"`, `{,"agent_id"`},
		{"doubled comma between gaps", doc, `},{"actual"`, `},,{"actual"`},
		{"doubled comma between members", doc, `,"agent_passport_id"`, `,,"agent_passport_id"`},
		{"comma in empty qualification_gaps", elite, `"qualification_gaps":[]`, `"qualification_gaps":[,]`},
	}
	for _, c := range cases {
		d := strings.Replace(c.doc, c.old, c.new, 1)
		if d == c.doc {
			t.Fatalf("%s: %q not in the document", c.name, c.old)
		}
		v, fast := verifyBoth(t, []byte(d), []Key{testKey(t)}, testComputedAt)
		if fast || v.DetectedTampering || !slices.Equal(codes(v.Errors), []string{CodeInvalidJSON}) {
			t.Errorf("%s: fast=%v tampering=%v errors %v", c.name, fast, v.DetectedTampering, v.Errors)
		}
	}
}
