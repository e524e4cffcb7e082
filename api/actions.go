package api

import "time"

// Action is one entry of the operator action log (GET /swarmscore/actions,
// swarmscore actions --json): who did what, when, through which edge, and
// how it ended. Entries are only ever appended; an erasure renames the
// agent an entry names, as it does everywhere.
type Action struct {
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
	// Operator is who acted; "" for a sign-in whose token was not valid.
	Operator string `json:"operator"`
	TokenID  string `json:"token_id,omitempty"`
	// Role is the token's role: viewer, operator or admin.
	Role string `json:"role,omitempty"`
	// Via is the edge: api, console or cli.
	Via string `json:"via"`
	// Client is the address the request came from (absent from the CLI).
	Client string `json:"client,omitempty"`
	// Action is what kind of action: sign_in, sign_out, ingest,
	// correction, appeal_ack, appeal_uphold, appeal_reject,
	// appeal_escalate, appeal_file, consent, visibility, key_rotate,
	// key_state, erasure, token_create, token_revoke, session_revoke,
	// webhook_create, webhook_delete, denied (a request refused for the token's role; target names it).
	Action  string `json:"action"`
	AgentID string `json:"agent_id,omitempty"`
	// Target names what was acted on: an appeal, a correction, a key, a
	// token, a session, an erasure, a route.
	Target string `json:"target,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Outcome is ok, denied (refused for who asked) or failed (refused or
	// failed for another reason; Code says which).
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
}

// Actions is a page of the action log, newest first (GET
// /swarmscore/actions). Next, when present, is the before= of the next
// page.
type Actions struct {
	Actions []Action `json:"actions"`
	Next    *int64   `json:"next_before,omitempty"`
}
