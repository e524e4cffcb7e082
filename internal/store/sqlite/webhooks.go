package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

// CreateWebhook implements service.WebhookStore.
func (s *Store) CreateWebhook(ctx context.Context, e webhook.Endpoint) error {
	if err := ledger.CheckID("operator", e.CreatedBy); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO webhooks (id, url, events, secret, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)
	  ON CONFLICT (id) DO NOTHING`, e.ID, e.URL, webhook.JoinEvents(e.Events), e.Secret.Reveal(), micros(e.CreatedAt), e.CreatedBy)
	if err != nil {
		return dbErr("create webhook", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: webhook id %q is already in use", errkind.ErrConflict, e.ID)
	}
	return nil
}

const webhookColumns = `id, url, events, secret, created_at, created_by, deleted_at`

func scanWebhook(scan func(...any) error) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	var events, secret string
	var created int64
	var deleted sql.NullInt64
	if err := scan(&e.ID, &e.URL, &events, &secret, &created, &e.CreatedBy, &deleted); err != nil {
		return e, err
	}
	e.Events, e.CreatedAt, e.DeletedAt = webhook.SplitEvents(events), fromMicros(created), nullMicros(deleted)
	sec, err := webhook.ParseSecret(secret)
	e.Secret = sec
	return e, err
}

// Webhook implements service.WebhookStore.
func (s *Store) Webhook(ctx context.Context, id string) (webhook.Endpoint, error) {
	e, err := scanWebhook(s.r.QueryRowContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND deleted_at IS NULL`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return webhook.Endpoint{}, fmt.Errorf("%w: no webhook with id %q", errkind.ErrNotFound, id)
	}
	return e, dbErr("read webhook", err)
}

// Webhooks implements service.WebhookStore.
func (s *Store) Webhooks(ctx context.Context) ([]webhook.Endpoint, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, id`)
	if err != nil {
		return nil, dbErr("list webhooks", err)
	}
	defer rows.Close()
	var out []webhook.Endpoint
	for rows.Next() {
		e, err := scanWebhook(rows.Scan)
		if err != nil {
			return nil, dbErr("list webhooks", err)
		}
		out = append(out, e)
	}
	return out, dbErr("list webhooks", rows.Err())
}

// DeleteWebhook implements service.WebhookStore.
func (s *Store) DeleteWebhook(ctx context.Context, id string, at time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin delete webhook", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE webhooks SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`, micros(at), id)
	if err != nil {
		return dbErr("delete webhook", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no webhook with id %q", errkind.ErrNotFound, id)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_messages SET state = 'cancelled' WHERE endpoint_id = ? AND state = 'pending'`, id); err != nil {
		return dbErr("delete webhook", err)
	}
	return dbErr("commit delete webhook", tx.Commit())
}

const messageColumns = `m.id, m.endpoint_id, m.event_type, COALESCE(m.agent_id, ''), m.payload, m.created_at, m.state, m.attempts,
  m.next_attempt_at, m.delivered_at, COALESCE(m.last_status, 0), m.last_error`

func scanMessage(scan func(...any) error, extra ...any) (webhook.Message, error) {
	var m webhook.Message
	var typ, payload, state string
	var created, next int64
	var delivered sql.NullInt64
	dst := append([]any{&m.ID, &m.EndpointID, &typ, &m.AgentID, &payload, &created, &state, &m.Attempts, &next, &delivered,
		&m.LastStatus, &m.LastError}, extra...)
	if err := scan(dst...); err != nil {
		return m, err
	}
	m.Type, m.Payload, m.State = webhook.EventType(typ), []byte(payload), webhook.State(state)
	m.CreatedAt, m.NextAttemptAt, m.DeliveredAt = fromMicros(created), fromMicros(next), nullMicros(delivered)
	return m, nil
}

// WebhookDeliveries implements service.WebhookStore.
func (s *Store) WebhookDeliveries(ctx context.Context, endpointID string, limit int) ([]webhook.Message, error) {
	var exists bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = ?)`, endpointID).Scan(&exists); err != nil {
		return nil, dbErr("read deliveries", err)
	}
	if !exists {
		return nil, fmt.Errorf("%w: no webhook with id %q", errkind.ErrNotFound, endpointID)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, dbErr("read deliveries", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+messageColumns+` FROM webhook_messages m WHERE m.endpoint_id = ?
	  ORDER BY m.created_at DESC, m.id DESC LIMIT ?`, endpointID, limit)
	if err != nil {
		return nil, dbErr("read deliveries", err)
	}
	var out []webhook.Message
	for rows.Next() {
		m, err := scanMessage(rows.Scan)
		if err != nil {
			rows.Close()
			return nil, dbErr("read deliveries", err)
		}
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr("read deliveries", err)
	}
	for i := range out {
		h, err := attemptsIn(ctx, tx, out[i].ID)
		if err != nil {
			return nil, err
		}
		out[i].History = h
	}
	return out, nil
}

func attemptsIn(ctx context.Context, tx *sql.Tx, id string) ([]webhook.Attempt, error) {
	rows, err := tx.QueryContext(ctx, `SELECT n, at, status, error, duration_us FROM webhook_attempts WHERE message_id = ? ORDER BY n`, id)
	if err != nil {
		return nil, dbErr("read attempts", err)
	}
	defer rows.Close()
	var out []webhook.Attempt
	for rows.Next() {
		var a webhook.Attempt
		var at, us int64
		if err := rows.Scan(&a.N, &at, &a.Status, &a.Error, &us); err != nil {
			return nil, dbErr("read attempts", err)
		}
		a.At, a.Duration = fromMicros(at), time.Duration(us)*time.Microsecond
		out = append(out, a)
	}
	return out, dbErr("read attempts", rows.Err())
}

// ClaimWebhookMessages implements service.WebhookOutbox. The single
// writer connection serialises claims, so no two dispatchers of this
// database take the same message while its lease runs.
func (s *Store) ClaimWebhookMessages(ctx context.Context, now, leaseUntil time.Time, limit int) ([]webhook.Claimed, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, dbErr("begin claim", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+messageColumns+`, w.url, w.secret FROM webhook_messages m JOIN webhooks w ON w.id = m.endpoint_id
	  WHERE m.state = 'pending' AND m.next_attempt_at <= ? ORDER BY m.next_attempt_at, m.id LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, dbErr("claim", err)
	}
	var out []webhook.Claimed
	for rows.Next() {
		var c webhook.Claimed
		var secret string
		m, err := scanMessage(rows.Scan, &c.URL, &secret)
		if err != nil {
			rows.Close()
			return nil, dbErr("claim", err)
		}
		c.Message = m
		if c.Secret, err = webhook.ParseSecret(secret); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: webhook %s: %w", m.EndpointID, err)
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr("claim", err)
	}
	for i := range out {
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_messages SET next_attempt_at = ? WHERE id = ?`, micros(leaseUntil), out[i].ID); err != nil {
			return nil, dbErr("claim", err)
		}
	}
	return out, dbErr("commit claim", tx.Commit())
}

// RecordWebhookAttempt implements service.WebhookOutbox.
func (s *Store) RecordWebhookAttempt(ctx context.Context, r webhook.Result) (bool, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, dbErr("begin record attempt", err)
	}
	defer tx.Rollback()
	a := r.Attempt
	var next, delivered any = micros(a.At), nil
	switch r.State {
	case webhook.Pending:
		next = micros(r.NextAttemptAt)
	case webhook.Delivered:
		delivered = micros(a.At)
	case webhook.Failed:
	default:
		return false, fmt.Errorf("%w: an attempt leaves a message pending, delivered or failed, not %q", errkind.ErrInvalid, r.State)
	}
	res, err := tx.ExecContext(ctx, `UPDATE webhook_messages SET attempts = ?, state = ?, next_attempt_at = ?, delivered_at = ?,
	  last_status = ?, last_error = ? WHERE id = ? AND state = 'pending' AND attempts = ?`,
		a.N, string(r.State), next, delivered, a.Status, a.Error, r.MessageID, a.N-1)
	if err != nil {
		return false, dbErr("record attempt", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_attempts (message_id, n, at, status, error, duration_us) VALUES (?, ?, ?, ?, ?, ?)`,
		r.MessageID, a.N, micros(a.At), a.Status, a.Error, a.Duration.Microseconds()); err != nil {
		return false, dbErr("record attempt", err)
	}
	return true, dbErr("commit record attempt", tx.Commit())
}

// WebhookBacklog implements service.WebhookOutbox.
func (s *Store) WebhookBacklog(ctx context.Context) (pending int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_messages WHERE state = 'pending'`).Scan(&pending)
	return pending, dbErr("count outbox", err)
}

// emitWebhook writes ev to the outbox inside tx, one message per endpoint
// subscribed to its type: the change and its messages commit together or
// not at all. It is what every change that announces itself calls (the
// escrow holds call it with webhook.HoldEvent). Without a subscribed
// endpoint it writes nothing.
func emitWebhook(ctx context.Context, tx *sql.Tx, ev webhook.Event) error {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM webhooks WHERE deleted_at IS NULL AND events LIKE ?`, webhook.SubscribedPattern(ev.Type))
	if err != nil {
		return dbErr("webhook outbox", err)
	}
	var eps []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return dbErr("webhook outbox", err)
		}
		eps = append(eps, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(eps) == 0 {
		return dbErr("webhook outbox", err)
	}
	body, err := ev.Payload()
	if err != nil {
		return fmt.Errorf("sqlite: webhook payload: %w", err)
	}
	at := micros(ev.At)
	for _, ep := range eps {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_messages (id, endpoint_id, event_type, agent_id, payload, created_at, state, next_attempt_at)
		  VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)`, webhook.NewMessageID(), ep, string(ev.Type), nullString(ev.AgentID), string(body), at, at); err != nil {
			return dbErr("webhook outbox", err)
		}
	}
	return nil
}

// announceScore compares the score entry just written inside tx with the
// last score and tier announced for its agent (score 0, NONE when none
// was), records it as announced and emits score.changed and tier.changed
// for what differs (ERRATA E60), and passport.issued when the entry
// carries a newly recorded passport. The events are dated at the entry's
// computed_at, the instant the use case computed it as of.
func announceScore(ctx context.Context, tx *sql.Tx, e *ledger.ScoreEntry) error {
	at := e.ComputedAt
	prevScore, prevTier := 0, "NONE"
	err := tx.QueryRowContext(ctx, `SELECT score, tier FROM webhook_scores WHERE agent_id = ?`, e.AgentID).Scan(&prevScore, &prevTier)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return dbErr("read announced score", err)
	}
	r := e.Result
	if r.Score != prevScore || r.Tier.String() != prevTier {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_scores (agent_id, score, tier) VALUES (?, ?, ?)
		  ON CONFLICT (agent_id) DO UPDATE SET score = excluded.score, tier = excluded.tier`, e.AgentID, r.Score, r.Tier.String()); err != nil {
			return dbErr("record announced score", err)
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
