package score

import "testing"

var sink Result

func BenchmarkCompute(b *testing.B) {
	inputs := []Counts{
		{80, 76, 40, 38},       // below both volume targets
		{1234, 1200, 567, 560}, // above both: the 128-bit division path
		{100, 100, 50, 50},     // ELITE: no gaps
		{0, 0, 0, 0},           // zero sessions
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sink, _ = Compute(inputs[i&3])
		i++
	}
}

func BenchmarkHoldCents(b *testing.B) {
	b.ReportAllocs()
	var h int64
	i := 0
	for b.Loop() {
		h, _, _ = HoldCents(int64(100000+i), i%1001)
		i++
	}
	_ = h
}
