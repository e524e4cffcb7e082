package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// The storage ports: what the use cases need from a back end, one
// interface per aggregate, made of narrow ports that the groups of use
// cases hold one by one (ports_groups.go). The sqlite and postgres back ends implement all
// of them (internal/store/storetest checks that they behave alike);
// cmd/swarmscore wires them and the CLI hands the one a DSN names to New.
// Unless a method
// says otherwise, every method returns errkind.ErrUnavailable (wrapped) when
// the database cannot be reached, and ctx's error when ctx ends first, and
// "now" is never read from a clock: times are arguments.

// Database is the lifecycle of a back end.
type Database interface {
	// Migrate applies every pending migration and returns the names of
	// those it applied, oldest first (none when the schema was current);
	// idempotent and safe to run from several processes at once.
	Migrate(ctx context.Context) ([]string, error)
	// Ready returns nil when the database is reachable and fully migrated,
	// otherwise an error matching errkind.ErrUnavailable that says which.
	Ready(ctx context.Context) error
	// Close releases the database handles; later calls fail.
	Close() error
}

// LedgerStore is the event record: it loads what a batch needs, writes
// what ledger decides, counts windows and walks the hash chains. Its parts
// are the narrow ports below, which the groups of use cases hold one by one
// (ports_groups.go).
type LedgerStore interface {
	Ingester
	AgentReader
	CountReader
	ChangeReader
	Corrector
	RecordReader
	EventReader
	ChainWalker
}

// Ingester records reported events.
type Ingester interface {
	// Ingest records a batch reported by operator, in order, and returns
	// one outcome per event (same index), all or nothing: on a returned
	// error nothing was written. The decisions are ledger's; a rejected
	// event changes nothing and does not stop the others. The returned
	// error is ErrInvalid for an invalid operator name, ErrUnavailable or
	// an internal error.
	Ingest(ctx context.Context, b ledger.Batch) ([]ledger.Outcome, error)
}

// AgentReader reads what the ledger knows about an agent.
type AgentReader interface {
	// Agent returns what the ledger knows about an agent (ErrNotFound if
	// nothing).
	Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error)
}

// CountReader counts an agent's window from the ledger.
type CountReader interface {
	// Counts returns the agent's four counts over the window ending at
	// asOf, from the ledger (never the cache). An unknown agent is
	// ErrNotFound.
	Counts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error)
}

// ChangeReader tells how a window changed since a passport was issued.
type ChangeReader interface {
	// ChangedSince tells how the agent's window ending asOf has changed
	// since issuedAt, as ledger.ChangedSince decides: the events counted
	// in it now, or counted in it as the ledger stood at issuedAt, of which
	// a report was received after issuedAt (by type, then id), and the
	// window's four counts as the ledger stood at issuedAt (reports
	// received after it ignored; corrections, which say the ledger was
	// wrong, applied). Records written before received times were kept
	// count as received before issuedAt. Errors: ErrNotFound for an
	// unknown agent, ErrUnavailable.
	ChangedSince(ctx context.Context, agentID string, asOf, issuedAt time.Time) (changed []ledger.EventKey, atIssue score.Counts, err error)
}

// Corrector records corrections and reads them back.
type Corrector interface {
	// Correct records a correction (ledger.DecideCorrection decides it)
	// and, in the same transaction, recomputes the affected agents' cache
	// entries as of the correction, signing their passports when issue is
	// not nil. It returns the stored correction and whether it is new:
	// the same correction again writes nothing and returns the first.
	// Errors: as DecideCorrection (ErrInvalid, ErrNotFound, ErrConflict),
	// an error of issue unchanged, ErrUnavailable.
	Correct(ctx context.Context, req ledger.CorrectionRequest, issue ledger.IssueFunc) (ledger.Correction, bool, error)
	// Corrections returns an event's corrections, oldest first.
	Corrections(ctx context.Context, typ ledger.Type, eventID string) ([]ledger.Correction, error)
}

// RecordReader reads the events behind an agent's score.
type RecordReader interface {
	// Records returns the events that count in the agent's score as of
	// asOf (the window's counted, unvoided events now attributed to it),
	// in the order they ended, each as stored (reported and corrected
	// state). An unknown agent is ErrNotFound.
	Records(ctx context.Context, agentID string, asOf time.Time) ([]ledger.StoredEvent, error)
}

// EventReader reads events by key.
type EventReader interface {
	// Events returns the stored events of keys that exist, each as
	// stored (reported and corrected state, voided ones too), in the
	// order of keys; keys of no stored event are left out, and a key
	// given twice is returned once.
	Events(ctx context.Context, keys []ledger.EventKey) ([]ledger.StoredEvent, error)
}

// ChainWalker walks the hash chains.
type ChainWalker interface {
	// VerifyLedger walks every hash chain and event row; the error is only
	// for failing to read.
	VerifyLedger(ctx context.Context) (ledger.VerifyReport, error)
}

// ScoreStore is the score cache: one entry per agent, versioned by the
// agent's latest terminal report.
type ScoreStore interface {
	CachedScores
	ScoreRefresher
	// CacheStamp identifies the agent's entry in one indexed lookup that
	// reads no passport bytes. An unknown agent is ErrNotFound.
	CacheStamp(ctx context.Context, agentID string) (ledger.ScoreStamp, error)
	// RecomputeAll refreshes every agent's entry (or only those not
	// answering asOf) in one set-based statement, dropping their passports,
	// and returns how many it wrote.
	RecomputeAll(ctx context.Context, asOf time.Time, onlyStale bool) (int64, error)
	// ListScores returns entries by score descending then agent id,
	// after q.After, omitting unlisted agents.
	ListScores(ctx context.Context, q ledger.ListQuery) ([]ledger.ScoreEntry, error)
}

// CachedScores reads the score cache.
type CachedScores interface {
	// CachedScore returns the agent's entry if it answers asOf; ok is false
	// with a nil error when none does. An unknown agent is ErrNotFound.
	CachedScore(ctx context.Context, agentID string, asOf time.Time) (entry ledger.ScoreEntry, ok bool, err error)
}

// ScoreRefresher recomputes one agent's cache entry.
type ScoreRefresher interface {
	// RefreshScore computes the agent's score as of asOf and replaces its
	// entry; issue, if not nil, signs a passport inside that transaction
	// (its error is returned unchanged). An unknown agent is ErrNotFound.
	RefreshScore(ctx context.Context, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error)
}

// ConsentStore holds the agents' consent and visibility choices (§11.1).
type ConsentStore interface {
	ConsentReader
	// SetVisibility records the agent's choice as of at. An unknown agent
	// is ErrNotFound; another visibility is ErrInvalid.
	SetVisibility(ctx context.Context, agentID string, v ledger.Visibility, at time.Time) error
	// RecordConsent records that the agent consented to disclosure text
	// version, as of at, through by; a later consent replaces it. An
	// unknown agent is ErrNotFound; a malformed version or by ErrInvalid.
	RecordConsent(ctx context.Context, agentID, version, by string, at time.Time) error
}

// ConsentReader reads an agent's consent.
type ConsentReader interface {
	// Consent returns the agent's consent and visibility (the defaults,
	// public and no consent, when nothing was recorded). An unknown agent
	// is ErrNotFound.
	Consent(ctx context.Context, agentID string) (ledger.Consent, error)
}

// TokenStore holds API tokens by the SHA-256 of their secret.
type TokenStore interface {
	// CreateToken stores a token; the same (id, operator, hash) again is a
	// no-op, an id or hash used otherwise is ErrConflict.
	CreateToken(ctx context.Context, t auth.Token) error
	// Authenticate returns the active token whose SHA-256 is sum (its
	// operator and, for an agent's token, its agent; never the hash); an
	// unknown or revoked token is ErrUnauthorized.
	Authenticate(ctx context.Context, sum [32]byte) (auth.Token, error)
	// RevokeToken marks token id revoked as of at (the first time is
	// kept); an unknown id is ErrNotFound.
	RevokeToken(ctx context.Context, id string, at time.Time) error
	// ListTokens returns every token, revoked ones included, by creation
	// time.
	ListTokens(ctx context.Context) ([]auth.Token, error)
}

// CacheWatcher is implemented by back ends that can tell a process, with
// no query, that nothing able to change an agent's score stamp has been
// committed since an earlier instant (ledger.CacheWatch). CacheWatch starts
// the watch on its first call and returns nil when the back end cannot
// watch; the watch stops when the back end is closed.
type CacheWatcher interface {
	CacheWatch() ledger.CacheWatch
}

// Backend is everything a deployment's store provides: what New needs to
// make every group of use cases.
type Backend interface {
	Database
	LedgerStore
	ScoreStore
	ConsentStore
	TokenStore
	KeyStore
	PassportStore
	AppealStore
	CheckpointStore
	SignalStore
	ErasureStore
	RetentionStore
	ActionStore
	SessionStore
	CredentialStore
	LogStore
	WebhookStore
	WebhookOutbox
	HoldStore
	ProofStore
}
