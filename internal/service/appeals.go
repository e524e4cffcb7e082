package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
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

func (u *UseCases) appealStatus(a appeal.Appeal, now time.Time) AppealStatus {
	return AppealStatus{Appeal: a, Next: a.Next(), Overdue: a.Overdue(now), AsOf: now}
}

// FileAppeal files an appeal against an issued passport on behalf of its
// agent, by operator. The appeal gets a new id and is submitted as of now;
// its deadlines run from then (acknowledge within 7 days, decide within
// 21). Errors: ErrInvalid (saying why) for grounds other than
// incorrect_count, incorrect_status and identity_error (a disagreement with
// the formula is not a ground), a filing more than 30 days after the
// passport's computed_at, no disputed event, malformed ids or text;
// ErrNotFound for a passport this deployment did not issue (with a public
// detail); ErrUnavailable.
func (u *UseCases) FileAppeal(ctx context.Context, operator string, f AppealFiling) (AppealStatus, error) {
	if err := ledger.CheckID("agent_passport_id", f.PassportID); err != nil {
		return AppealStatus{}, err
	}
	p, err := u.Store.Passport(ctx, f.PassportID)
	if err != nil {
		if errkind.Of(err) == errkind.NotFound {
			err = errkind.WithPublic(err, fmt.Sprintf("no passport with agent_passport_id %q was issued here", f.PassportID))
		}
		return AppealStatus{}, err
	}
	now := u.now()
	a, err := appeal.New(appeal.Filing{ID: newAppealID(), PassportID: f.PassportID, Grounds: f.Grounds,
		Statement: f.Statement, Events: f.Events, By: operator, At: now}, p)
	if err != nil {
		return AppealStatus{}, err
	}
	if err := u.Store.CreateAppeal(ctx, a); err != nil {
		return AppealStatus{}, err
	}
	return u.appealStatus(a, now), nil
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
// its deadline as of now. Errors: ErrInvalid for a malformed id,
// ErrNotFound (with a public detail), ErrUnavailable.
func (u *UseCases) Appeal(ctx context.Context, id string) (AppealStatus, error) {
	if err := ledger.CheckID("appeal_id", id); err != nil {
		return AppealStatus{}, err
	}
	a, err := u.Store.Appeal(ctx, id)
	if err != nil {
		return AppealStatus{}, unknownAppeal(err, id)
	}
	return u.appealStatus(a, u.now()), nil
}

// AppealQuery selects appeals: in State (every state when ""), and only
// those past a deadline as of now when Overdue is set.
type AppealQuery struct {
	State   appeal.State
	Overdue bool
}

// Appeals lists the appeals q selects as of now: overdue ones first, the
// longest overdue first, then the others by filing time. Errors: ErrInvalid
// for an unknown state, ErrUnavailable.
func (u *UseCases) Appeals(ctx context.Context, q AppealQuery) ([]AppealStatus, error) {
	if q.State != "" && !appeal.ValidState(q.State) {
		return nil, fmt.Errorf("%w: state: %q is not submitted, acknowledged, upheld, rejected or escalated", errkind.ErrInvalid, q.State)
	}
	all, err := u.Store.Appeals(ctx, q.State)
	if err != nil {
		return nil, err
	}
	now := u.now()
	out := make([]AppealStatus, 0, len(all))
	for _, a := range all {
		s := u.appealStatus(a, now)
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

// ActOnAppeal performs an operator's action on appeal id as of now and
// records it in the appeal's history with who and when. An uphold records
// its corrections and re-issues the affected agents' passports in the same
// transaction as the decision (so the re-issue duty is met when the
// decision is), and the certificates this process remembers for them are
// dropped before it returns. It returns the appeal after the action and
// the corrections the uphold recorded.
//
// Errors: ErrInvalid for a malformed action or reason, an uphold without
// corrections or with a correction of an event the appeal does not
// dispute, corrections given to another action, or a process without a
// signing key (uphold); ErrNotFound for an unknown appeal or corrected
// event (with a public detail); ErrConflict for a move the appeal's state
// does not allow, or when another operator acted on it first; and
// Correct's errors.
func (u *UseCases) ActOnAppeal(ctx context.Context, id, operator string, d AppealDecision) (AppealStatus, []ledger.Correction, error) {
	if err := ledger.CheckID("appeal_id", id); err != nil {
		return AppealStatus{}, nil, err
	}
	a, err := u.Store.Appeal(ctx, id)
	if err != nil {
		return AppealStatus{}, nil, unknownAppeal(err, id)
	}
	now := u.now()
	next, err := appeal.Apply(a, d.Action, operator, now, d.Reason)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	reqs, err := u.upholdCorrections(&a, d, operator, now)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	done, err := u.Store.SaveAppeal(ctx, next, a.State, reqs, u.signer(u.keys(ctx).active))
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
	saved, err := u.Store.Appeal(ctx, id)
	if err != nil {
		return AppealStatus{}, nil, err
	}
	return u.appealStatus(saved, now), done, nil
}

// upholdCorrections checks the corrections of decision d on appeal a and
// completes them: who, when, the appeal and, when left empty, the reason.
func (u *UseCases) upholdCorrections(a *appeal.Appeal, d AppealDecision, operator string, now time.Time) ([]ledger.CorrectionRequest, error) {
	if d.Action != appeal.Uphold {
		if len(d.Corrections) > 0 {
			return nil, fmt.Errorf("%w: corrections: only an uphold applies corrections, not %s", errkind.ErrInvalid, d.Action)
		}
		return nil, nil
	}
	if len(d.Corrections) == 0 {
		return nil, fmt.Errorf("%w: corrections: an uphold applies at least one correction of an event appeal %s disputes (§11.3: a confirmed error leads to a recomputed score)", errkind.ErrInvalid, a.ID)
	}
	if err := u.canReissue(); err != nil {
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
func (u *UseCases) AppealStats(ctx context.Context) (AppealStats, error) {
	all, err := u.Store.AppealSummaries(ctx)
	if err != nil {
		return AppealStats{}, err
	}
	now := u.now()
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
