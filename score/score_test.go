package score

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// oracle applies §3 literally in exact rational arithmetic: rate, volume
// factor and their product are big.Rat, and floor is taken on the final
// product as Pitfall 1 prescribes. It shares no code with dimension().
func oracle(t, s, target, maxC int64) int64 {
	if t == 0 {
		return 0
	}
	rate := big.NewRat(s, t)
	vf := big.NewRat(t, target)
	if vf.Cmp(big.NewRat(1, 1)) > 0 {
		vf.SetInt64(1)
	}
	p := new(big.Rat).Mul(rate, vf)
	p.Mul(p, big.NewRat(maxC, 1))
	q := new(big.Int).Quo(p.Num(), p.Denom()) // p >= 0, so truncation is floor
	return q.Int64()
}

// oracleModifier is max(1/4, min(1, 1 − score/1250)) in rationals, returned
// in basis points after checking it is a whole number of them.
func oracleModifier(tb testing.TB, score int64) int64 {
	m := new(big.Rat).Sub(big.NewRat(1, 1), big.NewRat(score, 1250))
	if m.Cmp(big.NewRat(1, 4)) < 0 {
		m = big.NewRat(1, 4)
	}
	if m.Cmp(big.NewRat(1, 1)) > 0 {
		m = big.NewRat(1, 1)
	}
	m.Mul(m, big.NewRat(10000, 1))
	if !m.IsInt() {
		tb.Fatalf("modifier for score %d is not a whole number of basis points: %s", score, m)
	}
	return m.Num().Int64()
}

func oracleTier(score, ct, at int64) Tier {
	if score >= 850 && ct >= 100 && at >= 50 {
		return TierElite
	}
	if score >= 700 && ct >= 50 && at >= 25 {
		return TierStandard
	}
	return TierNone
}

// TestDimensionOracleExhaustive checks every (total, success) pair with
// total <= 400 for both dimensions against the rational oracle.
func TestDimensionOracleExhaustive(t *testing.T) {
	for _, d := range []struct {
		name        string
		target, max int64
	}{{"conduit", ConduitVolumeTarget, ConduitMax}, {"ap2", AP2VolumeTarget, AP2Max}} {
		for total := int64(0); total <= 400; total++ {
			for s := int64(0); s <= total; s++ {
				got := contribution(total, s, d.target, d.max)
				if want := oracle(total, s, d.target, d.max); int64(got) != want {
					t.Fatalf("%s t=%d s=%d: got %d, oracle %d", d.name, total, s, got, want)
				}
			}
		}
	}
}

// TestComputeOracleRandom checks whole results for random 4-tuples up to 10^9
// and a band of values near int64's limit.
func TestComputeOracleRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(limit int64) (int64, int64) {
		tot := rng.Int64N(limit + 1)
		return tot, rng.Int64N(tot + 1)
	}
	for i := 0; i < 200000; i++ {
		var c Counts
		switch i % 4 {
		case 0:
			c.ConduitTotal, c.ConduitSuccess = pick(1e9)
			c.AP2Total, c.AP2Success = pick(1e9)
		case 1: // small totals, where tiers and gaps change
			c.ConduitTotal, c.ConduitSuccess = pick(150)
			c.AP2Total, c.AP2Success = pick(80)
		case 2: // success close to total, where floors are tightest
			c.ConduitTotal, _ = pick(1e9)
			c.ConduitSuccess = max(0, c.ConduitTotal-rng.Int64N(10))
			c.AP2Total, _ = pick(1e9)
			c.AP2Success = max(0, c.AP2Total-rng.Int64N(10))
		case 3: // near the int64 limit
			c.ConduitTotal = math.MaxInt64 - rng.Int64N(1000)
			c.ConduitSuccess = c.ConduitTotal - rng.Int64N(1000)
			c.AP2Total = math.MaxInt64 - rng.Int64N(1000)
			c.AP2Success = rng.Int64N(c.AP2Total)
		}
		checkAgainstOracle(t, c)
	}
}

func checkAgainstOracle(t *testing.T, c Counts) {
	t.Helper()
	r, err := Compute(c)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	wc := oracle(c.ConduitTotal, c.ConduitSuccess, 100, 400)
	wa := oracle(c.AP2Total, c.AP2Success, 50, 600)
	ws := max(0, min(1000, wc+wa))
	if int64(r.ConduitContribution) != wc || int64(r.AP2Contribution) != wa || int64(r.Score) != ws {
		t.Fatalf("%+v: got %d+%d=%d, oracle %d+%d=%d", c, r.ConduitContribution, r.AP2Contribution, r.Score, wc, wa, ws)
	}
	if got, want := int64(r.Escrow), oracleModifier(t, ws); got != want {
		t.Fatalf("%+v: modifier %d bp, oracle %d bp", c, got, want)
	}
	if want := oracleTier(ws, c.ConduitTotal, c.AP2Total); r.Tier != want {
		t.Fatalf("%+v: tier %s, oracle %s", c, r.Tier, want)
	}
}

func TestComputeOracleSmallGrid(t *testing.T) {
	// Every combination around the tier thresholds.
	for ct := int64(0); ct <= 110; ct += 1 {
		for cs := int64(0); cs <= ct; cs += 7 {
			for at := int64(0); at <= 60; at++ {
				for as := int64(0); as <= at; as += 3 {
					checkAgainstOracle(t, Counts{ct, cs, at, as})
				}
			}
		}
	}
}

func TestSpecExample(t *testing.T) {
	// §6.1's dimensions: 80/76 conduit, 40/38 AP2. Its printed 759, 455 and
	// 0.3928 contradict its own dimensions (ERRATA E2); §3 gives these.
	r, err := Compute(Counts{80, 76, 40, 38})
	if err != nil {
		t.Fatal(err)
	}
	if r.ConduitContribution != 304 || r.AP2Contribution != 456 || r.Score != 760 {
		t.Fatalf("got %d + %d = %d, want 304 + 456 = 760", r.ConduitContribution, r.AP2Contribution, r.Score)
	}
	if r.Tier != TierStandard {
		t.Fatalf("tier %s, want STANDARD", r.Tier)
	}
	if r.Escrow.String() != "0.392" {
		t.Fatalf("escrow %s, want 0.392", r.Escrow)
	}
	if r.Conduit().Rate() != 0.95 || r.Conduit().VolumeFactor() != 0.8 || r.AP2().Rate() != 0.95 || r.AP2().VolumeFactor() != 0.8 {
		t.Fatalf("rates/volume factors: %v %v %v %v", r.Conduit().Rate(), r.Conduit().VolumeFactor(), r.AP2().Rate(), r.AP2().VolumeFactor())
	}
	gaps := r.Gaps()
	want := []Gap{
		{TierElite, RequirementScore, 850, 760},
		{TierElite, RequirementConduit, 100, 80},
		{TierElite, RequirementAP2, 50, 40},
	}
	if len(gaps) != len(want) {
		t.Fatalf("gaps %+v, want %+v", gaps, want)
	}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("gap %d: %+v, want %+v", i, gaps[i], want[i])
		}
	}
}

// TestFloatPitfall pins the figures of ERRATA E5: §12.2's expression
// floor(rate * vf * 400) evaluated in float64, in its order, floors some
// exact integers one point low (Pitfall 1), and the exact formula does
// not. §12.3's own example is not one of them.
func TestFloatPitfall(t *testing.T) {
	naive := func(total, s int64) float64 {
		rate := float64(s) / float64(total)
		vf := math.Min(1, float64(total)/100)
		return rate * vf * 400
	}
	low := map[int64]int{} // pairs floored one point low, by the largest total counted
	for total := int64(1); total <= 400; total++ {
		for s := int64(0); s <= total; s++ {
			got, exact := int64(math.Floor(naive(total, s))), int64(contribution(total, s, 100, 400))
			if exact != oracle(total, s, 100, 400) {
				t.Fatalf("contribution(%d, %d) = %d, the oracle says %d", total, s, exact, oracle(total, s, 100, 400))
			}
			switch {
			case got == exact-1:
				for _, upTo := range []int64{100, 400} {
					if total <= upTo {
						low[upTo]++
					}
				}
			case got != exact:
				t.Fatalf("float floors %d/%d to %d, exact %d: not one point low", s, total, got, exact)
			}
		}
	}
	if low[100] != 775 || low[400] != 821 {
		t.Fatalf("float64 floors %d pairs one point low with total <= 100 and %d with total <= 400; ERRATA E5 says 775 and 821", low[100], low[400])
	}
	if f := naive(3, 1); f != 3.9999999999999996 || contribution(3, 1, 100, 400) != 4 {
		t.Fatalf("1 success of 3 sessions: float %v, exact %d; ERRATA E5 says 3.9999999999999996 and 4", f, contribution(3, 1, 100, 400))
	}
	// §12.3's 0.76 · 0.8 · 400 floors right in floats (the rate needs 60.8
	// successes of 80, so no count gives it).
	rate, vf := 0.76, 0.8 // variables: a constant expression would be exact
	if f := rate * vf * 400; f != 243.20000000000005 || math.Floor(f) != 243 {
		t.Fatalf("0.76 * 0.8 * 400 = %v", f)
	}
}

func TestTiersAndGaps(t *testing.T) {
	cases := []struct {
		c    Counts
		tier Tier
		gaps []Gap
	}{
		{Counts{}, TierNone, []Gap{{TierStandard, "score", 700, 0}, {TierStandard, "conduit_sessions_90d", 50, 0}, {TierStandard, "ap2_sessions_90d", 25, 0}}},
		{Counts{100, 100, 50, 50}, TierElite, nil},
		// ELITE score and volume met exactly at the thresholds.
		{Counts{100, 90, 50, 48}, TierElite, nil}, // 360 + 576 = 936
		// Perfect rates but too little AP2 volume: 400 + 12·24 = 688.
		{Counts{100, 100, 24, 24}, TierNone, []Gap{{TierStandard, "score", 700, 688}, {TierStandard, "ap2_sessions_90d", 25, 24}}},
		// 400 + 12·26 = 712: STANDARD, short of ELITE on score and AP2 volume.
		{Counts{100, 100, 26, 26}, TierStandard, []Gap{{TierElite, "score", 850, 712}, {TierElite, "ap2_sessions_90d", 50, 26}}},
		// 4·60 + 12·26 = 552: NONE on score alone.
		{Counts{60, 60, 26, 26}, TierNone, []Gap{{TierStandard, "score", 700, 552}}},
		// ELITE score, STANDARD volume: STANDARD with volume gaps.
		{Counts{99, 99, 50, 50}, TierStandard, []Gap{{TierElite, "conduit_sessions_90d", 100, 99}}},
		// Full volume, 400 + floor(600·37/50) = 844: STANDARD, only the score gap.
		{Counts{100, 100, 50, 37}, TierStandard, []Gap{{TierElite, "score", 850, 844}}},
	}
	for _, tc := range cases {
		r, err := Compute(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Tier != tc.tier {
			t.Errorf("%+v: tier %s, want %s (score %d)", tc.c, r.Tier, tc.tier, r.Score)
		}
		g := r.Gaps()
		if len(g) != len(tc.gaps) {
			t.Errorf("%+v: gaps %+v, want %+v", tc.c, g, tc.gaps)
			continue
		}
		for i := range g {
			if g[i] != tc.gaps[i] {
				t.Errorf("%+v: gap %d %+v, want %+v", tc.c, i, g[i], tc.gaps[i])
			}
		}
	}
}

func TestInvalidCounts(t *testing.T) {
	for _, c := range []Counts{
		{-1, 0, 0, 0}, {0, -1, 0, 0}, {0, 0, -1, 0}, {0, 0, 0, -1},
		{1, 2, 0, 0}, {0, 0, 3, 4}, {math.MinInt64, 0, 0, 0},
	} {
		_, err := Compute(c)
		var ie *InputError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &ie) || ie.Field == "" {
			t.Errorf("%+v: err = %v, want *InputError matching ErrInvalid", c, err)
		}
	}
}

func TestEscrowModifier(t *testing.T) {
	// Appendix B's table, which agrees with the formula (and with itself,
	// unlike §3.6's prose for score 0).
	table := map[int]string{
		0: "1", 100: "0.92", 200: "0.84", 300: "0.76", 400: "0.68", 500: "0.6", 600: "0.52",
		700: "0.44", 750: "0.4", 800: "0.36", 850: "0.32", 900: "0.28", 937: "0.2504",
		938: "0.25", 950: "0.25", 1000: "0.25", -5: "1", 5000: "0.25",
	}
	for s, want := range table {
		if got := EscrowModifier(s).String(); got != want {
			t.Errorf("score %d: %s, want %s", s, got, want)
		}
	}
	for s := int64(0); s <= 1000; s++ {
		if got, want := int64(EscrowModifier(int(s))), oracleModifier(t, s); got != want {
			t.Fatalf("score %d: %d bp, want %d", s, got, want)
		}
	}
}

func TestModifierRoundTrip(t *testing.T) {
	for bp := Modifier(0); bp <= 10000; bp++ {
		s := bp.String()
		got, err := ParseModifier(s)
		if err != nil || got != bp {
			t.Fatalf("%d -> %q -> %d, %v", bp, s, got, err)
		}
		j, _ := bp.MarshalJSON()
		if string(j) != s {
			t.Fatalf("MarshalJSON %q != String %q", j, s)
		}
		var back Modifier
		if err := json.Unmarshal(j, &back); err != nil || back != bp {
			t.Fatalf("UnmarshalJSON %s = %d, %v", j, back, err)
		}
	}
	var m Modifier
	if err := json.Unmarshal([]byte(`"0.5"`), &m); !errors.Is(err, ErrInvalid) {
		t.Errorf("a JSON string as a modifier: %v", err)
	}
	for _, s := range []string{"0.25", "2.5e-1", "25E-2", "0.2500", "1.0", "1e0", "0"} {
		if _, err := ParseModifier(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "0.39285", "-0.25", "1.0001", "2", ".5", "0.", "01", "1e999999", "NaN", "0x1", " 0.5", "0.5 ", "+0.5", "1e-9999"} {
		if m, err := ParseModifier(s); err == nil {
			t.Errorf("%q: accepted as %d", s, m)
		}
	}
}

func TestHoldCents(t *testing.T) {
	cases := []struct {
		amount        int64
		score         int
		hold, release int64
	}{
		{100000, 700, 44000, 56000}, // §5: $1,000 at 0.44
		{1000000, 0, 1000000, 0},    // Appendix B.1
		{1000000, 1000, 250000, 750000},
		{1, 760, 1, 0},             // 0.392 cents rounds up to 1
		{3, 760, 2, 1},             // 1.176 -> 2
		{0, 500, 0, 0},             // nothing to hold
		{99999, 937, 25040, 74959}, // 99999 × 0.2504 = 25039.7496 -> 25040
		{math.MaxInt64, 0, math.MaxInt64, 0},
	}
	for _, c := range cases {
		h, r, err := HoldCents(c.amount, c.score)
		if err != nil || h != c.hold || r != c.release {
			t.Errorf("HoldCents(%d, %d) = %d, %d, %v; want %d, %d", c.amount, c.score, h, r, err, c.hold, c.release)
		}
	}
	if _, _, err := HoldCents(-1, 500); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative amount: %v", err)
	}
	// Against big.Int over random amounts, including near MaxInt64.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100000; i++ {
		amount := rng.Int64()
		if i%2 == 0 {
			amount = rng.Int64N(1e9)
		}
		s := rng.IntN(1001)
		h, r, err := HoldCents(amount, s)
		if err != nil {
			t.Fatal(err)
		}
		p := new(big.Int).Mul(big.NewInt(amount), big.NewInt(int64(EscrowModifier(s))))
		p.Add(p, big.NewInt(9999))
		p.Quo(p, big.NewInt(10000))
		if p.Int64() != h || h+r != amount || h < 0 || r < 0 {
			t.Fatalf("HoldCents(%d, %d) = %d, %d; want hold %s", amount, s, h, r, p)
		}
	}
}

func TestParseTier(t *testing.T) {
	for _, s := range []string{"NONE", "STANDARD", "ELITE"} {
		tr, err := ParseTier(s)
		if err != nil || tr.String() != s {
			t.Errorf("%s: %v %v", s, tr, err)
		}
		b, err := tr.MarshalText()
		if err != nil || string(b) != s {
			t.Errorf("MarshalText %s: %s %v", s, b, err)
		}
		var back Tier
		if err := back.UnmarshalText(b); err != nil || back != tr {
			t.Errorf("UnmarshalText %s: %v %v", s, back, err)
		}
	}
	for _, s := range []string{"", "elite", "GOLD"} {
		if _, err := ParseTier(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q accepted", s)
		}
	}
	if !(TierNone < TierStandard && TierStandard < TierElite) {
		t.Error("tiers must order lowest first")
	}
	if _, err := Tier(7).MarshalText(); !errors.Is(err, ErrInvalid) {
		t.Error("out-of-range tier marshalled")
	}
}

func TestComputeDoesNotAllocate(t *testing.T) {
	c := Counts{80, 76, 40, 38}
	if n := testing.AllocsPerRun(100, func() { _, _ = Compute(c) }); n != 0 {
		t.Fatalf("Compute allocates %v times per call", n)
	}
}

func FuzzCompute(f *testing.F) {
	f.Add(int64(80), int64(76), int64(40), int64(38))
	f.Add(int64(0), int64(0), int64(0), int64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(1))
	f.Fuzz(func(t *testing.T, ct, cs, at, as int64) {
		c := Counts{ct, cs, at, as}
		r, err := Compute(c)
		if c.Validate() != nil {
			if err == nil {
				t.Fatalf("%+v accepted", c)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstOracle(t, c)
		if r.Score < 0 || r.Score > 1000 || r.Escrow < ModifierFloor || r.Escrow > ModifierOne {
			t.Fatalf("out of range: %+v", r)
		}
	})
}

// TestErrorKind: the edges classify every error of the package as
// errkind.Invalid, InputError included, and ErrInvalid keeps its message.
func TestErrorKind(t *testing.T) {
	_, counts := Compute(Counts{ConduitTotal: 1, ConduitSuccess: 2})
	_, tier := ParseTier("GOLD")
	_, modifier := ParseModifier("2")
	for _, err := range []error{ErrInvalid, counts, tier, modifier, fmt.Errorf("request: %w", counts)} {
		if !errors.Is(err, ErrInvalid) || !errors.Is(err, errkind.ErrInvalid) || errkind.Of(err) != errkind.Invalid {
			t.Errorf("%v: of kind %v", err, errkind.Of(err))
		}
	}
	if ErrInvalid.Error() != "invalid input" || counts.Error() != "conduit_success = 2: exceeds conduit_total (1)" {
		t.Errorf("messages changed: %q, %q", ErrInvalid, counts)
	}
}
