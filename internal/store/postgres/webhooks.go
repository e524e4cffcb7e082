package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// CreateWebhook implements service.WebhookStore.
func (s *Store) CreateWebhook(ctx context.Context, e webhook.Endpoint) error {
	if err := ledger.CheckID("operator", e.CreatedBy); err != nil {
		return err
	}
	ct, err := s.pool.Exec(ctx, `INSERT INTO webhooks (id, url, events, secret, created_at, created_by) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO NOTHING`, e.ID, e.URL, webhook.JoinEvents(e.Events), e.Secret.Reveal(), e.CreatedAt, e.CreatedBy)
	if err != nil {
		return fmt.Errorf("postgres: create webhook: %w", classify(err))
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("%w: webhook id %q is already in use", errkind.ErrConflict, e.ID)
	}
	return nil
}

const webhookColumns = `id, url, events, secret, created_at, created_by, deleted_at`

func scanWebhook(scan func(...any) error) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	var events, secret string
	var deleted *time.Time
	if err := scan(&e.ID, &e.URL, &events, &secret, &e.CreatedAt, &e.CreatedBy, &deleted); err != nil {
		return e, err
	}
	e.Events, e.CreatedAt, e.DeletedAt = webhook.SplitEvents(events), e.CreatedAt.UTC(), timeOrZero(deleted)
	sec, err := webhook.ParseSecret(secret)
	e.Secret = sec
	return e, err
}

// Webhook implements service.WebhookStore.
func (s *Store) Webhook(ctx context.Context, id string) (webhook.Endpoint, error) {
	e, err := scanWebhook(s.pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1 AND deleted_at IS NULL`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return webhook.Endpoint{}, fmt.Errorf("%w: no webhook with id %q", errkind.ErrNotFound, id)
	}
	if err != nil {
		return webhook.Endpoint{}, fmt.Errorf("postgres: read webhook: %w", classify(err))
	}
	return e, nil
}

// Webhooks implements service.WebhookStore.
func (s *Store) Webhooks(ctx context.Context) ([]webhook.Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list webhooks: %w", classify(err))
	}
	defer rows.Close()
	var out []webhook.Endpoint
	for rows.Next() {
		e, err := scanWebhook(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("postgres: list webhooks: %w", classify(err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list webhooks: %w", classify(err))
	}
	return out, nil
}

// DeleteWebhook implements service.WebhookStore.
func (s *Store) DeleteWebhook(ctx context.Context, id string, at time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ct, err := tx.Exec(ctx, `UPDATE webhooks SET deleted_at = $1 WHERE id = $2 AND deleted_at IS NULL`, at, id)
		if err != nil {
			return err
		}
		if ct.RowsAffected() == 0 {
			return fmt.Errorf("%w: no webhook with id %q", errkind.ErrNotFound, id)
		}
		_, err = tx.Exec(ctx, `UPDATE webhook_messages SET state = 'cancelled' WHERE endpoint_id = $1 AND state = 'pending'`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete webhook: %w", err)
	}
	return nil
}

const messageColumns = `m.id, m.endpoint_id, m.event_type, coalesce(m.agent_id, ''), m.payload, m.created_at, m.state, m.attempts,
	m.next_attempt_at, m.delivered_at, coalesce(m.last_status, 0), m.last_error`

func scanMessage(scan func(...any) error, extra ...any) (webhook.Message, error) {
	var m webhook.Message
	var typ, payload, state string
	var delivered *time.Time
	dst := append([]any{&m.ID, &m.EndpointID, &typ, &m.AgentID, &payload, &m.CreatedAt, &state, &m.Attempts, &m.NextAttemptAt, &delivered,
		&m.LastStatus, &m.LastError}, extra...)
	if err := scan(dst...); err != nil {
		return m, err
	}
	m.Type, m.Payload, m.State = webhook.EventType(typ), []byte(payload), webhook.State(state)
	m.CreatedAt, m.NextAttemptAt, m.DeliveredAt = m.CreatedAt.UTC(), m.NextAttemptAt.UTC(), timeOrZero(delivered)
	return m, nil
}

// WebhookDeliveries implements service.WebhookStore.
func (s *Store) WebhookDeliveries(ctx context.Context, endpointID string, limit int) ([]webhook.Message, error) {
	var out []webhook.Message
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = $1)`, endpointID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return fmt.Errorf("%w: no webhook with id %q", errkind.ErrNotFound, endpointID)
		}
		rows, err := tx.Query(ctx, `SELECT `+messageColumns+` FROM webhook_messages m WHERE m.endpoint_id = $1
			ORDER BY m.created_at DESC, m.id DESC LIMIT $2`, endpointID, limit)
		if err != nil {
			return err
		}
		byID := map[string]int{}
		var ids []string
		for rows.Next() {
			m, err := scanMessage(rows.Scan)
			if err != nil {
				rows.Close()
				return err
			}
			byID[m.ID] = len(out)
			ids = append(ids, m.ID)
			out = append(out, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT message_id, n, at, status, error, duration_us FROM webhook_attempts WHERE message_id = ANY($1) ORDER BY message_id, n`, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var a webhook.Attempt
			var us int64
			if err := rows.Scan(&id, &a.N, &a.At, &a.Status, &a.Error, &us); err != nil {
				return err
			}
			a.At, a.Duration = a.At.UTC(), time.Duration(us)*time.Microsecond
			out[byID[id]].History = append(out[byID[id]].History, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: read deliveries: %w", classify(err))
	}
	return out, nil
}

// ClaimWebhookMessages implements service.WebhookOutbox. The due rows are
// locked FOR UPDATE SKIP LOCKED and leased in one statement: a dispatcher
// of another replica claiming at the same moment skips the rows this one
// locked instead of waiting for them, and once the lease is committed no
// one takes them until it runs out.
func (s *Store) ClaimWebhookMessages(ctx context.Context, now, leaseUntil time.Time, limit int) ([]webhook.Claimed, error) {
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT id FROM webhook_messages WHERE state = 'pending' AND next_attempt_at <= $1
			ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
		UPDATE webhook_messages m SET next_attempt_at = $2 FROM due, webhooks w
		WHERE m.id = due.id AND w.id = m.endpoint_id
		RETURNING `+messageColumns+`, w.url, w.secret`, now, leaseUntil, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim webhook messages: %w", classify(err))
	}
	defer rows.Close()
	var out []webhook.Claimed
	for rows.Next() {
		var c webhook.Claimed
		var secret string
		m, err := scanMessage(rows.Scan, &c.URL, &secret)
		if err != nil {
			return nil, fmt.Errorf("postgres: claim webhook messages: %w", classify(err))
		}
		c.Message = m
		if c.Secret, err = webhook.ParseSecret(secret); err != nil {
			return nil, fmt.Errorf("postgres: webhook %s: %w", m.EndpointID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim webhook messages: %w", classify(err))
	}
	return out, nil
}

// RecordWebhookAttempt implements service.WebhookOutbox.
func (s *Store) RecordWebhookAttempt(ctx context.Context, r webhook.Result) (bool, error) {
	a := r.Attempt
	next, delivered := a.At, (*time.Time)(nil)
	switch r.State {
	case webhook.Pending:
		next = r.NextAttemptAt
	case webhook.Delivered:
		delivered = &a.At
	case webhook.Failed:
	default:
		return false, fmt.Errorf("%w: an attempt leaves a message pending, delivered or failed, not %q", errkind.ErrInvalid, r.State)
	}
	recorded := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ct, err := tx.Exec(ctx, `UPDATE webhook_messages SET attempts = $1, state = $2, next_attempt_at = $3, delivered_at = $4,
			last_status = $5, last_error = $6 WHERE id = $7 AND state = 'pending' AND attempts = $8`,
			a.N, string(r.State), next, delivered, a.Status, a.Error, r.MessageID, a.N-1)
		if err != nil {
			return err
		}
		if recorded = ct.RowsAffected() == 1; !recorded {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhook_attempts (message_id, n, at, status, error, duration_us) VALUES ($1, $2, $3, $4, $5, $6)`,
			r.MessageID, a.N, a.At, a.Status, a.Error, a.Duration.Microseconds())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: record webhook attempt: %w", err)
	}
	return recorded, nil
}

// WebhookBacklog implements service.WebhookOutbox.
func (s *Store) WebhookBacklog(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_messages WHERE state = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count outbox: %w", classify(err))
	}
	return n, nil
}

// emitWebhook writes ev to the outbox inside tx, one message per endpoint
// subscribed to its type: the change and its messages commit together or
// not at all. It is what every change that announces itself calls (the
// escrow holds call it with webhook.HoldEvent). Without a subscribed
// endpoint it writes nothing.
func emitWebhook(ctx context.Context, tx pgx.Tx, ev webhook.Event) error {
	rows, err := tx.Query(ctx, `SELECT id FROM webhooks WHERE deleted_at IS NULL AND events LIKE $1`, webhook.SubscribedPattern(ev.Type))
	if err != nil {
		return err
	}
	eps, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(eps) == 0 {
		return err
	}
	body, err := ev.Payload()
	if err != nil {
		return fmt.Errorf("webhook payload: %w", err)
	}
	var agent *string
	if ev.AgentID != "" {
		agent = &ev.AgentID
	}
	for _, ep := range eps {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_messages (id, endpoint_id, event_type, agent_id, payload, created_at, state, next_attempt_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'pending', $6)`, webhook.NewMessageID(), ep, string(ev.Type), agent, string(body), ev.At); err != nil {
			return err
		}
	}
	return nil
}

// announceScore compares the score entry just written inside tx with the
// last score and tier announced for its agent (score 0, NONE when none
// was), records it as announced and emits score.changed and tier.changed
// for what differs (ERRATA E60), and passport.issued when the entry
// carries a newly recorded passport. The events are dated at the entry's
// computed_at, the instant the use case computed it as of. The announced row is locked first,
// so that two replicas computing the same change announce it once.
func announceScore(ctx context.Context, tx pgx.Tx, e *ledger.ScoreEntry) error {
	at := e.ComputedAt
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_scores (agent_id, score, tier) VALUES ($1, 0, 'NONE') ON CONFLICT (agent_id) DO NOTHING`, e.AgentID); err != nil {
		return err
	}
	var prevScore int
	var prevTier string
	if err := tx.QueryRow(ctx, `SELECT score, tier FROM webhook_scores WHERE agent_id = $1 FOR UPDATE`, e.AgentID).Scan(&prevScore, &prevTier); err != nil {
		return err
	}
	r := e.Result
	if r.Score != prevScore || r.Tier.String() != prevTier {
		if _, err := tx.Exec(ctx, `UPDATE webhook_scores SET score = $2, tier = $3 WHERE agent_id = $1`, e.AgentID, r.Score, r.Tier.String()); err != nil {
			return err
		}
		d := webhook.ScoreData{AgentID: e.AgentID, Score: r.Score, Tier: r.Tier.String(), PreviousScore: prevScore, PreviousTier: prevTier,
			ComputedAt: ledger.FormatTime(e.ComputedAt), EscrowModifierBP: int(r.Escrow)}
		for _, ev := range webhook.ScoreEvents(d, at) {
			if err := emitWebhook(ctx, tx, ev); err != nil {
				return err
			}
		}
	}
	if e.PassportID != "" && e.Passport != nil {
		return emitWebhook(ctx, tx, webhook.PassportEvent(webhook.PassportData{AgentID: e.AgentID, PassportID: e.PassportID, KeyID: e.KeyID,
			Score: r.Score, Tier: r.Tier.String(), ComputedAt: ledger.FormatTime(e.ComputedAt), ExpiresAt: ledger.FormatTime(e.ExpiresAt)}, at))
	}
	return nil
}
