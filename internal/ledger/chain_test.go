package ledger

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// referenceCanonical is the original definition of Canonical: encoding/json
// over canonicalRecord. The hand-written encoder must match it byte for
// byte, for every record, or stored chains stop verifying.
func referenceCanonical(r *Record) []byte {
	c := canonicalRecord{
		AgentID: r.Event.AgentID, BuyerID: r.Event.BuyerID, Escrow: r.Event.EscrowAmountCents,
		ID: r.Event.ID, Operator: r.Operator, Seq: r.Seq, StartedAt: FormatTime(r.Event.StartedAt),
		Status: r.Event.Status, Type: r.Event.Type,
	}
	if !r.Event.EndedAt.IsZero() {
		c.EndedAt = FormatTime(r.Event.EndedAt)
	}
	if !r.ReceivedAt.IsZero() {
		c.Received = FormatTime(r.ReceivedAt)
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return b
}

// randomString mixes valid id characters with ones encoding/json escapes
// (quote, backslash, <, >, &, controls, U+2028) and invalid UTF-8.
func randomString(rng *rand.Rand) string {
	const valid = "abcXYZ019._:-"
	odd := []string{`"`, `\`, "<", ">", "&", "\n", "\x00", "\x7f", "é", "\u2028", "\xff", " ", "/"}
	n := rng.IntN(12)
	var b []byte
	for range n {
		if rng.IntN(8) == 0 {
			b = append(b, odd[rng.IntN(len(odd))]...)
		} else {
			b = append(b, valid[rng.IntN(len(valid))])
		}
	}
	return string(b)
}

func randomTime(rng *rand.Rand) time.Time {
	switch rng.IntN(8) {
	case 0:
		return time.Time{}
	case 1: // outside the years a valid event can have
		return time.Date(-3+rng.IntN(5), 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64()))
	case 2:
		return time.Date(9999+rng.IntN(3), 12, 31, 23, 59, 59, rng.IntN(1e9), time.UTC)
	case 3: // another zone, nanoseconds
		return time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)).In(time.FixedZone("x", 3600*(rng.IntN(25)-12)))
	}
	t := time.Unix(rng.Int64N(253402300800), 0).UTC() // 1970..9999
	switch rng.IntN(4) {
	case 0:
		t = t.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
	case 1:
		t = t.Add(time.Duration(rng.IntN(10)) * 100 * time.Millisecond)
	case 2:
		t = t.Add(time.Duration(rng.IntN(1e9)))
	}
	return t
}

func randomRecord(rng *rand.Rand) Record {
	statuses := []Status{Pending, Verified, Settled, Cancelled, Status(randomString(rng))}
	types := []Type{ConduitSession, AP2Transaction, Type(randomString(rng))}
	ints := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return rng.Int64() - rng.Int64()
		case 1:
			return MaxEscrowCents
		}
		return rng.Int64N(1000)
	}
	return Record{
		Event: Event{Type: types[rng.IntN(len(types))], ID: randomString(rng), AgentID: randomString(rng), BuyerID: randomString(rng),
			Status: statuses[rng.IntN(len(statuses))], EscrowAmountCents: ints(), StartedAt: randomTime(rng), EndedAt: randomTime(rng)},
		Operator: randomString(rng), Seq: ints(), ReceivedAt: randomTime(rng),
	}
}

func TestCanonicalMatchesEncodingJSON(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	var buf []byte
	for i := range 200000 {
		r := randomRecord(rng)
		want := referenceCanonical(&r)
		if got := r.Canonical(); !bytes.Equal(got, want) {
			t.Fatalf("seed %d record %d %+v:\n got %s\nwant %s", seed, i, r, got, want)
		}
		buf = r.AppendCanonical(append(buf[:0], "prefix"...))
		if !bytes.Equal(buf[6:], want) || string(buf[:6]) != "prefix" {
			t.Fatalf("AppendCanonical does not append: %s", buf)
		}
		var c Chainer
		prev := Hash{byte(i)}
		if h, content := c.Link(prev, &r); h != Link(prev, want) || !bytes.Equal(content, want) {
			t.Fatalf("Chainer.Link disagrees with Link for %+v", r)
		}
	}
}

func TestCanonicalDoesNotAllocate(t *testing.T) {
	e, err := ParseEvent([]byte(ap2JSON))
	if err != nil {
		t.Fatal(err)
	}
	r := Record{Event: e, Operator: "op-1", Seq: 7}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = r.AppendCanonical(buf[:0]) }); n != 0 {
		t.Errorf("AppendCanonical: %v allocations", n)
	}
	var c Chainer
	c.Link(Hash{}, &r)
	if n := testing.AllocsPerRun(100, func() { c.Link(Hash{1}, &r) }); n != 0 {
		t.Errorf("Chainer.Link: %v allocations", n)
	}
}

func FuzzCanonical(f *testing.F) {
	f.Add("agent-1", "buyer-1", "s-1", "op", "VERIFIED", "conduit_session", int64(0), int64(1), int64(1773756000), int64(0), int64(1773757800), int64(250000000), false, 0)
	f.Add("a<", "", "\xff", `"`, "", "x", int64(-1), int64(-1<<63), int64(-62135596800-1), int64(999999999), int64(0), int64(0), true, 3600)
	f.Fuzz(func(t *testing.T, agent, buyer, id, operator, status, typ string, escrow, seq, startSec, startNsec, endSec, endNsec int64, noEnd bool, offset int) {
		zone := time.FixedZone("z", offset%(24*3600))
		r := Record{Event: Event{Type: Type(typ), ID: id, AgentID: agent, BuyerID: buyer, Status: Status(status), EscrowAmountCents: escrow,
			StartedAt: time.Unix(startSec, startNsec).In(zone)}, Operator: operator, Seq: seq}
		if !noEnd {
			r.Event.EndedAt = time.Unix(endSec, endNsec).In(zone)
		}
		if got, want := r.Canonical(), referenceCanonical(&r); !bytes.Equal(got, want) {
			t.Fatalf("record %+v:\n got %s\nwant %s", r, got, want)
		}
	})
}

func BenchmarkCanonical(b *testing.B) {
	e, err := ParseEvent([]byte(ap2JSON))
	if err != nil {
		b.Fatal(err)
	}
	r := Record{Event: e, Operator: "op-bench", Seq: 12345}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			referenceCanonical(&r)
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = r.AppendCanonical(buf[:0])
		}
	})
	b.Run("link", func(b *testing.B) {
		b.ReportAllocs()
		var c Chainer
		var h Hash
		for b.Loop() {
			h, _ = c.Link(h, &r)
		}
	})
}
