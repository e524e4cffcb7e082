package audit_test

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// bigBundle is the bundle of an agent with n events over 120 days (three
// in five Conduit sessions, the rest AP2 transactions; every other one
// reported twice, first in progress, then final), a chargeback every
// hundred events, a checkpoint over the chain and a passport: the document
// `audit verify` reads.
func bigBundle(tb testing.TB, n int) []byte {
	m := audittest.NewLedger()
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		var first, final []ledger.Event
		for i := lo; i < min(lo+batch, n); i++ {
			end := audittest.AsOf.Add(-time.Duration(i%(120*24)) * time.Hour)
			id := fmt.Sprintf("e-%d", i)
			var e ledger.Event
			if i%5 < 3 {
				st := ledger.Verified
				if i%7 == 0 {
					st = ledger.Failed
				}
				e = audittest.Conduit(id, "a", st, end)
			} else {
				st := ledger.Settled
				if i%11 == 0 {
					st = ledger.Disputed
				}
				e = audittest.AP2(id, "a", fmt.Sprintf("buyer-%d", i%97), st, end)
			}
			if i%2 == 0 {
				pending := e
				pending.EndedAt = time.Time{}
				if e.Type == ledger.ConduitSession {
					pending.Status = ledger.Running
				} else {
					pending.Status = ledger.Held
				}
				first = append(first, pending)
			}
			final = append(final, e)
		}
		if len(first) > 0 {
			m.Ingest(tb, "op-1", first...)
		}
		m.Ingest(tb, "op-1", final...)
	}
	for i := 3; i < n; i += 100 {
		r := audittest.Req(ledger.ActionStatus, ledger.AP2Transaction, fmt.Sprintf("e-%d", i), audittest.AsOf.Add(-time.Minute))
		r.Status = ledger.Refunded
		m.Correct(tb, r)
	}
	leaves := m.Leaves()
	src := m.Source("a", audittest.AsOf, m.SignPassport(tb, "a", audittest.AsOf),
		audittest.SignCheckpoint(tb, 1, audittest.AsOf, leaves), leaves)
	b, err := audit.Build(src)
	if err != nil {
		tb.Fatal(err)
	}
	if r := audit.Verify(b, audittest.Keys(tb)); !r.Valid {
		tb.Fatal(r.Discrepancy)
	}
	return b.AppendJSON(nil)
}

// BenchmarkVerify10000 is `audit verify` of an agent with 10,000 events,
// without the file read: Parse and Verify of the whole document.
func BenchmarkVerify10000(b *testing.B) {
	doc := bigBundle(b, 10000)
	keys := audittest.Keys(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if r := audit.VerifyDocument(doc, keys); !r.Valid {
			b.Fatal(r.Discrepancy)
		}
	}
}

// BenchmarkVerify10000Withheld is the same bundle with every category
// withheld: no record is re-hashed.
func BenchmarkVerify10000Withheld(b *testing.B) {
	bundle, err := audit.Parse(bigBundle(b, 10000))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := bundle.Withhold(audit.Categories, rand.Reader); err != nil {
		b.Fatal(err)
	}
	doc := bundle.AppendJSON(nil)
	keys := audittest.Keys(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if r := audit.VerifyDocument(doc, keys); !r.Valid {
			b.Fatal(r.Discrepancy)
		}
	}
}

// BenchmarkParse10000 is the parsing part of BenchmarkVerify10000.
func BenchmarkParse10000(b *testing.B) {
	doc := bigBundle(b, 10000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := audit.Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// holdBundles are the bundle of an agent with n escrow holds, each placed
// and released (two steps, its HELD and SETTLED reports in the chain),
// priced by one passport, and the same bundle without its holds: the
// difference is what checking the holds costs.
func holdBundles(tb testing.TB, n int) (with, without []byte) {
	m := audittest.NewLedger()
	m.Ingest(tb, "op-1", audittest.Conduit("c-0", "a", ledger.Verified, audittest.AsOf.Add(-72*time.Hour)))
	priced := m.SignPassport(tb, "a", audittest.AsOf.Add(-48*time.Hour))
	for i := range n {
		at := audittest.AsOf.Add(-47*time.Hour + time.Duration(i)*time.Second)
		m.Hold(tb, priced, ledger.HoldRequest{Action: ledger.HoldCreate, TransactionID: fmt.Sprintf("h-%d", i), ProviderID: "a",
			BuyerID: fmt.Sprintf("buyer-%d", i%97), AmountCents: int64(1000 + i), Currency: ledger.HoldCurrency, At: at},
			ledger.HoldRequest{Action: ledger.HoldRelease, FeeBPS: 250, At: at.Add(time.Hour)})
	}
	leaves := m.Leaves()
	src := m.Source("a", audittest.AsOf, m.SignPassport(tb, "a", audittest.AsOf), audittest.SignCheckpoint(tb, 1, audittest.AsOf, leaves), leaves)
	b, err := audit.Build(src)
	if err != nil {
		tb.Fatal(err)
	}
	if r := audit.Verify(b, audittest.Keys(tb)); !r.Valid || r.Holds != n {
		tb.Fatalf("%+v", r.Discrepancy)
	}
	with = b.AppendJSON(nil)
	b.Holds, b.HoldPassports = nil, nil
	return with, b.AppendJSON(nil)
}

// BenchmarkVerifyHolds1000 is `audit verify` of an agent with 1,000 holds
// (and their 2,000 reports); BenchmarkVerifyHolds1000Without the same
// bundle with the holds left out.
func BenchmarkVerifyHolds1000(b *testing.B) {
	with, _ := holdBundles(b, 1000)
	benchVerify(b, with)
}

func BenchmarkVerifyHolds1000Without(b *testing.B) {
	_, without := holdBundles(b, 1000)
	benchVerify(b, without)
}

func benchVerify(b *testing.B, doc []byte) {
	keys := audittest.Keys(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if r := audit.VerifyDocument(doc, keys); !r.Valid {
			b.Fatal(r.Discrepancy)
		}
	}
}
