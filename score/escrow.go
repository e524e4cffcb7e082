package score

import (
	"fmt"
	"math/big"
	"math/bits"
	"strconv"
)

// Modifier is an escrow modifier in basis points: 10000 is 1.0 (a full hold),
// 2500 is the 0.25 floor. Every V1 modifier, 1 − score/1250 = (10000 − 8·score)
// basis points, is an integer number of basis points, so this type is exact.
type Modifier int32

// Modifier bounds (§3.6).
const (
	ModifierFloor Modifier = 2500
	ModifierOne   Modifier = 10000
)

// EscrowModifier is max(0.25, min(1, 1 − score/1250)) for a score; scores
// outside 0..1000 are clamped first (§3.5). Score 0 gives 1.0: the formula
// wins over §3.6's prose (docs/ERRATA.md E1).
func EscrowModifier(score int) Modifier {
	score = max(0, min(MaxScore, score))
	return max(ModifierFloor, min(ModifierOne, Modifier(10000-8*score)))
}

// BasisPoints is the modifier in units of 0.0001.
func (m Modifier) BasisPoints() int32 { return int32(m) }

// Float64 is the modifier as the nearest double, for wire formats.
func (m Modifier) Float64() float64 { return float64(m) / 10000 }

// String renders the modifier exactly, in the shortest decimal form a JSON
// number of the same value takes: 1, 0.392, 0.25, 0.2504.
func (m Modifier) String() string {
	b, _ := m.AppendText(nil)
	return string(b)
}

// AppendText appends the String form to b.
func (m Modifier) AppendText(b []byte) ([]byte, error) {
	v := int64(m)
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendInt(b, v/10000, 10)
	frac := v % 10000
	if frac == 0 {
		return b, nil
	}
	digits := [4]byte{byte('0' + frac/1000), byte('0' + frac/100%10), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 4
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...), nil
}

// MarshalJSON renders the modifier as an exact JSON number.
func (m Modifier) MarshalJSON() ([]byte, error) { return m.AppendText(nil) }

// UnmarshalJSON reads a JSON number as ParseModifier does: exactly, or an
// error matching ErrInvalid.
func (m *Modifier) UnmarshalJSON(b []byte) error {
	v, err := ParseModifier(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseModifier parses a JSON number such as "0.392", "1" or "2.5e-1" into
// basis points. It fails (matching ErrInvalid) unless the value is an exact
// multiple of 0.0001 in [0, 1]; no float is involved.
func ParseModifier(s string) (Modifier, error) {
	bad := fmt.Errorf("%w: escrow modifier %q is not a multiple of 0.0001 in [0, 1]", ErrInvalid, s)
	if len(s) == 0 || len(s) > 64 || !isJSONNumber(s) {
		return 0, bad
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, bad
	}
	r.Mul(r, big.NewRat(10000, 1))
	if !r.IsInt() || r.Sign() < 0 || r.Num().Cmp(big.NewInt(10000)) > 0 {
		return 0, bad
	}
	return Modifier(r.Num().Int64()), nil
}

// isJSONNumber reports whether s has the grammar of a JSON number (RFC 8259
// §6) with an exponent of at most three digits, so big.Rat never has to
// expand a huge power of ten.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && s[start] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if n := digits(); n == 0 || n > 3 {
			return false
		}
	}
	return i == len(s)
}

// HoldCents is the amount held in escrow for a payment of amountCents to an
// agent with the given score (§5): amount × modifier, rounded up to the cent
// so that any fraction of a cent favours the buyer. released = amount − hold.
// It fails (matching ErrInvalid) for a negative amount. Every non-negative
// int64 amount is exact: the product is formed in 128 bits.
func HoldCents(amountCents int64, score int) (hold, released int64, err error) {
	if amountCents < 0 {
		return 0, 0, &InputError{"amount_cents", amountCents, "must not be negative"}
	}
	m := EscrowModifier(score)
	hi, lo := bits.Mul64(uint64(amountCents), uint64(m))
	lo, carry := bits.Add64(lo, 9999, 0)
	hi += carry
	q, _ := bits.Div64(hi, lo, 10000) // hi < 10000: amount < 2^63, m <= 10000
	return int64(q), amountCents - int64(q), nil
}
