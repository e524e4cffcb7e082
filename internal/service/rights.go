package service

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Agents' rights (spec §8.4, §11.1): who may act for an agent, its
// visibility and consent, what the public routes show of it, the disclosure
// it consents to, and its access to the records behind its score.

// Caller is who a request speaks for: an operator, one agent through its
// own token, or nobody (the zero Caller, a public request).
type Caller struct {
	// Operator is the operator acting or, for an agent's token, the
	// operator that granted it.
	Operator string
	// AgentID is set for an agent's token: it may act only for that agent.
	AgentID string
	// TokenID names the token the request came with ("" from the CLI).
	TokenID string
	// Role is what an operator's token may do ("" for an agent's).
	Role auth.Role
}

// CallerOf is the caller an authenticated token speaks for
// (Tokens.Principal).
func CallerOf(t auth.Token) Caller {
	return Caller{Operator: t.Operator, AgentID: t.AgentID, TokenID: t.ID, Role: t.Role}
}

// CallerFor returns who a bearer token speaks for (Principal as a
// Caller). Errors: ErrUnauthorized for an empty, unknown or revoked token,
// ErrUnavailable.
func (u *Tokens) CallerFor(ctx context.Context, token string) (Caller, error) {
	t, err := u.Principal(ctx, token)
	if err != nil {
		return Caller{}, err
	}
	return CallerOf(t), nil
}

// OperatorCaller is an operator acting without a token: the CLI, which
// holds the database itself and so may do anything (auth.Admin).
func OperatorCaller(operator string) Caller { return Caller{Operator: operator, Role: auth.Admin} }

// IsOperator reports whether the caller is an operator (not an agent's
// token, not anonymous).
func (c Caller) IsOperator() bool { return c.Operator != "" && c.AgentID == "" }

// ActsFor reports whether the caller may read agentID's own data and act
// on its consent and visibility: an operator, or the agent's own token.
func (c Caller) ActsFor(agentID string) bool {
	return c.IsOperator() || (c.AgentID != "" && c.AgentID == agentID)
}

// MayActFor is ActsFor as an error: ErrUnauthorized for an anonymous
// caller, ErrForbidden for another agent's token. The use cases check it
// before the agent is looked up, so that the answer does not tell whether
// it exists; a transport may check it before reading a request's body.
func (c Caller) MayActFor(agentID string) error {
	switch {
	case c.ActsFor(agentID):
		return nil
	case c.AgentID != "":
		return fmt.Errorf("%w: this token belongs to agent %q and may read or act only for that agent", errkind.ErrForbidden, c.AgentID)
	}
	return fmt.Errorf("%w: only the agent itself (its own token) or an operator may do this", errkind.ErrUnauthorized)
}

// by is how a consent records who gave it: "agent:" and the token's id
// when the agent's own token did (token list names its agent), else
// "operator:" and the operator.
func (c Caller) by() (string, error) {
	by := "operator:" + c.Operator
	switch {
	case c.AgentID != "" && c.TokenID != "":
		by = "agent:" + c.TokenID
	case c.AgentID != "":
		by = "agent:" + c.AgentID
	}
	if !ledger.ValidID(by) {
		return "", fmt.Errorf("%w: %q cannot be recorded as the author of a consent (1-128 characters of [A-Za-z0-9._:-])", errkind.ErrInvalid, by)
	}
	return by, nil
}

// Rights are the use cases of agents' rights (spec §8.4, §11.1, §11.4):
// the disclosure and an agent's consent and visibility, its access to its
// records, and its erasure. A change of what the public may see is
// forgotten at once by the shared publication memory; an erasure also
// forgets the agent's certificate and history.
type Rights struct {
	store        RightsStore
	clock        clock
	horizon      horizon // the latest as_of Records answers
	pubs         *publication
	certs        *certMemo
	histories    *historyMemo
	windows      *windowMemo
	pages        *pageMemo
	pseudonymKey []byte // Config.PseudonymKey
	actions      *actionLog
}

// Disclosure is one version of what an agent is told and consents to: the
// §11.1 disclosure, extended with the four points §11.1 asks consent to
// cover, and the §11.2 liability disclaimer shown beside every score.
// Versions are never edited: a new text is a new version, and a consent
// names the version it was given to.
type Disclosure struct {
	Version    string
	Disclosure string
	Disclaimer string
}

// disclosures are every version ever published, oldest first; the last is
// the current one.
var disclosures = []Disclosure{{
	Version: "1",
	Disclosure: "Your transactions on this marketplace are used to compute a SwarmScore, an open-standard reputation score. " +
		"The formula is public at https://datatracker.ietf.org/doc/draft-stone-swarmscore-v1/. " +
		"Your score affects escrow hold amounts and marketplace visibility. " +
		"You may review your score and the data behind it at any time. Contact us to dispute errors.\n\n" +
		"What is used: the Conduit sessions you ran (VERIFIED or FAILED) and the AP2 transactions you provided " +
		"(SETTLED, DISPUTED or REFUNDED) that ended in the last 90 days, as this marketplace reports them.\n\n" +
		"How it is computed: up to 400 points from Conduit and 600 from AP2, each your success rate scaled by volume " +
		"(in full from 100 sessions and 50 transactions); the score sets the share of each payment to you held in escrow.\n\n" +
		"Where it is published: unless you choose to be unlisted, your score and a signed Execution Passport are served " +
		"to anyone by this marketplace's API and pages. Unlisted, they are shown only to you and to the marketplace, " +
		"which still uses your score for escrow.\n\n" +
		"How to appeal: data errors (a count, a status, an event attributed to you by mistake, not the formula) may be " +
		"appealed to this marketplace within 30 days of the score's computation; it acknowledges within 7 days and " +
		"answers within 21, and a confirmed error is corrected and your passport re-issued within 7 days.",
	Disclaimer: "SwarmScore is a historical performance metric computed from objective transaction data. " +
		"It does not guarantee future performance. " +
		"This marketplace is not liable for losses arising from transactions with any agent regardless of SwarmScore.",
}}

// CurrentDisclosure is the disclosure agents are asked to consent to now.
func CurrentDisclosure() Disclosure { return disclosures[len(disclosures)-1] }

// Disclosure returns the disclosure of version, or the current one when
// version is "". Errors: ErrNotFound for a version never published.
func (u *Rights) Disclosure(version string) (Disclosure, error) { return FindDisclosure(version) }

// FindDisclosure is Rights.Disclosure, which needs nothing of a
// deployment.
func FindDisclosure(version string) (Disclosure, error) {
	if version == "" {
		return CurrentDisclosure(), nil
	}
	for _, d := range disclosures {
		if d.Version == version {
			return d, nil
		}
	}
	return Disclosure{}, errkind.WithPublic(fmt.Errorf("%w: no disclosure version %q", errkind.ErrNotFound, version),
		fmt.Sprintf("no disclosure version %q", truncate(version, 40)))
}

// ConsentStatus is an agent's consent and visibility (ledger.Consent) and
// what follows from them.
type ConsentStatus struct {
	AgentID string
	ledger.Consent
	// RequireConsent is the deployment's setting (Config.RequireConsent).
	RequireConsent bool
	// Published reports whether the public routes show the agent: it is
	// public and, when consent is required, has consented.
	Published bool
}

// Consent returns the agent's consent and visibility, for the agent itself
// or an operator. Errors: ErrInvalid for a malformed id, ErrUnauthorized
// or ErrForbidden for any other caller (before the agent is looked up),
// ErrNotFound for an unknown agent, ErrUnavailable.
func (u *Rights) Consent(ctx context.Context, c Caller, agentID string) (ConsentStatus, error) {
	if err := checkActor(c, agentID); err != nil {
		return ConsentStatus{}, err
	}
	return u.consentStatus(ctx, agentID)
}

// SetVisibility records the agent's choice of public or unlisted display
// (spec §8.4), made by the agent itself or an operator, and returns the
// result. It takes effect on this process's public routes at once, and on
// other processes sharing the database when their cache watch reports a
// write (SQLite: at once) and in any case within a second. Errors:
// ErrInvalid for a malformed id or another visibility, ErrUnauthorized or
// ErrForbidden for any other caller, ErrNotFound for an unknown agent,
// ErrUnavailable.
func (u *Rights) SetVisibility(ctx context.Context, c Caller, agentID string, v ledger.Visibility) (st ConsentStatus, err error) {
	if c.IsOperator() {
		defer func() { u.actions.record(ctx, auth.ActVisibility, agentID, "", "set to "+string(v), err) }()
	}
	if err := checkActor(c, agentID); err != nil {
		return ConsentStatus{}, err
	}
	if v != ledger.VisibilityPublic && v != ledger.VisibilityUnlisted {
		return ConsentStatus{}, fmt.Errorf("%w: visibility %q is neither %q nor %q", errkind.ErrInvalid, truncate(string(v), 40),
			ledger.VisibilityPublic, ledger.VisibilityUnlisted)
	}
	err = u.store.SetVisibility(ctx, agentID, v, u.clock.now())
	u.pubs.forget(agentID)
	if err != nil {
		return ConsentStatus{}, unknownAgent(err, agentID)
	}
	return u.consentStatus(ctx, agentID)
}

// RecordConsent records that the agent consented to disclosure version
// (the current one when ""), as the agent itself or an operator recording
// it on its behalf, as of now; a later consent replaces it. It takes
// effect as SetVisibility does. Errors: ErrInvalid for a malformed id or a
// version never published, ErrUnauthorized or ErrForbidden for any other
// caller, ErrNotFound for an unknown agent, ErrUnavailable.
func (u *Rights) RecordConsent(ctx context.Context, c Caller, agentID, version string) (st ConsentStatus, err error) {
	if c.IsOperator() {
		defer func() { u.actions.record(ctx, auth.ActConsent, agentID, "", "to disclosure version "+version, err) }()
	}
	if err := checkActor(c, agentID); err != nil {
		return ConsentStatus{}, err
	}
	if version == "" {
		version = CurrentDisclosure().Version
	}
	if _, err := FindDisclosure(version); err != nil {
		return ConsentStatus{}, fmt.Errorf("%w: disclosure_version %q was never published (the current one is %q)",
			errkind.ErrInvalid, truncate(version, 40), CurrentDisclosure().Version)
	}
	by, err := c.by()
	if err != nil {
		return ConsentStatus{}, err
	}
	err = u.store.RecordConsent(ctx, agentID, version, by, u.clock.now())
	u.pubs.forget(agentID)
	if err != nil {
		return ConsentStatus{}, unknownAgent(err, agentID)
	}
	return u.consentStatus(ctx, agentID)
}

// checkActor checks agentID and that c may act for it.
func checkActor(c Caller, agentID string) error {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return err
	}
	return c.MayActFor(agentID)
}

func (u *Rights) consentStatus(ctx context.Context, agentID string) (ConsentStatus, error) {
	cs, err := u.store.Consent(ctx, agentID)
	if err != nil {
		return ConsentStatus{}, unknownAgent(err, agentID)
	}
	return ConsentStatus{AgentID: agentID, Consent: cs, RequireConsent: u.pubs.require, Published: u.pubs.publishes(cs)}, nil
}

// publication is what the public may see of agents: the rule (publishes)
// and the process's memory of each agent's consent (pubMemo), shared by the
// groups that serve agents to the public (Certificates) and those that
// change what it may see (Rights).
type publication struct {
	store   ConsentReader
	require bool // Config.RequireConsent
	certs   *certMemo
	memo    pubMemo
}

// publishes is the one rule of what the public may see of an agent.
func (p *publication) publishes(c ledger.Consent) bool {
	return c.Visibility != ledger.VisibilityUnlisted && (!p.require || c.Consented())
}

// notPublic is the answer to the public for an agent it may not see: the
// same words for an unknown, an unlisted and an unconsented agent, so that
// the answer does not tell them apart.
func notPublic(agentID string) error {
	msg := fmt.Sprintf("agent %q has no public score", agentID)
	return errkind.WithPublic(fmt.Errorf("%w: %s", errkind.ErrNotFound, msg), msg)
}

// published reports whether the public may see the agent (publishes); an
// unknown agent is not published. The answer comes from memory while the
// store's cache watch vouches that nothing was committed since it was read
// (as certificates do: pubMemo), so that the certificate route stays free
// of queries.
func (p *publication) published(ctx context.Context, agentID string) (bool, error) {
	w := p.certs.cacheWatch()
	if e, ok := p.memo.serve(w, agentID); ok {
		return e.known && p.publishes(e.consent), nil
	}
	ck := p.certs.begin(w)
	cs, err := p.store.Consent(ctx, agentID)
	known := true
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		known = false
	case err != nil:
		return false, err
	}
	p.memo.put(agentID, pubEntry{consent: cs, known: known, trusted: ck.trusted, mark: ck.mark, checked: ck.at})
	return known && p.publishes(cs), nil
}

// CertificateFor is the agent's certificate (Certificate) as c may see it:
// the agent itself and operators get it whatever the agent's visibility
// (§8.4: an unlisted passport is still issued, for the agent and for
// escrow); anyone else only while the agent is published. Errors: those of
// Certificate; for a caller other than the agent and operators, ErrNotFound
// with the same public detail for an unknown, unlisted or (with
// RequireConsent) unconsented agent.
func (u *Certificates) CertificateFor(ctx context.Context, c Caller, agentID string) (Certificate, error) {
	if err := u.pubs.public(ctx, c, agentID); err != nil {
		return Certificate{}, err
	}
	cert, err := u.Certificate(ctx, agentID)
	if !c.ActsFor(agentID) && errors.Is(err, errkind.ErrNotFound) {
		return Certificate{}, notPublic(agentID)
	}
	return cert, err
}

// ScoreFor is the agent's current score (Score) as c may see it, by the
// rule of CertificateFor, with its errors.
func (u *Certificates) ScoreFor(ctx context.Context, c Caller, agentID string) (ledger.ScoreEntry, error) {
	if err := u.pubs.public(ctx, c, agentID); err != nil {
		return ledger.ScoreEntry{}, err
	}
	e, err := u.Score(ctx, agentID)
	if !c.ActsFor(agentID) && errors.Is(err, errkind.ErrNotFound) {
		return ledger.ScoreEntry{}, notPublic(agentID)
	}
	return e, err
}

// public returns nil when c may see agentID's public routes.
func (p *publication) public(ctx context.Context, c Caller, agentID string) error {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return err
	}
	if c.ActsFor(agentID) {
		return nil
	}
	ok, err := p.published(ctx, agentID)
	if err != nil {
		return err
	}
	if !ok {
		return notPublic(agentID)
	}
	return nil
}

// AgentRecords is an agent's access to its data (spec §11.1): the events
// counting in its score as of AsOf and the passports issued to it by then.
type AgentRecords struct {
	AgentID string
	AsOf    time.Time
	// Masked is true when buyer ids are pseudonyms (Pseudonym): the
	// agent's own token sees its data, not its counterparties' identities.
	Masked    bool
	Events    []Record
	Passports []ledger.IssuedPassport
}

// Record is one event counting in a score, in its current state (after
// corrections).
type Record struct {
	Type ledger.Type
	ID   string
	// AgentID is the agent it counts for now; BuyerID the buyer (a
	// pseudonym when masked; "" when none was reported).
	AgentID, BuyerID string
	// Status is its status now; ReportedStatus the last one reported,
	// which differs when a correction changed it.
	Status, ReportedStatus ledger.Status
	// ReportedAgentID is the agent it was reported for, when a correction
	// moved it; never shown to an agent's token (another agent's id).
	ReportedAgentID   string
	EscrowAmountCents int64
	StartedAt         time.Time
	EndedAt           time.Time
	// Operator reported it; Seq is its latest record in the reporting
	// agent's chain.
	Operator string
	Seq      int64
	// Corrected is true when a correction changed it.
	Corrected bool
}

// Records returns the events counting in the agent's score as of asOf
// (now, to the second, when zero) and the passports issued to it up to
// asOf, for the agent itself (buyer ids masked: Pseudonym) or an operator
// (as reported). Errors: ErrInvalid for a malformed id or an asOf later
// than now plus the clock-skew allowance, ErrUnauthorized or
// ErrForbidden for any other caller, ErrNotFound for an unknown agent,
// ErrUnavailable; an internal error when an agent's token asks and no
// PseudonymKey is configured.
func (u *Rights) Records(ctx context.Context, c Caller, agentID string, asOf time.Time) (AgentRecords, error) {
	if err := checkActor(c, agentID); err != nil {
		return AgentRecords{}, err
	}
	if err := u.horizon.check(asOf); err != nil {
		return AgentRecords{}, err
	}
	masked := !c.IsOperator()
	if masked && len(u.pseudonymKey) == 0 {
		return AgentRecords{}, errors.New("no pseudonym key is configured to mask buyer ids (Config.PseudonymKey)")
	}
	if asOf.IsZero() {
		asOf = u.clock.now()
	}
	asOf = asOf.UTC().Truncate(ledger.Resolution)
	evs, err := u.store.Records(ctx, agentID, asOf)
	if err != nil {
		return AgentRecords{}, unknownAgent(err, agentID)
	}
	ps, err := u.store.Passports(ctx, agentID)
	if err != nil {
		return AgentRecords{}, err
	}
	out := AgentRecords{AgentID: agentID, AsOf: asOf, Masked: masked, Events: make([]Record, 0, len(evs)),
		Passports: slices.DeleteFunc(ps, func(p ledger.IssuedPassport) bool { return p.ComputedAt.After(asOf) })}
	for i := range evs {
		s := &evs[i]
		e := &s.Event
		r := Record{Type: e.Type, ID: e.ID, AgentID: s.CurrentAgent(), BuyerID: e.BuyerID, Status: s.CurrentStatus(),
			ReportedStatus: e.Status, EscrowAmountCents: e.EscrowAmountCents, StartedAt: e.StartedAt, EndedAt: e.EndedAt,
			Operator: s.Operator, Seq: s.Seq, Corrected: s.Corrected != nil}
		if e.AgentID != r.AgentID && !masked {
			r.ReportedAgentID = e.AgentID
		}
		if masked && r.BuyerID != "" {
			r.BuyerID = Pseudonym(u.pseudonymKey, agentID, r.BuyerID)
		}
		out.Events = append(out.Events, r)
	}
	return out, nil
}

// Pseudonym is the name agentID sees for a counterparty buyerID in its own
// records: "buyer-" and 16 hex digits of HMAC-SHA256(key, agentID NUL
// buyerID). The same buyer has the same pseudonym in every one of the
// agent's records and requests, so the agent can see that sessions came
// from one buyer, but a different one for every agent, so agents cannot
// link a buyer across their records; and without the key the buyer id
// cannot be recovered by hashing guesses, as a plain hash would allow.
func Pseudonym(key []byte, agentID, buyerID string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(agentID))
	m.Write([]byte{0})
	m.Write([]byte(buyerID))
	return "buyer-" + hex.EncodeToString(m.Sum(nil)[:8])
}

// PseudonymLabel is the purpose the buyer-pseudonym key is derived for
// (Keyring.Derive): separate from every other use of the root secret.
const PseudonymLabel = "swarmscore buyer pseudonyms v1"

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// pubMemo remembers, per agent, its consent as last read (and whether it
// is known), with the cache watch's mark taken before the read. An entry
// is used with no query while the watch vouches for it and it is less
// than maxTrust old, exactly as certMemo trusts remembered certificates:
// a commit through this process (SetVisibility, RecordConsent, Ingest) or,
// on SQLite, by any process invalidates it at once. On PostgreSQL, consent
// written by another process sends no notification, so it is seen within
// maxTrust.
type pubMemo struct {
	mu sync.RWMutex
	m  map[string]pubEntry
}

type pubEntry struct {
	consent ledger.Consent
	known   bool
	trusted bool
	mark    uint64
	checked time.Time
}

func (m *pubMemo) serve(w ledger.CacheWatch, agentID string) (pubEntry, bool) {
	if w == nil {
		return pubEntry{}, false
	}
	m.mu.RLock()
	e, ok := m.m[agentID]
	m.mu.RUnlock()
	if !ok || !e.trusted || time.Since(e.checked) >= maxTrust || !w.Unchanged(agentID, e.mark) {
		return pubEntry{}, false
	}
	return e, true
}

func (m *pubMemo) put(agentID string, e pubEntry) {
	if !e.trusted {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]pubEntry)
	}
	if _, ok := m.m[agentID]; !ok {
		for k := range m.m {
			if len(m.m) < certMemoSize {
				break
			}
			delete(m.m, k)
		}
	}
	m.m[agentID] = e
}

// forget drops the agent's entry after a write through this process, and
// tells the watch, so that a read racing with the write cannot remember
// what it read before the write committed.
func (p *publication) forget(agentID string) {
	if w := p.certs.startedWatch(); w != nil {
		w.Wrote([]string{agentID})
	}
	p.memo.mu.Lock()
	delete(p.memo.m, agentID)
	p.memo.mu.Unlock()
}
