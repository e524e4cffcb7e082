// Package score implements the SwarmScore V1 formula (draft-stone-swarmscore-v1
// §3, §4, §5) exactly, in integer arithmetic, for every non-negative input.
//
// The published reference code computes contributions in floating point and
// then floors them, which loses points when a product such as 0.76·0.8·400
// lands a hair below an integer (spec §12.3, Pitfall 1). This package never
// lets a float decide a floor: contributions, the score, the tier, the escrow
// modifier (kept in basis points) and escrow holds (kept in cents) are all
// integers. Rates and volume factors are exposed both as exact fractions and,
// for wire formats that need them, as the nearest float64.
//
// The package is pure: it does no I/O, and imports nothing but the standard
// library and internal/errkind (itself a leaf on the standard library, which
// gives ErrInvalid its kind), so any Go program can embed it.
package score

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// FormulaVersion is the formula_version of V1, the formula this package
// implements (formula.go has the others a deployment may be handed).
const FormulaVersion = "1.0"

// Formula parameters (§3.3, §3.4, §4). They are fixed by the V1 spec; a change
// to any of them is a new formula version, not a configuration option.
const (
	ConduitVolumeTarget = 100 // conduit sessions at which the volume factor reaches 1
	AP2VolumeTarget     = 50  // AP2 transactions at which the volume factor reaches 1
	ConduitMax          = 400 // maximum conduit contribution
	AP2Max              = 600 // maximum AP2 contribution
	MaxScore            = ConduitMax + AP2Max

	EliteScore   = 850
	EliteConduit = 100
	EliteAP2     = 50

	StandardScore   = 700
	StandardConduit = 50
	StandardAP2     = 25
)

// Requirement names used in qualification gaps.
const (
	RequirementScore   = "score"
	RequirementConduit = "conduit_sessions_90d"
	RequirementAP2     = "ap2_sessions_90d"
)

// ErrInvalid is matched (with errors.Is) by every error this package returns:
// all of them mean the caller passed an impossible input.
var ErrInvalid = errkind.Sentinel(errkind.ErrInvalid, "invalid input")

// InputError reports which input was rejected and why. It matches ErrInvalid.
type InputError struct {
	Field  string // the input's name, e.g. "conduit_success"
	Value  int64
	Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s = %d: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true for every InputError.
func (e *InputError) Is(target error) bool { return errors.Is(ErrInvalid, target) }

// Counts are the four 90-day metrics of §3.1.
type Counts struct {
	ConduitTotal   int64 // conduit_sessions_90d: VERIFIED + FAILED sessions
	ConduitSuccess int64 // conduit_successful_90d: VERIFIED sessions
	AP2Total       int64 // ap2_sessions_90d: SETTLED + DISPUTED + REFUNDED transactions
	AP2Success     int64 // ap2_successful_90d: SETTLED transactions
}

// Validate reports the first impossible count as an *InputError: a negative
// count, or more successes than sessions.
func (c Counts) Validate() error {
	switch {
	case c.ConduitTotal < 0:
		return &InputError{"conduit_total", c.ConduitTotal, "must not be negative"}
	case c.ConduitSuccess < 0:
		return &InputError{"conduit_success", c.ConduitSuccess, "must not be negative"}
	case c.AP2Total < 0:
		return &InputError{"ap2_total", c.AP2Total, "must not be negative"}
	case c.AP2Success < 0:
		return &InputError{"ap2_success", c.AP2Success, "must not be negative"}
	case c.ConduitSuccess > c.ConduitTotal:
		return &InputError{"conduit_success", c.ConduitSuccess, fmt.Sprintf("exceeds conduit_total (%d)", c.ConduitTotal)}
	case c.AP2Success > c.AP2Total:
		return &InputError{"ap2_success", c.AP2Success, fmt.Sprintf("exceeds ap2_total (%d)", c.AP2Total)}
	}
	return nil
}

// Tier is a trust tier of §4. Its zero value is TierNone.
type Tier uint8

// The three tiers, lowest first, so that tiers compare with < and >.
const (
	TierNone Tier = iota
	TierStandard
	TierElite
)

var tierNames = [...]string{TierNone: "NONE", TierStandard: "STANDARD", TierElite: "ELITE"}

// ParseTier accepts the exact upper-case tier names.
func ParseTier(s string) (Tier, error) {
	for t, name := range tierNames {
		if s == name {
			return Tier(t), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown tier %q (want NONE, STANDARD or ELITE)", ErrInvalid, s)
}

// String is the tier's wire name: NONE, STANDARD or ELITE.
func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}

// MarshalText renders the wire name; it fails for a value outside the enum.
func (t Tier) MarshalText() ([]byte, error) {
	if int(t) >= len(tierNames) {
		return nil, fmt.Errorf("%w: tier %d", ErrInvalid, uint8(t))
	}
	return []byte(tierNames[t]), nil
}

// UnmarshalText accepts what ParseTier accepts.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err == nil {
		*t = v
	}
	return err
}

// Dimension is one scored dimension (Conduit or AP2) of a Result.
type Dimension struct {
	Total           int64
	Success         int64
	Contribution    int // floor(rate · volume factor · max), exact
	MaxContribution int
	VolumeTarget    int64 // sessions at which the volume factor reaches 1
}

// Rate is success/total as float64 (0 when total is 0), the nearest double to
// the exact fraction. It is for display and wire formats, never for scoring.
func (d Dimension) Rate() float64 {
	if d.Total == 0 {
		return 0
	}
	return float64(d.Success) / float64(d.Total)
}

// VolumeFactor is min(1, total/target) as float64, the nearest double to the
// exact fraction. It is for display and wire formats, never for scoring.
func (d Dimension) VolumeFactor() float64 {
	if d.Total >= d.VolumeTarget {
		return 1
	}
	return float64(d.Total) / float64(d.VolumeTarget)
}

// Gap is one unmet requirement for the next tier up.
type Gap struct {
	Tier        Tier   `json:"tier"`
	Requirement string `json:"requirement"`
	Required    int64  `json:"required"`
	Actual      int64  `json:"actual"`
}

// Result is the outcome of the formula for one set of counts. It is small and
// flat on purpose (computing one is on every hot path); the per-dimension
// view is derived by Conduit and AP2. Obtain one from Compute, or from a
// Formula. It has nine scalar fields, which amd64 and arm64 return from
// Compute in registers; that is why it does not record which formula made
// it (a tenth field made Compute a third slower, docs/BENCHMARKS.md), and
// callers that handle other formulas than V1 carry the Formula beside it.
type Result struct {
	Counts              Counts
	Score               int // 0..1000
	ConduitContribution int
	AP2Contribution     int
	Escrow              Modifier
	Tier                Tier
}

// Conduit is the technical-execution dimension.
func (r *Result) Conduit() Dimension {
	return Dimension{r.Counts.ConduitTotal, r.Counts.ConduitSuccess, r.ConduitContribution, ConduitMax, ConduitVolumeTarget}
}

// AP2 is the commercial-reliability dimension.
func (r *Result) AP2() Dimension {
	return Dimension{r.Counts.AP2Total, r.Counts.AP2Success, r.AP2Contribution, AP2Max, AP2VolumeTarget}
}

// Gaps lists the unmet requirements for the next tier up, in the order score,
// conduit, AP2; it is empty (non-nil) at ELITE.
func (r *Result) Gaps() []Gap { return r.AppendGaps(make([]Gap, 0, 3)) }

// AppendGaps appends Gaps to dst; it does not allocate when dst has room for
// three more entries.
func (r *Result) AppendGaps(dst []Gap) []Gap {
	var next Tier
	var minScore, minConduit, minAP2 int64
	switch r.Tier {
	case TierElite:
		return dst
	case TierStandard:
		next, minScore, minConduit, minAP2 = TierElite, EliteScore, EliteConduit, EliteAP2
	default:
		next, minScore, minConduit, minAP2 = TierStandard, StandardScore, StandardConduit, StandardAP2
	}
	if s := int64(r.Score); s < minScore {
		dst = append(dst, Gap{next, RequirementScore, minScore, s})
	}
	if c := r.Counts.ConduitTotal; c < minConduit {
		dst = append(dst, Gap{next, RequirementConduit, minConduit, c})
	}
	if a := r.Counts.AP2Total; a < minAP2 {
		dst = append(dst, Gap{next, RequirementAP2, minAP2, a})
	}
	return dst
}

// FormulaVersion is V1's version: a Result does not record its formula
// (see Result), and everything that renders one (AppendJSON, the batch and
// HTTP score routes) computes it with V1.
func (r *Result) FormulaVersion() string { return FormulaVersion }

// Compute applies the V1 formula to c. It returns an *InputError (matching
// ErrInvalid) for negative counts or successes above totals, and never
// allocates.
func Compute(c Counts) (Result, error) {
	if (c.ConduitTotal|c.ConduitSuccess|c.AP2Total|c.AP2Success) < 0 ||
		c.ConduitSuccess > c.ConduitTotal || c.AP2Success > c.AP2Total {
		return Result{}, c.Validate()
	}
	conduit := contribution(c.ConduitTotal, c.ConduitSuccess, ConduitVolumeTarget, ConduitMax)
	ap2 := contribution(c.AP2Total, c.AP2Success, AP2VolumeTarget, AP2Max)
	// §3.5's clamp is a no-op: each contribution is at most its maximum.
	s := conduit + ap2
	return Result{
		Counts:              c,
		Score:               s,
		ConduitContribution: conduit,
		AP2Contribution:     ap2,
		Escrow:              EscrowModifier(s),
		Tier:                tierOf(s, c.ConduitTotal, c.AP2Total),
	}, nil
}

// contribution computes floor(max · (s/t) · min(1, t/N)) exactly. Below the
// volume target t cancels, leaving (max/N)·s, an integer because N divides
// max. At or above it the value is floor(max·s/t), done in 128 bits when
// max·s could overflow 63 bits.
func contribution(t, s, target, max int64) int {
	switch {
	case t == 0:
		return 0 // Pitfall 2: no sessions, no contribution.
	case t <= target:
		return int(max / target * s)
	case s < 1<<53:
		return int(uint64(max*s) / uint64(t))
	}
	hi, lo := bits.Mul64(uint64(max), uint64(s))
	q, _ := bits.Div64(hi, lo, uint64(t)) // hi < t because s <= t and max < 2^63
	return int(q)
}

// tierOf evaluates ELITE, then STANDARD, then NONE (§4, Pitfall 7).
func tierOf(score int, conduitTotal, ap2Total int64) Tier {
	switch {
	case score >= EliteScore && conduitTotal >= EliteConduit && ap2Total >= EliteAP2:
		return TierElite
	case score >= StandardScore && conduitTotal >= StandardConduit && ap2Total >= StandardAP2:
		return TierStandard
	}
	return TierNone
}
