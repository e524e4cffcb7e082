// Package signal computes the gaming signals of spec §8.3 and §15.2 from
// per-agent figures over the scoring window: volume farming (one buyer's
// share of an agent's Conduit sessions), partner shuffling (the top five
// buyers' share of its AP2 transactions and their diversity), self-dealing
// (an agent buying from itself, or two agents mostly buying from each
// other), success-rate gaming (its acceptance rate of task offers) and
// timestamp manipulation (reports arriving long after they ended, and
// broken chains). Signals are shown to the operator and exported; they
// never change a score. It does no I/O: the store computes Figures
// set-based, and this package compares them with the deployment's
// Thresholds. Volume farming also shows as bursts: many sessions from one
// buyer within a short interval (conduit_burst).
package signal

import (
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Figures are one agent's counts over the window ending at an instant, as
// the store computes them.
type Figures struct {
	AgentID string
	// ConduitTotal counts its counted Conduit sessions; ConduitTopBuyer
	// those of its largest single buyer (sessions without a buyer count
	// for no buyer).
	ConduitTotal, ConduitTopBuyer int64
	// AP2Total counts its counted AP2 transactions, AP2Top5 those of its
	// five largest buyers, AP2Buyers its distinct buyers.
	AP2Total, AP2Top5, AP2Buyers int64
	// SelfDealt counts its counted events whose buyer is itself, and
	// Reciprocal those whose buyer is an agent whose own largest buyer is
	// this agent, each being the other's largest buyer.
	SelfDealt, Reciprocal int64
	// OffersDecided counts its task offers accepted or declined in the
	// window, OffersAccepted the accepted ones.
	OffersDecided, OffersAccepted int64
	// MaxReportLag is the longest time between a counted event's end and
	// the arrival of the report that ended it (the received time in its
	// chain record); zero when no report carries one.
	MaxReportLag time.Duration
	// ChainBroken is true when the last walk of its chain found a break.
	ChainBroken bool
	// VerifiedTotal counts its VERIFIED Conduit sessions in the window,
	// VerifiedHashed those reported with a proof_hash, VerifiedProven
	// those with a check that matched their proof_hash (spec §8.2).
	VerifiedTotal, VerifiedHashed, VerifiedProven int64
	// ConduitBurst is the largest number of its counted Conduit sessions
	// from one buyer that ended within one burst interval
	// (Thresholds.BurstInterval, half-open: [t, t+interval)); sessions
	// without a buyer count for no buyer.
	ConduitBurst int64
}

// The signals' names, as the API, the CLI and /metrics name them.
const (
	ConduitTopBuyerShare = "conduit_top_buyer_share"
	AP2Top5BuyerShare    = "ap2_top5_buyer_share"
	AP2BuyerDiversity    = "ap2_buyer_diversity"
	SelfDealing          = "self_dealing"
	AcceptanceRate       = "acceptance_rate"
	ReportLag            = "report_lag"
	ChainBreak           = "chain_break"
	ConduitBurst         = "conduit_burst"
	// UnprovenVerifiedShare is the share of its VERIFIED sessions without
	// a proof check that matched their proof_hash (§8.2).
	UnprovenVerifiedShare = "unproven_verified_share"
)

// Names lists the signals in the order they are reported.
// Later signals are appended, so that a signal keeps its index.
var Names = []string{ConduitTopBuyerShare, AP2Top5BuyerShare, AP2BuyerDiversity, SelfDealing, AcceptanceRate, ReportLag, ChainBreak, ConduitBurst,
	UnprovenVerifiedShare}

// Thresholds are a deployment's limits. A share or a count is flagged above
// its threshold, a diversity or an acceptance rate below it.
type Thresholds struct {
	ConduitTopBuyerShare float64       // default 0.5 (§15.2: one buyer behind most sessions)
	AP2Top5BuyerShare    float64       // default 0.7
	AP2BuyerDiversity    float64       // default 0.1: fewer than one buyer in ten transactions
	SelfDealing          float64       // default 0: any self-dealt or reciprocal event
	AcceptanceRate       float64       // default 0.3, judged only when offers were reported
	ReportLag            time.Duration // default 24 h
	// MinEvents is the number of counted events below which the share and
	// diversity signals are not flagged: with three sessions, one buyer
	// is always half of them. Default 10.
	MinEvents int64
	// ConduitBurst flags an agent with more Conduit sessions than this
	// from one buyer within BurstInterval (§15.2 bursts). Default 20 in
	// 1 h: a fifth of the 100 sessions at which the Conduit volume
	// factor is full, from one buyer in one hour (ERRATA E41).
	ConduitBurst  int64
	BurstInterval time.Duration
	// UnprovenVerifiedShare flags an agent whose share of VERIFIED
	// sessions without a matching proof is above it, judged only when
	// some of its VERIFIED sessions carry a proof_hash (docs/ERRATA.md
	// E59). Default 0.5.
	UnprovenVerifiedShare float64
}

// Defaults are the thresholds a deployment starts with.
var Defaults = Thresholds{
	ConduitTopBuyerShare: 0.5, AP2Top5BuyerShare: 0.7, AP2BuyerDiversity: 0.1, SelfDealing: 0,
	AcceptanceRate: 0.3, ReportLag: 24 * time.Hour, MinEvents: 10,
	ConduitBurst: 20, BurstInterval: time.Hour, UnprovenVerifiedShare: 0.5,
}

// Validate checks thresholds (errkind.ErrInvalid naming the one at fault).
func (t Thresholds) Validate() error {
	for name, v := range map[string]float64{ConduitTopBuyerShare: t.ConduitTopBuyerShare, AP2Top5BuyerShare: t.AP2Top5BuyerShare,
		AP2BuyerDiversity: t.AP2BuyerDiversity, AcceptanceRate: t.AcceptanceRate, UnprovenVerifiedShare: t.UnprovenVerifiedShare} {
		if v < 0 || v > 1 {
			return fmt.Errorf("%w: threshold %s %v is outside 0..1", errkind.ErrInvalid, name, v)
		}
	}
	switch {
	case t.SelfDealing < 0:
		return fmt.Errorf("%w: threshold %s %v is negative", errkind.ErrInvalid, SelfDealing, t.SelfDealing)
	case t.ReportLag <= 0:
		return fmt.Errorf("%w: threshold %s %s must be positive", errkind.ErrInvalid, ReportLag, t.ReportLag)
	case t.MinEvents < 0:
		return fmt.Errorf("%w: the minimum of events %d is negative", errkind.ErrInvalid, t.MinEvents)
	case t.ConduitBurst < 0:
		return fmt.Errorf("%w: threshold %s %d is negative", errkind.ErrInvalid, ConduitBurst, t.ConduitBurst)
	case t.BurstInterval < time.Second || t.BurstInterval > 90*24*time.Hour:
		// Beyond the 90-day window every session falls in one interval,
		// and the figure becomes the top buyer's count; under a second is
		// a typo for a longer unit more often than a setting.
		return fmt.Errorf("%w: burst interval %s is outside 1s..90 days", errkind.ErrInvalid, t.BurstInterval)
	}
	return nil
}

// Signal is one figure beside its threshold. Value and Threshold are in
// the signal's unit: a share or rate in 0..1, a count (self_dealing,
// conduit_burst), report_lag in hours, chain_break 0 or 1.
type Signal struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Flagged   bool    `json:"flagged"`
	// Note says why a signal was not judged, when it was not: no task
	// offers were reported (acceptance_rate, whose Value is then 0 for
	// want of a rate, not a rate of 0), or too few events to judge a
	// share. Empty when the figure was compared with its threshold.
	Note string `json:"note,omitempty"`
}

// The notes of signals that were not judged (Signal.Note).
const (
	NoteNoOffers = "no task offers reported"
	NoteNoProofs = "no proof_hash reported"
)

// fewEvents is the note of a share or diversity judged from too few events.
func fewEvents(n, min int64) string {
	if n == 1 {
		return fmt.Sprintf("not judged: 1 counted event, fewer than %d", min)
	}
	return fmt.Sprintf("not judged: %d counted events, fewer than %d", n, min)
}

// Evaluate compares f with t and returns every signal, in Names order.
func Evaluate(f Figures, t Thresholds) []Signal {
	ratio := func(n, d int64) float64 {
		if d == 0 {
			return 0
		}
		return float64(n) / float64(d)
	}
	broken := 0.0
	if f.ChainBroken {
		broken = 1
	}
	selfDealt := float64(f.SelfDealt + f.Reciprocal)
	out := []Signal{
		{Name: ConduitTopBuyerShare, Value: ratio(f.ConduitTopBuyer, f.ConduitTotal), Threshold: t.ConduitTopBuyerShare,
			Flagged: f.ConduitTotal >= t.MinEvents && ratio(f.ConduitTopBuyer, f.ConduitTotal) > t.ConduitTopBuyerShare},
		{Name: AP2Top5BuyerShare, Value: ratio(f.AP2Top5, f.AP2Total), Threshold: t.AP2Top5BuyerShare,
			Flagged: f.AP2Total >= t.MinEvents && ratio(f.AP2Top5, f.AP2Total) > t.AP2Top5BuyerShare},
		{Name: AP2BuyerDiversity, Value: ratio(f.AP2Buyers, f.AP2Total), Threshold: t.AP2BuyerDiversity,
			Flagged: f.AP2Total >= t.MinEvents && ratio(f.AP2Buyers, f.AP2Total) < t.AP2BuyerDiversity},
		{Name: SelfDealing, Value: selfDealt, Threshold: t.SelfDealing, Flagged: selfDealt > t.SelfDealing},
		// With no offer decided there is no rate: an operator that does
		// not report task offers must not see every agent flagged below
		// 30% (§15.2 judges offers that were made).
		{Name: AcceptanceRate, Value: ratio(f.OffersAccepted, f.OffersDecided), Threshold: t.AcceptanceRate,
			Flagged: f.OffersDecided > 0 && ratio(f.OffersAccepted, f.OffersDecided) < t.AcceptanceRate},
		{Name: ReportLag, Value: f.MaxReportLag.Hours(), Threshold: t.ReportLag.Hours(), Flagged: f.MaxReportLag > t.ReportLag},
		{Name: ChainBreak, Value: broken, Flagged: f.ChainBroken},
		{Name: ConduitBurst, Value: float64(f.ConduitBurst), Threshold: float64(t.ConduitBurst), Flagged: f.ConduitBurst > t.ConduitBurst},
		// Like acceptance_rate: a deployment that collects no proofs must
		// not see every agent flagged.
		{Name: UnprovenVerifiedShare, Value: ratio(f.VerifiedTotal-f.VerifiedProven, f.VerifiedTotal), Threshold: t.UnprovenVerifiedShare,
			Flagged: f.VerifiedHashed > 0 && ratio(f.VerifiedTotal-f.VerifiedProven, f.VerifiedTotal) > t.UnprovenVerifiedShare},
	}
	if f.ConduitTotal < t.MinEvents {
		out[0].Note = fewEvents(f.ConduitTotal, t.MinEvents)
	}
	if f.AP2Total < t.MinEvents {
		out[1].Note, out[2].Note = fewEvents(f.AP2Total, t.MinEvents), fewEvents(f.AP2Total, t.MinEvents)
	}
	if f.OffersDecided == 0 {
		out[4].Note = NoteNoOffers
	}
	if f.VerifiedHashed == 0 {
		out[8].Note = NoteNoProofs
	}
	return out
}

// Flagged reports whether any of signals is flagged.
func Flagged(signals []Signal) bool {
	for _, s := range signals {
		if s.Flagged {
			return true
		}
	}
	return false
}
