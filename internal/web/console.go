package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// consolePage is one page of the operator console. Adding a page is one
// entry here, a template templates/<Name>.html defining "content", and its
// load function; Mount registers GET Path behind the session check and the
// navigation lists it. A page whose forms act on something also registers
// POST routes wrapped in signedIn (which checks the session's CSRF token),
// as sign-out is, and puts {{.Console.CSRF}} in each form.
type consolePage struct {
	Path  string // under /operator/
	Title string // the navigation entry and the heading
	Name  string // the template
	// Permission is what the page needs of the operator's role
	// (auth.Allow, the rule the API applies); the navigation shows only
	// the pages a role may open.
	Permission auth.Permission
	// Load gathers the page's data for the signed-in operator. A
	// badRequest error is shown as such (400, with its words).
	Load func(p *Pages, r *http.Request, s session) (any, error)
}

// consolePages are the console's pages, in navigation order; the first is
// where sign-in lands.
var consolePages = []consolePage{
	{Path: "/operator/ingest", Title: "Ingest activity", Name: "ingest", Permission: auth.ReadOperator, Load: (*Pages).loadIngest},
	{Path: "/operator/agents", Title: "Agents", Name: "agents", Permission: auth.ReadOperator, Load: (*Pages).loadAgents},
	{Path: "/operator/signals", Title: "Gaming flags", Name: "signals", Permission: auth.ReadOperator, Load: (*Pages).loadSignals},
	{Path: "/operator/appeals", Title: "Appeals", Name: "appeals", Permission: auth.ReadOperator, Load: (*Pages).loadAppeals},
	{Path: "/operator/keys", Title: "Signing keys", Name: "keys", Permission: auth.ReadOperator, Load: (*Pages).loadKeys},
	{Path: "/operator/webhooks", Title: "Webhooks", Name: "webhooks", Permission: auth.ReadOperator, Load: (*Pages).loadWebhooks},
	{Path: "/operator/actions", Title: "Action log", Name: "actions", Permission: auth.ReadActions, Load: (*Pages).loadActions},
	{Path: "/operator/sessions", Title: "Sessions", Name: "sessions", Permission: auth.ManageSessions, Load: (*Pages).loadSessions},
}

// badRequest is a console query that makes no sense, in words for the
// operator.
type badRequest string

func (e badRequest) Error() string { return string(e) }

type consoleView struct {
	Operator string
	Role     auth.Role
	CSRF     string
	Nav      []navEntry
}

type navEntry struct {
	Path, Title string
	Current     bool
}

func (p *Pages) consolePage(cp consolePage) func(http.ResponseWriter, *http.Request, session) {
	return func(w http.ResponseWriter, r *http.Request, s session) {
		data, err := cp.Load(p, r, s)
		var br badRequest
		switch {
		case errors.As(err, &br):
			p.errorPage(w, r, http.StatusBadRequest, "That query is not valid", string(br))
			return
		case err != nil:
			p.fail(w, r, err, "")
			return
		}
		p.renderConsole(w, r, s, http.StatusOK, cp.Path, cp.Name, cp.Title, data)
	}
}

// renderConsole renders template name as a console page titled title,
// with the navigation entry of path marked current (a sub-page marks its
// page's).
func (p *Pages) renderConsole(w http.ResponseWriter, r *http.Request, s session, status int, path, name, title string, data any) {
	cv := &consoleView{Operator: s.Operator, Role: s.Role, CSRF: s.csrf}
	for _, e := range consolePages {
		if s.Role.May(e.Permission) {
			cv.Nav = append(cv.Nav, navEntry{e.Path, e.Title, e.Path == path})
		}
	}
	p.render(w, r, status, name, view{Title: title + " · SwarmScore console", Section: "operator", Console: cv, Data: data})
}

// consoleAction is a console route other than a page: a sub-page (GET) or
// what a form does (POST). Mount puts it behind the session check, which
// refuses a POST without the session's CSRF token, and the database
// bound.
type consoleAction struct {
	Pattern string // a ServeMux pattern under /operator/
	// Permission is what the route needs of the operator's role.
	Permission auth.Permission
	Handle     func(p *Pages, w http.ResponseWriter, r *http.Request, s session)
}

// consoleActions are the console's sub-pages and form actions.
var consoleActions = []consoleAction{
	{Pattern: "GET /operator/appeals/{id}", Permission: auth.ReadOperator, Handle: (*Pages).appealPage},
	{Pattern: "POST /operator/appeals/{id}/{action}", Permission: auth.DecideAppeals, Handle: (*Pages).actOnAppeal},
	{Pattern: "GET /operator/keys/rotate", Permission: auth.ManageKeys, Handle: (*Pages).rotateKeyForm},
	{Pattern: "POST /operator/keys/rotate", Permission: auth.ManageKeys, Handle: (*Pages).rotateKey},
	{Pattern: "POST /operator/sessions/{ref}/revoke", Permission: auth.ManageSessions, Handle: (*Pages).revokeSession},
}

type ingestView struct {
	Activity service.IngestActivity
	Chart    hourChart
	// Active are the hours with any batch, newest first; Total sums them.
	Active []service.IngestHour
	Total  service.IngestHour
}

// loadIngest is what this process's ingests did: events per hour and the
// latest rejections with their reasons.
func (p *Pages) loadIngest(r *http.Request, _ session) (any, error) {
	a := p.svc.Ingest.IngestActivity()
	v := ingestView{Activity: a, Chart: newHourChart(a.Hours)}
	for i := len(a.Hours) - 1; i >= 0; i-- {
		h := a.Hours[i]
		if h.Batches == 0 && h.Failed == 0 {
			continue
		}
		v.Active = append(v.Active, h)
		v.Total.Batches += h.Batches
		v.Total.Failed += h.Failed
		v.Total.Accepted += h.Accepted
		v.Total.Duplicates += h.Duplicates
		v.Total.Superseded += h.Superseded
		v.Total.Rejected += h.Rejected
	}
	return v, nil
}

// agentsPageSize is the number of agents per page of the console's table.
const agentsPageSize = 50

type agentsView struct {
	Query    string
	Tier     string
	MinScore string
	Tiers    []tierOption
	// Found is the agent an exact search found, unlisted ones included.
	Found *foundAgent
	// Agents is the ranking (listed agents only) when nothing was searched.
	Agents []ledger.ScoreEntry
	Next   string
	First  string
}

type foundAgent struct {
	Info  ledger.AgentInfo
	Entry ledger.ScoreEntry
}

// loadAgents is the agents table: an exact id search (which finds
// unlisted agents too, with their visibility), or the ranking filtered by
// tier (at least) and minimum score.
func (p *Pages) loadAgents(r *http.Request, _ session) (any, error) {
	q := r.URL.Query()
	v := agentsView{Query: strings.TrimSpace(q.Get("q")), Tier: q.Get("tier"), MinScore: q.Get("min_score")}
	for _, t := range []struct{ v, l string }{{"", "Any tier"}, {"STANDARD", "STANDARD and ELITE"}, {"ELITE", "ELITE only"}} {
		v.Tiers = append(v.Tiers, tierOption{t.v, t.l, t.v == v.Tier})
	}
	if v.Query != "" {
		if !ledger.ValidID(v.Query) {
			return nil, badRequest("An agent id is 1 to 128 letters, digits and . _ : - characters.")
		}
		info, err := p.svc.Certificates.Agent(r.Context(), v.Query)
		if errors.Is(err, errkind.ErrNotFound) {
			return v, nil
		}
		if err != nil {
			return nil, err
		}
		e, err := p.svc.Certificates.Score(r.Context(), v.Query)
		if err != nil {
			return nil, err
		}
		v.Found = &foundAgent{Info: info, Entry: e}
		return v, nil
	}
	rq := service.RankingQuery{Limit: agentsPageSize}
	if v.Tier != "" {
		t, err := score.ParseTier(v.Tier)
		if err != nil {
			return nil, badRequest("Filter by NONE, STANDARD or ELITE.")
		}
		rq.MinTier = t
	}
	if v.MinScore != "" {
		n, err := strconv.Atoi(v.MinScore)
		if err != nil || n < 0 || n > score.MaxScore {
			return nil, badRequest("The minimum score is a whole number from 0 to 1000.")
		}
		rq.MinScore = n
	}
	if a := q.Get("after"); a != "" {
		c, ok := parseCursor(a)
		if !ok {
			return nil, badRequest("That page of the table does not exist; start again from the first page.")
		}
		rq.After = &c
		v.First = agentsURL(v.Tier, v.MinScore, nil)
	}
	page, err := p.svc.Certificates.Ranking(r.Context(), rq)
	if err != nil {
		return nil, err
	}
	v.Agents = page.Agents
	if page.Next != nil {
		v.Next = agentsURL(v.Tier, v.MinScore, page.Next)
	}
	return v, nil
}

func agentsURL(tier, minScore string, after *ledger.Cursor) string {
	q := url.Values{}
	if tier != "" {
		q.Set("tier", tier)
	}
	if minScore != "" {
		q.Set("min_score", minScore)
	}
	if after != nil {
		q.Set("after", strconv.Itoa(after.Score)+":"+after.AgentID)
	}
	if len(q) == 0 {
		return "/operator/agents"
	}
	return "/operator/agents?" + q.Encode()
}
