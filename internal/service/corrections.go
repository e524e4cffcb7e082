package service

import (
	"context"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Corrections are the use cases of corrections and appeals (spec §11.3):
// an operator's correction of an event, and an agent's appeal against a
// passport, filed, acknowledged and decided, an uphold applying
// corrections. Both re-issue the affected passports in their transaction,
// so they hold the signing keys, and tell the certificate memo's cache
// watch which agents they changed.
type Corrections struct {
	store   CorrectionsStore
	clock   clock
	keys    *signing
	certs   *certMemo
	actions *actionLog
}

// Correct records a correction of one event (spec §11.3, issue 14): a new
// final status (an operator's fix, or a chargeback — SETTLED → DISPUTED or
// REFUNDED — reported by a payment system through its operator token),
// re-attribution to another agent, or void. req.By is the caller (the
// operator); req.At is set here, to now, so the correction, the affected
// agents' recomputed scores and their re-issued passports all carry one
// instant. The correction, the recomputation and the re-issue are one
// transaction (LedgerStore.Correct), so no stale passport outlives it; the
// certificates this process remembers for the affected agents are dropped
// before it returns.
//
// It returns the stored correction and whether it is new: sending the same
// correction again (same event, action, target, reason, appeal and
// operator) writes nothing and returns the first. A correction naming an
// appeal requires that appeal to exist.
//
// Errors: ErrInvalid (naming the field) for a malformed request, one that
// changes nothing, or a process without a signing key; ErrNotFound for an
// unknown event or appeal (with a public detail); ErrConflict for an event
// that is not final yet or was voided; ErrUnavailable.
func (u *Corrections) Correct(ctx context.Context, req ledger.CorrectionRequest) (c ledger.Correction, isNew bool, err error) {
	defer func() { u.actions.record(ctx, auth.ActCorrection, c.ToAgent, c.ID, correctionWords(req, c), err) }()
	return u.correct(ctx, req)
}

// correctionWords says what a correction request asked and, once done,
// what it changed.
func correctionWords(req ledger.CorrectionRequest, c ledger.Correction) string {
	what := string(req.EventType) + " " + req.EventID
	switch {
	case c.ID != "" && c.FromAgent != c.ToAgent:
		what += ": moved from " + c.FromAgent + " to " + c.ToAgent
	case c.ID != "":
		what += ": " + string(c.FromStatus) + " → " + string(c.ToStatus)
	case req.Action == ledger.ActionStatus:
		what += ": to " + string(req.Status)
	case req.AgentID != "":
		what += ": to agent " + req.AgentID
	}
	if req.Reason != "" {
		what += " (" + req.Reason + ")"
	}
	return what
}

func (u *Corrections) correct(ctx context.Context, req ledger.CorrectionRequest) (ledger.Correction, bool, error) {
	req.At = u.clock.now()
	if err := req.Validate(); err != nil {
		return ledger.Correction{}, false, err
	}
	if err := u.keys.canReissue(); err != nil {
		return ledger.Correction{}, false, err
	}
	if req.AppealID != "" {
		if _, err := u.store.Appeal(ctx, req.AppealID); err != nil {
			return ledger.Correction{}, false, unknownAppeal(err, req.AppealID)
		}
	}
	c, created, err := u.store.Correct(ctx, req, u.keys.signer(u.keys.current(ctx).active))
	if err != nil {
		if mayHaveCommitted(err) {
			u.wroteCorrections(ctx, []ledger.CorrectionRequest{req}, nil)
		}
		return ledger.Correction{}, false, unknownEvent(err, req.EventType, req.EventID)
	}
	if created {
		u.wroteCorrections(ctx, nil, []ledger.Correction{c})
	}
	return c, created, nil
}

// wroteCorrections tells the cache watch, if this process started one,
// which agents' stamps the corrections changed, so that the next
// certificate request for any of them reads the store (read-your-writes, as
// Ingest does). done are corrections known to be committed. pending are
// requests whose commit failed: the commit may still have happened, so
// each is looked up by its id, and if it is stored its agents are marked
// too. A lookup that fails leaves them to the watch itself, which learns of
// every commit it did not hear about here (and vouches for nothing while
// it cannot reach the database).
func (u *Corrections) wroteCorrections(ctx context.Context, pending []ledger.CorrectionRequest, done []ledger.Correction) {
	w := u.certs.startedWatch()
	if w == nil {
		return
	}
	for _, req := range pending {
		stored, err := u.store.Corrections(context.WithoutCancel(ctx), req.EventType, req.EventID)
		if err != nil {
			continue
		}
		id := req.ID()
		for _, c := range stored {
			if c.ID == id {
				done = append(done, c)
			}
		}
	}
	var ids []string
	for _, c := range done {
		ids = append(ids, c.FromAgent)
		if c.ToAgent != c.FromAgent {
			ids = append(ids, c.ToAgent)
		}
	}
	if len(ids) > 0 {
		w.Wrote(ids)
	}
}

// mayHaveCommitted reports whether a write that returned err may still
// have committed: the decision's refusals roll back before any commit.
func mayHaveCommitted(err error) bool {
	switch errkind.Of(err) {
	case errkind.Invalid, errkind.NotFound, errkind.Conflict:
		return false
	}
	return true
}

// unknownEvent gives a correction's ErrNotFound a detail fit for the
// caller (errkind.WithPublic): the back end's message may name its layer.
func unknownEvent(err error, typ ledger.Type, id string) error {
	if errkind.Of(err) == errkind.NotFound {
		if _, ok := errkind.PublicDetail(err); !ok {
			return errkind.WithPublic(err, fmt.Sprintf("%s %q is not in the ledger", typ, id))
		}
	}
	return err
}
