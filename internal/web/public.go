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
	Tiers       []tierOption
	Agents      []ledger.ScoreEntry
	Next        string // the next page's URL, "" on the last page
	First       string // the first page's URL, "" on the first page
	Rank        int    // of the first agent on the page, 0 when unknown
	Disclaimer  string
	SpecURL     string
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
		v.First = leaderboardURL(v.Tier, nil, 0)
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
		v.Next = leaderboardURL(v.Tier, page.Next, next)
	}
	p.render(w, r, status, "home", view{Title: "SwarmScore", Section: "home", Data: v})
}

// Leaderboard cursors are "score:agent_id", readable in the address bar.
func leaderboardURL(tier string, after *ledger.Cursor, rank int) string {
	q := url.Values{}
	if tier != "" {
		q.Set("tier", tier)
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
	if !ok || err != nil || n < 0 || n > score.MaxScore || !ledger.ValidID(id) {
		return ledger.Cursor{}, false
	}
	return ledger.Cursor{Score: n, AgentID: id}, true
}

type agentView struct {
	ID         string
	Result     score.Result
	Dimensions []dimensionView
	NextTier   string
	Gaps       []string
	Escrow     escrowView
	History    historyChart
	Passport   passportView
	Badge      badgeView
	Disclaimer string
}

type dimensionView struct {
	Name, Unit, SuccessWord string
	Contribution, Max       int
	Success, Total          int64
	Rate, VolumeFactor      string
	Bar                     bar
}

type escrowView struct {
	Chart    escrowChart
	Percent  string
	Hold     string // of a $1,000 payment
	Released string
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
	base := p.baseURL(r)
	expiresIn := until(p.now(), prof.Certificate.ExpiresAt)
	build := func() view { return agentPage(id, base, expiresIn, &prof, hold, released) }
	if !prof.Valid || prof.Certificate.Digest == ([sha256.Size]byte{}) {
		// An invalid passport's problems are not in the key; it is rare.
		p.render(w, r, http.StatusOK, "agent", build())
		return
	}
	p.renderCached(w, r, agentPageKey(id, base, expiresIn, &prof), "agent", build)
}

// agentPageKey names every input of agentPage but the constants: the
// agent, the origin its badge snippet names, the expiry in words and the
// certificate's digest (which fixes its counts, hence the score, the
// dimensions, the gaps and the escrow, and its dates), and each day of the
// history. A valid profile only: an invalid one's problems are not in it.
// An input added to agentPage must be added here, or pages would be
// served with its first value.
func agentPageKey(id, base, expiresIn string, prof *service.Profile) string {
	b := make([]byte, 0, len(id)+len(base)+len(expiresIn)+sha256.Size+len(prof.History)*24)
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
	return string(b)
}

// agentPage is the view of an agent's page.
func agentPage(id, base, expiresIn string, prof *service.Profile, hold, released int64) view {
	res := prof.Result
	v := agentView{
		ID:         id,
		Result:     res,
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
	}{
		{res.Conduit(), "Conduit execution", "sessions", "verified"},
		{res.AP2(), "AP2 reliability", "transactions", "settled"},
	} {
		v.Dimensions = append(v.Dimensions, dimensionView{
			Name: d.name, Unit: d.unit, SuccessWord: d.successWord,
			Contribution: d.dim.Contribution, Max: d.dim.MaxContribution,
			Success: d.dim.Success, Total: d.dim.Total,
			Rate:         percent(d.dim.Success, d.dim.Total),
			VolumeFactor: strconv.FormatFloat(d.dim.VolumeFactor(), 'g', 4, 64),
			Bar:          newBar(d.dim.Contribution, d.dim.MaxContribution),
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
	return view{Title: id + " · SwarmScore", Section: "agent", Data: v}
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
const badgeVersion = "2"

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
