package service

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// The gaming signals (spec §8.3, §15.2; internal/signal): figures computed
// by the store over the scoring window, beside the deployment's thresholds.
// They are shown to operators and to the agent concerned and exported as
// metrics; nothing here writes a score.

// Signals are the use cases of the gaming signals: an agent's, the flagged
// agents', and the counts /metrics reports, kept in memory with those of
// the latest full walk of the hash chains (VerifyLedger), whose breaks the
// chain_break signal reports.
type Signals struct {
	store      SignalsStore
	clock      clock
	horizon    horizon           // the latest as_of the signals answer
	thresholds signal.Thresholds // Config.SignalThresholds
	stats      atomic.Pointer[SignalStats]
}

// AgentSignals are one agent's signals as of an instant, every one of
// signal.Names in that order.
type AgentSignals struct {
	AgentID string
	AsOf    time.Time
	Signals []signal.Signal
}

// Flagged reports whether any of the agent's signals is flagged.
func (a *AgentSignals) Flagged() bool { return signal.Flagged(a.Signals) }

// Thresholds are the thresholds in force: SignalThresholds, or
// signal.Defaults when it is the zero value.
func (u *Signals) Thresholds() signal.Thresholds {
	if u.thresholds == (signal.Thresholds{}) {
		return signal.Defaults
	}
	return u.thresholds
}

// asOfOrNow is asOf on the ledger's grid, or now when zero.
func (u *Signals) asOfOrNow(asOf time.Time) time.Time {
	if asOf.IsZero() {
		return u.clock.now()
	}
	return asOf.UTC().Truncate(ledger.Resolution)
}

// Signals returns the agent's gaming signals over the window ending at
// asOf (now when zero), for an operator or the agent itself. An agent with
// nothing in the window has every figure zero. chain_break is what the
// last full walk of the chains found (VerifyLedger). Errors: ErrInvalid for
// a malformed id, invalid thresholds or an asOf later than now plus the
// clock-skew allowance, ErrUnauthorized or ErrForbidden for
// any other caller, ErrNotFound for an unknown agent, ErrUnavailable.
func (u *Signals) Signals(ctx context.Context, c Caller, agentID string, asOf time.Time) (AgentSignals, error) {
	if err := checkActor(c, agentID); err != nil {
		return AgentSignals{}, err
	}
	if err := u.horizon.check(asOf); err != nil {
		return AgentSignals{}, err
	}
	t := u.Thresholds()
	if err := t.Validate(); err != nil {
		return AgentSignals{}, err
	}
	if _, err := u.store.Agent(ctx, agentID); err != nil {
		return AgentSignals{}, unknownAgent(err, agentID)
	}
	asOf = u.asOfOrNow(asOf)
	fs, err := u.store.SignalFigures(ctx, asOf, agentID, t.BurstInterval)
	if err != nil {
		return AgentSignals{}, err
	}
	f := signal.Figures{AgentID: agentID}
	if len(fs) > 0 {
		f = fs[0]
	}
	return AgentSignals{AgentID: agentID, AsOf: asOf, Signals: signal.Evaluate(f, t)}, nil
}

// Flagged are the agents with a flagged signal as of AsOf.
type Flagged struct {
	AsOf   time.Time
	Agents []AgentSignals
}

// FlaggedAgents returns the agents with at least one flagged signal over
// the window ending at asOf (now when zero), by agent id, each with all of
// its signals. The figures of every agent are computed in one set-based
// query (SignalStore.SignalFigures), never agent by agent. It is an
// operator's view: the transports check who asks. Errors: ErrInvalid for
// invalid thresholds or an asOf later than now plus the clock-skew
// allowance, ErrUnavailable.
func (u *Signals) FlaggedAgents(ctx context.Context, asOf time.Time) (Flagged, error) {
	if err := u.horizon.check(asOf); err != nil {
		return Flagged{}, err
	}
	t := u.Thresholds()
	if err := t.Validate(); err != nil {
		return Flagged{}, err
	}
	out := Flagged{AsOf: u.asOfOrNow(asOf)}
	fs, err := u.store.SignalFigures(ctx, out.AsOf, "", t.BurstInterval)
	if err != nil {
		return Flagged{}, err
	}
	for _, f := range fs {
		a := AgentSignals{AgentID: f.AgentID, AsOf: out.AsOf, Signals: signal.Evaluate(f, t)}
		if a.Flagged() {
			out.Agents = append(out.Agents, a)
		}
	}
	return out, nil
}

// SignalStats summarise the latest RefreshSignalStats and chain walk of
// this process, for /metrics.
type SignalStats struct {
	// At is the instant the signals were computed as of; zero before the
	// first refresh.
	At time.Time
	// Agents counts the agents with activity in the window; Flagged those
	// with any signal flagged; BySignal those flagged per signal, with
	// every name of signal.Names present.
	Agents, Flagged int
	BySignal        map[string]int
	// WalkAt is when the latest full chain walk of this process started
	// (zero if none), and BrokenChains how many chains it found broken.
	WalkAt       time.Time
	BrokenChains int
}

// RefreshSignalStats computes every agent's signals as of now, set-based
// (FlaggedAgents' query), and keeps the counts for SignalStats. Its cost
// is one pass over the window's events, so it runs on a schedule (serve
// --signals-every), never on a scrape. Errors: those of FlaggedAgents.
func (u *Signals) RefreshSignalStats(ctx context.Context) (SignalStats, error) {
	t := u.Thresholds()
	if err := t.Validate(); err != nil {
		return SignalStats{}, err
	}
	asOf := u.clock.now()
	fs, err := u.store.SignalFigures(ctx, asOf, "", t.BurstInterval)
	if err != nil {
		return SignalStats{}, err
	}
	st := SignalStats{At: asOf, Agents: len(fs), BySignal: make(map[string]int, len(signal.Names))}
	for _, n := range signal.Names {
		st.BySignal[n] = 0
	}
	for _, f := range fs {
		sigs := signal.Evaluate(f, t)
		for _, s := range sigs {
			if s.Flagged {
				st.BySignal[s.Name]++
			}
		}
		if signal.Flagged(sigs) {
			st.Flagged++
		}
	}
	for {
		old := u.stats.Load()
		next := st
		if old != nil {
			next.WalkAt, next.BrokenChains = old.WalkAt, old.BrokenChains
		}
		if u.stats.CompareAndSwap(old, &next) {
			return next, nil
		}
	}
}

// SignalStats returns the latest counts (RefreshSignalStats, VerifyLedger)
// without blocking; ok is false before either ran in this process.
func (u *Signals) SignalStats() (st SignalStats, ok bool) {
	if p := u.stats.Load(); p != nil {
		return *p, true
	}
	return SignalStats{}, false
}

// recordWalk records a full walk's breaks, found by a walk that started at
// at, for the chain_break signal and the metrics.
func (u *Signals) recordWalk(ctx context.Context, at time.Time, r ledger.VerifyReport) error {
	if err := u.store.SetChainBreaks(ctx, at, r.Broken); err != nil {
		return err
	}
	for {
		old := u.stats.Load()
		var next SignalStats
		if old != nil {
			next = *old
		}
		next.WalkAt, next.BrokenChains = at, len(r.Broken)
		if u.stats.CompareAndSwap(old, &next) {
			return nil
		}
	}
}

// VerifyLedger walks every hash chain (LedgerStore.VerifyLedger) and
// records the breaks it found as of now, which the chain_break signal
// reports until the next walk (SignalStore.SetChainBreaks): broken links
// are in the report; the error (ErrUnavailable) is for failing to read or
// to record.
func (u *Signals) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	at := u.clock.now()
	r, err := u.store.VerifyLedger(ctx)
	if err != nil {
		return r, err
	}
	return r, u.recordWalk(ctx, at, r)
}
