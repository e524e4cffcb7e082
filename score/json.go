package score

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The JSON form of a Result is the one wire shape shared by `swarmscore score
// --json`, `score --batch` and `GET /swarmscore/{agent_id}`:
//
//	{"formula_version":"1.0","score":760,"tier":"STANDARD","escrow_modifier":0.392,
//	 "conduit":{"total":80,"success":76,"rate":0.95,"volume_factor":0.8,"contribution":304,"max_contribution":400},
//	 "ap2":{...same fields...},
//	 "qualification_gaps":[{"tier":"ELITE","requirement":"score","required":850,"actual":760},...]}
//
// It is written by hand rather than through encoding/json because batch
// scoring emits millions of these per second: AppendJSON is allocation-free.
// The bytes are exactly what encoding/json would produce for the same values
// (json_test.go checks that), so consumers may treat it as ordinary JSON.

// AppendJSON appends r's JSON object to b and returns the extended slice. It
// does not allocate when b has room (1 KiB is always enough). r
// must come from Compute (V1, the version it writes): the fields of a hand-made Result are written as they
// are, without re-validation.
func (r *Result) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	b = r.AppendJSONFields(b)
	return append(b, '}')
}

// AppendJSONFields appends the members of r's JSON object without the
// enclosing braces, so that a response can embed them next to fields of its
// own, e.g. `{"agent_id":"a",` + fields + `,"computed_at":"…"}`.
func (r *Result) AppendJSONFields(b []byte) []byte {
	b = append(b, `"formula_version":"`+FormulaVersion+`","score":`...)
	b = strconv.AppendInt(b, int64(r.Score), 10)
	b = append(b, `,"tier":"`...)
	b = append(b, r.Tier.String()...)
	b = append(b, `","escrow_modifier":`...)
	b, _ = r.Escrow.AppendText(b) // never fails
	b = append(b, `,"conduit":`...)
	b = appendDimension(b, r.Conduit())
	b = append(b, `,"ap2":`...)
	b = appendDimension(b, r.AP2())
	b = append(b, `,"qualification_gaps":[`...)
	var buf [3]Gap
	for i, g := range r.AppendGaps(buf[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		// Tier and requirement names are fixed ASCII identifiers: nothing to escape.
		b = append(b, `{"tier":"`...)
		b = append(b, g.Tier.String()...)
		b = append(b, `","requirement":"`...)
		b = append(b, g.Requirement...)
		b = append(b, `","required":`...)
		b = strconv.AppendInt(b, g.Required, 10)
		b = append(b, `,"actual":`...)
		b = strconv.AppendInt(b, g.Actual, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// MarshalJSON returns AppendJSON's bytes. It has a value receiver so that
// json.Marshal uses it for Result values and fields as well as pointers.
// It fails (matching ErrInvalid) only for a Result whose tier is outside the
// enum, which Compute never produces.
func (r Result) MarshalJSON() ([]byte, error) {
	if _, err := r.Tier.MarshalText(); err != nil {
		return nil, err
	}
	return r.AppendJSON(make([]byte, 0, 640)), nil
}

func appendDimension(b []byte, d Dimension) []byte {
	b = append(b, `{"total":`...)
	b = strconv.AppendInt(b, d.Total, 10)
	b = append(b, `,"success":`...)
	b = strconv.AppendInt(b, d.Success, 10)
	b = append(b, `,"rate":`...)
	switch {
	case d.Success == 0: // also total 0: rate 0 by definition
		b = append(b, '0')
	case d.Success == d.Total:
		b = append(b, '1')
	default:
		b = AppendJSONFloat(b, d.Rate())
	}
	b = append(b, `,"volume_factor":`...)
	b = appendVolumeFactor(b, d.Total, d.VolumeTarget)
	b = append(b, `,"contribution":`...)
	b = strconv.AppendInt(b, int64(d.Contribution), 10)
	b = append(b, `,"max_contribution":`...)
	b = strconv.AppendInt(b, int64(d.MaxContribution), 10)
	return append(b, '}')
}

// appendVolumeFactor writes min(1, total/target) for a target dividing 100.
// Below the target the value is k/100 for an integer k < 100, and the
// shortest decimal that round-trips to the nearest double of k/100 is k/100
// itself (no other decimal of two or fewer digits lies within half an ulp),
// so the digits can be written directly instead of running the general
// shortest-float algorithm. json_test.go checks this against encoding/json.
func appendVolumeFactor(b []byte, total, target int64) []byte {
	switch {
	case total >= target:
		return append(b, '1')
	case total <= 0:
		return append(b, '0')
	case 100%target != 0:
		return AppendJSONFloat(b, float64(total)/float64(target))
	}
	k := total * (100 / target)
	b = append(b, '0', '.', byte('0'+k/10))
	if k%10 != 0 {
		b = append(b, byte('0'+k%10))
	}
	return b
}

// AppendJSONFloat appends f formatted exactly as encoding/json formats a
// float64: the shortest decimal that round-trips, in plain notation for
// 1e-6 <= |f| < 1e21 and otherwise in exponent notation with a minimal
// exponent (1e-7, not 1e-07), as ECMAScript's Number.prototype.toString does.
// f must be finite: JSON has no NaN or infinity, and this writes them as
// strconv does, which is not JSON.
func AppendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes at least two exponent digits; JSON numbers in
		// ECMAScript form use as few as needed.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// UnmarshalJSON reads the JSON form written by AppendJSON and checks it: the
// four counts are recomputed with Compute, and every derived member (score,
// tier, escrow modifier, rates, volume factors, contributions, maxima and
// qualification gaps) must equal the recomputed value, so a Result decoded
// from a server's response is known to be internally consistent. Members it
// does not know (agent_id, computed_at, ...) are ignored; a missing member,
// a formula_version other than FormulaVersion, or any mismatch is an error
// matching ErrInvalid that names the member. On error r is unchanged.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w struct {
		FormulaVersion *string        `json:"formula_version"`
		Score          *int           `json:"score"`
		Tier           *Tier          `json:"tier"`
		EscrowModifier *json.Number   `json:"escrow_modifier"`
		Conduit        *wireDimension `json:"conduit"`
		AP2            *wireDimension `json:"ap2"`
		Gaps           *[]Gap         `json:"qualification_gaps"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: score result: %w", ErrInvalid, err)
	}
	missing := func(name string) error { return fmt.Errorf("%w: score result: missing %s", ErrInvalid, name) }
	switch {
	case w.FormulaVersion == nil:
		return missing("formula_version")
	case *w.FormulaVersion != FormulaVersion:
		return fmt.Errorf("%w: score result: formula_version %q is not %q", ErrInvalid, *w.FormulaVersion, FormulaVersion)
	case w.Score == nil:
		return missing("score")
	case w.Tier == nil:
		return missing("tier")
	case w.EscrowModifier == nil:
		return missing("escrow_modifier")
	case w.Conduit == nil:
		return missing("conduit")
	case w.AP2 == nil:
		return missing("ap2")
	case w.Gaps == nil:
		return missing("qualification_gaps")
	}
	ct, cs, err := w.Conduit.counts("conduit")
	if err != nil {
		return err
	}
	at, as, err := w.AP2.counts("ap2")
	if err != nil {
		return err
	}
	got, err := Compute(Counts{ct, cs, at, as})
	if err != nil {
		return fmt.Errorf("score result: %w", err)
	}
	mismatch := func(name string, have, want any) error {
		return fmt.Errorf("%w: score result: %s is %v; the counts give %v", ErrInvalid, name, have, want)
	}
	if *w.Score != got.Score {
		return mismatch("score", *w.Score, got.Score)
	}
	if *w.Tier != got.Tier {
		return mismatch("tier", *w.Tier, got.Tier)
	}
	if m, err := ParseModifier(w.EscrowModifier.String()); err != nil || m != got.Escrow {
		return mismatch("escrow_modifier", w.EscrowModifier.String(), got.Escrow)
	}
	if err := w.Conduit.check("conduit", got.Conduit()); err != nil {
		return err
	}
	if err := w.AP2.check("ap2", got.AP2()); err != nil {
		return err
	}
	want := got.Gaps()
	if len(*w.Gaps) != len(want) {
		return mismatch("qualification_gaps", *w.Gaps, want)
	}
	for i, g := range *w.Gaps {
		if g != want[i] {
			return mismatch("qualification_gaps", *w.Gaps, want)
		}
	}
	*r = got
	return nil
}

// wireDimension is the JSON form of a Dimension, with pointers so that a
// missing member is told apart from a zero.
type wireDimension struct {
	Total           *int64   `json:"total"`
	Success         *int64   `json:"success"`
	Rate            *float64 `json:"rate"`
	VolumeFactor    *float64 `json:"volume_factor"`
	Contribution    *int     `json:"contribution"`
	MaxContribution *int     `json:"max_contribution"`
}

func (w *wireDimension) counts(name string) (total, success int64, err error) {
	if w.Total == nil || w.Success == nil {
		return 0, 0, fmt.Errorf("%w: score result: missing %s.total or %s.success", ErrInvalid, name, name)
	}
	return *w.Total, *w.Success, nil
}

// check compares the derived members with d. Rates and volume factors are
// compared as the nearest doubles, which is how AppendJSON wrote them.
func (w *wireDimension) check(name string, d Dimension) error {
	for _, m := range []struct {
		member    string
		present   bool
		equal     bool
		wantValue any
	}{
		{"rate", w.Rate != nil, w.Rate != nil && *w.Rate == d.Rate(), d.Rate()},
		{"volume_factor", w.VolumeFactor != nil, w.VolumeFactor != nil && *w.VolumeFactor == d.VolumeFactor(), d.VolumeFactor()},
		{"contribution", w.Contribution != nil, w.Contribution != nil && *w.Contribution == d.Contribution, d.Contribution},
		{"max_contribution", w.MaxContribution != nil, w.MaxContribution != nil && *w.MaxContribution == d.MaxContribution, d.MaxContribution},
	} {
		if !m.present {
			return fmt.Errorf("%w: score result: missing %s.%s", ErrInvalid, name, m.member)
		}
		if !m.equal {
			return fmt.Errorf("%w: score result: %s.%s does not match the counts (want %v)", ErrInvalid, name, m.member, m.wantValue)
		}
	}
	return nil
}
