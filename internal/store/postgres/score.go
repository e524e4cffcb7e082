package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

// windowQuery counts an agent's events in the window [$2, $3] and finds the
// earliest counted end time inside it (oldest) and after it (next), reading
// only the partial indexes. Its first column is the agent's terminal_seq
// (NULL for an unknown agent), read in the same snapshot as the counts: the
// version a cache entry made from them carries.
const windowQuery = `
SELECT (SELECT terminal_seq FROM agents WHERE id = $1),
	c.total, c.success, a.total, a.success, least(c.oldest, a.oldest), least(c.next, a.next)
FROM (SELECT count(*) FILTER (WHERE completed_at <= $3) AS total,
		count(*) FILTER (WHERE completed_at <= $3 AND status = 'VERIFIED') AS success,
		min(completed_at) FILTER (WHERE completed_at <= $3) AS oldest,
		min(completed_at) FILTER (WHERE completed_at > $3) AS next
	FROM conduit_sessions
	WHERE agent_id = $1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at >= $2) c,
	(SELECT count(*) FILTER (WHERE settled_at <= $3) AS total,
		count(*) FILTER (WHERE settled_at <= $3 AND status = 'SETTLED') AS success,
		min(settled_at) FILTER (WHERE settled_at <= $3) AS oldest,
		min(settled_at) FILTER (WHERE settled_at > $3) AS next
	FROM ap2_transactions
	WHERE provider_id = $1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at >= $2) a`

type windowResult struct {
	counts       score.Counts
	oldest, next time.Time
	version      int64 // agents.terminal_seq in the counts' snapshot
}

// querier is what pools and transactions share.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

func queryWindow(ctx context.Context, db querier, agentID string, asOf time.Time) (windowResult, error) {
	lo, hi := ledger.Bounds(asOf)
	var (
		w            windowResult
		version      *int64
		oldest, next *time.Time
	)
	err := db.QueryRow(ctx, windowQuery, agentID, lo, hi).Scan(&version,
		&w.counts.ConduitTotal, &w.counts.ConduitSuccess, &w.counts.AP2Total, &w.counts.AP2Success, &oldest, &next)
	if err != nil {
		return w, err
	}
	if version == nil {
		return w, notFound(agentID)
	}
	w.version, w.oldest, w.next = *version, timeOrZero(oldest), timeOrZero(next)
	return w, nil
}

func notFound(agentID string) error {
	return fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
}

// Counts returns the agent's window counts; see service.LedgerStore.
func (s *Store) Counts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error) {
	var w windowResult
	err := s.read(ctx, agentID, func(db *pgxpool.Pool) (err error) {
		w, err = queryWindow(ctx, db, agentID, asOf)
		return err
	})
	if err != nil {
		return score.Counts{}, fmt.Errorf("postgres: counts: %w", classify(err))
	}
	return w.counts, nil
}

// cacheColumns reads a cache entry c joined to its agent a. An entry whose
// ledger_seq is not the agent's terminal_seq was computed from counts a
// later terminal report has changed: it comes back invalidated (valid_until
// = computed_at), whatever its stored valid_until says.
const cacheColumns = `c.agent_id, c.score, c.tier, c.conduit_sessions_90d, c.conduit_successful_90d,
	c.ap2_sessions_90d, c.ap2_successful_90d, c.conduit_contribution, c.ap2_contribution,
	c.escrow_modifier_bp, c.computed_at, c.expires_at,
	CASE WHEN c.ledger_seq = a.terminal_seq THEN c.valid_until ELSE c.computed_at END,
	c.passport_json, c.passport_signature, coalesce(c.passport_kid, '')`

// scanEntry reads cacheColumns.
func scanEntry(row pgx.Row) (ledger.ScoreEntry, error) {
	var (
		e                 ledger.ScoreEntry
		tier              string
		bp                int32
		passport, sig     *string
		computed, expires time.Time
		until             time.Time
	)
	r := &e.Result
	err := row.Scan(&e.AgentID, &r.Score, &tier, &r.Counts.ConduitTotal, &r.Counts.ConduitSuccess,
		&r.Counts.AP2Total, &r.Counts.AP2Success, &r.ConduitContribution, &r.AP2Contribution,
		&bp, &computed, &expires, &until, &passport, &sig, &e.KeyID)
	if err != nil {
		return e, err
	}
	if r.Tier, err = score.ParseTier(tier); err != nil {
		return e, fmt.Errorf("cache entry for %s: %w", e.AgentID, err)
	}
	r.Escrow = score.Modifier(bp)
	e.ComputedAt, e.ExpiresAt, e.ValidUntil = computed.UTC(), expires.UTC(), until.UTC()
	if passport != nil {
		e.Passport = []byte(*passport)
	}
	if sig != nil {
		e.Signature = *sig
	}
	return e, nil
}

// CachedScore returns the cache entry answering asOf; see service.ScoreStore.
func (s *Store) CachedScore(ctx context.Context, agentID string, asOf time.Time) (ledger.ScoreEntry, bool, error) {
	var (
		e     ledger.ScoreEntry
		found bool
	)
	err := s.read(ctx, agentID, func(db *pgxpool.Pool) error {
		var err error
		e, err = scanEntry(db.QueryRow(ctx, `SELECT `+cacheColumns+`
			FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id WHERE c.agent_id = $1`, agentID))
		found = err == nil
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var exists bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1)`, agentID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound(agentID)
		}
		return nil
	})
	if err != nil {
		return ledger.ScoreEntry{}, false, fmt.Errorf("postgres: cached score: %w", classify(err))
	}
	if !found || !e.Answers(asOf) {
		return ledger.ScoreEntry{}, false, nil
	}
	return e, true, nil
}

// CacheStamp returns the stamp of the agent's cache entry; see service.ScoreStore.
// Two primary-key lookups that return none of the entry's passport or
// counts (pgx prepares the statement once per connection).
func (s *Store) CacheStamp(ctx context.Context, agentID string) (ledger.ScoreStamp, error) {
	var (
		current         *bool
		computed, until *time.Time
		sig             *string
	)
	err := s.read(ctx, agentID, func(db *pgxpool.Pool) error {
		err := db.QueryRow(ctx, `SELECT c.ledger_seq = a.terminal_seq, c.computed_at, c.valid_until, c.passport_signature
			FROM agents a LEFT JOIN swarmscore_cache c ON c.agent_id = a.id WHERE a.id = $1`, agentID).Scan(&current, &computed, &until, &sig)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(agentID)
		}
		return err
	})
	if err != nil {
		return ledger.ScoreStamp{}, fmt.Errorf("postgres: cache stamp: %w", classify(err))
	}
	if current == nil || !*current || computed == nil || until == nil {
		return ledger.ScoreStamp{}, nil
	}
	st := ledger.ScoreStamp{Current: true, ComputedAt: computed.UTC(), ValidUntil: until.UTC()}
	if sig != nil {
		st.Signature = *sig
	}
	return st, nil
}

// RefreshScore recomputes and caches the agent's score; see service.ScoreStore.
// It takes no lock that Ingest waits for: the counts and the agent's
// terminal_seq come from one statement, hence one snapshot, and the entry
// stores that version, so a batch committing before the write leaves the
// entry unserved rather than stale.
func (s *Store) RefreshScore(ctx context.Context, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error) {
	var entry ledger.ScoreEntry
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		entry, err = refreshIn(ctx, tx, agentID, asOf, issue)
		return err
	})
	var ie issueError
	if errors.As(err, &ie) {
		return ledger.ScoreEntry{}, ie.err // unchanged, as promised
	}
	if err != nil {
		return ledger.ScoreEntry{}, fmt.Errorf("postgres: refresh score: %w", err)
	}
	s.wrote(agentID)
	return entry, nil
}

// refreshIn computes the agent's score as of asOf inside tx and replaces
// its cache entry, with a passport when issue is not nil. An error of
// issue comes back as an issueError.
func refreshIn(ctx context.Context, tx pgx.Tx, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error) {
	// The entry holds the counts as of exactly ComputedAt, the instant a
	// verifier recomputes them at (§7.3 L2).
	computed := asOf.UTC().Truncate(ledger.Resolution)
	w, err := queryWindow(ctx, tx, agentID, computed)
	if err != nil {
		return ledger.ScoreEntry{}, err
	}
	r, err := score.Compute(w.counts)
	if err != nil {
		return ledger.ScoreEntry{}, fmt.Errorf("agent %s: stored counts: %w", agentID, err)
	}
	entry := ledger.ScoreEntry{
		AgentID:    agentID,
		Result:     r,
		ComputedAt: computed,
		ExpiresAt:  computed.Add(ledger.CacheLifetime),
		ValidUntil: ledger.ValidUntil(computed, w.oldest, w.next),
	}
	var passport, sig, kid *string
	if issue != nil {
		p, sg, err := issue(&entry)
		if err != nil {
			return ledger.ScoreEntry{}, issueError{err}
		}
		entry.Passport, entry.Signature = p, sg
		if p != nil {
			ps := string(p)
			passport = &ps
		}
		if sg != "" {
			sig = &sg
		}
		if entry.KeyID != "" {
			kid = &entry.KeyID
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO swarmscore_cache AS t (agent_id, score, tier, conduit_sessions_90d, conduit_successful_90d,
			ap2_sessions_90d, ap2_successful_90d, conduit_contribution, ap2_contribution, escrow_modifier_bp,
			computed_at, expires_at, valid_until, passport_json, passport_signature, ledger_seq, passport_kid)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (agent_id) DO UPDATE SET score = EXCLUDED.score, tier = EXCLUDED.tier,
			conduit_sessions_90d = EXCLUDED.conduit_sessions_90d, conduit_successful_90d = EXCLUDED.conduit_successful_90d,
			ap2_sessions_90d = EXCLUDED.ap2_sessions_90d, ap2_successful_90d = EXCLUDED.ap2_successful_90d,
			conduit_contribution = EXCLUDED.conduit_contribution, ap2_contribution = EXCLUDED.ap2_contribution,
			escrow_modifier_bp = EXCLUDED.escrow_modifier_bp, computed_at = EXCLUDED.computed_at,
			expires_at = EXCLUDED.expires_at, valid_until = EXCLUDED.valid_until,
			passport_json = EXCLUDED.passport_json, passport_signature = EXCLUDED.passport_signature,
			ledger_seq = EXCLUDED.ledger_seq, passport_kid = EXCLUDED.passport_kid`,
		agentID, r.Score, r.Tier.String(), r.Counts.ConduitTotal, r.Counts.ConduitSuccess,
		r.Counts.AP2Total, r.Counts.AP2Success, r.ConduitContribution, r.AP2Contribution, int32(r.Escrow),
		entry.ComputedAt, entry.ExpiresAt, entry.ValidUntil, passport, sig, w.version, kid)
	if err != nil {
		return ledger.ScoreEntry{}, err
	}
	if entry.PassportID != "" && entry.Passport != nil {
		if _, err := tx.Exec(ctx, `INSERT INTO passports (id, agent_id, computed_at, expires_at, key_id, signature, document)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, entry.PassportID, agentID, entry.ComputedAt, entry.ExpiresAt, entry.KeyID,
			entry.Signature, string(entry.Passport)); err != nil {
			return ledger.ScoreEntry{}, err
		}
	}
	if err := announceScore(ctx, tx, &entry); err != nil {
		return ledger.ScoreEntry{}, err
	}
	return entry, nil
}

// issueError carries an IssueFunc's error out of the transaction so that it
// is returned unwrapped.
type issueError struct{ err error }

func (e issueError) Error() string { return e.err.Error() }
func (e issueError) Unwrap() error { return e.err }

// RecomputeAll refreshes every agent's cache entry with one statement; see
// service.ScoreStore.
//
// Ingest is not locked out. A batch that commits after the statement's
// snapshot may have its in-transaction invalidation overwritten by counts
// that predate it, but each entry stores the agent's terminal_seq from that
// same snapshot, which the batch has moved on, so the entry is never served
// (the next RecomputeAll with onlyStale, or RefreshScore, replaces it).
// Ingest's own invalidation skips rows this statement has written, so no
// batch waits for it. Concurrent RecomputeAll calls queue on an advisory
// lock: they would otherwise write the same rows in different orders and
// deadlock. JIT is off for the statement: compiling its expressions cost
// about half a second at 10M events and saves nothing on a plan this
// simple.
func (s *Store) RecomputeAll(ctx context.Context, asOf time.Time, onlyStale bool) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, recomputeLockID); err != nil {
			return err
		}
		computed := asOf.UTC().Truncate(ledger.Resolution)
		lo, hi := ledger.Bounds(computed)
		ct, err := tx.Exec(ctx, recomputeSQL(onlyStale), lo, hi, computed, computed.Add(ledger.CacheLifetime), ledger.Window+ledger.Resolution)
		if err != nil {
			return err
		}
		n = ct.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: recompute all: %w", err)
	}
	s.wrote()
	return n, nil
}

// recomputeLockID is the transaction-level advisory lock that serialises
// RecomputeAll calls (across processes); nothing else takes it.
const recomputeLockID int64 = 0x5357_4152_4d53_5231 // "SWARMSR1"

// recomputeSQL is the set-based recompute: one aggregate pass over each
// event table's partial index for the window [$1, $2] (and the events ended
// after it, for valid_until), the §3 formula in integer SQL
// (store.ScoreSQL), upserted into the cache as of $3 with lifetime end $4;
// $5 is the window length plus one microsecond.
func recomputeSQL(onlyStale bool) string {
	conduit, ap2, total, tier, modifier := store.ScoreSQL("s.ct", "s.cs", "s.at", "s.as")
	stale := ""
	if onlyStale {
		stale = `WHERE NOT EXISTS (SELECT 1 FROM swarmscore_cache x
			WHERE x.agent_id = ag.id AND x.ledger_seq = ag.terminal_seq AND x.computed_at <= $3 AND $3 < x.valid_until)`
	}
	return `INSERT INTO swarmscore_cache AS t (agent_id, score, tier, conduit_sessions_90d, conduit_successful_90d,
		ap2_sessions_90d, ap2_successful_90d, conduit_contribution, ap2_contribution, escrow_modifier_bp,
		computed_at, expires_at, valid_until, passport_json, passport_signature, ledger_seq, passport_kid)
	SELECT s.agent_id, ` + total + `, ` + store.TierNameSQL(tier) + `, s.ct, s.cs, s.at, s.as, ` + conduit + `, ` + ap2 + `, ` + modifier + `,
		$3, $4, least($4, s.oldest + $5::interval, s.next), NULL, NULL, s.version, NULL
	FROM (
		SELECT ag.id AS agent_id, ag.terminal_seq AS version,
			coalesce(c.total, 0) AS ct, coalesce(c.success, 0) AS cs,
			coalesce(a.total, 0) AS at, coalesce(a.success, 0) AS as,
			least(c.oldest, a.oldest) AS oldest, least(c.next, a.next) AS next
		FROM agents ag
		LEFT JOIN (SELECT agent_id,
				count(*) FILTER (WHERE completed_at <= $2) AS total,
				count(*) FILTER (WHERE completed_at <= $2 AND status = 'VERIFIED') AS success,
				min(completed_at) FILTER (WHERE completed_at <= $2) AS oldest,
				min(completed_at) FILTER (WHERE completed_at > $2) AS next
			FROM conduit_sessions
			WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at >= $1
			GROUP BY agent_id) c ON c.agent_id = ag.id
		LEFT JOIN (SELECT provider_id,
				count(*) FILTER (WHERE settled_at <= $2) AS total,
				count(*) FILTER (WHERE settled_at <= $2 AND status = 'SETTLED') AS success,
				min(settled_at) FILTER (WHERE settled_at <= $2) AS oldest,
				min(settled_at) FILTER (WHERE settled_at > $2) AS next
			FROM ap2_transactions
			WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at >= $1
			GROUP BY provider_id) a ON a.provider_id = ag.id
		` + stale + `
	) s
	ON CONFLICT (agent_id) DO UPDATE SET score = EXCLUDED.score, tier = EXCLUDED.tier,
		conduit_sessions_90d = EXCLUDED.conduit_sessions_90d, conduit_successful_90d = EXCLUDED.conduit_successful_90d,
		ap2_sessions_90d = EXCLUDED.ap2_sessions_90d, ap2_successful_90d = EXCLUDED.ap2_successful_90d,
		conduit_contribution = EXCLUDED.conduit_contribution, ap2_contribution = EXCLUDED.ap2_contribution,
		escrow_modifier_bp = EXCLUDED.escrow_modifier_bp, computed_at = EXCLUDED.computed_at,
		expires_at = EXCLUDED.expires_at, valid_until = EXCLUDED.valid_until,
		passport_json = NULL, passport_signature = NULL, ledger_seq = EXCLUDED.ledger_seq, passport_kid = NULL`
}

// ListScores returns ranked cache entries; see service.ScoreStore.
func (s *Store) ListScores(ctx context.Context, q ledger.ListQuery) ([]ledger.ScoreEntry, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("postgres: list scores: %w", err)
	}
	var tiers []string
	for t := q.MinTier; t <= score.TierElite; t++ {
		tiers = append(tiers, t.String())
	}
	args := []any{q.MinScore, tiers, q.Limit}
	var sql strings.Builder
	sql.WriteString(`SELECT ` + cacheColumns + ` FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id
		WHERE c.score >= $1 AND c.tier = ANY($2)
		AND NOT EXISTS (SELECT 1 FROM consent v WHERE v.agent_id = c.agent_id AND v.visibility = 'unlisted')`)
	if q.After != nil {
		sql.WriteString(` AND (c.score < $4 OR (c.score = $4 AND c.agent_id > $5))`)
		args = append(args, q.After.Score, q.After.AgentID)
	}
	sql.WriteString(` ORDER BY c.score DESC, c.agent_id LIMIT $3`)
	var out []ledger.ScoreEntry
	err := s.read(ctx, "", func(db *pgxpool.Pool) error {
		rows, err := db.Query(ctx, sql.String(), args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.ScoreEntry, error) { return scanEntry(row) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list scores: %w", classify(err))
	}
	return out, nil
}

// Agent returns what the ledger knows about an agent; see service.LedgerStore.
func (s *Store) Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	var (
		info ledger.AgentInfo
		hash []byte
		vis  string
		reg  time.Time
	)
	err := s.read(ctx, agentID, func(db *pgxpool.Pool) error {
		err := db.QueryRow(ctx, `SELECT a.created_at, a.head_seq, a.head_hash, coalesce(v.visibility, 'public'), coalesce(x.seq, 0)
			FROM agents a LEFT JOIN consent v ON v.agent_id = a.id LEFT JOIN chain_anchors x ON x.agent_id = a.id
			WHERE a.id = $1`, agentID).Scan(&reg, &info.ChainLength, &hash, &vis, &info.PrunedThrough)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(agentID)
		}
		return err
	})
	if err != nil {
		return info, fmt.Errorf("postgres: agent: %w", classify(err))
	}
	info.ID, info.RegisteredAt, info.Visibility = agentID, reg.UTC(), ledger.Visibility(vis)
	copy(info.ChainHead[:], hash)
	return info, nil
}
