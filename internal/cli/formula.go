package cli

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// formulaFlags are --formula and --accept-formula, shared by `serve` and
// `passport verify`: the deployment's current formula version and the
// others it accepts, each in its window (spec §10.3, ERRATA E40).
type formulaFlags struct {
	current string
	accept  []string
}

const formulaHelp = `Formula versions (§10.3): --formula VERSION[@EFFECTIVE] is the current version
(default 1.0), accepted for passports computed from EFFECTIVE on (always, without
it). --accept-formula VERSION[@[FROM][..[UNTIL]]] (repeatable) also accepts
VERSION for passports computed in [FROM, UNTIL); without "..", UNTIL is
EFFECTIVE + 90 days, the transition period of §10.3, so
'--formula 1.1@2027-01-01 --accept-formula 1.0' accepts 1.0 passports computed
before 2027-04-01. FROM.. is open-ended, ..UNTIL has no start. Times are
RFC 3339 or YYYY-MM-DD (UTC midnight). A passport whose formula_version is not
accepted is unsupported_formula_version; one computed outside its version's
window is formula_version_out_of_window. This build implements formula 1.0
only; an unknown version is a usage error.`

func (f *formulaFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.current, "formula", score.FormulaVersion, "current formula version, VERSION[@EFFECTIVE] (see Formula versions in the help)")
	fs.StringArrayVar(&f.accept, "accept-formula", nil, "also accept this formula version, VERSION[@[FROM][..[UNTIL]]] (repeatable)")
}

// acceptance resolves the flags against the formulas of this binary:
// the current formula and the acceptance they describe. Every error is a
// usage error naming the flag.
func (f *formulaFlags) acceptance(known score.Formulas) (score.Formula, passport.Acceptance, error) {
	if known == nil {
		known = score.Builtin()
	}
	lookup := func(flag, version string) (score.Formula, error) {
		fm, ok := known.Lookup(version)
		if !ok {
			return nil, usageErrorf("%s: unknown formula version %q (this build implements %s)", flag, version, strings.Join(known.Versions(), ", "))
		}
		return fm, nil
	}
	version, effText, hasEff := strings.Cut(f.current, "@")
	current, err := lookup("--formula", version)
	if err != nil {
		return nil, passport.Acceptance{}, err
	}
	var effective time.Time
	if hasEff {
		if effective, err = parseFormulaTime("--formula", effText); err != nil {
			return nil, passport.Acceptance{}, err
		}
	}
	if !hasEff && len(f.accept) == 0 && current == score.V1 {
		// The default: V1 at all times, Verify's own acceptance.
		return current, passport.Acceptance{}, nil
	}
	windows := []passport.FormulaWindow{{Formula: current, From: effective}}
	for _, a := range f.accept {
		version, window, hasWindow := strings.Cut(a, "@")
		fm, err := lookup("--accept-formula", version)
		if err != nil {
			return nil, passport.Acceptance{}, err
		}
		w := passport.FormulaWindow{Formula: fm}
		from, until, bounded := strings.Cut(window, "..")
		if hasWindow && from != "" {
			if w.From, err = parseFormulaTime("--accept-formula "+a, from); err != nil {
				return nil, passport.Acceptance{}, err
			}
		}
		switch {
		case bounded && until != "":
			if w.Until, err = parseFormulaTime("--accept-formula "+a, until); err != nil {
				return nil, passport.Acceptance{}, err
			}
		case !bounded:
			if !hasEff {
				return nil, passport.Acceptance{}, usageErrorf("--accept-formula %s: without ..UNTIL it is accepted until 90 days after the current version's effective date, and --formula %s has none (write --formula %s@EFFECTIVE)", a, f.current, current.Version())
			}
			w.Until = effective.Add(passport.TransitionPeriod)
		}
		windows = append(windows, w)
	}
	acc, err := passport.NewAcceptance(windows...)
	if err != nil {
		return nil, passport.Acceptance{}, usageErrorf("--formula/--accept-formula: %s", strings.TrimPrefix(err.Error(), passport.ErrInvalid.Error()+": "))
	}
	return current, acc, nil
}

// parseFormulaTime reads an RFC 3339 instant or a date (UTC midnight).
func parseFormulaTime(flag, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageErrorf("%s: %q is not an RFC 3339 time or a YYYY-MM-DD date", flag, s)
}
