// Package store defines the Store interface over the ledger and the score
// cache, which the sqlite and postgres back ends implement and the storetest
// conformance suite checks.
//
// # Model (mirror it in every back end)
//
// Tables (one goose migration set per dialect; names are a superset of spec
// §12.1 so an operator who has those tables recognises them):
//
//   - operators(id TEXT PK, created_at): the platforms that report events;
//     id is the operator name (ledger.ValidID), registered on first use.
//   - agents(id TEXT PK, created_at, head_seq, head_hash, terminal_seq):
//     registered on their first event. head_seq/head_hash are the last link
//     of the agent's hash chain (0 and 32 zero bytes before any event).
//     terminal_seq is the seq of the agent's latest terminal report: the
//     version of its counts, which change only with a terminal report
//     (migration 00002).
//   - conduit_sessions(id PK, agent_id → agents, buyer_id NULL, operator_id →
//     operators, status, started_at, completed_at NULL, seq, created_at,
//     updated_at; §12.1's action_count, session_cost_usd, proof_hash kept as
//     optional columns) and ap2_transactions(id PK, provider_id → agents,
//     buyer_id, operator_id, status, escrow_amount_cents BIGINT,
//     escrow_modifier_bp INTEGER NULL, started_at, settled_at NULL, seq, ...).
//     One row per event holding its current state; seq is the position in
//     the agent's chain of the record that produced that state. Event ids
//     are unique per type; an event belongs to the operator that first
//     reported it. Indexes: (agent_id, completed_at) and (provider_id,
//     settled_at) restricted to the counted statuses.
//   - ledger_records(agent_id, seq, event_type, event_id, content, hash;
//     PK (agent_id, seq)): the append-only hash chain. One record per
//     accepted report (a first report or a transition); content is
//     ledger.Record.Canonical(), hash = ledger.Link(previous hash, content).
//     Duplicates and rejected reports leave no record.
//   - swarmscore_cache(agent_id PK → agents, the four counts, score, tier,
//     the two contributions, escrow_modifier_bp, computed_at, expires_at =
//     computed_at + 7 days, valid_until, passport_json NULL,
//     passport_signature NULL, ledger_seq). An entry answers every as_of in
//     [computed_at, valid_until), and only while ledger_seq equals its
//     agent's terminal_seq; ledger.ValidUntil defines valid_until. Readers
//     report an entry at another version as invalidated. Invalidation sets
//     valid_until = computed_at and keeps the row (so ranking still sees the
//     agent until the next refresh).
//   - api_tokens(id PK, operator_id, token_sha256 UNIQUE, created_at,
//     revoked_at NULL): only the SHA-256 of a token is stored.
//   - signing_keys(id PK, fingerprint, created_at, retired_at NULL): which key
//     signed what, never the key itself.
//   - appeals (§11.3) and consent (§11.1: agent_id PK, visibility public |
//     unlisted, consented_at).
//
// Timestamps are UTC with microsecond precision (ledger.Validate refuses
// finer ones, so nothing is rounded). SQLite stores them as INTEGER unix
// microseconds; PostgreSQL as TIMESTAMPTZ. Money is integer cents; the
// escrow modifier is integer basis points (§12.1's NUMERIC(4,4) cannot hold
// 1.0).
//
// # Concurrency
//
// Ingest serialises per agent (SQLite: one writer, BEGIN IMMEDIATE;
// PostgreSQL: lock the agents rows of the batch in id order, FOR UPDATE,
// before reading head_seq), so a chain never forks and an event is never
// inserted twice.
//
// Cache entries are versioned, not locked: RefreshScore and RecomputeAll
// read an agent's counts and its terminal_seq in one snapshot (one
// statement) and store that terminal_seq as the entry's ledger_seq, and an
// entry is served only while the two are equal. A batch with a terminal
// report moves terminal_seq in its transaction, so whenever it commits
// relative to a refresh, the entry that refresh writes is either computed
// after the batch or never served: no lock against Ingest is needed, and a
// long RecomputeAll does not stall ingest. Ingest also still invalidates
// the entries of agents with a terminal report in the same transaction
// (defence in depth; on PostgreSQL it skips rows a running refresh holds,
// which are stale by version anyway).
//
// # Cache watch
//
// A process that remembers served passports learns that an agent's stamp
// may have changed through an optional CacheWatch, without a query per
// request. SQLite: every commit rewrites the WAL index header in the -shm
// file before it returns, so a watch that maps the header sees every
// commit, by any process, synchronously. PostgreSQL (migration 00003):
// triggers notify channel swarmscore_cache at the commit of every change
// to an agent's terminal_seq or to a cache entry holding a passport, and a
// listener connection per process turns notifications into invalidations;
// it vouches for nothing while disconnected or silent.
package store

import (
	"context"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// Store is the ledger and score cache. Implementations are safe for
// concurrent use by multiple goroutines (and, for PostgreSQL, processes).
// Every method returns errkind.ErrUnavailable (wrapped) when the database
// cannot be reached, and ctx's error when ctx ends first. Unless a method
// says otherwise, "now" is never read from a clock: times are arguments.
type Store interface {
	// Migrate applies every pending migration. It is idempotent and safe to
	// run from several processes at once.
	Migrate(ctx context.Context) error

	// Ready returns nil when the database is reachable and every migration
	// is applied; otherwise an error matching errkind.ErrUnavailable that
	// says which.
	Ready(ctx context.Context) error

	// Ingest records a batch of events reported by operator, in order, and
	// returns one Outcome per event (same index). The batch is all or
	// nothing: either every accepted event is committed with its chain
	// record, or (on a returned error) nothing is. A rejected event changes
	// nothing and does not stop the others. Per event:
	//   - a new id is Accepted (the agent and operator are registered);
	//   - the same content again is a Duplicate (no-op, no chain record);
	//   - a later allowed status with unchanged immutable fields is Accepted
	//     (a transition);
	//   - a changed immutable field, a backward or forbidden status, another
	//     operator's event, or an invalid event is Rejected, with Err
	//     matching errkind.ErrConflict or errkind.ErrInvalid.
	// Events later in the batch see the effect of earlier ones. Every
	// accepted terminal report invalidates the agent's cache entry in the
	// same transaction. The returned error (not per-event) is ErrInvalid for
	// an invalid operator name, ErrUnavailable or an internal error.
	Ingest(ctx context.Context, operator string, events []ledger.Event) ([]ledger.Outcome, error)

	// Counts returns the agent's four 90-day counts over the window
	// [asOf − 90 days, asOf], both ends inclusive, with the statuses of
	// §12.2 and Pitfall 4. It reads the ledger, never the cache. An unknown
	// agent is errkind.ErrNotFound.
	Counts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error)

	// CachedScore returns the agent's cache entry if it answers asOf
	// (ComputedAt <= asOf < ValidUntil), with ok true. ok is false, with a
	// nil error, when there is no such entry (never computed, invalidated,
	// expired, or asOf outside its range). An unknown agent is
	// errkind.ErrNotFound.
	CachedScore(ctx context.Context, agentID string, asOf time.Time) (entry ledger.ScoreEntry, ok bool, err error)

	// CacheStamp returns what identifies the agent's cache entry without
	// reading it: whether an entry exists at the agent's current ledger
	// version (ledger_seq equal to terminal_seq), its ComputedAt and
	// ValidUntil, and the signature of the passport stored with it. It is
	// one indexed lookup that reads no passport bytes and no counts, so a
	// caller that already holds the passport with that signature can serve
	// it again at the cost of this call: a terminal report committed by any
	// process, or a refresh, changes the stamp before the call returns it.
	// An unknown agent is errkind.ErrNotFound.
	CacheStamp(ctx context.Context, agentID string) (ledger.ScoreStamp, error)

	// RefreshScore computes the agent's score as of asOf from the ledger and
	// replaces its cache entry with it (ComputedAt = asOf, ExpiresAt = asOf +
	// 7 days, ValidUntil per ledger.ValidUntil). It does not hold up Ingest:
	// the entry carries the ledger version its counts were read at, so if a
	// terminal report for the agent commits before the entry is written,
	// CachedScore does not serve it (the returned entry is still the score
	// as of asOf over the ledger it read). If issue is not
	// nil it is called inside that transaction with the new entry and its
	// result (a passport and its signature) is stored with the entry; an
	// error from issue aborts the refresh and is returned unchanged. An
	// unknown agent is errkind.ErrNotFound.
	RefreshScore(ctx context.Context, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error)

	// RecomputeAll refreshes the cache entry of every agent as of asOf (or,
	// with onlyStale, of every agent without an entry answering asOf) with
	// one set-based statement, and returns how many entries it wrote.
	// Passports of replaced entries are dropped. It is safe to run while
	// events are ingested and does not block Ingest: an agent whose
	// terminal reports arrive meanwhile ends up either refreshed after them
	// or with an entry that is not served (a later onlyStale run rewrites
	// it).
	RecomputeAll(ctx context.Context, asOf time.Time, onlyStale bool) (int64, error)

	// ListScores returns cache entries ordered by score descending then
	// agent id ascending, starting after q.After, for marketplace search.
	// Entries that do not answer q.AsOf are included with their last
	// values (check Answers); call RecomputeAll(ctx, asOf, true) first to
	// rank fresh values. Agents whose consent says unlisted are omitted.
	ListScores(ctx context.Context, q ledger.ListQuery) ([]ledger.ScoreEntry, error)

	// Agent returns what the ledger knows about an agent. An unknown agent
	// is errkind.ErrNotFound.
	Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error)

	// VerifyLedger walks every agent's hash chain and checks that each
	// event row holds exactly the content of its latest chain record. It
	// returns a report whose Broken lists the first broken link of each
	// damaged chain (an empty list means intact); the error is only for
	// failing to read.
	VerifyLedger(ctx context.Context) (ledger.VerifyReport, error)

	// CreateToken stores an API token's SHA-256 for operator under id,
	// registering the operator. Creating the same (id, operator, hash) again
	// is a no-op; an id or hash already used otherwise is
	// errkind.ErrConflict; an invalid id or operator name is ErrInvalid.
	CreateToken(ctx context.Context, t auth.Token) error

	// Authenticate returns the operator owning the token whose SHA-256 is
	// sum. An unknown or revoked token is errkind.ErrUnauthorized.
	Authenticate(ctx context.Context, sum [32]byte) (operator string, err error)

	// RevokeToken marks token id revoked as of at; revoking again keeps the
	// first time. An unknown id is errkind.ErrNotFound.
	RevokeToken(ctx context.Context, id string, at time.Time) error

	// ListTokens returns every token (revoked ones included) ordered by
	// creation time, without their hashes.
	ListTokens(ctx context.Context) ([]auth.Token, error)

	// SetVisibility records the agent's consent choice (§11.1, §8.4):
	// VisibilityPublic or VisibilityUnlisted, as of at. An unknown agent is
	// ErrNotFound; another visibility is ErrInvalid.
	SetVisibility(ctx context.Context, agentID string, v ledger.Visibility, at time.Time) error

	// Close releases the database handles. Calls after Close fail.
	Close() error
}

// CacheWatcher is implemented by back ends that can tell a process, with no
// database round trip, that nothing able to change an agent's cache stamp
// has been committed since an earlier instant. A process that remembers
// passports (service.API) then serves a remembered one with no query at
// all; against a Store that does not implement it (or whose CacheWatch is
// nil) it reads the stamp on every request instead.
type CacheWatcher interface {
	// CacheWatch returns the store's watch, starting it on the first call
	// (PostgreSQL opens a listener connection, SQLite maps the WAL index),
	// or nil when this store cannot watch. The watch stops when the store
	// is closed and vouches for nothing after that.
	CacheWatch() CacheWatch
}

// CacheWatch tells whether a cache stamp read earlier still holds. The
// protocol: take a Mark, then read the stamp (or write the entry), and keep
// the mark with what was read; while Unchanged(agent, mark) is true, no
// commit that changes the agent's stamp has become visible to this process
// since the mark, so what was read may be used without reading it again.
// It is never true for a commit this process made and reported with Wrote,
// nor, once the back end has learnt of it, for a commit made by anyone.
// How soon a back end learns of other processes' commits is its documented
// delay: SQLite sees them synchronously (the WAL index changes at commit);
// PostgreSQL when the commit's notification arrives, and vouches for
// nothing while its listener is disconnected or silent. Implementations
// are safe for concurrent use.
type CacheWatch interface {
	// Mark returns the watch's position now. ok is false while the watch
	// cannot vouch for anything; Unchanged is then false for every mark,
	// including this one.
	Mark() (mark uint64, ok bool)
	// Unchanged reports whether no commit that may change agentID's cache
	// stamp has become known since mark was returned. False is always
	// safe: a back end may report a change that did not happen (another
	// agent's write, a hash collision, a reconnection), never the reverse.
	Unchanged(agentID string, mark uint64) bool
	// Wrote records that this process has just committed writes that may
	// have changed these agents' stamps: Unchanged is false for them, for
	// every mark taken before the call, as soon as it returns, without
	// waiting for the database to report the commit.
	Wrote(agentIDs []string)
}

// invalidationSlots is the size of an Invalidations table: 32 KiB, and a
// collision rate low enough that an invalidation of one agent touches few
// others even with thousands of agents in use.
const invalidationSlots = 4096

// Invalidations is the bookkeeping of a notified CacheWatch: it numbers
// invalidations and remembers, for each agent (hashed into a fixed table,
// so memory stays constant however many agents there are), the number of
// the last one that named it. A collision only reports a change for an
// agent nothing happened to, never the reverse. Create it with
// NewInvalidations; it is safe for concurrent use.
type Invalidations struct {
	seed  maphash.Seed
	seq   atomic.Uint64 // the number of the last invalidation
	all   atomic.Uint64 // the number of the last invalidation of every agent
	slots [invalidationSlots]atomic.Uint64
}

// NewInvalidations returns an empty table.
func NewInvalidations() *Invalidations { return &Invalidations{seed: maphash.MakeSeed()} }

// Mark is the number of the last invalidation: an invalidation recorded
// after Mark returns gets a larger number.
func (v *Invalidations) Mark() uint64 { return v.seq.Load() }

// Agents records one invalidation naming every agent in ids.
func (v *Invalidations) Agents(ids []string) {
	if len(ids) == 0 {
		return
	}
	n := v.seq.Add(1)
	for _, id := range ids {
		raise(&v.slots[maphash.String(v.seed, id)%invalidationSlots], n)
	}
}

// All records an invalidation of every agent.
func (v *Invalidations) All() { raise(&v.all, v.seq.Add(1)) }

// Unchanged reports whether no invalidation recorded after mark named
// agentID (or every agent).
func (v *Invalidations) Unchanged(agentID string, mark uint64) bool {
	return v.all.Load() <= mark && v.slots[maphash.String(v.seed, agentID)%invalidationSlots].Load() <= mark
}

// raise sets x to n unless it is already larger: concurrent invalidations
// may finish out of order, and a slot must never move back below a number
// that was already recorded in it.
func raise(x *atomic.Uint64, n uint64) {
	for {
		old := x.Load()
		if old >= n || x.CompareAndSwap(old, n) {
			return
		}
	}
}
