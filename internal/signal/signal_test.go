package signal

import (
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

func flags(ss []Signal) map[string]bool {
	out := map[string]bool{}
	for _, s := range ss {
		if s.Flagged {
			out[s.Name] = true
		}
	}
	return out
}

func TestEvaluate(t *testing.T) {
	quiet := Figures{AgentID: "a", ConduitTotal: 40, ConduitTopBuyer: 20, AP2Total: 20, AP2Top5: 14, AP2Buyers: 2,
		OffersDecided: 10, OffersAccepted: 3, MaxReportLag: 24 * time.Hour, ConduitBurst: 20, VerifiedTotal: 30, VerifiedHashed: 30, VerifiedProven: 15}
	ss := Evaluate(quiet, Defaults)
	if len(ss) != len(Names) {
		t.Fatalf("%d signals", len(ss))
	}
	for i, s := range ss {
		if s.Name != Names[i] {
			t.Errorf("signal %d is %s, want %s", i, s.Name, Names[i])
		}
	}
	if f := flags(ss); len(f) != 0 || Flagged(ss) {
		t.Errorf("figures at every threshold are flagged: %v", f)
	}
	if ss[0].Value != 0.5 || ss[1].Value != 0.7 || ss[2].Value != 0.1 || ss[4].Value != 0.3 || ss[5].Value != 24 || ss[8].Value != 0.5 {
		t.Errorf("values %+v", ss)
	}
	loud := quiet
	loud.ConduitTopBuyer, loud.AP2Top5, loud.AP2Buyers, loud.SelfDealt = 21, 15, 1, 1
	loud.OffersAccepted, loud.MaxReportLag, loud.ChainBroken, loud.ConduitBurst = 2, 24*time.Hour+time.Second, true, 21
	loud.VerifiedProven = 14
	if f := flags(Evaluate(loud, Defaults)); len(f) != len(Names) {
		t.Errorf("every signal should trip: %v", f)
	}
	// Too few events to judge shares; no offers, no acceptance rate.
	few := Figures{ConduitTotal: 3, ConduitTopBuyer: 3, AP2Total: 2, AP2Top5: 2, AP2Buyers: 1}
	if f := flags(Evaluate(few, Defaults)); len(f) != 0 {
		t.Errorf("a handful of events is flagged: %v", f)
	}
	// No proof_hash reported: unproven sessions are not judged.
	unhashed := Figures{VerifiedTotal: 50}
	if ss := Evaluate(unhashed, Defaults); ss[8].Flagged || ss[8].Value != 1 || ss[8].Note != NoteNoProofs {
		t.Errorf("sessions without proof hashes: %+v", ss[8])
	}
	recip := Figures{Reciprocal: 4}
	if f := flags(Evaluate(recip, Defaults)); !f[SelfDealing] {
		t.Error("a reciprocal pair is self-dealing")
	}
}

func TestThresholds(t *testing.T) {
	if err := Defaults.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Thresholds){
		"share above 1":  func(x *Thresholds) { x.ConduitTopBuyerShare = 1.5 },
		"negative rate":  func(x *Thresholds) { x.AcceptanceRate = -0.1 },
		"negative self":  func(x *Thresholds) { x.SelfDealing = -1 },
		"no lag":         func(x *Thresholds) { x.ReportLag = 0 },
		"negative count": func(x *Thresholds) { x.MinEvents = -1 },
		"negative burst": func(x *Thresholds) { x.ConduitBurst = -1 },
		"no interval":    func(x *Thresholds) { x.BurstInterval = 0 },
		"interval > 90d": func(x *Thresholds) { x.BurstInterval = 91 * 24 * time.Hour },
		"unproven > 1":   func(x *Thresholds) { x.UnprovenVerifiedShare = 1.1 },
	} {
		th := Defaults
		mod(&th)
		if err := th.Validate(); errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestAcceptanceRateWithoutOffers: no decided offer is no rate: not
// flagged, and the note says so; any decided offer is judged.
func TestAcceptanceRateWithoutOffers(t *testing.T) {
	busy := Figures{ConduitTotal: 100, ConduitTopBuyer: 10, AP2Total: 50, AP2Top5: 20, AP2Buyers: 30}
	s := Evaluate(busy, Defaults)[4]
	if s.Name != AcceptanceRate || s.Flagged || s.Value != 0 || s.Note != NoteNoOffers {
		t.Fatalf("no offers: %+v", s)
	}
	busy.OffersDecided = 1
	if s := Evaluate(busy, Defaults)[4]; !s.Flagged || s.Note != "" {
		t.Fatalf("one offer declined: %+v", s)
	}
	busy.OffersAccepted = 1
	if s := Evaluate(busy, Defaults)[4]; s.Flagged || s.Value != 1 || s.Note != "" {
		t.Fatalf("one offer accepted: %+v", s)
	}
	// Too few events: the shares say they were not judged.
	few := Evaluate(Figures{ConduitTotal: 3, ConduitTopBuyer: 3}, Defaults)
	if few[0].Flagged || few[0].Note == "" || few[1].Note == "" || few[2].Note == "" {
		t.Fatalf("few events: %+v", few)
	}
}
