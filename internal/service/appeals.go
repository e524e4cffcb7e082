package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// AppealFiling is an appeal as an agent submits it (spec §11.3): the
// passport it disputes, the grounds (data errors only), its account and
// the events it disputes. The operator files it on the agent's behalf.
type AppealFiling struct {
	PassportID string
	Grounds    appeal.Grounds
	Statement  string
	Events     []ledger.EventKey
}

// AppealStatus is an appeal with the duty the operator owes on it as of
// AsOf: the next deadline, and whether it has passed.
type AppealStatus struct {
	appeal.Appeal
	Next    appeal.Deadline
	Overdue bool
	AsOf    time.Time
}

func appealStatus(a appeal.Appeal, now time.Time) AppealStatus {
	return AppealStatus{Appeal: a, Next: a.Next(), Overdue: a.Overdue(now), AsOf: now}
}

// FileAppeal files an appeal against an issued passport, by its agent's
// own token or by an operator on the agent's behalf (spec §11.3: the
// agent is the appellant). The appeal gets a new id and is submitted as of
// now; its deadlines run from then (acknowledge within 7 days, decide
// within 21). It records who filed it: the operator's name, or "agent:"
// and the token's id. Errors: ErrUnauthorized for an anonymous caller;
// ErrInvalid (saying why) for grounds other than incorrect_count,
// incorrect_status and identity_error (a disagreement with the formula is
// not a ground), a filing more than 30 days after the passport's
// computed_at, no disputed event, malformed ids or text; ErrNotFound for a
// passport this deployment did not issue (with a public detail), and,
// with the same detail, for an agent's token naming another agent's
// passport, so that the answer does not tell whose passports exist;
// ErrUnavailable.
func (u *Corrections) FileAppeal(ctx context.Context, c Caller, f AppealFiling) (st AppealStatus, err error) {
	if c.IsOperator() {
		defer func() {
			u.actions.record(ctx, auth.ActAppealFile, st.AgentID, st.ID, "against passport "+f.PassportID, err)
		}()
	}
	return u.fileAppeal(ctx, c, f)
}

func (u *Corrections) fileAppeal(ctx context.Context, c Caller, f AppealFiling) (AppealStatus, error) {
	if err := c.mayAppeal(); err != nil {
		return AppealStatus{}, err
	}
	if err := ledger.CheckID("agent_passport_id", f.PassportID); err != nil {
		return AppealStatus{}, err
	}
	noPassport := func(err error) error {
		return errkind.WithPublic(err, fmt.Sprintf("no passport with agent_passport_id %q was issued here", f.PassportID))
	}
	p, err := u.store.Passport(ctx, f.PassportID)
	if err != nil {
		if errkind.Of(err) == errkind.NotFound {
			err = noPassport(err)
		}
		return AppealStatus{}, err
	}
	if !c.ActsFor(p.AgentID) {
		return AppealStatus{}, noPassport(fmt.Errorf("%w: passport %s belongs to agent %q, not to the token's agent %q",
			errkind.ErrNotFound, f.PassportID, p.AgentID, c.AgentID))
	}
	by, err := c.appellant()
	if err != nil {
		return AppealStatus{}, err
	}
	now := u.clock.now()
	a, err := appeal.New(appeal.Filing{ID: newAppealID(), PassportID: f.PassportID, Grounds: f.Grounds,
		Statement: f.Statement, Events: f.Events, By: by, At: now}, p)
	if err != nil {
		return AppealStatus{}, err
	}
	err = u.store.CreateAppeal(ctx, a)
	if err == nil || mayHaveCommitted(err) {
		u.wroteAppeal(a.AgentID)
	}
	if err != nil {
		return AppealStatus{}, err
	}
	return appealStatus(a, now), nil
}

// wroteAppeal tells the cache watch, if this process started one, that the
// agent's appeals may have changed, so that its page names them on the
// next request (read-your-writes; other processes learn of it from the
// watch: pageMemo).
func (u *Corrections) wroteAppeal(agentID string) {
	if w := u.certs.startedWatch(); w != nil {
		w.Wrote([]string{agentID})
	}
}

// mayAppeal admits operators and agents' tokens to the appeal routes;
// which appeals an agent's token reaches is decided per appeal (ownAppeal).
func (c Caller) mayAppeal() error {
	if c.Operator == "" && c.AgentID == "" {
		return fmt.Errorf("%w: only the agent itself (its own token) or an operator may do this", errkind.ErrUnauthorized)
	}
	return nil
}

// appellant is how an appeal's history names c: an operator by name, as
// it always has, and an agent's token as "agent:" and the token's id (the
// agent's id when the token has none), as consents record it.
func (c Caller) appellant() (string, error) {
	if c.IsOperator() {
		return c.Operator, nil
	}
	return c.by()
}

// ownAppeal reads appeal id for c. An agent's token reaching another
// agent's appeal gets the same ErrNotFound as for an unknown id: appeal
// ids name no agent, so a 403 here would confirm that the appeal exists.
func (u *Corrections) ownAppeal(ctx context.Context, c Caller, id string) (appeal.Appeal, error) {
	if err := c.mayAppeal(); err != nil {
		return appeal.Appeal{}, err
	}
	if err := ledger.CheckID("appeal_id", id); err != nil {
		return appeal.Appeal{}, err
	}
	a, err := u.store.Appeal(ctx, id)
	if err != nil {
		return appeal.Appeal{}, unknownAppeal(err, id)
	}
	if !c.ActsFor(a.AgentID) {
		return appeal.Appeal{}, unknownAppeal(fmt.Errorf("%w: appeal %s is agent %q's, not the token's agent %q",
			errkind.ErrNotFound, id, a.AgentID, c.AgentID), id)
	}
	return a, nil
}

// newAppealID is a fresh appeal id: "apl-" and 16 random hex digits, in the
// ledger's id alphabet. An id already used makes CreateAppeal fail with
// ErrConflict rather than merge two appeals; at 64 bits that never happens
// in practice.
func newAppealID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
	return "apl-" + hex.EncodeToString(b[:])
}

// Appeal returns an appeal with its events, history and corrections, and
// its deadline as of now, to an operator or to its agent's own token.
// Errors: ErrUnauthorized for an anonymous caller, ErrInvalid for a
// malformed id, ErrNotFound (with a public detail) for an unknown appeal
// and, in the same words, for another agent's, ErrUnavailable.
func (u *Corrections) Appeal(ctx context.Context, c Caller, id string) (AppealStatus, error) {
	a, err := u.ownAppeal(ctx, c, id)
	if err != nil {
		return AppealStatus{}, err
	}
	return appealStatus(a, u.clock.now()), nil
}

// AppealQuery selects appeals: in State (every state when ""), and only
// those past a deadline as of now when Overdue is set.
type AppealQuery struct {
	State   appeal.State
	Overdue bool
}

// Appeals lists the appeals q selects as of now: overdue ones first, the
// longest overdue first, then the others by filing time. An operator sees
// every agent's; an agent's token only its own agent's. Errors:
// ErrUnauthorized for an anonymous caller, ErrInvalid for an unknown state,
// ErrUnavailable.
func (u *Corrections) Appeals(ctx context.Context, c Caller, q AppealQuery) ([]AppealStatus, error) {
	if err := c.mayAppeal(); err != nil {
		return nil, err
	}
	if q.State != "" && !appeal.ValidState(q.State) {
		return nil, fmt.Errorf("%w: state: %q is not submitted, acknowledged, upheld, rejected or escalated", errkind.ErrInvalid, q.State)
	}
	all, err := u.store.Appeals(ctx, q.State)
	if err != nil {
		return nil, err
	}
	now := u.clock.now()
	out := make([]AppealStatus, 0, len(all))
	for _, a := range all {
		// Appeals are few (a scrape of /metrics reads them all), so an
		// agent's are picked here rather than by another store query.
		if !c.ActsFor(a.AgentID) {
			continue
		}
		s := appealStatus(a, now)
		if q.Overdue && !s.Overdue {
			continue
		}
		out = append(out, s)
	}
	// The store returns them by filing time; a stable sort keeps that order
	// among appeals that are not overdue.
	slices.SortStableFunc(out, func(a, b AppealStatus) int {
		switch {
		case a.Overdue && b.Overdue:
			return a.Next.Due.Compare(b.Next.Due)
		case a.Overdue:
			return -1
		case b.Overdue:
			return 1
		}
		return 0
	})
	return out, nil
}

// AppealDecision is an operator's action on an appeal: ack, uphold,
// reject or escalate, with its reason (required to uphold or reject) and,
// for an uphold, the corrections it applies.
type AppealDecision struct {
	Action appeal.Action
	Reason string
	// Corrections are applied by an uphold, in order, in the transaction
	// that records it. Each must correct an event the appeal disputes; By,
	// At and AppealID are set here, and an empty Reason is the decision's.
	Corrections []ledger.CorrectionRequest
}

// ActOnAppeal performs an action on appeal id as of now and records it in
// the appeal's history with who and when. Operators may take every action;
// an agent's own token may only escalate its own agent's appeal (spec
// §11.3 lets the appellant escalate a decision), and acknowledging,
// upholding and rejecting stay the operator's. An uphold records its
// corrections and re-issues the affected agents' passports in the same
// transaction as the decision (so the re-issue duty is met when the
// decision is), and the certificates this process remembers for them are
// dropped before it returns. It returns the appeal after the action and
// the corrections the uphold recorded.
//
// Errors: ErrUnauthorized for an anonymous caller; ErrForbidden for an
// agent's token taking any action but escalate (before the appeal is
// read); ErrInvalid for a malformed action or reason, an uphold without
// corrections or with a correction of an event the appeal does not
// dispute, corrections given to another action, or a process without a
// signing key (uphold); ErrNotFound for an unknown appeal or corrected
// event (with a public detail), and for another agent's appeal in the
// words of an unknown one; ErrConflict for a move the appeal's state does
// not allow, or when another operator acted on it first; and Correct's
// errors.
func (u *Corrections) ActOnAppeal(ctx context.Context, id string, c Caller, d AppealDecision) (st AppealStatus, cs []ledger.Correction, err error) {
	if c.IsOperator() {
		defer func() {
			kinds := map[appeal.Action]auth.ActionKind{appeal.Ack: auth.ActAppealAck, appeal.Uphold: auth.ActAppealUphold,
				appeal.Reject: auth.ActAppealReject, appeal.Escalate: auth.ActAppealEscalate}
			kind, ok := kinds[d.Action]
			if !ok {
				kind = auth.ActionKind("appeal_" + string(d.Action))
			}
			detail := d.Reason
			if len(cs) > 0 {
				detail = plural(len(cs), "correction", "corrections") + ": " + detail
			}
			u.actions.record(ctx, kind, st.AgentID, id, detail, err)
		}()
	}
	return u.actOnAppeal(ctx, id, c, d)
}

func (u *Corrections) actOnAppeal(ctx context.Context, id string, c Caller, d AppealDecision) (AppealStatus, []ledger.Correction, error) {
	if err := c.mayAppeal(); err != nil {
		return AppealStatus{}, nil, err
	}
	if !c.IsOperator() && d.Action != appeal.Escalate {
		return AppealStatus{}, nil, fmt.Errorf("%w: this token belongs to agent %q; an agent may escalate its own appeal, and only an operator may %s one",
			errkind.ErrForbidden, c.AgentID, d.Action)
	}
	a, err := u.ownAppeal(ctx, c, id)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	operator, err := c.appellant()
	if err != nil {
		return AppealStatus{}, nil, err
	}
	now := u.clock.now()
	next, err := appeal.Apply(a, d.Action, operator, now, d.Reason)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	reqs, err := u.upholdCorrections(&a, d, operator, now)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	done, err := u.store.SaveAppeal(ctx, next, a.State, reqs, u.keys.signer(u.keys.current(ctx).active))
	if err == nil || mayHaveCommitted(err) {
		u.wroteAppeal(a.AgentID)
	}
	if err != nil {
		if len(reqs) > 0 && mayHaveCommitted(err) {
			u.wroteCorrections(ctx, reqs, nil)
		}
		if len(reqs) == 1 {
			err = unknownEvent(err, reqs[0].EventType, reqs[0].EventID)
		}
		return AppealStatus{}, nil, err
	}
	u.wroteCorrections(ctx, nil, done)
	// Read back what the store made of it: the corrections' ids and the
	// re-issue time are set in its transaction.
	saved, err := u.store.Appeal(ctx, id)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	return appealStatus(saved, now), done, nil
}

// upholdCorrections checks the corrections of decision d on appeal a and
// completes them: who, when, the appeal and, when left empty, the reason.
func (u *Corrections) upholdCorrections(a *appeal.Appeal, d AppealDecision, operator string, now time.Time) ([]ledger.CorrectionRequest, error) {
	if d.Action != appeal.Uphold {
		if len(d.Corrections) > 0 {
			return nil, fmt.Errorf("%w: corrections: only an uphold applies corrections, not %s", errkind.ErrInvalid, d.Action)
		}
		return nil, nil
	}
	if len(d.Corrections) == 0 {
		return nil, fmt.Errorf("%w: corrections: an uphold applies at least one correction of an event appeal %s disputes (§11.3: a confirmed error leads to a recomputed score)", errkind.ErrInvalid, a.ID)
	}
	if err := u.keys.canReissue(); err != nil {
		return nil, err
	}
	out := make([]ledger.CorrectionRequest, len(d.Corrections))
	for i, r := range d.Corrections {
		if r.AppealID != "" && r.AppealID != a.ID {
			return nil, fmt.Errorf("%w: corrections[%d].appeal_id: %q is not appeal %s", errkind.ErrInvalid, i, r.AppealID, a.ID)
		}
		key := ledger.EventKey{Type: r.EventType, ID: r.EventID}
		if !slices.Contains(a.Events, key) {
			return nil, fmt.Errorf("%w: corrections[%d]: appeal %s does not dispute %s %q (it disputes %s)", errkind.ErrInvalid, i, a.ID, r.EventType, r.EventID, eventList(a.Events))
		}
		r.AppealID, r.By, r.At = a.ID, operator, now
		if r.Reason == "" {
			r.Reason = d.Reason
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("corrections[%d]: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}

func eventList(keys []ledger.EventKey) string {
	var s string
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %q", k.Type, k.ID)
	}
	return s
}

// AppealStats counts appeals for metrics: by state, and the overdue ones by
// the duty they wait on ("acknowledge", "decide", "re-issue").
type AppealStats struct {
	ByState map[appeal.State]int
	Overdue map[string]int
}

// AppealStats counts every appeal by state, and the overdue ones by duty,
// as of now. Every state and duty is present, with zero when none. Errors:
// ErrUnavailable.
func (u *Corrections) AppealStats(ctx context.Context) (AppealStats, error) {
	all, err := u.store.AppealSummaries(ctx)
	if err != nil {
		return AppealStats{}, err
	}
	now := u.clock.now()
	st := AppealStats{ByState: map[appeal.State]int{}, Overdue: map[string]int{}}
	for _, s := range []appeal.State{appeal.Submitted, appeal.Acknowledged, appeal.Upheld, appeal.Rejected, appeal.Escalated} {
		st.ByState[s] = 0
	}
	for _, d := range AppealDuties {
		st.Overdue[d] = 0
	}
	for i := range all {
		a := &all[i]
		st.ByState[a.State]++
		if a.Overdue(now) {
			st.Overdue[a.Next().Duty]++
		}
	}
	return st, nil
}

// AppealDuties are the duties an appeal can wait on (appeal.Deadline.Duty),
// in the order they fall due.
var AppealDuties = []string{"acknowledge", "decide", "re-issue"}

// unknownAppeal gives an appeal's ErrNotFound a detail fit for the caller.
func unknownAppeal(err error, id string) error {
	if errkind.Of(err) == errkind.NotFound {
		return errkind.WithPublic(err, fmt.Sprintf("no appeal with id %q", id))
	}
	return err
}

// DisputedEvent is one event an appeal names, as the ledger holds it now,
// with the corrections recorded in answer to the appeal.
type DisputedEvent struct {
	Key ledger.EventKey
	// Found is false when no such event is stored (never reported, or
	// pruned); Event is then zero.
	Found bool
	// Event is the event as reported (Event.Event.Status is its recorded
	// status) with its corrected state.
	Event ledger.StoredEvent
	// Corrections are those naming the appeal, oldest first: what each
	// changed and why.
	Corrections []ledger.Correction
}

// AppealEvents returns the first limit events appeal id names (all when
// limit < 1), in its order, with what the ledger records of each and the
// corrections the appeal caused, to whoever may read the appeal (as
// Appeal). Errors: those of Appeal, ErrUnavailable.
func (u *Corrections) AppealEvents(ctx context.Context, c Caller, id string, limit int) ([]DisputedEvent, error) {
	a, err := u.ownAppeal(ctx, c, id)
	if err != nil {
		return nil, err
	}
	keys := a.Events
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	stored, err := u.store.Events(ctx, keys)
	if err != nil {
		return nil, err
	}
	byKey := make(map[ledger.EventKey]ledger.StoredEvent, len(stored))
	for _, e := range stored {
		byKey[ledger.EventKey{Type: e.Event.Type, ID: e.Event.ID}] = e
	}
	out := make([]DisputedEvent, 0, len(keys))
	for _, k := range keys {
		d := DisputedEvent{Key: k}
		d.Event, d.Found = byKey[k]
		if d.Found && len(a.Corrections) > 0 {
			cs, err := u.store.Corrections(ctx, k.Type, k.ID)
			if err != nil {
				return nil, err
			}
			for _, c := range cs {
				if c.AppealID == a.ID {
					d.Corrections = append(d.Corrections, c)
				}
			}
		}
		out = append(out, d)
	}
	return out, nil
}
