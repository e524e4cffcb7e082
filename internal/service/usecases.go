package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/signal"
	"github.com/swarmscore/swarmscore/passport"
)

// Config is what a deployment sets for its use cases. New reads it once;
// its fields must not change afterwards.
type Config struct {
	// Keys, when set, are the keys that sign new passports (Certificates)
	// and check presented ones (Verifier), reloaded as they rotate; the
	// other use cases do not need them. Without it, Key is the only key.
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
	// is nil (Audit.checkpointSigner, checkpointVerifier); nil in processes
	// that handle none.
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
	// Logger receives what the use cases cannot return: an action log
	// entry that could not be written. nil discards.
	Logger *slog.Logger
	// PseudonymKey keys the buyer pseudonyms an agent sees in its own
	// records (Keyring.Derive(PseudonymLabel)); masked reads fail without one.
	PseudonymKey []byte
	// PlatformFeeBPS is the platform's fee on a hold's release when the
	// request names none (serve --platform-fee-bps): basis points of the
	// payment's amount, rounded down, never more than the hold. It must
	// be in [0, 10000].
	PlatformFeeBPS int
	// RequireProof refuses a VERIFIED Conduit session reported without a
	// proof_hash (code proof_required; serve and ingest --require-proof).
	RequireProof bool
	// LogOrigin is the origin line of the transparency log's checkpoint
	// notes and the name of the log's key (serve --log-origin); "" means
	// the origin of the latest note signed, else DefaultLogOrigin
	// (Log.Origin).
	LogOrigin string
}

// UseCases are SwarmScore's use cases over one storage back end, in groups
// by feature. Each group holds only the ports it uses (ports_groups.go) and
// the state it shares with others, passed to it by New: the clock, the
// signing keys, and what the process remembers (the certificates it
// served, which agents are published, the agents' past days). A transport
// takes the groups it calls.
//
// Every use case that needs the current time reads the clock once per call
// and truncates it to the second, the precision of passports, and works as
// of that instant: a certificate, its cache entry, a score, a ranking and
// an L2 recount made in the same second agree on it. Times a caller passes
// (an explicit as-of) keep the ledger's microseconds.
//
// Make one UseCases per back end for the life of the process: its groups
// remember what they served (certmemo.go). They are safe for concurrent
// use.
type UseCases struct {
	Schema       *Schema
	Ingest       *Ingestion
	Certificates *Certificates
	Verifier     *Verifier
	Keys         *Keys
	Tokens       *Tokens
	Corrections  *Corrections
	Rights       *Rights
	Signals      *Signals
	Audit        *Audit
	Log          *Log
	Console      *Console
	Credentials  *Credentials
	Webhooks     *Webhooks
	Holds        *Holds
	Proofs       *Proofs

	// What New was given, for this package's tests.
	store Backend
	cfg   Config
}

// New makes the use cases of the back end st. The groups share one clock,
// one set of signing keys and the process's memory of certificates,
// publication and history, so that what one group writes the others see
// at once (an erasure forgets the agent's certificate, a correction its
// remembered stamp).
func New(st Backend, cfg Config) *UseCases {
	clk := clock(cfg.Now)
	keys := &signing{ring: cfg.Keys, key: cfg.Key, platform: cfg.Platform}
	certs := &certMemo{}
	if w, ok := st.(CacheWatcher); ok {
		certs.watcher = w
	}
	hz := horizon{clock: clk, skew: cfg.MaxClockSkew}
	pubs := &publication{store: st, require: cfg.RequireConsent, certs: certs}
	histories := &historyMemo{}
	windows := &windowMemo{}
	pages := &pageMemo{}
	acts := &actionLog{store: st, clock: clk, log: cfg.Logger}
	cs := &Certificates{store: st, clock: clk, horizon: hz, keys: keys, formulas: cfg.Formulas, certs: certs, pubs: pubs,
		histories: histories, windows: windows, pages: pages}
	lg := &Log{store: st, clock: clk, keys: keys, origin: cfg.LogOrigin}
	return &UseCases{
		Schema:       &Schema{store: st},
		Ingest:       &Ingestion{store: st, clock: clk, horizon: hz, certs: certs, actions: acts, requireProof: cfg.RequireProof},
		Certificates: cs,
		Verifier:     &Verifier{store: st, clock: clk, keys: keys, formulas: cfg.Formulas, certs: cs},
		Keys:         &Keys{store: st, clock: clk, keys: keys, actions: acts},
		Tokens:       &Tokens{store: st, clock: clk, actions: acts},
		Corrections:  &Corrections{store: st, clock: clk, keys: keys, certs: certs, actions: acts},
		Rights: &Rights{store: st, clock: clk, horizon: hz, pubs: pubs, certs: certs, histories: histories, windows: windows, pages: pages,
			pseudonymKey: cfg.PseudonymKey, actions: acts},
		Signals: &Signals{store: st, clock: clk, horizon: hz, thresholds: cfg.SignalThresholds},
		Audit: &Audit{store: st, clock: clk, keys: keys, checkpointKey: cfg.CheckpointKey,
			env: cfg.Environment, issuer: cfg.Platform, certificates: cs, log: lg},
		Log:         lg,
		Console:     &Console{store: st, clock: clk, actions: acts},
		Credentials: &Credentials{store: st, certs: cs, keys: keys, clock: clk},
		Webhooks:    &Webhooks{store: st, clock: clk, actions: acts},
		Proofs:      &Proofs{store: st, clock: clk, actions: acts},
		Holds:       &Holds{store: st, certs: cs, memo: certs, clock: clk, horizon: hz, actions: acts, feeBPS: cfg.PlatformFeeBPS},
		store:       st,
		cfg:         cfg,
	}
}

// DefaultMaxClockSkew is the clock-skew allowance of an ingest when
// Config.MaxClockSkew is zero: the reporting marketplace's clock may run
// this far ahead of the server's.
const DefaultMaxClockSkew = 5 * time.Minute

// clock is the use cases' clock: Config.Now, or time.Now when nil.
type clock func() time.Time

// exact reads the clock, unrounded, in UTC.
func (c clock) exact() time.Time {
	if c == nil {
		return time.Now().UTC()
	}
	return c().UTC()
}

// now reads the clock, to the second.
func (c clock) now() time.Time { return c.exact().Truncate(time.Second) }

// Schema is the database's lifecycle: its migrations and readiness.
type Schema struct {
	store Database
}

// horizon is the latest instant the ledger can answer for: now plus the
// clock-skew allowance, the latest an accepted event may be dated. It is
// shared by ingest, which refuses events dated past it, and the groups that
// take an as_of.
type horizon struct {
	clock clock
	skew  time.Duration // Config.MaxClockSkew
}

// allowance is Config.MaxClockSkew with its default.
func (h horizon) allowance() time.Duration {
	if h.skew == 0 {
		return DefaultMaxClockSkew
	}
	return h.skew
}

// check refuses an explicit as_of (zero: now) later than now plus the
// clock-skew allowance: the ledger cannot count a later window yet, and an
// answer for 9999-12-31 would only look like one. Errors: ErrInvalid.
func (h horizon) check(asOf time.Time) error {
	if asOf.IsZero() {
		return nil
	}
	now, skew := h.clock.exact(), h.allowance()
	if asOf.After(now.Add(skew)) {
		return fmt.Errorf("%w: as_of %s is later than now (%s) plus the allowed clock skew (%s): the ledger cannot count that window yet",
			errkind.ErrInvalid, ledger.FormatTime(asOf.UTC()), ledger.FormatTime(now.Truncate(time.Second)), skew)
	}
	return nil
}

// Migrate applies every pending migration to the back end (idempotent) and
// returns the names of those it applied. Errors: ErrUnavailable.
func (u *Schema) Migrate(ctx context.Context) ([]string, error) { return u.store.Migrate(ctx) }

// Ready reports whether the database is reachable and migrated
// (ErrUnavailable otherwise).
func (u *Schema) Ready(ctx context.Context) error { return u.store.Ready(ctx) }
