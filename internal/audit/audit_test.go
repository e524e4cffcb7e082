package audit_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

func build(tb testing.TB, src audit.Source) *audit.Bundle {
	tb.Helper()
	b, err := audit.Build(src)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func mustVerify(tb testing.TB, b *audit.Bundle) *audit.Report {
	tb.Helper()
	r := audit.Verify(b, audittest.Keys(tb))
	if !r.Valid {
		tb.Fatalf("bundle does not verify: %v", r.Discrepancy)
	}
	return r
}

func TestBuildVerify(t *testing.T) {
	m, src := audittest.Scenario(t)
	b := build(t, src)
	r := mustVerify(t, b)
	want := map[string]audit.Outcome{"c1": audit.Counted, "c2": audit.BeforeWindow, "c3": audit.StatusNotCounted, "c4": audit.NotFinal,
		"t1": audit.Counted, "t2": audit.Voided, "c5": audit.MovedAway, "c6": audit.Counted, "t3": audit.AfterAsOf, "c7": audit.Counted,
		"t4": audit.Counted}
	if len(b.Events) != len(want) {
		t.Fatalf("%d events: %+v", len(b.Events), b.Events)
	}
	for _, e := range b.Events {
		if want[e.ID] != e.Outcome {
			t.Errorf("%s: outcome %s, want %s", e.ID, e.Outcome, want[e.ID])
		}
	}
	ev := func(id string) audit.Event {
		i := slices.IndexFunc(b.Events, func(e audit.Event) bool { return e.ID == id })
		return b.Events[i]
	}
	if e := ev("t1"); e.Status != ledger.Refunded || len(e.Corrections) != 1 {
		t.Errorf("chargeback %+v", e)
	}
	if e := ev("c5"); e.MovedTo != audit.Clear("b") || !e.MovedFrom.IsZero() {
		t.Errorf("moved away %+v", e)
	}
	if e := ev("c7"); e.MovedFrom != audit.Clear("b") || !e.MovedTo.IsZero() || len(e.Corrections) != 2 || !e.EndedAt.Equal(audittest.AsOf.Add(-7*time.Hour)) {
		t.Errorf("moved away and back %+v", e)
	}
	if e := ev("t4"); e.MovedFrom != audit.Clear("b") || !e.EndedAt.Equal(audittest.AsOf.Add(-8*time.Hour)) {
		t.Errorf("moved in through b %+v", e)
	}
	// c's chain holds the reports of c6 and t4; b is not needed: c7's
	// reports are in a's own chain.
	if len(b.Chains) != 2 || b.Chains[1].AgentID != audit.Clear("c") || b.Chains[1].FromSeq != 1 {
		t.Fatalf("chains %+v", b.Chains)
	}
	if want := m.Counts("a", audittest.AsOf); r.Counts != want || b.Counts != want {
		t.Errorf("counts %+v, bundle %+v, oracle %+v", r.Counts, b.Counts, want)
	}
	if r.Checkpoint != 1 || r.Anchored != b.Chains[0].Head.Seq || r.Linked != r.Records || r.PassportID == "" {
		t.Errorf("report %+v", r)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %+v", r.Warnings)
	}
}

// TestRoundTrip: a bundle reads back as it was written, and verifies.
func TestRoundTrip(t *testing.T) {
	_, src := audittest.Scenario(t)
	b := build(t, src)
	doc := b.AppendJSON(nil)
	back, err := audit.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, back) {
		t.Fatalf("round trip differs:\n%+v\n%+v", b, back)
	}
	if again := back.AppendJSON(nil); !bytes.Equal(doc, again) {
		t.Fatal("re-encoding differs")
	}
	if r := audit.VerifyDocument(doc, audittest.Keys(t)); !r.Valid {
		t.Fatal(r.Discrepancy)
	}
	// Whitespace is free: the records are hashed from their members.
	loose := bytes.ReplaceAll(doc, []byte(`,"`), []byte(",\n\t  \""))
	if r := audit.VerifyDocument(loose, audittest.Keys(t)); !r.Valid {
		t.Fatal(r.Discrepancy)
	}
}

// withheld returns a copy of b with every category withheld.
func withheld(tb testing.TB, b *audit.Bundle) (*audit.Bundle, audit.Openings) {
	tb.Helper()
	w, err := audit.Parse(b.AppendJSON(nil))
	if err != nil {
		tb.Fatal(err)
	}
	o, err := w.Withhold(audit.Categories, rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return w, o
}

func TestWithhold(t *testing.T) {
	_, src := audittest.Scenario(t)
	b := build(t, src)
	w, open := withheld(t, b)
	doc := w.AppendJSON(nil)
	for _, secret := range []string{"buyer-x", "buyer-y", "buyer-z", "op-1", `"c"`, `"b"`, "ticket"} {
		if bytes.Contains(doc, []byte(secret)) {
			t.Errorf("the withheld bundle still holds %s", secret)
		}
	}
	r := audit.VerifyDocument(doc, audittest.Keys(t))
	if !r.Valid {
		t.Fatal(r.Discrepancy)
	}
	if r.Linked != 0 || r.Records == 0 || !hasWarning(r, audit.WarnWithheld) || !hasWarning(r, audit.WarnNotAnchored) {
		t.Errorf("report %+v", r)
	}
	// Equal values have equal commitments within the bundle.
	buyers := map[string]bool{}
	for _, rec := range w.Chains[0].Records {
		for _, m := range rec.Content {
			if m.Name == "buyer_id" && m.Str.Withheld {
				buyers[m.Str.S] = true
			}
		}
	}
	if len(buyers) != 2 { // buyer-x and buyer-y report in a's chain
		t.Errorf("%d buyer commitments", len(buyers))
	}
	// Opening everything gives back the full bundle, linked again.
	back, err := audit.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	o, err := audit.ParseOpenings(open.AppendJSON(nil))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := back.Open(o); err != nil || n == 0 {
		t.Fatalf("opened %d: %v", n, err)
	}
	back.Withheld = nil
	if full := audit.Verify(back, audittest.Keys(t)); !full.Valid || full.Linked != full.Records {
		t.Fatalf("opened bundle %+v", full)
	}
	// The chain agent comes back, but its proof was dropped with it.
	b.Chains[1].Proof = nil
	if !reflect.DeepEqual(b.Chains, back.Chains) || !reflect.DeepEqual(b.Events, back.Events) {
		t.Error("the opened bundle is not the original")
	}
	// A false opening is refused, not taken for a true one.
	for c, op := range o {
		op.Value += "x"
		bad, _ := audit.Parse(doc)
		if _, err := bad.Open(audit.Openings{c: op}); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("false opening: %v", err)
		}
		break
	}
}

// TestWithholdSome: buyers alone withheld leave every record without a
// buyer linked, and the rest checks as before.
func TestWithholdSome(t *testing.T) {
	_, src := audittest.Scenario(t)
	b := build(t, src)
	if _, err := b.Withhold([]audit.Category{audit.Buyers}, rand.Reader); err != nil {
		t.Fatal(err)
	}
	r := mustVerify(t, b)
	if r.Linked == 0 || r.Linked == r.Records || r.Anchored == 0 {
		t.Errorf("report %+v", r)
	}
	if _, err := b.Withhold([]audit.Category{audit.Buyers}, rand.Reader); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("withholding twice: %v", err)
	}
}

func hasWarning(r *audit.Report, code string) bool {
	return slices.ContainsFunc(r.Warnings, func(f audit.Finding) bool { return f.Code == code })
}

func TestParseCategories(t *testing.T) {
	got, err := audit.ParseCategories("reasons, buyers,buyers")
	if err != nil || !slices.Equal(got, []audit.Category{audit.Buyers, audit.Reasons}) {
		t.Errorf("%v %v", got, err)
	}
	if _, err := audit.ParseCategories("buyers,emails"); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), "emails") {
		t.Errorf("%v", err)
	}
}

// TestTamper: every attack of audittest is caught (or, for the documented
// limits of withholding, passes unseen) on a bundle built from the
// in-memory ledger; internal/service runs the same on both back ends.
func TestTamper(t *testing.T) {
	_, src := audittest.Scenario(t)
	audittest.Run(t, build(t, src), audittest.Keys(t))
}
