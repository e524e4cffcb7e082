package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// actionsPageSize is the number of entries per page of the action log.
const actionsPageSize = 50

type actionsView struct {
	Operator, Kind, AgentID string
	Kinds                   []tierOption
	Actions                 []auth.Action
	Next, First             string
	AsOf                    time.Time
}

// actionKinds are the kinds of action the page's filter offers.
var actionKinds = []auth.ActionKind{auth.ActSignIn, auth.ActSignOut, auth.ActIngest, auth.ActCorrection, auth.ActAppealAck,
	auth.ActAppealUphold, auth.ActAppealReject, auth.ActAppealEscalate, auth.ActAppealFile, auth.ActConsent, auth.ActVisibility,
	auth.ActKeyRotate, auth.ActKeyState, auth.ActErasure, auth.ActTokenCreate, auth.ActTokenRevoke, auth.ActSessionRevoke, auth.ActWebhookCreate, auth.ActWebhookDelete, auth.ActDenied}

// loadActions is the action log, newest first, filtered by operator,
// kind and agent, a page at a time.
func (p *Pages) loadActions(r *http.Request, _ session) (any, error) {
	q := r.URL.Query()
	v := actionsView{Operator: q.Get("operator"), Kind: q.Get("action"), AgentID: q.Get("agent_id"), AsOf: p.now()}
	known := v.Kind == ""
	v.Kinds = append(v.Kinds, tierOption{"", "Any action", v.Kind == ""})
	for _, k := range actionKinds {
		v.Kinds = append(v.Kinds, tierOption{string(k), string(k), string(k) == v.Kind})
		known = known || string(k) == v.Kind
	}
	if !known {
		return nil, badRequest("Choose an action from the list.")
	}
	if v.Operator != "" && !ledger.ValidID(v.Operator) {
		return nil, badRequest("An operator is 1 to 128 letters, digits and . _ : - characters.")
	}
	if v.AgentID != "" && !ledger.ValidID(v.AgentID) {
		return nil, badRequest("An agent id is 1 to 128 letters, digits and . _ : - characters.")
	}
	aq := auth.ActionQuery{Limit: actionsPageSize, Operator: v.Operator, Kind: auth.ActionKind(v.Kind), AgentID: v.AgentID}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return nil, badRequest("That page of the log does not exist; start again from the first page.")
		}
		aq.Before = n
		v.First = v.url(0)
	}
	list, err := p.svc.Console.Actions(r.Context(), aq)
	if err != nil {
		return nil, err
	}
	v.Actions = list
	if len(list) == actionsPageSize {
		v.Next = v.url(list[len(list)-1].Seq)
	}
	return v, nil
}

func (v actionsView) url(before int64) string {
	q := url.Values{}
	for k, val := range map[string]string{"operator": v.Operator, "action": v.Kind, "agent_id": v.AgentID} {
		if val != "" {
			q.Set(k, val)
		}
	}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	if len(q) == 0 {
		return "/operator/actions"
	}
	return "/operator/actions?" + q.Encode()
}

type sessionsView struct {
	Sessions []sessionRow
	Notice   string
	CSRF     string
	Idle     string
	Lifetime string
}

type sessionRow struct {
	auth.Session
	Ref, Short string
	Current    bool
	Ends       time.Time
}

// loadSessions lists the live console sessions, with a revoke button for
// each.
func (p *Pages) loadSessions(r *http.Request, s session) (any, error) {
	list, err := p.svc.Console.Sessions(r.Context(), p.sessionPolicy())
	if err != nil {
		return nil, err
	}
	v := sessionsView{CSRF: s.csrf, Idle: duration(p.idle), Lifetime: duration(p.lifetime)}
	for _, x := range list {
		ends := x.SeenAt.Add(p.idle)
		if e := x.CreatedAt.Add(p.lifetime); e.Before(ends) {
			ends = e
		}
		v.Sessions = append(v.Sessions, sessionRow{Session: x, Ref: x.Ref(), Short: x.Ref()[:12], Current: x.IDSum == s.IDSum, Ends: ends})
	}
	if r.URL.Query().Has("revoked") {
		v.Notice = "The session was revoked: its browser is signed out at its next request."
	}
	return v, nil
}

// revokeSession ends a session for an admin.
func (p *Pages) revokeSession(w http.ResponseWriter, r *http.Request, s session) {
	if err := p.svc.Console.RevokeSession(r.Context(), r.PathValue("ref")); err != nil {
		p.fail(w, r, err, "That session has already ended.")
		return
	}
	http.Redirect(w, r, "/operator/sessions?revoked=1", http.StatusSeeOther)
}
