package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// leaderboardSize is the number of agents per leaderboard page.
const leaderboardSize = 25

// disclaimer is the sample liability disclaimer of spec §11.2, which asks
// for one on every page that displays a score.
const disclaimer = "SwarmScore is a historical performance metric computed from objective transaction data. " +
	"It does not guarantee future performance. This marketplace is not liable for losses arising from " +
	"transactions with any agent regardless of SwarmScore."

// specURL is where draft-stone-swarmscore-v1 is published.
const specURL = "https://datatracker.ietf.org/doc/draft-stone-swarmscore-v1/"

type homeView struct {
	Search      string
	SearchError string
	Tier        string // the filter as given: "", STANDARD or ELITE
	Sort        sortOption
	Sorts       []sortLink // the column headings' links, in sortOptions' order
	SortNames   []string
	AsOf        time.Time
	Tiers       []tierOption
	Agents      []ledger.ScoreEntry
	Next        string // the next page's URL, "" on the last page
	First       string // the first page's URL, "" on the first page
	Rank        int    // of the first agent on the page, 0 when unknown
	Disclaimer  string
	SpecURL     string
}

// sortOption is one order of the leaderboard: ?sort=Value. Escrow orders
// by the score too: the share held falls as the score rises (§3.6), so
// the highest score first is the lowest hold first, and the keyset of the
// score pages it (docs/ERRATA.md E71).
type sortOption struct {
	Value   string
	Caption string // "Agents by …"
	By      ledger.RankBy
}

var sortOptions = []sortOption{
	{"score", "by current score, highest first", ledger.RankScore},
	{"conduit", "by Conduit points, highest first", ledger.RankConduit},
	{"ap2", "by AP2 points, highest first", ledger.RankAP2},
	{"escrow", "by escrow hold, lowest first", ledger.RankScore},
}

var sortNames = []string{"score", "Conduit", "AP2", "escrow hold"}

// sortLink is a column heading that orders the leaderboard by its column.
type sortLink struct {
	URL     string
	Current bool
}

type tierOption struct {
	Value, Label string
	Selected     bool
}

// home is the leaderboard. ?agent= is the search box: a valid id goes to
// its page; tier filters (at least that tier, as the API's ranking does);
// after continues from the last agent of the previous page.
func (p *Pages) home(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := homeView{Disclaimer: disclaimer, SpecURL: specURL, Search: strings.TrimSpace(q.Get("agent")), Tier: q.Get("tier")}
	status := http.StatusOK
	if _, ok := q["agent"]; ok {
		if ledger.ValidID(v.Search) {
			http.Redirect(w, r, "/agents/"+url.PathEscape(v.Search), http.StatusSeeOther)
			return
		}
		status = http.StatusBadRequest
		v.SearchError = "An agent id is 1 to 128 letters, digits and . _ : - characters."
	}
	rq := service.RankingQuery{Limit: leaderboardSize}
	switch v.Tier {
	case "":
	case score.TierStandard.String(), score.TierElite.String():
		rq.MinTier, _ = score.ParseTier(v.Tier)
	default:
		p.errorPage(w, r, http.StatusBadRequest, "Unknown tier", "Filter by STANDARD or ELITE, or show all agents.")
		return
	}
	v.Sort = sortOptions[0]
	if so := q.Get("sort"); so != "" {
		i := slices.IndexFunc(sortOptions, func(o sortOption) bool { return o.Value == so })
		if i < 0 {
			p.errorPage(w, r, http.StatusBadRequest, "Unknown order", "Sort by score, conduit, ap2 or escrow.")
			return
		}
		v.Sort = sortOptions[i]
	}
	rq.By = v.Sort.By
	v.SortNames = sortNames
	for _, o := range sortOptions {
		v.Sorts = append(v.Sorts, sortLink{leaderboardURL(v.Tier, o.Value, nil, 0), o.Value == v.Sort.Value})
	}
	for _, t := range []struct{ v, l string }{{"", "All agents"}, {"STANDARD", "STANDARD and ELITE"}, {"ELITE", "ELITE only"}} {
		v.Tiers = append(v.Tiers, tierOption{t.v, t.l, t.v == v.Tier})
	}
	v.Rank = 1
	if a := q.Get("after"); a != "" {
		c, ok := parseCursor(a)
		if !ok {
			p.errorPage(w, r, http.StatusBadRequest, "Unknown page", "That page of the leaderboard does not exist; start again from the first page.")
			return
		}
		rq.After = &c
		v.First = leaderboardURL(v.Tier, v.Sort.Value, nil, 0)
		// The rank the previous page handed on is only a label; without
		// one the column is left out rather than guessed.
		v.Rank, _ = strconv.Atoi(q.Get("rank"))
		if v.Rank < 1 {
			v.Rank = 0
		}
	}
	page, err := p.svc.Certificates.Ranking(r.Context(), rq)
	if err != nil {
		p.fail(w, r, err, "")
		return
	}
	v.Agents = page.Agents
	if page.Next != nil {
		next := 0
		if v.Rank > 0 {
			next = v.Rank + len(page.Agents)
		}
		v.Next = leaderboardURL(v.Tier, v.Sort.Value, page.Next, next)
	}
	// Ranking recomputes every stale entry as of now before listing.
	v.AsOf = p.now()
	p.render(w, r, status, "home", view{Title: "SwarmScore", Section: "home", Data: v})
}

// Leaderboard cursors are "key:agent_id" (the key is the score or the
// points the page is sorted by), readable in the address bar.
func leaderboardURL(tier, sort string, after *ledger.Cursor, rank int) string {
	q := url.Values{}
	if tier != "" {
		q.Set("tier", tier)
	}
	if sort != "" && sort != sortOptions[0].Value {
		q.Set("sort", sort)
	}
	if after != nil {
		q.Set("after", strconv.Itoa(after.Score)+":"+after.AgentID)
	}
	if rank > 0 {
		q.Set("rank", strconv.Itoa(rank))
	}
	if len(q) == 0 {
		return "/"
	}
	return "/?" + q.Encode()
}

func parseCursor(s string) (ledger.Cursor, bool) {
	sc, id, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(sc)
	if !ok || err != nil || n < 0 || n > score.MaxScore || !ledger.ValidID(id) || sc != strconv.Itoa(n) {
		return ledger.Cursor{}, false
	}
	return ledger.Cursor{Score: n, AgentID: id}, true
}

type agentView struct {
	ID         string
	Result     score.Result
	AsOf       time.Time // the certificate's computed_at: what the big number is as of
	Change     changeView
	Window     service.Window
	Volume     volumeView
	Dimensions []dimensionView
	NextTier   string
	Gaps       []string
	Escrow     escrowView
	History    historyChart
	Passport   passportView
	Badge      badgeView
	Disclaimer string
}

// volumeView says whether the agent has the §4 volume STANDARD needs: a
// NONE below it means "not enough history yet", not a low score.
type volumeView struct {
	Enough                     bool
	MissingConduit, MissingAP2 string // "" when none is missing
}

// changeView is the score's change over the last 30 days.
type changeView struct {
	Known bool   // false when the agent has less than 30 days of history here
	Words string // "+12", "−5", "no change"
	Since time.Time
	From  int
}

type dimensionView struct {
	Name, Unit, SuccessWord string
	Contribution, Max       int
	Success, Total          int64
	Rate, VolumeFactor      string
	Bar                     bar
	// Split is the AP2 card's settled / disputed / refunded, "" for
	// Conduit.
	Split string
}

type escrowView struct {
	Chart    escrowChart
	Percent  string
	Hold     string // of a $1,000 payment
	Released string
	// The calculator: the amount asked about (?amount=), its hold and
	// release, or why it is not an amount.
	Amount, CalcHold, CalcReleased, CalcError string
}

type passportView struct {
	Valid                 bool
	Problems              []service.VerifyError
	ComputedAt, ExpiresAt time.Time
	ExpiresIn             string
	URL, FileName         string
}

type badgeView struct {
	URL, Alt, Markdown string
}

// exampleCents is the payment the escrow sentence is about: $1,000.
const exampleCents = 100_000

// agent is an agent's public page. Unknown and unlisted agents are the
// same 404.
func (p *Pages) agent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("agent_id")
	if !ledger.ValidID(id) {
		// Not echoed: it can be anything, of any length.
		p.errorPage(w, r, http.StatusNotFound, "Not found", "That is not an agent id: an id is 1 to 128 letters, digits and . _ : - characters.")
		return
	}
	notFound := "No agent with a public SwarmScore has the id “" + id + "”."
	prof, err := p.svc.Certificates.PublicProfile(r.Context(), id, true)
	if err != nil {
		p.fail(w, r, err, notFound)
		return
	}
	res := prof.Result
	hold, released, err := score.HoldCents(exampleCents, res.Score)
	if err != nil {
		p.fail(w, r, err, "")
		return
	}
	// The window as of the certificate's instant: its totals are the
	// counts behind the number shown.
	win, err := p.svc.Certificates.ProfileWindow(r.Context(), &prof)
	if err != nil {
		p.fail(w, r, err, notFound)
		return
	}
	base := p.baseURL(r)
	expiresIn := until(p.now(), prof.Certificate.ExpiresAt)
	build := func() view { return agentPage(id, base, expiresIn, &prof, &win, hold, released) }
	if q := r.URL.Query(); q.Has("amount") {
		// The calculator's answer: rendered for its amount, not cached
		// (amounts are unbounded in number).
		v := build()
		status := http.StatusOK
		if calculate(&v.Data.(*agentView).Escrow, q.Get("amount"), prof.Result.Score) {
			status = http.StatusBadRequest
		}
		p.render(w, r, status, "agent", v)
		return
	}
	if !prof.Valid || prof.Certificate.Digest == ([sha256.Size]byte{}) {
		// An invalid passport's problems are not in the key; it is rare.
		p.render(w, r, http.StatusOK, "agent", build())
		return
	}
	p.renderCached(w, r, agentPageKey(id, base, expiresIn, &prof, &win), "agent", build)
}

// calculate fills in the escrow calculator's answer for amount, and
// reports whether amount is not one (the page is then a 400).
func calculate(e *escrowView, amount string, s int) (bad bool) {
	e.Amount = amount
	cents, msg := parseDollars(amount)
	if msg != "" {
		e.CalcError = msg
		return true
	}
	h, rel, _ := score.HoldCents(cents, s) // cents is never negative
	e.Amount, e.CalcHold, e.CalcReleased = dollars(cents), dollars(h), dollars(rel)
	return false
}

// agentPageKey names every input of agentPage but the constants: the
// agent, the origin its badge snippet names, the expiry in words and the
// certificate's digest (which fixes its counts, hence the score, the
// dimensions, the gaps and the escrow, and its dates), each day of the
// history, and the window (its counts by status, oldest event,
// corrections and open appeals). A valid profile only: an invalid one's
// problems are not in it. An input added to agentPage must be added here,
// or pages would be served with its first value.
func agentPageKey(id, base, expiresIn string, prof *service.Profile, win *service.Window) string {
	b := make([]byte, 0, len(id)+len(base)+len(expiresIn)+sha256.Size+len(prof.History)*24+96)
	b = append(append(append(b, id...), 0), base...)
	b = append(append(append(b, 0), expiresIn...), 0)
	b = append(b, prof.Certificate.Digest[:]...)
	for _, d := range prof.History {
		c := d.Result.Counts
		b = binary.AppendVarint(b, d.Day.Unix())
		b = binary.AppendVarint(binary.AppendVarint(b, c.ConduitTotal), c.ConduitSuccess)
		b = binary.AppendVarint(binary.AppendVarint(b, c.AP2Total), c.AP2Success)
		b = binary.AppendVarint(b, int64(d.Result.Score)) // the formula's, as shown
	}
	for _, n := range []int64{win.AsOf.UnixMicro(), win.Verified, win.Failed, win.Settled, win.Disputed, win.Refunded,
		win.Oldest.UnixMicro(), win.Corrected, win.Chargebacks, int64(len(win.OpenAppeals))} {
		b = binary.AppendVarint(b, n)
	}
	for _, a := range win.OpenAppeals {
		b = append(append(append(b, 0), a.ID...), 0)
		b = append(append(b, a.State...), 0)
		b = binary.AppendVarint(b, a.FiledAt.Unix())
	}
	return string(b)
}

// agentPage is the view of an agent's page.
func agentPage(id, base, expiresIn string, prof *service.Profile, win *service.Window, hold, released int64) view {
	res := prof.Result
	v := agentView{
		ID:         id,
		Result:     res,
		AsOf:       prof.Certificate.ComputedAt,
		Window:     *win,
		Change:     newChange(prof.History),
		Volume:     newVolume(res),
		Escrow:     escrowView{Chart: newEscrowChart(res.Score, res.Escrow), Percent: modifierPercent(res.Escrow), Hold: dollars(hold), Released: dollars(released)},
		History:    newHistoryChart(prof.History),
		Disclaimer: disclaimer,
		Passport: passportView{
			Valid: prof.Valid, Problems: prof.Problems,
			ComputedAt: prof.Certificate.ComputedAt, ExpiresAt: prof.Certificate.ExpiresAt,
			ExpiresIn: expiresIn,
			URL:       "/swarmscore/" + url.PathEscape(id) + "/certificate", FileName: id + "-passport.json",
		},
	}
	for _, d := range []struct {
		dim                     score.Dimension
		name, unit, successWord string
		split                   string
	}{
		{res.Conduit(), "Conduit execution", "sessions", "verified", ""},
		{res.AP2(), "AP2 reliability", "transactions", "settled",
			thousands(win.Settled) + " settled, " + thousands(win.Disputed) + " disputed, " + thousands(win.Refunded) + " refunded"},
	} {
		v.Dimensions = append(v.Dimensions, dimensionView{
			Name: d.name, Unit: d.unit, SuccessWord: d.successWord,
			Contribution: d.dim.Contribution, Max: d.dim.MaxContribution,
			Success: d.dim.Success, Total: d.dim.Total,
			Rate:         percent(d.dim.Success, d.dim.Total),
			VolumeFactor: strconv.FormatFloat(d.dim.VolumeFactor(), 'g', 4, 64),
			Bar:          newBar(d.dim.Contribution, d.dim.MaxContribution),
			Split:        d.split,
		})
	}
	for _, g := range res.Gaps() {
		v.NextTier = g.Tier.String()
		v.Gaps = append(v.Gaps, gapWords(g))
	}
	v.Badge = badgeView{
		URL: "/badge/" + url.PathEscape(id) + ".svg",
		Alt: "SwarmScore " + strconv.Itoa(res.Score) + " " + res.Tier.String(),
	}
	v.Badge.Markdown = "[![SwarmScore](" + base + v.Badge.URL + ")](" + base + "/agents/" + url.PathEscape(id) + ")"
	return view{Title: id + " · SwarmScore", Section: "agent", Data: &v}
}

// newVolume compares the agent's volume with STANDARD's (§4.2): below
// it, no score can give a tier, and the page says what is missing
// (docs/ERRATA.md E70).
func newVolume(res score.Result) volumeView {
	v := volumeView{Enough: true}
	if n := score.StandardConduit - res.Conduit().Total; n > 0 {
		v.Enough, v.MissingConduit = false, thousands(n)+" more Conduit "+noun(n, "session")
	}
	if n := score.StandardAP2 - res.AP2().Total; n > 0 {
		v.Enough, v.MissingAP2 = false, thousands(n)+" more AP2 "+noun(n, "transaction")
	}
	return v
}

// changeDays is how far back the page's change in score looks.
const changeDays = 30

// newChange is today's score against the score changeDays ago, when the
// agent had events counted then; otherwise the change is not known.
func newChange(days []service.DayScore) changeView {
	if len(days) <= changeDays {
		return changeView{}
	}
	then, now := days[len(days)-1-changeDays], days[len(days)-1]
	if then.Result.Conduit().Total+then.Result.AP2().Total == 0 {
		return changeView{}
	}
	d := now.Result.Score - then.Result.Score
	cv := changeView{Known: true, Since: then.Day, From: then.Result.Score}
	switch {
	case d > 0:
		cv.Words = "+" + strconv.Itoa(d)
	case d < 0:
		cv.Words = "−" + strconv.Itoa(-d)
	default:
		cv.Words = "no change"
	}
	return cv
}

// maxDollars bounds the calculator's amount: a trillion dollars, far
// below what int64 cents hold.
const maxDollars = 1_000_000_000_000

// parseDollars reads the calculator's amount: dollars with an optional
// "$", thousands commas and up to two decimals. It returns the amount in
// cents, or what is wrong with it in words.
func parseDollars(s string) (int64, string) {
	const bad = "Give an amount in dollars, such as 250 or 1,249.99."
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "$")
	whole, frac, hasFrac := strings.Cut(s, ".")
	whole = strings.ReplaceAll(whole, ",", "")
	if whole == "" || len(whole) > 13 || (hasFrac && (len(frac) == 0 || len(frac) > 2)) {
		return 0, bad
	}
	var d, c int64
	for _, r := range whole {
		if r < '0' || r > '9' {
			return 0, bad
		}
		d = d*10 + int64(r-'0')
	}
	for i := 0; i < 2; i++ {
		c *= 10
		if i < len(frac) {
			if frac[i] < '0' || frac[i] > '9' {
				return 0, bad
			}
			c += int64(frac[i] - '0')
		}
	}
	if d > maxDollars {
		return 0, "The calculator takes amounts up to $1,000,000,000,000."
	}
	return d*100 + c, ""
}

// baseURL is this site's origin as the client reached it, for snippets
// meant to be pasted elsewhere. A Host header that is not a plain host
// name and port is not trusted to be one: the snippet is then relative.
func (p *Pages) baseURL(r *http.Request) string {
	host := r.Host
	if host == "" || len(host) > 255 {
		return ""
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return ""
		}
	}
	if p.host.SecureRequest(r) {
		return "https://" + host
	}
	return "http://" + host
}

// badgeVersion changes when the badge's drawing does, so that a cached
// badge of an unchanged certificate is not served across the change.
const badgeVersion = "3"

// badgeLabel is the badge's left half unless ?label= says otherwise;
// maxBadgeLabel bounds what it may say, in characters.
const (
	badgeLabel    = "SwarmScore"
	maxBadgeLabel = 32
)

// badgeOptions are a badge URL's shields.io-style options.
type badgeOptions struct {
	Label  string
	Square bool // ?style=flat-square
}

// parseBadgeOptions reads ?style=flat|flat-square and ?label=TEXT: the
// label's control characters are dropped, its white space collapsed, and
// it is cut to maxBadgeLabel characters (with an ellipsis); an empty one
// is the default. The template escapes what is left. An unknown style,
// or an option given twice, is an error in words for the badge itself.
func parseBadgeOptions(q url.Values) (badgeOptions, string) {
	o := badgeOptions{Label: badgeLabel}
	for k, v := range q {
		if len(v) > 1 {
			return o, "repeated " + k
		}
	}
	switch q.Get("style") {
	case "", "flat":
	case "flat-square":
		o.Square = true
	default:
		return o, "unknown style"
	}
	if l := cleanLabel(q.Get("label")); l != "" {
		o.Label = l
	}
	return o, ""
}

func cleanLabel(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > maxBadgeLabel {
		s = string(r[:maxBadgeLabel-1]) + "…"
	}
	return s
}

// badgeFace is what a badge says of a profile as of now: the score and
// tier in the tier's colour, or, once the passport has expired or no
// longer verifies, the same words marked stale in grey, so that a README
// never shows an old score as if it were current.
func badgeFace(prof service.Profile, now time.Time) (message, color string, stale bool) {
	message = strconv.Itoa(prof.Result.Score) + " " + prof.Result.Tier.String()
	if prof.Result.Tier == score.TierNone && !newVolume(prof.Result).Enough {
		// Below STANDARD's volume a score says little (E70): a badge of
		// "4 NONE" would read as a verdict on an agent that has none yet.
		message = "new agent"
	}
	if !prof.Valid || !now.Before(prof.Certificate.ExpiresAt) {
		return message + " (stale)", staleColor, true
	}
	return message, tierColor(prof.Result.Tier), false
}

// badge serves everything under /badge/: {agent_id}.svg, the agent's
// score and tier as a two-part badge, and {agent_id}.json, the same in
// the shields.io endpoint-badge schema. Every other path, an id that is
// not one and an unknown option answer a grey badge of the same format
// saying so (404 or 400), never an HTML page, so that a README shows what
// is wrong rather than a broken image. A badge's freshness follows the
// certificate's (the score it shows is the certificate's): the route's
// caching headers (Host.CertificateCaching) and an ETag that changes
// exactly when a new certificate is issued.
func (p *Pages) badge(w http.ResponseWriter, r *http.Request) {
	file := strings.TrimPrefix(r.URL.Path, "/badge/")
	id, asJSON := strings.CutSuffix(file, ".json")
	if !asJSON {
		id, _ = strings.CutSuffix(file, ".svg")
	}
	opt, optErr := parseBadgeOptions(r.URL.Query())
	h := w.Header()
	if ok, wait := p.host.AllowPublic(r); !ok {
		h.Set("Retry-After", itoa(int64((wait+time.Second-1)/time.Second)))
		h.Set("Cache-Control", "no-store")
		p.writeBadge(w, r, asJSON, http.StatusTooManyRequests, opt, "rate limited", tierColor(score.TierNone))
		return
	}
	switch {
	case id == file || !ledger.ValidID(id):
		h.Set("Cache-Control", "public, max-age=300")
		p.writeBadge(w, r, asJSON, http.StatusNotFound, opt, "not found", tierColor(score.TierNone))
		return
	case optErr != "":
		h.Set("Cache-Control", "no-store")
		p.writeBadge(w, r, asJSON, http.StatusBadRequest, opt, optErr, tierColor(score.TierNone))
		return
	}
	r2, done, err := p.host.EnterDB(r)
	if err != nil {
		p.badgeFailed(w, r, asJSON, opt, err)
		return
	}
	defer done()
	r = r2
	prof, err := p.svc.Certificates.PublicProfile(r.Context(), id, false)
	switch {
	case err == nil:
	case statusOf(err) == http.StatusNotFound:
		h.Set("Cache-Control", "public, max-age=300")
		p.writeBadge(w, r, asJSON, http.StatusNotFound, opt, "not found", tierColor(score.TierNone))
		return
	default:
		p.badgeFailed(w, r, asJSON, opt, err)
		return
	}
	c := &prof.Certificate
	etag := badgeETag(c.Digest, asJSON, opt)
	h.Set("ETag", etag)
	p.host.CertificateCaching(h, c)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	message, color, _ := badgeFace(prof, p.now())
	p.writeBadge(w, r, asJSON, http.StatusOK, opt, message, color)
}

// badgeFailed answers a badge whose profile could not be read: a client
// that went away as the pages do, anything else as an "unavailable" or
// "error" badge with the page's status, logged and counted as a page's.
func (p *Pages) badgeFailed(w http.ResponseWriter, r *http.Request, asJSON bool, opt badgeOptions, err error) {
	if p.host.ClientGone(w, r, err) {
		return
	}
	status := statusOf(err)
	message := "error"
	switch status {
	case http.StatusServiceUnavailable:
		p.host.PageUnavailable(w, r, err)
		w.Header().Set("Retry-After", "2")
		message = "unavailable"
	case http.StatusInternalServerError:
		p.log.Error("internal error", "request_id", w.Header().Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path, "err", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	p.writeBadge(w, r, asJSON, status, opt, message, tierColor(score.TierNone))
}

// shieldsEndpoint is the shields.io endpoint-badge schema
// (https://shields.io/badges/endpoint-badge): schemaVersion is always 1;
// color is a hex colour without its "#", which shields accepts.
type shieldsEndpoint struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
	Style         string `json:"style,omitempty"`
	IsError       bool   `json:"isError,omitempty"`
	CacheSeconds  int    `json:"cacheSeconds,omitempty"`
}

// writeBadge writes one badge as SVG, or as shields.io JSON.
func (p *Pages) writeBadge(w http.ResponseWriter, r *http.Request, asJSON bool, status int, opt badgeOptions, message, color string) {
	h := w.Header()
	var body []byte
	if asJSON {
		e := shieldsEndpoint{SchemaVersion: 1, Label: opt.Label, Message: message, Color: strings.TrimPrefix(color, "#"),
			IsError: status != http.StatusOK, CacheSeconds: 300}
		if opt.Square {
			e.Style = "flat-square"
		}
		b, err := json.Marshal(e)
		if err != nil {
			p.fail(w, r, err, "")
			return
		}
		body = append(b, '\n')
		h.Set("Content-Type", "application/json")
		// shields.io's servers fetch it; so may a page of any origin.
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		buf := bufs.Get().(*bytes.Buffer)
		buf.Reset()
		defer bufs.Put(buf)
		if err := templates["badge"].Execute(buf, newBadge(opt.Label, message, color, opt.Square)); err != nil {
			p.fail(w, r, err, "")
			return
		}
		body = buf.Bytes()
		h.Set("Content-Type", "image/svg+xml")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func statusOf(err error) int {
	s, _, _ := pageError(err)
	return s
}

// badgeETag names one rendering of a certificate: its digest, the
// drawing's version, the format and the options.
func badgeETag(digest [sha256.Size]byte, asJSON bool, opt badgeOptions) string {
	var v [sha256.Size]byte
	if asJSON || opt != (badgeOptions{Label: badgeLabel}) {
		v = sha256.Sum256([]byte(fmt.Sprintf("%t\x00%t\x00%s", asJSON, opt.Square, opt.Label)))
	}
	return `"badge` + badgeVersion + "-" + hex.EncodeToString(digest[:16]) + "-" + hex.EncodeToString(v[:4]) + `"`
}

// etagMatch is If-None-Match's weak comparison for one ETag.
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
