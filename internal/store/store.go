// Package store holds what the sqlite and postgres back ends share: the data
// model they mirror, the SQL form of the score formula and the SQL
// generated from ledger.Catalogue (an erasure's statements, the prune
// condition, the event tables' reads), each back end supplying its
// Dialect. The storage ports they implement are declared by their user,
// internal/service; the storetest conformance suite checks that both behave
// alike.
//
// The back ends store; they do not decide. Every rule of the ledger (which
// report is accepted, a duplicate, superseded or rejected, how chain records
// link, which heads move and which cache entries go stale) is
// internal/ledger's: a back end loads what ledger.Prepare names, writes the
// ledger.Plan that Decide returns, and feeds ledger.VerifyChains from one
// snapshot. Which columns name an agent, and so what an erasure renames,
// blanks or deletes, and which column ends an event, and so what a prune
// may remove, is ledger.Catalogue's.
//
// # Model (mirror it in every back end)
//
// Tables (one goose migration set per dialect; names are a superset of spec
// §12.1 so an operator who has those tables recognises them). Every column
// of every table is listed in ledger.Catalogue with what it holds; the
// conformance suite fails when a migration adds one it does not list.
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
//     optional columns), ap2_transactions(id PK, provider_id → agents,
//     buyer_id, operator_id, status, escrow_amount_cents BIGINT,
//     escrow_modifier_bp INTEGER NULL, started_at, settled_at NULL, seq, ...)
//     and task_offers(id PK, agent_id → agents, buyer_id, operator_id,
//     status, started_at, decided_at NULL, seq, ...; SQLite 00010,
//     PostgreSQL 00011), which never count in a score.
//     One row per event holding its current state; seq is the position in
//     the agent's chain of the record that produced that state. A
//     correction (migration SQLite 00005, PostgreSQL 00006) changes the
//     agent, the status or voided_at in place and first keeps the reported
//     values in reported_agent_id / reported_status, which later reports
//     are classified against; counts read the current columns and skip
//     voided rows. Event ids
//     are unique per type; an event belongs to the operator that first
//     reported it. Indexes: (agent_id, completed_at) and (provider_id,
//     settled_at) restricted to the counted statuses.
//   - ledger_records(agent_id, seq, event_type, event_id, status, hash;
//     PK (agent_id, seq)): the append-only hash chain, guarded by triggers
//     that refuse UPDATE and DELETE. One record per accepted report (a
//     first report or a transition); hash = ledger.Link(previous hash,
//     content), where content is ledger.Record.Canonical() of the report.
//     A record keeps only what the event row cannot give back (SQLite
//     migration 00003, PostgreSQL 00004): ledger.RebuildRecord rebuilds its
//     content from the record and its event row. Duplicates, superseded and
//     rejected reports leave no record. A correction's record names its
//     row in corrections (correction_id) and is appended to the chain of
//     the event's agent, and of its new agent for a re-attribution.
//   - corrections(id PK, event_type, event_id, action, from/to agent and
//     status, reason, appeal_id, actor, created_at, reissued_at NULL): one
//     row per correction (ledger.Correction); reissued_at records when the
//     affected passports were re-issued (§11.3's 7 days).
//   - swarmscore_cache(agent_id PK → agents, the four counts, score, tier,
//     the two contributions, escrow_modifier_bp, computed_at, expires_at =
//     computed_at + 7 days, valid_until, passport_json NULL,
//     passport_signature NULL, ledger_seq). An entry answers every as_of in
//     [computed_at, valid_until), and only while ledger_seq equals its
//     agent's terminal_seq; ledger.ValidUntil defines valid_until. Readers
//     report an entry at another version as invalidated. Invalidation sets
//     valid_until = computed_at and keeps the row (so ranking still sees the
//     agent until the next refresh).
//   - passports(id PK = agent_passport_id, agent_id, computed_at,
//     expires_at, key_id, signature, document; SQLite 00006, PostgreSQL
//     00007): every passport issued with an id, kept after its cache entry
//     moves on; swarmscore_cache.passport_kid names the key of the
//     entry's passport.
//   - api_tokens(id PK, operator_id, token_sha256 UNIQUE, created_at,
//     revoked_at NULL, agent_id NULL): only the SHA-256 of a token is
//     stored; agent_id scopes a token to one agent (SQLite 00011,
//     PostgreSQL 00012).
//   - signing_keys(id PK, alg, environment, state, created_at,
//     state_changed_at, public_key NULL, sealed_key; SQLite migration 00004,
//     PostgreSQL 00005; active_from NULL, active_until NULL: SQLite 00016,
//     PostgreSQL 00018): the keyring (internal/keyring). The secret is
//     sealed under a master key the database never sees; at most one key is
//     active (a partial unique index). A key's active interval (the key
//     history) starts at its creation and ends when the next active key is
//     added, in the same transaction.
//   - appeals(id PK, agent_id, passport_id, grounds, statement, state, the
//     filing, acknowledgement, decision, escalation and re-issue times,
//     decision; SQLite 00007, PostgreSQL 00008) with appeal_events (the
//     disputed events) and appeal_actions (who did what, when, why): the
//     appeals of §11.3 (internal/appeal). An uphold's corrections name
//     their appeal in corrections.appeal_id.
//   - checkpoints(number PK, created_at, agents, root, document) and
//     checkpoint_leaves(number, agent_id, seq, hash; SQLite 00008,
//     PostgreSQL 00009): the signed checkpoints of internal/checkpoint and
//     the chain heads each committed to.
//   - chain_breaks(agent_id PK, found_at, seq, reason; SQLite 00012,
//     PostgreSQL 00013): the breaks the last full walk found, for the
//     chain_break gaming signal (internal/signal), whose other figures are
//     computed set-based from the event rows and received times.
//   - consent (§11.1: agent_id PK, visibility public | unlisted,
//     consented_at, and the consent itself: disclosure_version,
//     consent_given_at, consent_by; SQLite 00011, PostgreSQL 00012).
//
// On PostgreSQL (migration 00020) the event tables and ledger_records are
// partitioned by period, the partition current when a row was inserted
// (ledger_partitions lists them), so that retention drops old partitions
// whole; their primary keys carry period, and a rotation locks out writers
// of chains so that event ids stay unique across partitions. A pruned row
// in a partition waiting to be dropped is dead: at or before its chain's
// anchor, and skipped by every reader (postgres/partitions.go).
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
