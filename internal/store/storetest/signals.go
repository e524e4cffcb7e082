package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
)

func figures(t *testing.T, s service.Backend, asOf time.Time, agent string) map[string]signal.Figures {
	t.Helper()
	fs, err := s.SignalFigures(ctx(t), asOf, agent, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]signal.Figures{}
	for i, f := range fs {
		if i > 0 && fs[i-1].AgentID >= f.AgentID {
			t.Errorf("figures not in agent id order: %s then %s", fs[i-1].AgentID, f.AgentID)
		}
		out[f.AgentID] = f
	}
	return out
}

// testSignals: histories made to trip each signal do, histories made not
// to do not, and one agent's figures are its row of everyone's.
func testSignals(t *testing.T, h Harness) {
	s := h.Open(t)
	signalLedger(t, s)
	all := figures(t, s, base, "")
	checkFlagged(t, all)
	checkFigures(t, all)
	// A longer interval is the deployment's: 21 sessions within 2 hours.
	if fs, err := s.SignalFigures(ctx(t), base, "edge", 2*time.Hour); err != nil || len(fs) != 1 || fs[0].ConduitBurst != 21 {
		t.Errorf("edge over 2 h: %+v %v", fs, err)
	}
	if _, ok := all["fine"]; !ok || len(all) != 13 {
		t.Errorf("%d agents with figures: %v", len(all), all)
	}
	for _, a := range []string{"farm", "p", "picky", "late", "fair", "rush", "edge"} {
		one := figures(t, s, base, a)
		if len(one) != 1 || one[a] != all[a] {
			t.Errorf("%s alone %+v, among all %+v", a, one[a], all[a])
		}
	}
	if got := figures(t, s, base, "nobody"); len(got) != 0 {
		t.Errorf("figures of nobody: %v", got)
	}
	// A void takes an event out of every figure.
	correct(t, s, correction(ledger.ActionVoid, ledger.ConduitSession, "late-1", base), nil)
	if f := figures(t, s, base, "late"); len(f) != 0 {
		t.Errorf("a voided event still counts: %+v", f)
	}
	// The window moves on: 91 days later nothing is left.
	if got := figures(t, s, base.Add(91*24*time.Hour), ""); len(got) != 0 {
		t.Errorf("figures after the window: %v", got)
	}
}

// signalLedger stores one agent per pattern a signal looks for (farm,
// shuffle, mono, selfie, p and q, picky, late, fair's chain break, rush's
// burst) and agents that come close to one without tripping it (wide,
// edge, fine).
func signalLedger(t *testing.T, s service.Backend) {
	t.Helper()
	end := base.Add(-time.Hour)
	start := end.Add(-time.Hour)
	var evs []ledger.Event
	sess := func(id, agent, buyer string) {
		e := conduit(id, agent, ledger.Verified, start, end)
		e.BuyerID = buyer
		evs = append(evs, e)
	}
	pay := func(id, agent, buyer string) {
		e := ap2(id, agent, ledger.Settled, start, end)
		e.BuyerID = buyer
		evs = append(evs, e)
	}
	for i := range 20 {
		buyer := fmt.Sprint("b-", i)
		if i < 15 {
			buyer = "whale"
		}
		sess(fmt.Sprint("farm-", i), "farm", buyer)
		sess(fmt.Sprint("fair-", i), "fair", fmt.Sprint("b-", i))
		pay(fmt.Sprint("shuffle-", i), "shuffle", fmt.Sprint("b-", i%5))
		pay(fmt.Sprint("mono-", i), "mono", "only")
		pay(fmt.Sprint("wide-", i), "wide", fmt.Sprint("b-", i))
	}
	for i := range 3 {
		sess(fmt.Sprint("selfie-", i), "selfie", "selfie")
	}
	sess("selfie-x", "selfie", "b-1")
	for i := range 4 {
		sess(fmt.Sprint("p-", i), "p", "q")
		pay(fmt.Sprint("q-", i), "q", "p")
	}
	sess("p-x", "p", "b-1")
	// Bursts: 21 sessions of one buyer two minutes apart (all within an
	// hour) trip conduit_burst; 21 three minutes apart put only 20 in any
	// half-open hour, and 20 four minutes apart 15. Thirty sessions of
	// other buyers keep the one buyer's share under a half.
	for i := range 30 {
		sess(fmt.Sprint("rush-o", i), "rush", fmt.Sprint("b-", i))
		sess(fmt.Sprint("edge-o", i), "edge", fmt.Sprint("b-", i))
	}
	for i := range 21 {
		for agent, gap := range map[string]time.Duration{"rush": 2 * time.Minute, "edge": 3 * time.Minute} {
			at := end.Add(-2*time.Hour + time.Duration(i)*gap)
			e := conduit(fmt.Sprint(agent, "-", i), agent, ledger.Verified, at.Add(-time.Minute), at)
			e.BuyerID = "rusher"
			evs = append(evs, e)
		}
	}
	for i := range 10 {
		st, st2 := ledger.Declined, ledger.Accepted
		if i < 2 {
			st = ledger.Accepted
		}
		if i < 2 {
			st2 = ledger.Declined
		}
		evs = append(evs, offer(fmt.Sprint("picky-", i), "picky", st, start, end), offer(fmt.Sprint("fine-", i), "fine", st2, start, end))
	}
	if _, err := s.Ingest(ctx(t), ledger.Batch{Operator: "op-a", Events: evs, ReceivedAt: base, MaxSkew: time.Minute}); err != nil {
		t.Fatal(err)
	}
	late := conduit("late-1", "late", ledger.Verified, base.Add(-50*time.Hour), base.Add(-49*time.Hour))
	if _, err := s.Ingest(ctx(t), ledger.Batch{Operator: "op-a", Events: []ledger.Event{late}, ReceivedAt: base, MaxSkew: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetChainBreaks(ctx(t), base, []ledger.BrokenLink{{AgentID: "fair", Seq: 3, Reason: "hash mismatch"}}); err != nil {
		t.Fatal(err)
	}
}

// checkFlagged checks which agents the default thresholds flag, and for
// what.
func checkFlagged(t *testing.T, all map[string]signal.Figures) {
	t.Helper()
	flagged := map[string][]string{}
	for a, f := range all {
		for _, sg := range signal.Evaluate(f, signal.Defaults) {
			if sg.Flagged {
				flagged[a] = append(flagged[a], sg.Name)
			}
		}
	}
	want := map[string][]string{
		"farm":    {signal.ConduitTopBuyerShare},
		"shuffle": {signal.AP2Top5BuyerShare},
		"mono":    {signal.AP2Top5BuyerShare, signal.AP2BuyerDiversity},
		"selfie":  {signal.SelfDealing},
		"p":       {signal.SelfDealing},
		"q":       {signal.SelfDealing},
		"picky":   {signal.AcceptanceRate},
		"late":    {signal.ReportLag},
		"fair":    {signal.ChainBreak},
		"rush":    {signal.ConduitBurst},
	}
	for a := range flagged {
		slices.Sort(flagged[a])
	}
	for a := range want {
		slices.Sort(want[a])
	}
	if fmt.Sprint(flagged) != fmt.Sprint(want) {
		t.Errorf("flagged %v\nwant    %v", flagged, want)
	}
}

// checkFigures checks the figures behind the flags, and the burst at its
// edges.
func checkFigures(t *testing.T, all map[string]signal.Figures) {
	t.Helper()
	if f := all["farm"]; f.ConduitTotal != 20 || f.ConduitTopBuyer != 15 {
		t.Errorf("farm %+v", f)
	}
	if f := all["shuffle"]; f.AP2Total != 20 || f.AP2Top5 != 20 || f.AP2Buyers != 5 {
		t.Errorf("shuffle %+v", f)
	}
	if f := all["p"]; f.Reciprocal != 4 || f.SelfDealt != 0 {
		t.Errorf("p %+v", f)
	}
	if f := all["picky"]; f.OffersDecided != 10 || f.OffersAccepted != 2 {
		t.Errorf("picky %+v", f)
	}
	if f := all["late"]; f.MaxReportLag != 49*time.Hour {
		t.Errorf("late lag %s", f.MaxReportLag)
	}
	if f := all["rush"]; f.ConduitBurst != 21 || f.ConduitTotal != 51 {
		t.Errorf("rush %+v", f)
	}
	if f := all["edge"]; f.ConduitBurst != 20 {
		t.Errorf("edge (21 sessions over exactly an hour) %+v", f)
	}
	if f := all["farm"]; f.ConduitBurst != 15 {
		t.Errorf("farm (15 sessions of one buyer at one instant) %+v", f)
	}
	if f := all["fair"]; f.ConduitBurst != 1 {
		t.Errorf("fair (one session per buyer) %+v", f)
	}
}

// testSignalsProperty compares the store's figures with a brute-force
// count over random histories.
func testSignalsProperty(t *testing.T, h Harness) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5165))
	s := h.Open(t)
	agents := []string{"a", "b", "c", "d"}
	buyers := []string{"a", "b", "x", "y", "z", ""}
	var evs []ledger.Event
	for i := range 300 {
		agent := agents[rng.IntN(len(agents))]
		buyer := buyers[rng.IntN(len(buyers))]
		end := base.Add(-time.Duration(rng.Int64N(int64(100 * 24 * time.Hour)))).Truncate(time.Second)
		if rng.IntN(2) == 0 {
			// Crowded into two hours, some at the same instant, some an
			// hour apart exactly: the burst interval's edges.
			end = base.Add(-5*24*time.Hour + time.Duration(rng.IntN(13))*10*time.Minute)
		}
		start := end.Add(-time.Hour)
		var e ledger.Event
		switch rng.IntN(3) {
		case 0:
			e = conduit(fmt.Sprint("c", i), agent, []ledger.Status{ledger.Verified, ledger.Failed, ledger.Error}[rng.IntN(3)], start, end)
			e.BuyerID = buyer
		case 1:
			if buyer == "" {
				buyer = "x"
			}
			e = ap2(fmt.Sprint("t", i), agent, []ledger.Status{ledger.Settled, ledger.Refunded, ledger.Cancelled}[rng.IntN(3)], start, end)
			e.BuyerID = buyer
		default:
			if buyer == "" {
				buyer = "x"
			}
			e = offer(fmt.Sprint("o", i), agent, []ledger.Status{ledger.Accepted, ledger.Declined}[rng.IntN(2)], start, end)
			e.BuyerID = buyer
		}
		evs = append(evs, e)
	}
	if _, err := s.Ingest(ctx(t), ledger.Batch{Operator: "op-a", Events: evs, ReceivedAt: base, MaxSkew: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		asOf := base.Add(-time.Duration(rng.Int64N(int64(20 * 24 * time.Hour))))
		got := figures(t, s, asOf, "")
		want := bruteFigures(evs, asOf)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d as of %s:\n got %v\nwant %v", seed, asOf, got, want)
		}
	}
}

func bruteFigures(evs []ledger.Event, asOf time.Time) map[string]signal.Figures {
	type key struct{ a, b string }
	ends := map[key][]time.Time{}
	pairs := map[key]int64{}
	conduitBuyers := map[key]int64{}
	ap2Buyers := map[key]int64{}
	out := map[string]signal.Figures{}
	in := func(e ledger.Event) bool { return ledger.InWindow(e.EndedAt, asOf) }
	for _, e := range evs {
		if !in(e) {
			continue
		}
		f := out[e.AgentID]
		f.AgentID = e.AgentID
		switch {
		case e.Type == ledger.TaskOffer:
			f.OffersDecided++
			if e.Status == ledger.Accepted {
				f.OffersAccepted++
			}
		case !e.Status.CountsTotal():
			continue
		default:
			if lag := base.Sub(e.EndedAt); lag > f.MaxReportLag {
				f.MaxReportLag = lag
			}
			if e.Type == ledger.ConduitSession {
				f.ConduitTotal++
				if e.Status == ledger.Verified {
					f.VerifiedTotal++
				}
				conduitBuyers[key{e.AgentID, e.BuyerID}]++
				if e.BuyerID != "" {
					ends[key{e.AgentID, e.BuyerID}] = append(ends[key{e.AgentID, e.BuyerID}], e.EndedAt)
				}
			} else {
				f.AP2Total++
				ap2Buyers[key{e.AgentID, e.BuyerID}]++
			}
			if e.BuyerID != "" {
				pairs[key{e.AgentID, e.BuyerID}]++
			}
		}
		out[e.AgentID] = f
	}
	top := map[string]key{}
	for k, n := range pairs {
		if t, ok := top[k.a]; !ok || n > pairs[t] || (n == pairs[t] && k.b < t.b) {
			top[k.a] = k
		}
	}
	for a, f := range out {
		var ns []int64
		for k, n := range conduitBuyers {
			if k.a == a && k.b != "" {
				f.ConduitTopBuyer = max(f.ConduitTopBuyer, n)
			}
		}
		for k, ts := range ends {
			if k.a != a {
				continue
			}
			for _, t0 := range ts {
				var n int64
				for _, t1 := range ts {
					if !t1.Before(t0) && t1.Before(t0.Add(time.Hour)) {
						n++
					}
				}
				f.ConduitBurst = max(f.ConduitBurst, n)
			}
		}
		for k, n := range ap2Buyers {
			if k.a == a {
				ns = append(ns, n)
				f.AP2Buyers++
			}
		}
		slices.SortFunc(ns, func(x, y int64) int { return int(y - x) })
		for i, n := range ns {
			if i < 5 {
				f.AP2Top5 += n
			}
		}
		f.SelfDealt = pairs[key{a, a}]
		if t, ok := top[a]; ok && t.b != a {
			if back, ok := top[t.b]; ok && back.b == a {
				f.Reciprocal = pairs[t]
			}
		}
		out[a] = f
	}
	return out
}
