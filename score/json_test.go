package score

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The reference for every test here is encoding/json marshalling a plain
// struct whose float fields are computed independently of the code under
// test: AppendJSON must produce the same bytes.

type refDimension struct {
	Total           int64   `json:"total"`
	Success         int64   `json:"success"`
	Rate            float64 `json:"rate"`
	VolumeFactor    float64 `json:"volume_factor"`
	Contribution    int     `json:"contribution"`
	MaxContribution int     `json:"max_contribution"`
}

type refGap struct {
	Tier        string `json:"tier"`
	Requirement string `json:"requirement"`
	Required    int64  `json:"required"`
	Actual      int64  `json:"actual"`
}

type refResult struct {
	FormulaVersion string       `json:"formula_version"`
	Score          int          `json:"score"`
	Tier           string       `json:"tier"`
	EscrowModifier float64      `json:"escrow_modifier"`
	Conduit        refDimension `json:"conduit"`
	AP2            refDimension `json:"ap2"`
	Gaps           []refGap     `json:"qualification_gaps"`
}

func refDim(total, success int64, contribution, maxC int, target int64) refDimension {
	d := refDimension{Total: total, Success: success, Contribution: contribution, MaxContribution: maxC}
	if total > 0 {
		d.Rate = float64(success) / float64(total)
	}
	d.VolumeFactor = math.Min(1, float64(total)/float64(target))
	return d
}

func refJSON(t testing.TB, r *Result) []byte {
	t.Helper()
	ref := refResult{
		FormulaVersion: "1.0",
		Score:          r.Score,
		Tier:           r.Tier.String(),
		// A whole number of basis points divided by 10^4 prints as its exact
		// decimal under the shortest round-trip rule.
		EscrowModifier: float64(r.Escrow) / 10000,
		Conduit:        refDim(r.Counts.ConduitTotal, r.Counts.ConduitSuccess, r.ConduitContribution, ConduitMax, ConduitVolumeTarget),
		AP2:            refDim(r.Counts.AP2Total, r.Counts.AP2Success, r.AP2Contribution, AP2Max, AP2VolumeTarget),
		Gaps:           []refGap{},
	}
	for _, g := range r.Gaps() {
		ref.Gaps = append(ref.Gaps, refGap{g.Tier.String(), g.Requirement, g.Required, g.Actual})
	}
	b, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkJSON(t *testing.T, c Counts) {
	t.Helper()
	r, err := Compute(c)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	got := r.AppendJSON(nil)
	if want := refJSON(t, &r); !bytes.Equal(got, want) {
		t.Fatalf("%+v:\n got %s\nwant %s", c, got, want)
	}
}

// checkRoundTrip checks that UnmarshalJSON reads AppendJSON's output back.
func checkRoundTrip(t *testing.T, c Counts) {
	t.Helper()
	r, _ := Compute(c)
	b := r.AppendJSON(nil)
	var back Result
	if err := back.UnmarshalJSON(b); err != nil || back != r {
		t.Fatalf("%s does not read back: %+v, %v", b, back, err)
	}
}

func TestUnmarshalJSONRoundTrip(t *testing.T) {
	for total := int64(0); total <= 120; total += 3 {
		for s := int64(0); s <= total; s++ {
			checkRoundTrip(t, Counts{total, s, total / 2, s / 2})
		}
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		ct, at := rng.Int64N(math.MaxInt64), rng.Int64N(1_000_000_000)
		checkRoundTrip(t, Counts{ct, rng.Int64N(ct + 1), at, rng.Int64N(at + 1)})
	}
}

func TestAppendJSONExample(t *testing.T) {
	r, err := Compute(Counts{80, 76, 40, 38})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"formula_version":"1.0","score":760,"tier":"STANDARD","escrow_modifier":0.392,` +
		`"conduit":{"total":80,"success":76,"rate":0.95,"volume_factor":0.8,"contribution":304,"max_contribution":400},` +
		`"ap2":{"total":40,"success":38,"rate":0.95,"volume_factor":0.8,"contribution":456,"max_contribution":600},` +
		`"qualification_gaps":[{"tier":"ELITE","requirement":"score","required":850,"actual":760},` +
		`{"tier":"ELITE","requirement":"conduit_sessions_90d","required":100,"actual":80},` +
		`{"tier":"ELITE","requirement":"ap2_sessions_90d","required":50,"actual":40}]}`
	if got := string(r.AppendJSON(nil)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if !json.Valid(r.AppendJSON(nil)) {
		t.Fatal("not valid JSON")
	}
}

// TestAppendJSONMatchesEncodingJSON covers every (total, success) pair with
// total <= 300 in each dimension (so every volume factor below both targets
// and all three tiers), and random counts up to 10^9 and near int64's limit.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for total := int64(0); total <= 300; total++ {
		for s := int64(0); s <= total; s++ {
			checkJSON(t, Counts{total, s, 40, 38})
			checkJSON(t, Counts{120, 119, total, s})
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(limit int64) (int64, int64) {
		tot := rng.Int64N(limit) + 1
		return tot, tot - rng.Int64N(min(tot, 1+rng.Int64N(limit)))
	}
	for range 20000 {
		limit := int64(1_000_000_000)
		if rng.IntN(10) == 0 {
			limit = math.MaxInt64 - 1
		}
		ct, cs := pick(limit)
		at, as := pick(limit)
		checkJSON(t, Counts{ct, cs, at, as})
	}
	checkJSON(t, Counts{math.MaxInt64, 1, math.MaxInt64, math.MaxInt64 - 1})
}

// TestAppendJSONFloatMatchesEncodingJSON checks the float rule on every
// fraction s/t with t <= 2000, on the edges of the plain-notation range, and
// on random doubles of every magnitude.
func TestAppendJSONFloatMatchesEncodingJSON(t *testing.T) {
	buf := make([]byte, 0, 64)
	check := func(f float64) {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		if got := AppendJSONFloat(buf[:0], f); !bytes.Equal(got, want) {
			t.Fatalf("%v (%#x): got %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	for total := 1; total <= 2000; total++ {
		for s := 0; s <= total; s++ {
			check(float64(s) / float64(total))
		}
	}
	for _, f := range []float64{0, 1e-6, 1e-7, 1e21, 1e20, 1e-300, 5e-324, math.MaxFloat64, 123456789e-15, 1.5e-10} {
		for _, g := range []float64{f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), -f} {
			if !math.IsInf(g, 0) {
				check(g)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(f)
		check(float64(rng.Int64N(1<<53)) / float64(rng.Int64()|1))
	}
}

func TestMarshalJSON(t *testing.T) {
	r, err := Compute(Counts{1234, 1200, 567, 560})
	if err != nil {
		t.Fatal(err)
	}
	want := r.AppendJSON(nil)
	for name, v := range map[string]any{
		"value":   r,
		"pointer": &r,
		"field":   struct{ R Result }{r},
	} {
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "field" {
			want := append(append([]byte(`{"R":`), want...), '}')
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: got %s", name, got)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: got %s\nwant %s", name, got, want)
		}
	}
	bad := r
	bad.Tier = 7
	if _, err := json.Marshal(bad); err == nil {
		t.Fatal("tier outside the enum marshalled without error")
	}
}

func TestAppendJSONFieldsEmbeds(t *testing.T) {
	r, _ := Compute(Counts{100, 100, 50, 50})
	b := []byte(`{"agent_id":"a",`)
	b = r.AppendJSONFields(b)
	b = append(b, `,"computed_at":"2026-03-17T14:30:00Z"}`...)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if string(m["agent_id"]) != `"a"` || string(m["tier"]) != `"ELITE"` || string(m["qualification_gaps"]) != `[]` {
		t.Fatalf("unexpected object %s", b)
	}
}

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	results := make([]Result, 0, 4)
	for _, c := range []Counts{{80, 76, 40, 38}, {1234, 1200, 567, 561}, {0, 0, 0, 0}, {3, 1, 7, 2}} {
		r, _ := Compute(c)
		results = append(results, r)
	}
	buf := make([]byte, 0, 1024)
	for _, r := range results {
		if n := testing.AllocsPerRun(100, func() { buf = r.AppendJSON(buf[:0]) }); n != 0 {
			t.Fatalf("%+v: %v allocations", r.Counts, n)
		}
	}
	// The longest objects: 19-digit counts with 17-digit rates, or three gaps
	// with one huge dimension. AppendJSON's doc promises 1 KiB suffices.
	for _, c := range []Counts{
		{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64, math.MaxInt64 - 3},
		{math.MaxInt64, 1234567, math.MaxInt64, 7654321},
		{49, 48, 24, 23},
		{49, 0, math.MaxInt64 - 2, 1234567890123456},
		{math.MaxInt64 - 2, 1234567890123456, 24, 0},
	} {
		r, _ := Compute(c)
		if n := len(r.AppendJSON(nil)); n > 1024 {
			t.Fatalf("%+v: %d bytes, more than the documented 1 KiB", c, n)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	var results []Result
	for _, c := range []Counts{{80, 76, 40, 38}, {1234, 1200, 567, 561}, {100, 100, 50, 50}, {3, 1, 7, 2}} {
		r, _ := Compute(c)
		results = append(results, r)
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf = results[i&3].AppendJSON(buf[:0])
		i++
	}
	b.SetBytes(int64(len(buf)))
}

func ExampleResult_AppendJSON() {
	r, _ := Compute(Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	fmt.Println(string(r.AppendJSON(nil)))
	// Output: {"formula_version":"1.0","score":760,"tier":"STANDARD","escrow_modifier":0.392,"conduit":{"total":80,"success":76,"rate":0.95,"volume_factor":0.8,"contribution":304,"max_contribution":400},"ap2":{"total":40,"success":38,"rate":0.95,"volume_factor":0.8,"contribution":456,"max_contribution":600},"qualification_gaps":[{"tier":"ELITE","requirement":"score","required":850,"actual":760},{"tier":"ELITE","requirement":"conduit_sessions_90d","required":100,"actual":80},{"tier":"ELITE","requirement":"ap2_sessions_90d","required":50,"actual":40}]}
}

// FuzzAppendJSON checks AppendJSON against encoding/json for arbitrary valid
// counts (invalid ones are folded into range first).
func FuzzAppendJSON(f *testing.F) {
	f.Add(int64(80), int64(76), int64(40), int64(38))
	f.Add(int64(0), int64(0), int64(0), int64(0))
	f.Add(int64(math.MaxInt64), int64(1), int64(49), int64(48))
	f.Fuzz(func(t *testing.T, ct, cs, at, as int64) {
		fold := func(total, success int64) (int64, int64) {
			if total < 0 {
				total = -(total + 1) // maps MinInt64 to MaxInt64 without overflow
			}
			if success < 0 {
				success = -(success + 1)
			}
			if total == 0 {
				return 0, 0
			}
			if success > total {
				success %= total
			}
			return total, success
		}
		ct, cs = fold(ct, cs)
		at, as = fold(at, as)
		checkJSON(t, Counts{ct, cs, at, as})
		checkRoundTrip(t, Counts{ct, cs, at, as})
	})
}

func TestUnmarshalJSON(t *testing.T) {
	r, _ := Compute(Counts{80, 76, 40, 38})
	good := string(r.AppendJSON(nil))
	// The GET /swarmscore/{agent_id} shape: extra members are ignored.
	var got Result
	withExtras := `{"agent_id":"a","computed_at":"2026-03-17T14:30:00Z",` + good[1:]
	if err := json.Unmarshal([]byte(withExtras), &got); err != nil || got != r {
		t.Fatalf("%v, %+v", err, got)
	}
	for _, c := range []struct{ from, to, wantErr string }{
		{`"score":760`, `"score":761`, "score is 761"},
		{`"tier":"STANDARD"`, `"tier":"ELITE"`, "tier is ELITE"},
		{`"tier":"STANDARD"`, `"tier":"GOLD"`, "unknown tier"},
		{`"escrow_modifier":0.392`, `"escrow_modifier":0.3928`, "escrow_modifier"},
		{`"rate":0.95,"volume_factor":0.8,"contribution":304`, `"rate":0.96,"volume_factor":0.8,"contribution":304`, "conduit.rate"},
		{`"volume_factor":0.8,"contribution":456`, `"volume_factor":0.81,"contribution":456`, "ap2.volume_factor"},
		{`"contribution":304`, `"contribution":305`, "conduit.contribution"},
		{`"max_contribution":600`, `"max_contribution":601`, "ap2.max_contribution"},
		{`"actual":80`, `"actual":81`, "qualification_gaps"},
		{`,{"tier":"ELITE","requirement":"ap2_sessions_90d","required":50,"actual":40}`, ``, "qualification_gaps"},
		{`"formula_version":"1.0"`, `"formula_version":"2.0"`, "formula_version"},
		{`"formula_version":"1.0",`, ``, "missing formula_version"},
		{`"success":76,`, ``, "missing conduit.total or conduit.success"},
		{`"success":76`, `"success":81`, "exceeds"},
		{`"rate":0.95,`, ``, "missing conduit.rate"},
		{`"score":760`, `"score":"760"`, "cannot unmarshal"},
	} {
		doc := strings.Replace(good, c.from, c.to, 1)
		if doc == good {
			t.Fatalf("replacement %q not found", c.from)
		}
		before := got
		err := json.Unmarshal([]byte(doc), &got)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %v, want one mentioning %q", doc, err, c.wantErr)
		}
		if got != before {
			t.Errorf("%s: result changed on error", doc)
		}
	}
}
