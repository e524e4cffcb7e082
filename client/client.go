// Package client is a typed Go client for the SwarmScore HTTP API (the
// routes `swarmscore serve` exposes, documented at /openapi.json).
//
// Every method returns a *Problem (use errors.As) when the server answers
// with an RFC 9457 problem, so callers can branch on its stable Type URI;
// transport failures are returned as they come from net/http.
//
//	c, _ := client.New("http://127.0.0.1:8080", client.WithToken(token))
//	res, err := c.IngestEvents(ctx, events)
//	res, err = c.IngestStream(ctx, file, client.StreamOptions{}) // any size, batched, retried
//	cert, err := c.Certificate(ctx, "agent-1")
//	v, err := c.Verify(ctx, cert.Raw, "agent-1")
//	ov, err := c.VerifyOffline(ctx, cert.Raw, time.Now()) // Ed25519 passports, with the server's public keys
//
// The package imports nothing of the server's internals: only the module's
// public packages api (the JSON shapes, the same types the server writes),
// passport (offline verification) and score.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/passport"
)

// ProblemBase prefixes every problem Type the server sends.
const ProblemBase = api.ProblemBase

// The problem types, for comparison with Problem.Type (api.Problem*).
const (
	ProblemInvalid          = api.ProblemInvalid
	ProblemMalformedJSON    = api.ProblemMalformedJSON
	ProblemWrongType        = api.ProblemWrongType
	ProblemUnauthorized     = api.ProblemUnauthorized
	ProblemForbidden        = api.ProblemForbidden
	ProblemNotFound         = api.ProblemNotFound
	ProblemNoRoute          = api.ProblemNoRoute
	ProblemMethodNotAllowed = api.ProblemMethodNotAllowed
	ProblemConflict         = api.ProblemConflict
	ProblemBodyTooLarge     = api.ProblemBodyTooLarge
	// ProblemUnsupportedMediaType: a batch sent with another Content-Type
	// than IngestEvents and IngestNDJSON send.
	ProblemUnsupportedMediaType = api.ProblemUnsupportedMediaType
	ProblemRateLimited          = api.ProblemRateLimited
	ProblemInternal             = api.ProblemInternal
	ProblemUnavailable          = api.ProblemUnavailable
	// What the server's HTTP layer answers before any route: headers too
	// large (431), an unsupported Transfer-Encoding (501), HTTP version
	// (505) or Expect (417). A malformed request is ProblemInvalid.
	ProblemHeadersTooLarge     = api.ProblemHeadersTooLarge
	ProblemNotImplemented      = api.ProblemNotImplemented
	ProblemVersionNotSupported = api.ProblemVersionNotSupported
	ProblemExpectationFailed   = api.ProblemExpectationFailed
)

// Problem is an error response (RFC 9457, api.Problem). A response that is
// not a problem document (a proxy's HTML page, say) becomes a Problem with
// the HTTP status, Type "about:blank" and the start of the body as Detail.
type Problem struct {
	api.Problem
	// RetryAfter is the Retry-After header of a 429 or 503, zero if none.
	RetryAfter time.Duration
}

func (p *Problem) Error() string {
	s := fmt.Sprintf("swarmscore: %d %s", p.Status, p.Title)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	return s
}

// Client talks to one SwarmScore server. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
	keys  keyCache // the server's public keys, for VerifyOffline
	// formulas are the formula versions VerifyOffline accepts.
	formulas passport.Acceptance
}

// Option configures a Client.
type Option func(*Client)

// WithToken sets the bearer token: an operator's, or an agent's own
// (swarmscore token create --agent). It is sent to the routes that take
// one (operator routes, an agent's consent, visibility, records and
// signals, PrivateCertificate and PrivateScore) and to no other.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithFormulas sets the formula versions VerifyOffline accepts, each in its
// window (§10.3); without it, V1 only, as passport.Verify.
func WithFormulas(a passport.Acceptance) Option { return func(c *Client) { c.formulas = a } }

// WithHTTPClient replaces http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client for the server at baseURL (e.g.
// "http://127.0.0.1:8080"). It fails for a URL that is not absolute http(s).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q must be an absolute http or https URL", baseURL)
	}
	c := &Client{base: u, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// maxResponse bounds what the client reads from a response.
const maxResponse = 16 << 20

// do sends a request and returns the response body of a 2xx answer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string, operator bool, hdr http.Header) (*http.Response, []byte, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawPath = c.base.EscapedPath() + escapePath(path)
	if query != nil {
		u.RawQuery = query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if operator && c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 400 {
		return resp, b, problemFrom(resp, b)
	}
	return resp, b, nil
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
		if s == "." || s == ".." {
			// Not ids (the server answers 400), but as written they would
			// be resolved away by the URL's path (RFC 3986 §5.2.4).
			segs[i] = strings.ReplaceAll(s, ".", "%2E")
		}
	}
	return strings.Join(segs, "/")
}

func problemFrom(resp *http.Response, b []byte) error {
	p := &Problem{}
	if err := json.Unmarshal(b, p); err != nil || p.Type == "" {
		detail := string(b)
		if len(detail) > 200 {
			detail = detail[:200]
		}
		p = &Problem{Problem: api.Problem{Type: "about:blank", Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(detail)}}
	}
	p.Status = resp.StatusCode
	p.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return p
}

// retryAfter reads a Retry-After header (RFC 9110: seconds, or an HTTP
// date) as a wait from now; zero when absent, unreadable or past.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if secs, err := strconv.Atoi(h); err == nil {
		return time.Duration(max(secs, 0)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func decode(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("client: decoding the response: %w", err)
	}
	return nil
}

// IsProblem reports whether err is a *Problem of the given type (one of the
// Problem* constants).
func IsProblem(err error, typ string) bool {
	var p *Problem
	return errors.As(err, &p) && p.Type == typ
}

// Certificate is an agent's signed Execution Passport.
type Certificate struct {
	// Raw is the document exactly as served: verify these bytes, never a
	// re-encoding (the signature covers fields this client may not know).
	Raw  json.RawMessage
	ETag string
	// NotModified is true when CertificateIfNoneMatch's ETag still named
	// the current passport; Raw is then empty.
	NotModified bool
}

// Certificate fetches the agent's current passport (GET
// /swarmscore/{agent_id}/certificate). An unknown agent is a Problem of
// type ProblemNotFound.
func (c *Client) Certificate(ctx context.Context, agentID string) (*Certificate, error) {
	return c.CertificateIfNoneMatch(ctx, agentID, "")
}

// CertificateIfNoneMatch is Certificate with a conditional request: when
// etag still names the current passport the result has NotModified set.
func (c *Client) CertificateIfNoneMatch(ctx context.Context, agentID, etag string) (*Certificate, error) {
	var hdr http.Header
	if etag != "" {
		hdr = http.Header{"If-None-Match": {etag}}
	}
	resp, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID+"/certificate", nil, nil, "", false, hdr)
	if err != nil {
		return nil, err
	}
	cert := &Certificate{ETag: resp.Header.Get("ETag"), NotModified: resp.StatusCode == http.StatusNotModified}
	if !cert.NotModified {
		cert.Raw = b
	}
	return cert, nil
}

// Verification is the §7.3 verdict, the reasons behind it, and what each
// level of verification found (api.Verification).
type Verification = api.Verification

// CurrentScore is an agent's score as of its ComputedAt.
type CurrentScore = api.CurrentScore

// EventRef names an event: its type (conduit_session, ap2_transaction)
// and id.
type EventRef = api.EventRef

// Warnings of the verification policy (Verification.Warnings codes): the
// passport still verifies.
const (
	WarningSuperseded              = api.CodeSuperseded
	WarningLedgerChangedSinceIssue = api.CodeLedgerChangedSinceIssue
)

// ErrorPassportRevoked is the Verification.Errors code of a passport the
// server issued and has revoked, because its agent was erased (GDPR
// Art. 17): refused even if genuine and unexpired.
const ErrorPassportRevoked = api.CodePassportRevoked

// The checks a server reports in Verification.Checks, and their results
// (api.Check*).
const (
	CheckSignature   = api.CheckSignature
	CheckConsistency = api.CheckConsistency
	CheckExpiry      = api.CheckExpiry
	CheckLedger      = api.CheckLedger
	CheckAgent       = api.CheckAgent

	CheckOK                = api.CheckOK
	CheckFailed            = api.CheckFailed
	CheckExpired           = api.CheckExpired
	CheckNotYetValid       = api.CheckNotYetValid
	CheckConfirmed         = api.CheckConfirmed
	CheckMismatch          = api.CheckMismatch
	CheckNotApplicable     = api.CheckNotApplicable
	CheckRevoked           = api.CheckRevoked
	CheckChangedSinceIssue = api.CheckChangedSinceIssue
)

// VerifyError is one reason a passport is not valid, with a stable code.
type VerifyError = passport.Problem

// Verify asks the server to verify a passport for agentID (POST
// /swarmscore/verify), or for the agent the passport names when agentID
// is "". certificate must be the JSON document as received.
func (c *Client) Verify(ctx context.Context, certificate []byte, agentID string) (*Verification, error) {
	if !json.Valid(certificate) {
		return nil, errors.New("client: the certificate is not valid JSON")
	}
	// Built by hand: json.Marshal would compact the certificate, and it is
	// sent byte for byte as received.
	body := make([]byte, 0, len(certificate)+len(agentID)+32)
	body = append(body, `{"certificate":`...)
	body = append(body, certificate...)
	if agentID != "" {
		id, err := json.Marshal(agentID)
		if err != nil {
			return nil, err
		}
		body = append(body, `,"agent_id":`...)
		body = append(body, id...)
	}
	body = append(body, '}')
	_, b, err := c.do(ctx, http.MethodPost, "/swarmscore/verify", nil, bytes.NewReader(body), "application/json", false, nil)
	if err != nil {
		return nil, err
	}
	v := &Verification{}
	return v, decode(b, v)
}

// Score is an agent's current score (api.Score): decoding checks that
// every derived member agrees with the counts.
type Score = api.Score

// Score fetches the agent's current score (GET /swarmscore/{agent_id}).
func (c *Client) Score(ctx context.Context, agentID string) (*Score, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/"+agentID, nil, nil, "", false, nil)
	if err != nil {
		return nil, err
	}
	s := &Score{}
	return s, decode(b, s)
}

// Event is one Conduit session or AP2 transaction report, in the wire
// format of `swarmscore ingest` (api.Event). Use ConduitSession or
// AP2Transaction to build one.
type Event = api.Event

// ConduitSession builds a Conduit session event; completed is ignored when
// zero (a non-terminal status). Times are taken as they come (time.Now()
// included): they are converted to UTC and truncated to the microsecond,
// the precision the ledger keeps (it refuses finer times rather than
// rounding them).
func ConduitSession(id, agentID, status string, started, completed time.Time) Event {
	e := Event{Type: "conduit_session", ID: id, AgentID: agentID, Status: status, StartedAt: ledgerTime(started)}
	if !completed.IsZero() {
		t := ledgerTime(completed)
		e.CompletedAt = &t
	}
	return e
}

// AP2Transaction builds an AP2 transaction event; settled is ignored when
// zero (a non-terminal status). Times are converted to UTC and truncated
// to the microsecond, as ConduitSession's are.
func AP2Transaction(id, providerID, buyerID, status string, escrowCents int64, started, settled time.Time) Event {
	e := Event{Type: "ap2_transaction", ID: id, ProviderID: providerID, BuyerID: buyerID, Status: status,
		EscrowAmountCents: &escrowCents, StartedAt: ledgerTime(started)}
	if !settled.IsZero() {
		t := ledgerTime(settled)
		e.SettledAt = &t
	}
	return e
}

// ledgerTime is t at the ledger's precision: UTC, whole microseconds (and
// without a monotonic clock reading, which JSON ignores anyway).
func ledgerTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// IngestResult says what the server did with a batch: every event is
// counted once (api.IngestResult).
type IngestResult = api.IngestResult

// Rejection is one refused event: its 0-based index in the batch, its
// NDJSON line (0 for a JSON array), its id when it parsed, and why.
type Rejection = api.Rejection

// IngestEvents sends events as a JSON array (POST /swarmscore/events) with
// the operator token, in one request: at most api.MaxEvents events and
// api.MaxBodyBytes (IngestStream has no such limit). Build events with
// ConduitSession and AP2Transaction, or give their times at most
// microsecond precision.
func (c *Client) IngestEvents(ctx context.Context, events []Event) (*IngestResult, error) {
	body, err := json.Marshal(events)
	if err != nil {
		return nil, err
	}
	return c.ingest(ctx, bytes.NewReader(body), "application/json")
}

// IngestNDJSON sends the NDJSON events (one object per line) of r in one
// request: at most api.MaxEvents of them and api.MaxBodyBytes. IngestStream sends
// input of any size.
func (c *Client) IngestNDJSON(ctx context.Context, r io.Reader) (*IngestResult, error) {
	return c.ingest(ctx, r, "application/x-ndjson")
}

func (c *Client) ingest(ctx context.Context, r io.Reader, ct string) (*IngestResult, error) {
	_, b, err := c.do(ctx, http.MethodPost, "/swarmscore/events", nil, r, ct, true, nil)
	if err != nil {
		return nil, err
	}
	res := &IngestResult{}
	return res, decode(b, res)
}

// Escrow is the hold for one payment (§5; api.Escrow).
type Escrow = api.Escrow

// Escrow computes the hold for a payment of amountCents to the agent (POST
// /swarmscore/{agent_id}/escrow) with the operator token.
func (c *Client) Escrow(ctx context.Context, agentID string, amountCents int64) (*Escrow, error) {
	body, err := json.Marshal(api.EscrowRequest{AmountCents: amountCents})
	if err != nil {
		return nil, err
	}
	_, b, err := c.do(ctx, http.MethodPost, "/swarmscore/"+agentID+"/escrow", nil, bytes.NewReader(body), "application/json", true, nil)
	if err != nil {
		return nil, err
	}
	e := &Escrow{}
	return e, decode(b, e)
}

// AgentsQuery filters the ranking. Zero values mean no filter, the server's
// default page size (50), and the first page.
type AgentsQuery struct {
	Tier     string // lowest tier wanted: NONE, STANDARD or ELITE
	MinScore int
	// Sort is the order: "score" (the default when empty), "conduit",
	// "ap2" or "escrow"; a Cursor must come from a page of the same Sort.
	Sort   string
	Limit  int
	Cursor string // NextCursor of the previous page
}

// RankedAgent is one entry of the ranking (api.RankedAgent).
type RankedAgent = api.RankedAgent

// AgentsPage is one page of the ranking; NextCursor is nil on the last
// page (api.AgentsPage).
type AgentsPage = api.AgentsPage

// Agents lists agents by current score (or q.Sort's key), highest first
// (GET /swarmscore/agents) with the operator token.
func (c *Client) Agents(ctx context.Context, q AgentsQuery) (*AgentsPage, error) {
	v := url.Values{}
	if q.Tier != "" {
		v.Set("tier", q.Tier)
	}
	if q.MinScore != 0 {
		v.Set("min_score", strconv.Itoa(q.MinScore))
	}
	if q.Sort != "" {
		v.Set("sort", q.Sort)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	_, b, err := c.do(ctx, http.MethodGet, "/swarmscore/agents", v, nil, "", true, nil)
	if err != nil {
		return nil, err
	}
	p := &AgentsPage{}
	return p, decode(b, p)
}

// Health returns nil when the process is up (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	_, _, err := c.do(ctx, http.MethodGet, "/healthz", nil, nil, "", false, nil)
	return err
}

// Ready returns nil when the server's database is reachable and migrated
// (GET /readyz); otherwise a Problem of type ProblemUnavailable.
func (c *Client) Ready(ctx context.Context) error {
	_, _, err := c.do(ctx, http.MethodGet, "/readyz", nil, nil, "", false, nil)
	return err
}

// OpenAPI returns the server's OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/openapi.json", nil, nil, "", false, nil)
	return b, err
}

// Metrics returns the Prometheus exposition text of GET /metrics.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	_, b, err := c.do(ctx, http.MethodGet, "/metrics", nil, nil, "", false, nil)
	return string(b), err
}
