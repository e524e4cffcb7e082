package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// windowQuery counts one agent's events in [?2, ?3] and finds the bounds
// ledger.ValidUntil needs. Each part is a range scan of a partial index on
// (agent, end time). ?1 agent, ?2 window start, ?3 as_of. The first column
// is the agent's terminal_seq (NULL for an unknown agent), read with the
// counts: the version a cache entry made from them carries.
const windowQuery = `
SELECT
  (SELECT terminal_seq FROM agents WHERE id = ?1),
  (SELECT COUNT(*) FROM conduit_sessions WHERE agent_id = ?1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?2 AND ?3),
  (SELECT COUNT(*) FROM conduit_sessions WHERE agent_id = ?1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at BETWEEN ?2 AND ?3 AND status = 'VERIFIED'),
  (SELECT COUNT(*) FROM ap2_transactions WHERE provider_id = ?1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?2 AND ?3),
  (SELECT COUNT(*) FROM ap2_transactions WHERE provider_id = ?1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at BETWEEN ?2 AND ?3 AND status = 'SETTLED'),
  (SELECT MIN(completed_at) FROM conduit_sessions WHERE agent_id = ?1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at >= ?2),
  (SELECT MIN(settled_at) FROM ap2_transactions WHERE provider_id = ?1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at >= ?2),
  (SELECT MIN(completed_at) FROM conduit_sessions WHERE agent_id = ?1 AND status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at > ?3),
  (SELECT MIN(settled_at) FROM ap2_transactions WHERE provider_id = ?1 AND status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at > ?3)`

// window is one agent's counts as of an instant and the validity bounds.
type window struct {
	counts       score.Counts
	oldest, next time.Time // zero when absent
	version      int64     // agents.terminal_seq read with the counts
}

func readWindow(ctx context.Context, q queryer, agentID string, asOf time.Time) (window, error) {
	var w window
	var version sql.NullInt64
	var oldC, oldA, nextC, nextA sql.NullInt64
	lo, hi := ledger.Bounds(asOf)
	start, end := micros(lo), micros(hi)
	err := q.QueryRowContext(ctx, windowQuery, agentID, start, end).Scan(&version,
		&w.counts.ConduitTotal, &w.counts.ConduitSuccess, &w.counts.AP2Total, &w.counts.AP2Success,
		&oldC, &oldA, &nextC, &nextA)
	if err != nil {
		return w, dbErr("count window", err)
	}
	if !version.Valid {
		return w, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	w.version = version.Int64
	// The earliest end time at or after the window start is the oldest
	// counted event only if it is not after as_of.
	oldest := minValid(oldC, oldA)
	if oldest.Valid && oldest.Int64 <= end {
		w.oldest = fromMicros(oldest.Int64)
	}
	if next := minValid(nextC, nextA); next.Valid {
		w.next = fromMicros(next.Int64)
	}
	return w, nil
}

func minValid(a, b sql.NullInt64) sql.NullInt64 {
	if !a.Valid || (b.Valid && b.Int64 < a.Int64) {
		return b
	}
	return a
}

// Counts implements service.LedgerStore.
func (s *Store) Counts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error) {
	w, err := readWindow(ctx, s.rp, agentID, asOf)
	return w.counts, err
}

// cacheColumns reads a cache entry c joined to its agent a. An entry whose
// ledger_seq is not the agent's terminal_seq was computed from counts a
// later terminal report has changed: it comes back invalidated (valid_until
// = computed_at), whatever its stored valid_until says.
const cacheColumns = `c.conduit_sessions_90d, c.conduit_successful_90d, c.ap2_sessions_90d, c.ap2_successful_90d,
  c.score, c.computed_at, c.expires_at,
  CASE WHEN c.ledger_seq = a.terminal_seq THEN c.valid_until ELSE c.computed_at END,
  c.passport_json, c.passport_signature, COALESCE(c.passport_kid, '')`

// scanEntry reads cacheColumns (prefixed by agent id) into an entry. ok is
// false when the stored score disagrees with the formula over the stored
// counts: such a row is treated as absent so that it is recomputed.
func scanEntry(scan func(...any) error) (e ledger.ScoreEntry, ok bool, err error) {
	var c score.Counts
	var stored int
	var computed, expires, valid int64
	var passport, sig sql.NullString
	if err := scan(&e.AgentID, &c.ConduitTotal, &c.ConduitSuccess, &c.AP2Total, &c.AP2Success,
		&stored, &computed, &expires, &valid, &passport, &sig, &e.KeyID); err != nil {
		return e, false, err
	}
	r, err := score.Compute(c)
	if err != nil || r.Score != stored {
		return e, false, nil
	}
	e.Result, e.ComputedAt, e.ExpiresAt, e.ValidUntil = r, fromMicros(computed), fromMicros(expires), fromMicros(valid)
	if passport.Valid {
		e.Passport, e.Signature = []byte(passport.String), sig.String
	}
	return e, true, nil
}

// CachedScore implements service.ScoreStore.
func (s *Store) CachedScore(ctx context.Context, agentID string, asOf time.Time) (ledger.ScoreEntry, bool, error) {
	row := s.rp.QueryRowContext(ctx, `SELECT c.agent_id, `+cacheColumns+`
	  FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id WHERE c.agent_id = ?`, agentID)
	e, ok, err := scanEntry(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := s.rp.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE id = ?)`, agentID).Scan(&exists); err != nil {
			return ledger.ScoreEntry{}, false, dbErr("read agent", err)
		}
		if !exists {
			return ledger.ScoreEntry{}, false, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
		}
		return ledger.ScoreEntry{}, false, nil
	}
	if err != nil {
		return ledger.ScoreEntry{}, false, dbErr("read cache", err)
	}
	if !ok || !e.Answers(asOf) {
		return ledger.ScoreEntry{}, false, nil
	}
	return e, true, nil
}

// stampQuery reads the stamp of an agent's cache entry: two primary-key
// lookups, none of the entry's passport or counts. No row means an unknown
// agent; a NULL version match means no entry.
const stampQuery = `SELECT c.ledger_seq = a.terminal_seq, c.computed_at, c.valid_until, c.passport_signature
  FROM agents a LEFT JOIN swarmscore_cache c ON c.agent_id = a.id WHERE a.id = ?`

// CacheStamp implements service.ScoreStore.
func (s *Store) CacheStamp(ctx context.Context, agentID string) (ledger.ScoreStamp, error) {
	var current sql.NullBool
	var computed, valid sql.NullInt64
	var sig sql.NullString
	err := s.rp.QueryRowContext(ctx, stampQuery, agentID).Scan(&current, &computed, &valid, &sig)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.ScoreStamp{}, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	if err != nil {
		return ledger.ScoreStamp{}, dbErr("read cache stamp", err)
	}
	if !current.Bool {
		return ledger.ScoreStamp{}, nil
	}
	return ledger.ScoreStamp{Current: true, ComputedAt: fromMicros(computed.Int64), ValidUntil: fromMicros(valid.Int64),
		Signature: sig.String}, nil
}

const upsertCache = `
INSERT INTO swarmscore_cache (agent_id, score, tier, conduit_sessions_90d, conduit_successful_90d, ap2_sessions_90d,
  ap2_successful_90d, conduit_contribution, ap2_contribution, escrow_modifier_bp, computed_at, expires_at, valid_until,
  passport_json, passport_signature, ledger_seq, passport_kid)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (agent_id) DO UPDATE SET score = excluded.score, tier = excluded.tier,
  conduit_sessions_90d = excluded.conduit_sessions_90d, conduit_successful_90d = excluded.conduit_successful_90d,
  ap2_sessions_90d = excluded.ap2_sessions_90d, ap2_successful_90d = excluded.ap2_successful_90d,
  conduit_contribution = excluded.conduit_contribution, ap2_contribution = excluded.ap2_contribution,
  escrow_modifier_bp = excluded.escrow_modifier_bp, computed_at = excluded.computed_at, expires_at = excluded.expires_at,
  valid_until = excluded.valid_until, passport_json = excluded.passport_json, passport_signature = excluded.passport_signature,
  ledger_seq = excluded.ledger_seq, passport_kid = excluded.passport_kid`

// RefreshScore implements service.ScoreStore. The write transaction (BEGIN
// IMMEDIATE on the single writer) excludes every concurrent ingest.
func (s *Store) RefreshScore(ctx context.Context, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return ledger.ScoreEntry{}, dbErr("begin refresh", err)
	}
	defer tx.Rollback()
	e, err := refreshIn(ctx, tx, agentID, asOf, issue)
	if err != nil {
		return ledger.ScoreEntry{}, err
	}
	if err := tx.Commit(); err != nil {
		return ledger.ScoreEntry{}, dbErr("commit refresh", err)
	}
	return e, nil
}

// refreshIn computes the agent's score as of asOf inside tx and replaces
// its cache entry, with a passport when issue is not nil.
func refreshIn(ctx context.Context, tx *sql.Tx, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error) {
	asOf = asOf.UTC().Truncate(ledger.Resolution)
	w, err := readWindow(ctx, tx, agentID, asOf)
	if err != nil {
		return ledger.ScoreEntry{}, err
	}
	r, err := score.Compute(w.counts)
	if err != nil {
		return ledger.ScoreEntry{}, fmt.Errorf("sqlite: agent %q: %w", agentID, err)
	}
	e := ledger.ScoreEntry{AgentID: agentID, Result: r, ComputedAt: asOf, ExpiresAt: asOf.Add(ledger.CacheLifetime),
		ValidUntil: ledger.ValidUntil(asOf, w.oldest, w.next)}
	var passport, sig, kid any
	if issue != nil {
		p, sg, err := issue(&e)
		if err != nil {
			return ledger.ScoreEntry{}, err
		}
		e.Passport, e.Signature = p, sg
		passport, sig = string(p), sg
		if e.KeyID != "" {
			kid = e.KeyID
		}
	}
	c := r.Counts
	if _, err := tx.ExecContext(ctx, upsertCache, agentID, r.Score, r.Tier.String(), c.ConduitTotal, c.ConduitSuccess,
		c.AP2Total, c.AP2Success, r.ConduitContribution, r.AP2Contribution, int64(r.Escrow),
		micros(e.ComputedAt), micros(e.ExpiresAt), micros(e.ValidUntil), passport, sig, w.version, kid); err != nil {
		return ledger.ScoreEntry{}, dbErr("write cache", err)
	}
	if e.PassportID != "" && e.Passport != nil {
		if _, err := tx.ExecContext(ctx, `INSERT INTO passports (id, agent_id, computed_at, expires_at, key_id, signature, document)
		  VALUES (?, ?, ?, ?, ?, ?, ?)`, e.PassportID, agentID, micros(e.ComputedAt), micros(e.ExpiresAt), e.KeyID, e.Signature, string(e.Passport)); err != nil {
			return ledger.ScoreEntry{}, dbErr("record passport", err)
		}
	}
	if err := announceScore(ctx, tx, &e); err != nil {
		return ledger.ScoreEntry{}, err
	}
	return e, nil
}

// recomputeSQL builds the set-based refresh: the counted events from the
// window start on, aggregated per agent for each table apart, joined to
// every agent, written with the formula in SQL (store.ScoreSQL). ?1 window
// start, ?2 as_of, ?3 expires_at, ?4 the window length plus one
// microsecond. Each table's GROUP BY reads its rows in the order of its
// partial index on (agent, end, status), so nothing is sorted; a GROUP BY
// over both tables' rows at once sorts them all (docs/growth.md).
func recomputeSQL(onlyStale bool) string {
	conduit, ap2, total, tier, mod := store.ScoreSQL("ct", "cs", "at", "asx")
	stale := ""
	if onlyStale {
		stale = "AND NOT EXISTS (SELECT 1 FROM swarmscore_cache k WHERE k.agent_id = ag.id AND k.ledger_seq = ag.terminal_seq AND k.computed_at <= ?2 AND ?2 < k.valid_until)"
	}
	return `
WITH c AS MATERIALIZED (
  SELECT agent_id AS a, SUM(completed_at <= ?2) AS ct, SUM(completed_at <= ?2 AND status = 'VERIFIED') AS cs,
    MIN(CASE WHEN completed_at <= ?2 THEN completed_at END) AS oldest, MIN(CASE WHEN completed_at > ?2 THEN completed_at END) AS nxt
  FROM conduit_sessions WHERE status IN ('VERIFIED', 'FAILED') AND voided_at IS NULL AND completed_at >= ?1 GROUP BY agent_id
), t AS MATERIALIZED (
  SELECT provider_id AS a, SUM(settled_at <= ?2) AS at, SUM(settled_at <= ?2 AND status = 'SETTLED') AS asx,
    MIN(CASE WHEN settled_at <= ?2 THEN settled_at END) AS oldest, MIN(CASE WHEN settled_at > ?2 THEN settled_at END) AS nxt
  FROM ap2_transactions WHERE status IN ('SETTLED', 'DISPUTED', 'REFUNDED') AND voided_at IS NULL AND settled_at >= ?1 GROUP BY provider_id
), x AS (
  SELECT ag.id, ag.terminal_seq AS version, COALESCE(c.ct, 0) AS ct, COALESCE(c.cs, 0) AS cs, COALESCE(t.at, 0) AS at, COALESCE(t.asx, 0) AS asx,
    COALESCE(MIN(c.oldest, t.oldest), c.oldest, t.oldest) AS oldest, COALESCE(MIN(c.nxt, t.nxt), c.nxt, t.nxt) AS nxt
  FROM agents ag LEFT JOIN c ON c.a = ag.id LEFT JOIN t ON t.a = ag.id
  WHERE true ` + stale + `
)
INSERT INTO swarmscore_cache (agent_id, score, tier, conduit_sessions_90d, conduit_successful_90d, ap2_sessions_90d,
  ap2_successful_90d, conduit_contribution, ap2_contribution, escrow_modifier_bp, computed_at, expires_at, valid_until,
  passport_json, passport_signature, ledger_seq, passport_kid)
SELECT id, ` + total + `, ` + store.TierNameSQL(tier) + `, ct, cs, at, asx, ` + conduit + `, ` + ap2 + `, ` + mod + `,
  ?2, ?3, MIN(?3, COALESCE(oldest + ?4, ?3), COALESCE(nxt, ?3)), NULL, NULL, version, NULL
FROM x WHERE true
ON CONFLICT (agent_id) DO UPDATE SET score = excluded.score, tier = excluded.tier,
  conduit_sessions_90d = excluded.conduit_sessions_90d, conduit_successful_90d = excluded.conduit_successful_90d,
  ap2_sessions_90d = excluded.ap2_sessions_90d, ap2_successful_90d = excluded.ap2_successful_90d,
  conduit_contribution = excluded.conduit_contribution, ap2_contribution = excluded.ap2_contribution,
  escrow_modifier_bp = excluded.escrow_modifier_bp, computed_at = excluded.computed_at, expires_at = excluded.expires_at,
  valid_until = excluded.valid_until, passport_json = NULL, passport_signature = NULL, ledger_seq = excluded.ledger_seq,
  passport_kid = NULL`
}

// RecomputeAll implements service.ScoreStore with one INSERT … SELECT … GROUP BY.
// The statement runs on the single writer, so no batch commits between its
// reads and its writes; each entry still records the terminal_seq it read,
// as the model requires.
func (s *Store) RecomputeAll(ctx context.Context, asOf time.Time, onlyStale bool) (int64, error) {
	asOf = asOf.UTC().Truncate(ledger.Resolution)
	expires := asOf.Add(ledger.CacheLifetime)
	res, err := s.w.ExecContext(ctx, recomputeSQL(onlyStale), micros(ledger.WindowStart(asOf)), micros(asOf), micros(expires),
		int64((ledger.Window+ledger.Resolution)/time.Microsecond))
	if err != nil {
		return 0, dbErr("recompute all", err)
	}
	n, err := res.RowsAffected()
	return n, dbErr("recompute all", err)
}

// ListScores implements service.ScoreStore.
func (s *Store) ListScores(ctx context.Context, q ledger.ListQuery) ([]ledger.ScoreEntry, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var tiers []string
	for t := q.MinTier; t <= score.TierElite; t++ {
		tiers = append(tiers, "'"+t.String()+"'")
	}
	query := `SELECT c.agent_id, ` + cacheColumns + ` FROM swarmscore_cache c JOIN agents a ON a.id = c.agent_id
	  WHERE c.score >= ? AND c.tier IN (` + strings.Join(tiers, ", ") + `)
	    AND NOT EXISTS (SELECT 1 FROM consent v WHERE v.agent_id = c.agent_id AND v.visibility = 'unlisted')`
	args := []any{q.MinScore}
	key := store.RankKeySQL(q.By, "c.")
	if q.After != nil {
		query += ` AND (` + key + ` < ? OR (` + key + ` = ? AND c.agent_id > ?))`
		args = append(args, q.After.Score, q.After.Score, q.After.AgentID)
	}
	query += ` ORDER BY ` + key + ` DESC, c.agent_id LIMIT ?`
	args = append(args, q.Limit)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, dbErr("list scores", err)
	}
	defer rows.Close()
	var out []ledger.ScoreEntry
	for rows.Next() {
		e, ok, err := scanEntry(rows.Scan)
		if err != nil {
			return nil, dbErr("list scores", err)
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, dbErr("list scores", rows.Err())
}

// Agent implements service.LedgerStore.
func (s *Store) Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	var a ledger.AgentInfo
	var created int64
	var hash []byte
	var vis sql.NullString
	err := s.rp.QueryRowContext(ctx, `SELECT a.id, a.created_at, a.head_seq, a.head_hash, v.visibility, COALESCE(x.seq, 0)
	  FROM agents a LEFT JOIN consent v ON v.agent_id = a.id LEFT JOIN chain_anchors x ON x.agent_id = a.id
	  WHERE a.id = ?`, agentID).Scan(&a.ID, &created, &a.ChainLength, &hash, &vis, &a.PrunedThrough)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	if err != nil {
		return a, dbErr("read agent", err)
	}
	a.RegisteredAt = fromMicros(created)
	copy(a.ChainHead[:], hash)
	a.Visibility = ledger.VisibilityPublic
	if vis.Valid {
		a.Visibility = ledger.Visibility(vis.String)
	}
	return a, nil
}

// SetVisibility implements service.ConsentStore.
func (s *Store) SetVisibility(ctx context.Context, agentID string, v ledger.Visibility, at time.Time) error {
	if v != ledger.VisibilityPublic && v != ledger.VisibilityUnlisted {
		return fmt.Errorf("%w: visibility %q (want public or unlisted)", errkind.ErrInvalid, v)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO consent (agent_id, visibility, consented_at)
	  SELECT id, ?, ? FROM agents WHERE id = ?
	  ON CONFLICT (agent_id) DO UPDATE SET visibility = excluded.visibility, consented_at = excluded.consented_at`,
		string(v), micros(at), agentID)
	if err != nil {
		return dbErr("set visibility", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: agent %q", errkind.ErrNotFound, agentID)
	}
	return nil
}
