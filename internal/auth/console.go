package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Via is the edge an operator acted through.
type Via string

// The edges.
const (
	ViaAPI     Via = "api"
	ViaConsole Via = "console"
	ViaCLI     Via = "cli"
)

// ActionKind names what an operator did. A new kind of action adds one.
type ActionKind string

// The kinds of action the log records.
const (
	ActSignIn         ActionKind = "sign_in"
	ActSignOut        ActionKind = "sign_out"
	ActIngest         ActionKind = "ingest"
	ActCorrection     ActionKind = "correction"
	ActAppealAck      ActionKind = "appeal_ack"
	ActAppealUphold   ActionKind = "appeal_uphold"
	ActAppealReject   ActionKind = "appeal_reject"
	ActAppealEscalate ActionKind = "appeal_escalate"
	ActAppealFile     ActionKind = "appeal_file"
	ActConsent        ActionKind = "consent"
	ActVisibility     ActionKind = "visibility"
	ActKeyRotate      ActionKind = "key_rotate"
	ActKeyState       ActionKind = "key_state"
	ActErasure        ActionKind = "erasure"
	ActTokenCreate    ActionKind = "token_create"
	ActTokenRevoke    ActionKind = "token_revoke"
	ActSessionRevoke  ActionKind = "session_revoke"
	ActWebhookCreate  ActionKind = "webhook_create"
	ActWebhookDelete  ActionKind = "webhook_delete"
	// ActDenied is a request refused for the caller's role: Target says
	// what it asked for.
	ActDenied ActionKind = "denied"
)

// Outcome is how an action ended.
type Outcome string

// The outcomes.
const (
	// OK: done.
	OK Outcome = "ok"
	// Denied: refused for who asked (a wrong token, a role without the
	// permission); nothing was done.
	Denied Outcome = "denied"
	// Failed: attempted and refused or failed (Action.Code says why);
	// nothing was done.
	Failed Outcome = "failed"
)

// Action is one entry of the action log: who did what, when, through
// which edge, and how it ended. Entries are only ever appended; an
// erasure renames the agent an entry names (AgentID and the words of
// Detail), as it does everywhere.
type Action struct {
	// Seq orders the log; it is assigned when the entry is appended.
	Seq int64
	At  time.Time
	// Operator is who acted ("" for a sign-in whose token was not
	// valid); TokenID and Role are the token's.
	Operator string
	TokenID  string
	Role     Role
	Via      Via
	// Client is the address the request came from ("" from the CLI).
	Client string
	Kind   ActionKind
	// AgentID is the agent the action concerns, if one.
	AgentID string
	// Target names what was acted on: an appeal, a correction, a key, a
	// token, a session, an erasure, a route.
	Target string
	// Detail says what, in words.
	Detail  string
	Outcome Outcome
	// Code is why a failed or denied action was refused: its error code
	// (errkind.Code) or its kind.
	Code string
}

// ActionQuery selects entries of the action log, newest first.
type ActionQuery struct {
	// Before, when not 0, returns entries older than this Seq (the
	// previous page's last).
	Before int64
	// Limit bounds the entries returned (the store's maximum when 0).
	Limit int
	// Operator, Kind and AgentID, when set, keep only matching entries.
	Operator string
	Kind     ActionKind
	AgentID  string
}

// Session is one signed-in console session. It is stored by the SHA-256
// of its cookie (IDSum), never the cookie itself.
type Session struct {
	IDSum   [sha256.Size]byte
	TokenID string
	// Operator and Role are the token's, read with the session: revoking
	// the token ends the session.
	Operator          string
	Role              Role
	CreatedAt, SeenAt time.Time
	Client, Browser   string
	RevokedAt         time.Time // zero while active
	RevokedBy         string
	TokenRevoked      bool
}

// Ref names a session in lists and forms: the hex of its IDSum, from
// which its cookie cannot be recovered.
func (s Session) Ref() string { return hex.EncodeToString(s.IDSum[:]) }

// Revoked reports whether the session was revoked, or its token.
func (s Session) Revoked() bool { return !s.RevokedAt.IsZero() || s.TokenRevoked }
