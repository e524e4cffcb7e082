package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// UseCases are SwarmScore's use cases over one storage back end.
//
// Every method that needs the current time reads Now once per call and
// truncates it to the second, the precision of passports, and works as of
// that instant: a certificate, its cache entry, a score, a ranking and an L2
// recount made in the same second agree on it. Times a caller passes (an
// explicit as-of) keep the ledger's microseconds.
//
// Use one UseCases per back end for the life of the process: it remembers
// the certificates it served (certmemo.go). It is safe for concurrent use;
// its fields must not change after the first call.
type UseCases struct {
	// Store is the back end.
	Store Backend
	// Keys, when set, are the keys that sign new passports (Certificate)
	// and check presented ones (Verify), reloaded as they rotate; the other
	// use cases do not need them. Without it, Key is the only key.
	Keys *Keyring
	// Key signs and checks passports when Keys is nil.
	Key passport.Key
	// Platform is the issuer.platform of new passports.
	Platform string
	// Formulas are the formula versions presented passports are accepted
	// with, each in its window (§10.3; passport.Acceptance); the zero value
	// accepts V1 at all times. New passports are V1's, the formula the
	// store computes and caches.
	Formulas passport.Acceptance
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxClockSkew is how far past this clock a reported event may be
	// dated (ledger.Batch.MaxSkew): a report from further in the future is
	// rejected, since once stored it could never be corrected. Zero means
	// DefaultMaxClockSkew; it must not be negative.
	MaxClockSkew time.Duration
	// CheckpointKey signs checkpoints and checks archived ones when Keys
	// is nil (checkpointSigner, checkpointVerifier); nil in processes that
	// handle none.
	CheckpointKey *checkpoint.HMACKey
	// Environment names the deployment in checkpoints (production,
	// staging…); "" means DefaultEnvironment.
	Environment string
	// RequireConsent withholds an agent from every public route (its
	// score, certificate, pages, badge and the ranking) until it has
	// consented to a disclosure (spec §11.1); its events are recorded and
	// its score computed all the same (rights.go).
	RequireConsent bool
	// SignalThresholds are the deployment's gaming-signal limits; the zero
	// value means signal.Defaults. They must pass Validate.
	SignalThresholds signal.Thresholds
	// PseudonymKey keys the buyer pseudonyms an agent sees in its own
	// records (Keyring.Derive(PseudonymLabel)); masked reads fail without one.
	PseudonymKey []byte

	certs certMemo
	// rights holds what consent and the gaming signals keep in memory
	// (rights.go, signals.go).
	rights rightsState
	// histories and ingests serve the pages (profile.go, activity.go).
	histories historyMemo
	ingests   ingestLog
	fixed     fixedKeys
}

// DefaultMaxClockSkew is the clock-skew allowance of an ingest when
// UseCases.MaxClockSkew is zero: the reporting marketplace's clock may run
// this far ahead of the server's.
const DefaultMaxClockSkew = 5 * time.Minute

// clock reads the clock, unrounded.
func (u *UseCases) clock() time.Time {
	if u.Now == nil {
		return time.Now().UTC()
	}
	return u.Now().UTC()
}

// now reads the clock, to the second.
func (u *UseCases) now() time.Time { return u.clock().Truncate(time.Second) }

// maxSkew is MaxClockSkew with its default.
func (u *UseCases) maxSkew() time.Duration {
	if u.MaxClockSkew == 0 {
		return DefaultMaxClockSkew
	}
	return u.MaxClockSkew
}

// checkAsOf refuses an explicit as_of (zero: now) later than now plus the
// clock-skew allowance, the latest instant an accepted event may be dated:
// the ledger cannot count a later window yet, and an answer for 9999-12-31
// would only look like one. Errors: ErrInvalid.
func (u *UseCases) checkAsOf(asOf time.Time) error {
	if asOf.IsZero() {
		return nil
	}
	now, skew := u.clock(), u.maxSkew()
	if asOf.After(now.Add(skew)) {
		return fmt.Errorf("%w: as_of %s is later than now (%s) plus the allowed clock skew (%s): the ledger cannot count that window yet",
			errkind.ErrInvalid, ledger.FormatTime(asOf.UTC()), ledger.FormatTime(now.Truncate(time.Second)), skew)
	}
	return nil
}

// Migrate applies every pending migration to the back end (idempotent) and
// returns the names of those it applied. Errors: ErrUnavailable.
func (u *UseCases) Migrate(ctx context.Context) ([]string, error) { return u.Store.Migrate(ctx) }

// Ready reports whether the database is reachable and migrated
// (ErrUnavailable otherwise).
func (u *UseCases) Ready(ctx context.Context) error { return u.Store.Ready(ctx) }

// Escrow computes the hold for a payment of amountCents to the agent at its
// current score (spec §5), rounded up to the cent. An agent the ledger has
// no event for is a new provider: score 0, a full hold (modifier 1.0, spec
// Appendix B). Errors: ErrInvalid for a malformed id or a negative amount,
// ErrUnavailable.
func (u *UseCases) Escrow(ctx context.Context, agentID string, amountCents int64) (Escrow, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Escrow{}, err
	}
	if amountCents < 0 {
		return Escrow{}, fmt.Errorf("%w: amount_cents %d must not be negative", errkind.ErrInvalid, amountCents)
	}
	e, err := u.Score(ctx, agentID)
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		// Every new provider's first payment lands here: no history is
		// the lowest score, not an error.
		if e.Result, err = score.Compute(score.Counts{}); err != nil {
			return Escrow{}, err
		}
	case err != nil:
		return Escrow{}, err
	}
	hold, released, err := score.HoldCents(amountCents, e.Result.Score)
	if err != nil {
		return Escrow{}, err
	}
	return Escrow{Score: e.Result.Score, Modifier: e.Result.Escrow, HoldCents: hold, ReleasedCents: released}, nil
}

// Ranking lists agents by current score, highest first, then by agent id.
// Stale cache entries are first recomputed in one set-based statement, so
// the page ranks scores as of now. Agents that chose to be unlisted are
// omitted, and so, with RequireConsent, are agents that have not consented. Errors: ErrInvalid for an out-of-range query, ErrUnavailable.
func (u *UseCases) Ranking(ctx context.Context, q RankingQuery) (RankingPage, error) {
	lq := ledger.ListQuery{MinTier: q.MinTier, MinScore: q.MinScore, Limit: q.Limit, After: q.After}
	if err := lq.Validate(); err != nil {
		return RankingPage{}, err
	}
	if _, err := u.Store.RecomputeAll(ctx, u.now(), true); err != nil {
		return RankingPage{}, err
	}
	// One extra row tells whether there is a next page, so the last page
	// carries no cursor (except at the maximum page size).
	lq.Limit = min(q.Limit+1, 1000)
	entries, err := u.listPublished(ctx, lq)
	if err != nil {
		return RankingPage{}, err
	}
	page := RankingPage{Agents: entries}
	if len(entries) > q.Limit {
		page.Agents = entries[:q.Limit]
	}
	if len(entries) > q.Limit || (len(entries) == q.Limit && lq.Limit == q.Limit) {
		last := page.Agents[len(page.Agents)-1]
		page.Next = &ledger.Cursor{Score: last.Result.Score, AgentID: last.AgentID}
	}
	return page, nil
}

// Agent returns what the ledger knows about an agent. Errors: ErrInvalid
// for a malformed id, ErrNotFound if nothing (with a public detail,
// errkind.PublicDetail), ErrUnavailable.
func (u *UseCases) Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return ledger.AgentInfo{}, err
	}
	info, err := u.Store.Agent(ctx, agentID)
	return info, unknownAgent(err, agentID)
}

// VerifyLedger walks every hash chain (LedgerStore.VerifyLedger) and
// records the breaks it found as of now, which the chain_break signal
// reports until the next walk (SignalStore.SetChainBreaks): broken links
// are in the report; the error (ErrUnavailable) is for failing to read or
// to record.
func (u *UseCases) VerifyLedger(ctx context.Context) (ledger.VerifyReport, error) {
	at := u.now()
	r, err := u.Store.VerifyLedger(ctx)
	if err != nil {
		return r, err
	}
	return r, u.recordWalk(ctx, at, r)
}

// RecomputeAll refreshes every agent's cache entry as of now (with
// onlyStale, only entries that no longer answer now), dropping their
// passports, and returns how many it wrote. Errors: ErrUnavailable.
func (u *UseCases) RecomputeAll(ctx context.Context, onlyStale bool) (int64, error) {
	return u.Store.RecomputeAll(ctx, u.now(), onlyStale)
}
