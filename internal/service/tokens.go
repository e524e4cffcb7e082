package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Tokens are the use cases of API tokens: operators' and agents' own,
// minted, listed, revoked, and resolved to who a request speaks for.
type Tokens struct {
	store   TokensStore
	clock   clock
	actions *actionLog
}

// MinAdminTokenLen is the shortest SWARMSCORE_ADMIN_TOKEN accepted: a
// bearer token is a password that never expires, so it must not be
// guessable.
const MinAdminTokenLen = 32

// AdminOperator is the operator the SWARMSCORE_ADMIN_TOKEN token acts as.
const AdminOperator = "admin"

// envTokenPrefix starts the id of the token bootstrapped from the
// environment; the rest is derived from its hash, so changing the variable
// makes a new token (and BootstrapAdminToken revokes the old one).
const envTokenPrefix = "env-"

// NewToken is a created token. Secret is the bearer token; it cannot be
// recovered later.
type NewToken struct {
	ID       string
	Operator string
	// Role is an operator's token's role ("" for an agent's).
	Role auth.Role
	// AgentID is the agent an agent's token is scoped to; "" for an
	// operator's.
	AgentID string
	Secret  string
}

// CreateToken mints a token with role ("" means auth.DefaultRole) for
// operator (registering the operator) and stores only its SHA-256
// (auth.Mint): the secret is in the result and nowhere else. It is
// recorded in the action log. Errors: ErrInvalid for an invalid operator
// name or role, ErrUnavailable.
func (u *Tokens) CreateToken(ctx context.Context, operator string, role auth.Role) (nt NewToken, err error) {
	defer func() {
		u.actions.record(ctx, auth.ActTokenCreate, "", nt.ID, "for operator "+operator+" with role "+string(role), err)
	}()
	if role == "" {
		role = auth.DefaultRole
	}
	if err := ledger.CheckID("operator", operator); err != nil {
		return NewToken{}, err
	}
	if _, err := auth.ParseRole(string(role)); err != nil {
		return NewToken{}, err
	}
	tok, secret, err := auth.Mint(operator, u.clock.now())
	if err != nil {
		return NewToken{}, err
	}
	tok.Role = role
	if err := u.store.CreateToken(ctx, tok); err != nil {
		return NewToken{}, err
	}
	return NewToken{ID: tok.ID, Operator: operator, Role: role, Secret: secret}, nil
}

// CreateAgentToken mints a token scoped to agentID, granted by operator:
// it may read the agent's own data and act on its consent, visibility and
// appeals, and nothing else (Authenticate refuses it on operator routes).
// The agent must be known to the ledger. Errors: ErrInvalid for a
// malformed name, ErrNotFound for an unknown agent, ErrUnavailable.
func (u *Tokens) CreateAgentToken(ctx context.Context, operator, agentID string) (nt NewToken, err error) {
	defer func() {
		u.actions.record(ctx, auth.ActTokenCreate, agentID, nt.ID, "for agent "+agentID+", granted by "+operator, err)
	}()
	if err := ledger.CheckID("operator", operator); err != nil {
		return NewToken{}, err
	}
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return NewToken{}, err
	}
	if _, err := u.store.Agent(ctx, agentID); err != nil {
		return NewToken{}, err
	}
	tok, secret, err := auth.Mint(operator, u.clock.now())
	if err != nil {
		return NewToken{}, err
	}
	tok.AgentID = agentID
	if err := u.store.CreateToken(ctx, tok); err != nil {
		return NewToken{}, err
	}
	return NewToken{ID: tok.ID, Operator: operator, AgentID: agentID, Secret: secret}, nil
}

// RevokeToken revokes token id as of now (idempotent: the first time is
// kept), which ends its console sessions; it is recorded in the action
// log. Errors: ErrNotFound for an unknown id, ErrUnavailable.
func (u *Tokens) RevokeToken(ctx context.Context, id string) error {
	err := u.store.RevokeToken(ctx, id, u.clock.now())
	u.actions.record(ctx, auth.ActTokenRevoke, "", id, "", err)
	return err
}

// ListTokens returns every token, revoked ones included, by creation time,
// without their hashes. Errors: ErrUnavailable.
func (u *Tokens) ListTokens(ctx context.Context) ([]auth.Token, error) {
	toks, err := u.store.ListTokens(ctx)
	for i := range toks {
		toks[i].SHA256 = [32]byte{}
	}
	return toks, err
}

// Authenticate returns the operator owning an operator's token, with the
// token's id and role, looked up by its SHA-256. Errors: ErrUnauthorized
// for an unknown or revoked token, ErrForbidden for an agent's token (it
// may act only for its agent, never as an operator), ErrUnavailable.
func (u *Tokens) Authenticate(ctx context.Context, token string) (Caller, error) {
	t, err := u.Principal(ctx, token)
	if err != nil {
		return Caller{}, err
	}
	if t.AgentID != "" {
		return Caller{}, fmt.Errorf("%w: this token belongs to agent %q and may not act as an operator", errkind.ErrForbidden, t.AgentID)
	}
	return CallerOf(t), nil
}

// Principal returns who a token speaks for: an operator, or one agent
// (Token.AgentID). Errors: ErrUnauthorized for an empty, unknown or
// revoked token, ErrUnavailable.
func (u *Tokens) Principal(ctx context.Context, token string) (auth.Token, error) {
	if token == "" {
		return auth.Token{}, fmt.Errorf("%w: empty token", errkind.ErrUnauthorized)
	}
	return u.store.Authenticate(ctx, auth.Sum(token))
}

// BootstrapAdminToken makes secret (SWARMSCORE_ADMIN_TOKEN) a valid token
// of the AdminOperator, and revokes any earlier bootstrapped token whose
// secret was different, so rotating the variable retires the old token. It
// is idempotent and returns the token's id. Errors: ErrInvalid for a
// secret shorter than MinAdminTokenLen or one that was revoked (messages
// never contain the secret), ErrUnavailable.
func (u *Tokens) BootstrapAdminToken(ctx context.Context, secret string) (id string, err error) {
	if len(secret) < MinAdminTokenLen {
		return "", fmt.Errorf("%w: SWARMSCORE_ADMIN_TOKEN is %d characters; at least %d are required (generate one with `swarmscore keygen`)",
			errkind.ErrInvalid, len(secret), MinAdminTokenLen)
	}
	if strings.TrimSpace(secret) != secret {
		return "", fmt.Errorf("%w: SWARMSCORE_ADMIN_TOKEN has leading or trailing white space", errkind.ErrInvalid)
	}
	sum := auth.Sum(secret)
	// The id is derived from the hash of the hash, so it reveals nothing
	// that could help guess the token.
	idSum := sha256.Sum256(sum[:])
	id = envTokenPrefix + hex.EncodeToString(idSum[:6])
	now := u.clock.now()
	if err := u.store.CreateToken(ctx, auth.Token{ID: id, Operator: AdminOperator, Role: auth.Admin, SHA256: sum, CreatedAt: now}); err != nil {
		return "", err
	}
	toks, err := u.store.ListTokens(ctx)
	if err != nil {
		return "", err
	}
	for _, tok := range toks {
		if tok.ID == id && tok.Revoked() {
			return "", fmt.Errorf("%w: the token in SWARMSCORE_ADMIN_TOKEN was revoked at %s; set a new one",
				errkind.ErrInvalid, tok.RevokedAt.UTC().Format(time.RFC3339))
		}
	}
	for _, tok := range toks {
		if strings.HasPrefix(tok.ID, envTokenPrefix) && tok.ID != id && !tok.Revoked() {
			if err := u.store.RevokeToken(ctx, tok.ID, now); err != nil {
				return "", err
			}
		}
	}
	return id, nil
}
