package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Actor is who is acting, as an edge establishes it: an operator's token
// (its operator, id and role) or, from the CLI, whoever holds the
// database. An edge puts it in the context of each request (WithActor);
// the use cases that change something record what they did in the action
// log under it.
type Actor struct {
	Operator string
	TokenID  string
	Role     auth.Role
	Via      auth.Via
	// Client is the address the request came from ("" from the CLI).
	Client string
}

type actorKey struct{}

// WithActor returns ctx carrying a: the use cases called with it record
// their actions as a's.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// ActorOf is the actor of a caller acting through via from client.
func ActorOf(c Caller, via auth.Via, client string) Actor {
	return Actor{Operator: c.Operator, TokenID: c.TokenID, Role: c.Role, Via: via, Client: client}
}

// actionLog appends the actions of the use cases holding it. An entry
// that cannot be written (the database lost between the action and its
// entry) is logged at ERROR with the entry, and does not undo or fail the
// action, which is done.
type actionLog struct {
	store ActionStore
	clock clock
	log   *slog.Logger
}

// record appends what the actor in ctx did: kind, on agentID and target,
// in words detail, ending with err (nil: done). A context without an actor
// (a use case called by this program itself, not for an operator) records
// nothing.
func (l *actionLog) record(ctx context.Context, kind auth.ActionKind, agentID, target, detail string, err error) {
	a, ok := ActorFrom(ctx)
	if !ok || l == nil || l.store == nil {
		return
	}
	e := auth.Action{At: l.clock.exact(), Operator: a.Operator, TokenID: a.TokenID, Role: a.Role, Via: a.Via, Client: a.Client,
		Kind: kind, AgentID: agentID, Target: target, Detail: detail, Outcome: auth.OK}
	if err != nil {
		e.Outcome, e.Code = outcomeOf(err)
	}
	// The entry is written even when the request's context has ended
	// (its client gone, its database deadline passed), within a short
	// wait of its own: a database that does not answer must not hold the
	// answer back.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), actionLogWait)
	defer cancel()
	l.append(actx, e)
}

// actionLogWait bounds the write of one action log entry.
const actionLogWait = 500 * time.Millisecond

// outcomeOf is how an action that returned err ended: denied for a caller
// without the right, failed otherwise, with the error's code or kind.
func outcomeOf(err error) (auth.Outcome, string) {
	code := errkind.Code(err)
	if code == "" {
		code = errkind.Of(err).String()
	}
	switch errkind.Of(err) {
	case errkind.Unauthorized, errkind.Forbidden:
		return auth.Denied, code
	}
	return auth.Failed, code
}

func (l *actionLog) append(ctx context.Context, e auth.Action) {
	if _, err := l.store.AppendAction(ctx, e); err != nil && l.log != nil {
		l.log.Error("the action log could not record an action", "err", err, "action", string(e.Kind), "operator", e.Operator,
			"via", string(e.Via), "agent_id", e.AgentID, "target", e.Target, "outcome", string(e.Outcome), "code", e.Code)
	}
}

// Console are the use cases of the operator console and the action log:
// sessions, the log's entries, and the refusals the edges record.
type Console struct {
	store interface {
		ActionStore
		SessionStore
		TokenStore
	}
	clock   clock
	actions *actionLog
}

// RecordDenied records that the actor in ctx was refused what (a route,
// a page) for err (its role, auth.Allow's error).
func (u *Console) RecordDenied(ctx context.Context, what string, err error) {
	u.actions.record(ctx, auth.ActDenied, "", what, "", err)
}

// Actions reads the action log, newest first. Errors: ErrUnavailable.
func (u *Console) Actions(ctx context.Context, q auth.ActionQuery) ([]auth.Action, error) {
	return u.store.Actions(ctx, q)
}

// SessionPolicy is when a console session ends: unused for Idle, or
// Lifetime after it started.
type SessionPolicy struct {
	Idle, Lifetime time.Duration
}

// sessionTouchEvery is how stale a session's last-seen time may get
// before a request writes it again: the idle limit is minutes, so one
// write a minute is precise enough, and most requests write nothing.
const sessionTouchEvery = time.Minute

// maxBrowserLen bounds the browser description kept with a session.
const maxBrowserLen = 200

// NewSession is a started session: ID is its cookie, shown once.
type NewSession struct {
	ID      string
	Session auth.Session
}

// SignIn checks an operator's token and starts a console session for it,
// recording the sign-in (or its refusal) in the action log. client and
// browser describe who signed in. Errors: ErrUnauthorized for an empty,
// unknown or revoked token; ErrForbidden for an agent's token;
// ErrUnavailable.
func (u *Console) SignIn(ctx context.Context, token, client, browser string, p SessionPolicy) (NewSession, error) {
	ctx = WithActor(ctx, Actor{Via: auth.ViaConsole, Client: client})
	var t auth.Token
	var err error
	if token == "" {
		err = fmt.Errorf("%w: empty token", errkind.ErrUnauthorized)
	} else {
		t, err = u.store.Authenticate(ctx, auth.Sum(token))
	}
	if err == nil && t.AgentID != "" {
		err = fmt.Errorf("%w: an agent's token cannot sign in to the console", errkind.ErrForbidden)
	}
	if err != nil {
		if k := errkind.Of(err); k == errkind.Unauthorized || k == errkind.Forbidden {
			u.actions.record(ctx, auth.ActSignIn, "", "", "", err)
		}
		return NewSession{}, err
	}
	ctx = WithActor(ctx, Actor{Operator: t.Operator, TokenID: t.ID, Role: t.Role, Via: auth.ViaConsole, Client: client})
	var raw [32]byte
	rand.Read(raw[:])
	id := base64.RawURLEncoding.EncodeToString(raw[:])
	now := u.clock.now()
	s := auth.Session{IDSum: sha256.Sum256([]byte(id)), TokenID: t.ID, Operator: t.Operator, Role: t.Role,
		CreatedAt: now, SeenAt: now, Client: client, Browser: trimBrowser(browser)}
	err = u.store.CreateSession(ctx, s, now.Add(-p.Lifetime))
	u.actions.record(ctx, auth.ActSignIn, "", "session "+s.Ref()[:12], "", err)
	if err != nil {
		return NewSession{}, err
	}
	return NewSession{ID: id, Session: s}, nil
}

func trimBrowser(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if r := []rune(s); len(r) > maxBrowserLen {
		s = string(r[:maxBrowserLen])
	}
	return s
}

// errSessionEnded is the session lookup's refusal, whatever the reason:
// unknown, revoked, its token revoked, idle or too old.
var errSessionEnded = fmt.Errorf("%w: the console session has ended", errkind.ErrUnauthorized)

// Session returns the live session whose cookie is id, marking it used
// now. Errors: ErrUnauthorized for an unknown session and for one that
// was revoked (or its token), went unused for p.Idle or started p.Lifetime
// ago; ErrUnavailable.
func (u *Console) Session(ctx context.Context, id string, p SessionPolicy) (auth.Session, error) {
	if id == "" {
		return auth.Session{}, errSessionEnded
	}
	sum := sha256.Sum256([]byte(id))
	s, err := u.store.Session(ctx, sum)
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		return auth.Session{}, errSessionEnded
	case err != nil:
		return auth.Session{}, err
	}
	now := u.clock.now()
	if s.Revoked() || now.Sub(s.SeenAt) >= p.Idle || now.Sub(s.CreatedAt) >= p.Lifetime {
		return auth.Session{}, errSessionEnded
	}
	if now.Sub(s.SeenAt) >= sessionTouchEvery {
		if err := u.store.TouchSession(ctx, sum, now); err != nil {
			return auth.Session{}, err
		}
		s.SeenAt = now
	}
	return s, nil
}

// SignOut ends the session whose cookie is id, recording it. Errors:
// ErrUnavailable.
func (u *Console) SignOut(ctx context.Context, id string) error {
	sum := sha256.Sum256([]byte(id))
	err := u.store.RevokeSession(ctx, sum, u.clock.now(), "sign-out")
	if errors.Is(err, errkind.ErrNotFound) {
		err = nil
	}
	u.actions.record(ctx, auth.ActSignOut, "", "session "+hex.EncodeToString(sum[:6]), "", err)
	return err
}

// Sessions lists the live console sessions, most recently used first.
// Errors: ErrUnavailable.
func (u *Console) Sessions(ctx context.Context, p SessionPolicy) ([]auth.Session, error) {
	now := u.clock.now()
	return u.store.Sessions(ctx, now.Add(-p.Idle), now.Add(-p.Lifetime))
}

// RevokeSession ends the session named ref (auth.Session.Ref) for the
// actor in ctx, recording it. Errors: ErrInvalid for a malformed ref,
// ErrNotFound, ErrUnavailable.
func (u *Console) RevokeSession(ctx context.Context, ref string) error {
	var sum [sha256.Size]byte
	b, err := hex.DecodeString(ref)
	if err != nil || len(b) != len(sum) {
		err = fmt.Errorf("%w: %q is not a session reference", errkind.ErrInvalid, ref)
	} else {
		copy(sum[:], b)
		by := ""
		if a, ok := ActorFrom(ctx); ok {
			by = a.Operator
		}
		err = u.store.RevokeSession(ctx, sum, u.clock.now(), by)
	}
	target := "session"
	if len(ref) >= 12 && err == nil {
		target += " " + ref[:12]
	}
	u.actions.record(ctx, auth.ActSessionRevoke, "", target, "", err)
	return err
}
