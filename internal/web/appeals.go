package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// AppealsService lists the use cases of the console's appeals pages (spec
// §11.3; service.Corrections): the same ones the API's
// /swarmscore/appeals routes and `swarmscore appeal` call.
type AppealsService interface {
	// Appeals lists the appeals q selects, overdue ones first; the console
	// asks as the signed-in operator, who sees every agent's.
	Appeals(ctx context.Context, c service.Caller, q service.AppealQuery) ([]service.AppealStatus, error)
	// Appeal is one appeal with its history and next deadline.
	Appeal(ctx context.Context, c service.Caller, id string) (service.AppealStatus, error)
	// ActOnAppeal acknowledges, upholds (recording its corrections and
	// re-issuing the passports), rejects or escalates an appeal.
	ActOnAppeal(ctx context.Context, id string, c service.Caller, d service.AppealDecision) (service.AppealStatus, []ledger.Correction, error)
	// AppealEvents is what the ledger records of the first limit events
	// an appeal disputes, with the corrections the appeal caused.
	AppealEvents(ctx context.Context, c service.Caller, id string, limit int) ([]service.DisputedEvent, error)
}

// appealsPageSize bounds the queue's rows per page, and so the page's
// size: a row clips the statement.
const appealsPageSize = 50

// statementClip is how much of a statement the queue shows; the appeal's
// own page shows all of it.
const statementClip = 160

// An appeal's page lists at most maxListedEvents of its disputed events,
// and its uphold form has a row for at most maxFormEvents of them (a row
// is about a kilobyte): so that an appeal of hundreds of events still
// makes a page under 100 KB. Appeals name a few events in practice; the
// API corrects more in one uphold.
const (
	maxListedEvents = 200
	maxFormEvents   = 40
)

// appealStates are the states the queue filters by, in lifecycle order.
var appealStates = []appeal.State{appeal.Submitted, appeal.Acknowledged, appeal.Upheld, appeal.Rejected, appeal.Escalated}

type appealsView struct {
	State   string
	Overdue bool
	States  []tierOption
	AsOf    time.Time
	Total   int
	Appeals []appealRow
	// Prev and Next are the neighbouring pages' addresses, "" if none.
	Prev, Next string
}

type appealRow struct {
	service.AppealStatus
	Statement  string
	Events     []ledger.EventKey
	MoreEvents int
	// Due says when the next duty falls due, in words.
	Due string
}

// loadAppeals is the appeals queue: overdue appeals first (the longest
// overdue first), then those waiting on a duty by its deadline, then the
// settled ones, newest first as filed; filtered by state and to the
// overdue ones.
func (p *Pages) loadAppeals(r *http.Request, s session) (any, error) {
	q := r.URL.Query()
	v := appealsView{State: q.Get("state"), Overdue: q.Get("overdue") == "1"}
	v.States = append(v.States, tierOption{"", "Every state", v.State == ""})
	for _, st := range appealStates {
		v.States = append(v.States, tierOption{string(st), string(st), string(st) == v.State})
	}
	if v.State != "" && !appeal.ValidState(appeal.State(v.State)) {
		return nil, badRequest("Filter by submitted, acknowledged, upheld, rejected or escalated.")
	}
	page := 1
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, badRequest("That page of the queue does not exist; start again from the first page.")
		}
		page = n
	}
	list, err := p.svc.Corrections.Appeals(r.Context(), s.caller(), service.AppealQuery{State: appeal.State(v.State), Overdue: v.Overdue})
	if err != nil {
		return nil, err
	}
	sortQueue(list)
	v.AsOf, v.Total = p.now(), len(list)
	if len(list) > 0 {
		v.AsOf = list[0].AsOf
	}
	from := (page - 1) * appealsPageSize
	if from > 0 && from >= len(list) {
		return nil, badRequest("That page of the queue does not exist; start again from the first page.")
	}
	for i := from; i < len(list) && i < from+appealsPageSize; i++ {
		a := list[i]
		row := appealRow{AppealStatus: a, Statement: clip(a.Statement, statementClip), Events: a.Events}
		if len(row.Events) > 3 {
			row.Events, row.MoreEvents = row.Events[:3], len(a.Events)-3
		}
		if a.Next.Duty != "" {
			row.Due = until(a.AsOf, a.Next.Due)
		}
		v.Appeals = append(v.Appeals, row)
	}
	if page > 1 {
		v.Prev = appealsURL(v.State, v.Overdue, page-1)
	}
	if from+appealsPageSize < len(list) {
		v.Next = appealsURL(v.State, v.Overdue, page+1)
	}
	return v, nil
}

// sortQueue orders the queue as an operator works it: what is overdue
// first, the longest overdue first (the service's order), then what waits
// on a duty by its deadline, then the settled appeals as the service
// lists them (by filing time).
func sortQueue(list []service.AppealStatus) {
	rank := func(a *service.AppealStatus) int {
		switch {
		case a.Overdue:
			return 0
		case a.Next.Duty != "":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(list, func(a, b service.AppealStatus) int {
		ra, rb := rank(&a), rank(&b)
		if ra != rb {
			return ra - rb
		}
		if ra < 2 {
			return a.Next.Due.Compare(b.Next.Due)
		}
		return 0
	})
}

func appealsURL(state string, overdue bool, page int) string {
	q := []string{}
	if state != "" {
		q = append(q, "state="+state)
	}
	if overdue {
		q = append(q, "overdue=1")
	}
	if page > 1 {
		q = append(q, "page="+strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/operator/appeals"
	}
	return "/operator/appeals?" + strings.Join(q, "&")
}

// clip shortens s to about n bytes at a word boundary, with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexFunc(s[:cut], unicode.IsSpace); i > n/2 {
		cut = i
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

type appealView struct {
	service.AppealStatus
	// CSRF is the session's token, for the forms.
	CSRF      string
	DecideBy  time.Time
	Deadlines []deadlineRow
	// Notice says what the last action did; Error why the last one was
	// refused, and ErrorFor which form it came from.
	Notice, Error, ErrorFor string
	// CanAck, CanDecide and CanEscalate say which forms the state allows.
	CanAck, CanDecide, CanEscalate bool
	// Fixes are the uphold form's rows, one per disputed event up to
	// maxFormEvents; MoreFixes counts the events without one.
	Fixes     []correctionRow
	MoreFixes int
	// Listed are the disputed events shown, up to maxListedEvents, with
	// what the ledger records of each; MoreListed counts the others.
	Listed     []disputedRow
	MoreListed int
	// Changes are what the corrections of an upheld appeal changed, event
	// by event.
	Changes []changeRow
	// The reasons the forms were sent with, kept when one is refused.
	UpholdReason, RejectReason, EscalateNote string
}

// deadlineRow is one duty of §11.3: by when, and when it was done.
type deadlineRow struct {
	Duty    string
	Within  string
	Due     time.Time
	Done    time.Time
	Pending bool
	Overdue bool
	Words   string
}

// disputedRow is a disputed event as the ledger records it, in words for
// the operator deciding: its recorded status, times, amount and buyer.
type disputedRow struct {
	Event   ledger.EventKey
	Found   bool
	Agent   string // the agent it was reported for
	Status  string // as reported
	Now     string // after corrections, "" when none changed it
	Started time.Time
	Ended   time.Time
	Amount  string // "" for a session
	Buyer   string
}

// changeRow is one correction of an upheld appeal: the event, what it
// changed, and why.
type changeRow struct {
	Event  ledger.EventKey
	ID     string
	Change string
	Reason string
	By     string
	At     time.Time
}

type correctionRow struct {
	Index int
	Event ledger.EventKey
	// Recorded is the event as the ledger records it, shown beside the
	// choice of a new status; nil when not read.
	Recorded *disputedRow
	Statuses []string
	// Action, Status and Agent are what the form was sent with.
	Action, Status, Agent string
}

// finalStatuses are the statuses a status correction may set, per event
// type: the final ones.
var finalStatuses = func() map[ledger.Type][]string {
	all := []ledger.Status{ledger.Verified, ledger.Failed, ledger.Error, ledger.Timeout,
		ledger.Settled, ledger.Disputed, ledger.Refunded, ledger.Cancelled, ledger.Accepted, ledger.Declined}
	out := map[ledger.Type][]string{}
	for _, t := range []ledger.Type{ledger.ConduitSession, ledger.AP2Transaction, ledger.TaskOffer} {
		for _, s := range all {
			if s.ValidFor(t) && s.Terminal() {
				out[t] = append(out[t], string(s))
			}
		}
	}
	return out
}()

// newAppealView is the appeal's page for a, with nothing sent.
func newAppealView(a service.AppealStatus) *appealView {
	v := &appealView{AppealStatus: a, DecideBy: a.FiledAt.Add(appeal.DecideWithin)}
	v.CanAck = a.State == appeal.Submitted
	v.CanDecide = a.State == appeal.Submitted || a.State == appeal.Acknowledged
	v.CanEscalate = a.State == appeal.Upheld || a.State == appeal.Rejected
	row := func(duty, within string, due, done time.Time) {
		d := deadlineRow{Duty: duty, Within: within, Due: due, Done: done}
		if done.IsZero() && a.Next.Duty == duty {
			d.Pending, d.Overdue = true, a.Overdue
			if a.Overdue {
				d.Words = "overdue: it was due " + until(a.AsOf, due)
			} else {
				d.Words = "due " + until(a.AsOf, due)
			}
		}
		v.Deadlines = append(v.Deadlines, d)
	}
	row("acknowledge", "7 days after filing", a.FiledAt.Add(appeal.AckWithin), a.AcknowledgedAt)
	row("decide", "21 days after filing", a.FiledAt.Add(appeal.DecideWithin), a.DecidedAt)
	if a.State == appeal.Upheld || !a.ReissuedAt.IsZero() {
		row("re-issue", "7 days after upholding", a.DecidedAt.Add(appeal.ReissueAfter), a.ReissuedAt)
	}
	listed := a.Events
	if len(listed) > maxListedEvents {
		listed, v.MoreListed = listed[:maxListedEvents], len(a.Events)-maxListedEvents
	}
	for _, k := range listed {
		v.Listed = append(v.Listed, disputedRow{Event: k})
	}
	for i, e := range a.Events {
		if i == maxFormEvents {
			v.MoreFixes = len(a.Events) - maxFormEvents
			break
		}
		v.Fixes = append(v.Fixes, correctionRow{Index: i, Event: e, Statuses: finalStatuses[e.Type]})
	}
	return v
}

// withEvents fills in what the ledger records of the listed events and,
// for an appeal upheld, what its corrections changed.
func (p *Pages) withEvents(r *http.Request, s session, v *appealView) error {
	evs, err := p.svc.Corrections.AppealEvents(r.Context(), s.caller(), v.ID, maxListedEvents)
	if err != nil {
		return err
	}
	for i := range evs {
		if i >= len(v.Listed) {
			break
		}
		d, row := &evs[i], &v.Listed[i]
		row.Event, row.Found = d.Key, d.Found
		if d.Found {
			e := &d.Event
			row.Agent, row.Status, row.Started, row.Ended, row.Buyer = e.Event.AgentID, string(e.Event.Status), e.Event.StartedAt, e.Event.EndedAt, e.Event.BuyerID
			if e.Corrected != nil {
				row.Now = string(e.CurrentStatus())
				switch {
				case e.IsVoided():
					row.Now = "voided"
				case e.CurrentAgent() != e.Event.AgentID:
					row.Now += " for " + e.CurrentAgent()
				}
			}
			if e.Event.Type == ledger.AP2Transaction {
				row.Amount = dollars(e.Event.EscrowAmountCents)
			}
		}
		for _, c := range d.Corrections {
			v.Changes = append(v.Changes, changeRow{Event: d.Key, ID: c.ID, Change: correctionWords(&c), Reason: c.Reason, By: c.By, At: c.At})
		}
	}
	for i := range v.Fixes {
		if i < len(v.Listed) {
			v.Fixes[i].Recorded = &v.Listed[i]
		}
	}
	return nil
}

// correctionWords says what a correction changed: "status FAILED →
// VERIFIED", "agent a → b", "voided (was SETTLED for a)".
func correctionWords(c *ledger.Correction) string {
	switch c.Action {
	case ledger.ActionStatus:
		return "status " + string(c.FromStatus) + " → " + string(c.ToStatus)
	case ledger.ActionReattribute:
		return "agent " + c.FromAgent + " → " + c.ToAgent
	case ledger.ActionVoid:
		return "voided (was " + string(c.FromStatus) + " for " + c.FromAgent + ")"
	}
	return string(c.Action)
}

// limitToRole hides the forms the operator's role may not use: a viewer
// reads the appeal but decides nothing.
func (v *appealView) limitToRole(role auth.Role) {
	if !role.May(auth.DecideAppeals) {
		v.CanAck, v.CanDecide, v.CanEscalate = false, false, false
	}
}

// appealPage is one appeal: everything about it, its deadlines and the
// forms of the actions its state allows. ?done= is the action that
// brought the operator here, said in a notice when the history has it.
func (p *Pages) appealPage(w http.ResponseWriter, r *http.Request, s session) {
	a, ok := p.loadAppeal(w, r, s)
	if !ok {
		return
	}
	v := newAppealView(a)
	v.CSRF = s.csrf
	v.limitToRole(s.Role)
	if err := p.withEvents(r, s, v); err != nil {
		p.fail(w, r, err, "")
		return
	}
	if act := appeal.Action(r.URL.Query().Get("done")); act != "" && slices.ContainsFunc(a.History, func(e appeal.Entry) bool { return e.Action == act }) {
		v.Notice = doneNotice(&a, act)
	}
	p.renderConsole(w, r, s, http.StatusOK, "/operator/appeals", "appeal", "Appeal "+a.ID, v)
}

// loadAppeal reads the appeal the path names, or answers with the page
// saying why not.
func (p *Pages) loadAppeal(w http.ResponseWriter, r *http.Request, s session) (service.AppealStatus, bool) {
	id := r.PathValue("id")
	const missing = "There is no appeal with this id. The queue lists every appeal."
	if !ledger.ValidID(id) {
		p.errorPage(w, r, http.StatusNotFound, "Not found", missing)
		return service.AppealStatus{}, false
	}
	a, err := p.svc.Corrections.Appeal(r.Context(), s.caller(), id)
	if err != nil {
		p.fail(w, r, err, missing)
		return service.AppealStatus{}, false
	}
	return a, true
}

// doneNotice says what act did to a.
func doneNotice(a *service.AppealStatus, act appeal.Action) string {
	switch act {
	case appeal.Ack:
		return "You acknowledged appeal " + a.ID + ". Decide it by " + datetime(a.FiledAt.Add(appeal.DecideWithin)) + "."
	case appeal.Uphold:
		s := "You upheld appeal " + a.ID + ": " + plural(int64(len(a.Corrections)), "correction") + " recorded"
		if !a.ReissuedAt.IsZero() {
			s += ", and the affected passports re-issued " + datetime(a.ReissuedAt)
		}
		return s + "."
	case appeal.Reject:
		return "You rejected appeal " + a.ID + "."
	case appeal.Escalate:
		return "You escalated appeal " + a.ID + " to the Advisory Board."
	}
	return ""
}

// actOnAppeal performs the action the path names with what its form sent,
// then sends the browser back to the appeal (303) with a notice of what it
// did. A refusal is the appeal's page again, with the form as it was sent
// and why, in words: 400 for what the form got wrong, 409 for a move the
// appeal's state no longer allows (another operator may have acted
// first).
func (p *Pages) actOnAppeal(w http.ResponseWriter, r *http.Request, s session) {
	act := appeal.Action(r.PathValue("action"))
	switch act {
	case appeal.Ack, appeal.Uphold, appeal.Reject, appeal.Escalate:
	default:
		p.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no such action on an appeal.")
		return
	}
	a, ok := p.loadAppeal(w, r, s)
	if !ok {
		return
	}
	v := newAppealView(a)
	v.CSRF = s.csrf
	reason := strings.TrimSpace(strings.ReplaceAll(r.PostFormValue("reason"), "\r\n", "\n"))
	d := service.AppealDecision{Action: act, Reason: reason}
	var problem string
	switch act {
	case appeal.Uphold:
		v.UpholdReason = reason
		d.Corrections, problem = readCorrections(r, v)
		if problem == "" && reason == "" {
			problem = "Give the reason for upholding: it is recorded with the decision and with each correction."
		}
	case appeal.Reject:
		v.RejectReason = reason
		switch {
		case reason == "":
			problem = "Give the reason for rejecting: it is recorded with the decision."
		case r.PostFormValue("confirm") != "yes":
			// The browser asks for the box; a form sent without it (a
			// script, an old page) is refused here all the same.
			problem = "Confirm that you checked the disputed events and the recorded data is right: tick the box."
		}
	case appeal.Escalate:
		v.EscalateNote = reason
	}
	if problem != "" {
		v.Error, v.ErrorFor = problem, string(act)
		if err := p.withEvents(r, s, v); err != nil {
			p.fail(w, r, err, "")
			return
		}
		p.renderConsole(w, r, s, http.StatusBadRequest, "/operator/appeals", "appeal", "Appeal "+a.ID, v)
		return
	}
	_, done, err := p.svc.Corrections.ActOnAppeal(r.Context(), a.ID, s.caller(), d)
	if err != nil {
		status := http.StatusBadRequest
		switch errkind.Of(err) {
		case errkind.Invalid:
		case errkind.Conflict:
			status = http.StatusConflict
		default:
			p.fail(w, r, err, "There is no appeal with this id, or no event it disputes with that id.")
			return
		}
		// Show the appeal as it is now: a conflict is often another
		// operator's action.
		if now, rerr := p.svc.Corrections.Appeal(r.Context(), s.caller(), a.ID); rerr == nil {
			fresh := newAppealView(now)
			fresh.UpholdReason, fresh.RejectReason, fresh.EscalateNote = v.UpholdReason, v.RejectReason, v.EscalateNote
			if len(fresh.Fixes) == len(v.Fixes) {
				fresh.Fixes = v.Fixes
			}
			fresh.CSRF = s.csrf
			v = fresh
		}
		v.Error, v.ErrorFor = actionMessage(err, d.Corrections), string(act)
		if err := p.withEvents(r, s, v); err != nil {
			p.fail(w, r, err, "")
			return
		}
		if !v.formShown(act) {
			// The state no longer offers the form: say it above the rest.
			v.ErrorFor = "page"
		}
		p.renderConsole(w, r, s, status, "/operator/appeals", "appeal", "Appeal "+a.ID, v)
		return
	}
	p.log.Info("appeal action", "operator", s.Operator, "appeal", a.ID, "action", string(act), "corrections", len(done))
	http.Redirect(w, r, "/operator/appeals/"+a.ID+"?done="+string(act), http.StatusSeeOther)
}

// formShown reports whether the page shows the form of act.
func (v *appealView) formShown(act appeal.Action) bool {
	switch act {
	case appeal.Ack:
		return v.CanAck
	case appeal.Uphold, appeal.Reject:
		return v.CanDecide
	case appeal.Escalate:
		return v.CanEscalate
	}
	return false
}

// readCorrections reads the uphold form's rows into v and returns the
// corrections they ask for, or what is missing in words.
func readCorrections(r *http.Request, v *appealView) ([]ledger.CorrectionRequest, string) {
	var out []ledger.CorrectionRequest
	var problem string
	for i := range v.Fixes {
		c := &v.Fixes[i]
		n := strconv.Itoa(i)
		c.Action = r.PostFormValue("action_" + n)
		c.Status = r.PostFormValue("status_" + n)
		c.Agent = strings.TrimSpace(r.PostFormValue("agent_" + n))
		what := string(c.Event.Type) + " " + c.Event.ID
		req := ledger.CorrectionRequest{EventType: c.Event.Type, EventID: c.Event.ID, Action: ledger.CorrectionAction(c.Action)}
		switch req.Action {
		case "":
			continue
		case ledger.ActionStatus:
			req.Status = ledger.Status(c.Status)
			if c.Status == "" && problem == "" {
				problem = "Choose the new final status of " + what + "."
			}
		case ledger.ActionReattribute:
			req.AgentID = c.Agent
			if c.Agent == "" && problem == "" {
				problem = "Give the agent to re-attribute " + what + " to."
			}
		case ledger.ActionVoid:
		default:
			if problem == "" {
				problem = "Choose status, reattribute, void or no correction for " + what + "."
			}
		}
		out = append(out, req)
	}
	if problem == "" && len(out) == 0 {
		problem = "Choose a correction for at least one disputed event: upholding an appeal corrects the data it confirms is wrong (spec §11.3). Reject it if nothing is wrong."
	}
	return out, problem
}

// actionMessage words a refused action for the operator. Invalid and
// conflict errors of the appeal use cases say what is wrong with the
// request in terms of the request (the API shows them as its problem
// details); the kind's prefix and the API's field paths are taken out.
func actionMessage(err error, reqs []ledger.CorrectionRequest) string {
	msg, ok := errkind.PublicDetail(err)
	if !ok {
		msg = err.Error()
	}
	for _, k := range []error{errkind.ErrInvalid, errkind.ErrConflict, errkind.ErrNotFound} {
		msg = strings.ReplaceAll(msg, k.Error()+": ", "")
	}
	for i, q := range reqs {
		msg = strings.ReplaceAll(msg, fmt.Sprintf("corrections[%d]", i), "the correction of "+string(q.EventType)+" "+q.EventID)
	}
	if msg == "" {
		return "The action was refused."
	}
	r, size := utf8.DecodeRuneInString(msg)
	msg = string(unicode.ToUpper(r)) + msg[size:]
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, ")") {
		msg += "."
	}
	return msg
}
