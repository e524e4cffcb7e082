package score

import "fmt"

// Formula is one version of the scoring formula (§10.3): what a passport's
// formula_version names. V1 is the formula of this package; another exists
// only as a value made by Define, so a formula a deployment has not been
// handed cannot be reached by its version string. The interface is sealed,
// so that V1's version is V1's alone (§13.3). A Result does not record the
// Formula that computed it (see Result): code that handles more than V1
// passes the Formula along, as passport.NewWith does.
type Formula interface {
	// Version is the formula_version string, e.g. "1.0".
	Version() string
	// Compute applies the formula. It returns an *InputError (matching
	// ErrInvalid) for impossible counts, exactly as the package-level
	// Compute does.
	Compute(Counts) (Result, error)

	sealed()
}

// V1 is the SwarmScore V1 formula, version FormulaVersion: the package-level
// Compute. It is frozen (§13.3): no other Formula may claim its version.
var V1 Formula = v1{}

type v1 struct{}

func (v1) Version() string                  { return FormulaVersion }
func (v1) Compute(c Counts) (Result, error) { return Compute(c) }
func (v1) sealed()                          {}

// defined is a Formula made by Define.
type defined struct {
	version string
	compute func(Counts) (Result, error)
}

func (f *defined) Version() string { return f.version }
func (f *defined) sealed()         {}

func (f *defined) Compute(c Counts) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	r, err := f.compute(c)
	if err != nil {
		return Result{}, err
	}
	r.Counts = c
	return r, nil
}

// Define makes a Formula named version from compute, for formulas that are
// not (yet) part of this package: a test formula, or one published under
// §10.3 before a release ships it. compute receives valid counts only and
// returns the score block; Define's Formula sets the Result's counts. The
// per-dimension maxima and volume targets (Result.Conduit, Result.AP2)
// and the tier thresholds of qualification gaps stay V1's: the wire format
// of §6.1 carries them, and this package describes no other.
//
// version must be 1 to 32 bytes of [0-9A-Za-z.-] and must not be
// FormulaVersion (V1 is frozen); compute must not be nil. Errors match
// ErrInvalid. Each call makes a distinct Formula, even for one version.
func Define(version string, compute func(Counts) (Result, error)) (Formula, error) {
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	if version == FormulaVersion {
		return nil, fmt.Errorf("%w: formula version %q is V1's, which is frozen (§13.3)", ErrInvalid, version)
	}
	if compute == nil {
		return nil, fmt.Errorf("%w: formula %q has no compute function", ErrInvalid, version)
	}
	return &defined{version: version, compute: compute}, nil
}

// CheckVersion reports (matching ErrInvalid) a string that cannot be a
// formula version: versions are written into JSON and URLs unescaped, so
// they are 1 to 32 bytes of [0-9A-Za-z.-].
func CheckVersion(version string) error {
	if version == "" || len(version) > 32 {
		return fmt.Errorf("%w: formula version must be 1 to 32 bytes, got %d", ErrInvalid, len(version))
	}
	for i := 0; i < len(version); i++ {
		c := version[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '-') {
			return fmt.Errorf("%w: formula version %q has %q at byte %d; allowed are 0-9 A-Z a-z . -", ErrInvalid, version, rune(c), i)
		}
	}
	return nil
}

// Formulas is a set of formulas, each version at most once: what a
// deployment implements. It is an ordinary value, so a test can add a
// formula to its own set without touching anyone else's.
type Formulas []Formula

// Builtin is the set of formulas this build implements: V1 only.
func Builtin() Formulas { return Formulas{V1} }

// Lookup returns the formula of fs named version, or false.
func (fs Formulas) Lookup(version string) (Formula, bool) {
	for _, f := range fs {
		if f != nil && f.Version() == version {
			return f, true
		}
	}
	return nil, false
}

// Versions lists the versions of fs in order, for messages.
func (fs Formulas) Versions() []string {
	vs := make([]string, 0, len(fs))
	for _, f := range fs {
		if f != nil {
			vs = append(vs, f.Version())
		}
	}
	return vs
}
