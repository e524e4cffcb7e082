package passport

import (
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// TransitionPeriod is how long the previous formula version stays accepted
// after the current one takes effect: §10.3 stage 5 gives marketplaces 90
// days during which both versions MUST be accepted.
const TransitionPeriod = 90 * 24 * time.Hour

// FormulaWindow accepts passports of one formula version whose
// issuer.computed_at lies in [From, Until). A zero From or Until leaves that
// side open.
type FormulaWindow struct {
	Formula     score.Formula
	From, Until time.Time
}

// contains reports whether t is in the window.
func (w *FormulaWindow) contains(t time.Time) bool {
	return (w.From.IsZero() || !t.Before(w.From)) && (w.Until.IsZero() || t.Before(w.Until))
}

// String renders the window as the --accept-formula flag of the CLI writes
// it: VERSION (no bounds), VERSION@FROM.., VERSION@FROM..UNTIL or
// VERSION@..UNTIL.
func (w FormulaWindow) String() string {
	if w.Formula == nil {
		return ""
	}
	s := w.Formula.Version()
	if w.From.IsZero() && w.Until.IsZero() {
		return s
	}
	s += "@"
	if !w.From.IsZero() {
		s += w.From.UTC().Format(time.RFC3339)
	}
	s += ".."
	if !w.Until.IsZero() {
		s += w.Until.UTC().Format(time.RFC3339)
	}
	return s
}

// Acceptance is the formula versions a verifier recomputes passports with
// (§7.1 L2, §10.3), each with its acceptance window. The zero value accepts
// V1 at all times, which is what Verify uses: the only formula of
// production builds. Build others with NewAcceptance or Transition.
//
// The window is judged by the passport's issuer.computed_at, the instant
// the formula was applied (ERRATA E40): a passport computed inside the
// window stays acceptable for the rest of its 7 days, and expiry and
// MaxClockSkew already tie computed_at to the verification instant.
type Acceptance struct {
	windows []FormulaWindow // nil: V1, always
}

// NewAcceptance accepts each window's formula in its window. Every window
// must name a formula, no version twice, and have From before Until when
// both are set; errors match ErrInvalid. With no windows it is the zero
// Acceptance (V1, always).
func NewAcceptance(windows ...FormulaWindow) (Acceptance, error) {
	for i, w := range windows {
		if w.Formula == nil {
			return Acceptance{}, fmt.Errorf("%w: formula window %d names no formula", ErrInvalid, i)
		}
		if !w.From.IsZero() && !w.Until.IsZero() && !w.From.Before(w.Until) {
			return Acceptance{}, fmt.Errorf("%w: formula %s: the window's start %s is not before its end %s", ErrInvalid,
				w.Formula.Version(), w.From.UTC().Format(time.RFC3339), w.Until.UTC().Format(time.RFC3339))
		}
		for _, o := range windows[:i] {
			if o.Formula.Version() == w.Formula.Version() {
				return Acceptance{}, fmt.Errorf("%w: formula %s is listed twice", ErrInvalid, w.Formula.Version())
			}
		}
	}
	if len(windows) == 0 {
		return Acceptance{}, nil
	}
	return Acceptance{windows: append([]FormulaWindow(nil), windows...)}, nil
}

// Transition is the default acceptance of §10.3 when current takes effect
// at effective: current from effective on, and previous until
// TransitionPeriod after it. previous may be nil (no previous version), and
// must not be current; errors match ErrInvalid.
func Transition(current score.Formula, effective time.Time, previous score.Formula) (Acceptance, error) {
	ws := []FormulaWindow{{Formula: current, From: effective}}
	if previous != nil {
		ws = append(ws, FormulaWindow{Formula: previous, Until: effective.Add(TransitionPeriod)})
	}
	return NewAcceptance(ws...)
}

// Windows lists the windows, V1 without bounds for the zero Acceptance.
func (a Acceptance) Windows() []FormulaWindow {
	if a.windows == nil {
		return []FormulaWindow{{Formula: score.V1}}
	}
	return append([]FormulaWindow(nil), a.windows...)
}

// String lists the windows as FormulaWindow.String does, comma-separated.
func (a Acceptance) String() string {
	var s []string
	for _, w := range a.Windows() {
		s = append(s, w.String())
	}
	return strings.Join(s, ",")
}

// Verify is the package-level Verify with a's formulas: the score block is
// recomputed with the formula the document's formula_version names if a
// lists it (CodeUnsupportedFormulaVersion otherwise), and the passport is
// invalid with CodeFormulaOutOfWindow when its computed_at lies outside
// that formula's window. Like Verify it never panics and never fails.
func (a Acceptance) Verify(doc []byte, keys []Key, at time.Time) *Verification {
	if v := verifyFast(doc, keys, at, a); v != nil {
		return v
	}
	return verifySlow(doc, keys, at, a)
}

// formula finds the window of version, or nil.
func (a *Acceptance) formula(version string) *FormulaWindow {
	for i := range a.windows {
		if a.windows[i].Formula.Version() == version {
			return &a.windows[i]
		}
	}
	return nil
}

// v1Always is the window of the zero Acceptance.
var v1Always = FormulaWindow{Formula: score.V1}

// check finds the formula to recompute p with, recording in r why there is
// none (unknown version) or why it does not count (out of window). ok is
// false only when nothing can be recomputed.
func (a *Acceptance) check(r *report, p *Passport) (f score.Formula, ok bool) {
	w := &v1Always
	if a.windows != nil {
		w = a.formula(p.FormulaVersion)
	} else if p.FormulaVersion != score.FormulaVersion {
		w = nil
	}
	if w == nil {
		r.fail(CodeUnsupportedFormulaVersion, "formula_version %q is not one this verifier accepts (%s); the score cannot be recomputed", clip(p.FormulaVersion), a.String())
		return nil, false
	}
	if !w.contains(p.Issuer.ComputedAt) {
		r.fail(CodeFormulaOutOfWindow, "formula_version %q is accepted for passports computed in %s; this one was computed at %s",
			w.Formula.Version(), w.describe(), p.Issuer.ComputedAt.UTC().Format(time.RFC3339))
	}
	return w.Formula, true
}

// describe renders the window for a message.
func (w *FormulaWindow) describe() string {
	from, until := "the beginning", "no end"
	if !w.From.IsZero() {
		from = w.From.UTC().Format(time.RFC3339)
	}
	if !w.Until.IsZero() {
		until = w.Until.UTC().Format(time.RFC3339)
	}
	return "[" + from + ", " + until + ")"
}
