package auth

import (
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Role is what an operator's token may do. The roles are ordered: each
// may do everything the one before it may.
type Role string

// The roles.
const (
	// Viewer reads the console and the operator reads of the API.
	Viewer Role = "viewer"
	// Operator also ingests events, corrects them and decides appeals.
	Operator Role = "operator"
	// Admin also manages signing keys, erasures, webhooks, tokens,
	// console sessions, and reads the action log.
	Admin Role = "admin"
)

// Roles lists the roles, least powerful first.
var Roles = []Role{Viewer, Operator, Admin}

// DefaultRole is the role of a token created without one.
const DefaultRole = Operator

func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i + 1
		}
	}
	return 0 // no role: nothing is allowed
}

// ParseRole reads a role's name. Errors: ErrInvalid naming the roles.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.rank() > 0 {
		return r, nil
	}
	return "", fmt.Errorf("%w: role %q is not one of viewer, operator, admin", errkind.ErrInvalid, s)
}

// Permission is one kind of operator action, as both edges (the API's
// routes and the console's pages and forms) name it.
type Permission string

// The permissions. A new kind of action adds one here and a row in rules.
const (
	// ReadOperator is every operator read: the console's pages, the
	// ranking with unlisted agents, audits, flags, appeals, erasures.
	ReadOperator Permission = "read"
	// Ingest records events (POST /swarmscore/events).
	Ingest Permission = "ingest"
	// Correct records corrections.
	Correct Permission = "correct"
	// DecideAppeals acknowledges, upholds and rejects appeals, and files
	// or escalates one on an agent's behalf.
	DecideAppeals Permission = "decide_appeals"
	// ActForAgent sets an agent's consent and visibility on its behalf.
	ActForAgent Permission = "act_for_agent"
	// ManageKeys rotates and retires signing keys.
	ManageKeys Permission = "manage_keys"
	// Erase erases an agent.
	Erase Permission = "erase"
	// ManageWebhooks creates, changes and deletes webhooks.
	ManageWebhooks Permission = "manage_webhooks"
	// ManageTokens creates and revokes API tokens.
	ManageTokens Permission = "manage_tokens"
	// ManageSessions lists and revokes console sessions.
	ManageSessions Permission = "manage_sessions"
	// ReadActions reads the action log.
	ReadActions Permission = "read_actions"
)

// rules is the one table of who may do what: the least role each
// permission needs.
var rules = map[Permission]Role{
	ReadOperator:   Viewer,
	Ingest:         Operator,
	Correct:        Operator,
	DecideAppeals:  Operator,
	ActForAgent:    Operator,
	ManageKeys:     Admin,
	Erase:          Admin,
	ManageWebhooks: Admin,
	ManageTokens:   Admin,
	ManageSessions: Admin,
	ReadActions:    Admin,
}

// Permissions lists every permission with the least role it needs, in a
// fixed order, for documentation and tests.
func Permissions() []Permission {
	return []Permission{ReadOperator, Ingest, Correct, DecideAppeals, ActForAgent, ManageKeys, Erase,
		ManageWebhooks, ManageTokens, ManageSessions, ReadActions}
}

// Needs is the least role p needs; a permission the table does not know
// needs more than any role.
func Needs(p Permission) Role { return rules[p] }

// May reports whether role r may do p.
func (r Role) May(p Permission) bool {
	need, ok := rules[p]
	return ok && r.rank() > 0 && r.rank() >= need.rank()
}

// ForbiddenRoleCode is the error code of an action refused for the
// caller's role.
const ForbiddenRoleCode = "forbidden_role"

// Allow returns nil when r may do p, and otherwise an ErrForbidden error
// with the code ForbiddenRoleCode saying which role p needs.
func Allow(r Role, p Permission) error {
	if r.May(p) {
		return nil
	}
	have := string(r)
	if have == "" {
		have = "no"
	}
	return errkind.WithCode(fmt.Errorf("%w: this needs the %s role (%s); this token has the %s role",
		errkind.ErrForbidden, Needs(p), p, have), ForbiddenRoleCode)
}

// StoredRole is the role a back end stores for t: its role (DefaultRole
// when none is given), and DefaultRole for an agent's token, whose role
// means nothing. Errors: ErrInvalid for a role that is none of Roles.
func StoredRole(t Token) (Role, error) {
	if t.AgentID != "" || t.Role == "" {
		return DefaultRole, nil
	}
	return ParseRole(string(t.Role))
}
